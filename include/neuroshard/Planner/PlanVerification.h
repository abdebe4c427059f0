//===- PlanVerification.h - Choosing among plans by measuring them -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A search that explores hundreds of states keeps the ones its model
// underestimates most. Measured selection times the device sets of the few
// best distinct plans the search kept (PlanResult::candidates) on the
// machine the plan is for and returns the one whose slowest device measured
// lowest. The timing itself is a SetTimer: the real one runs the fused CPU
// kernels (Execution/SetTiming.h); tests give fixed times.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_PLANVERIFICATION_H
#define NEUROSHARD_PLANNER_PLANVERIFICATION_H

#include "neuroshard/Planner/Search.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace neuroshard {

class CostModel;

/// Times the compute of device sets (forward, backward and optimizer
/// update of one training step) on this host.
class SetTimer {
public:
  virtual ~SetTimer();
  /// Makes ready to time `sets`, each the column slices one device holds,
  /// at `batchSize` bags per lookup. Fails, naming the set, when one cannot
  /// be timed here (memory).
  virtual llvm::Error
  prepare(llvm::ArrayRef<TableSpec> tables, int64_t batchSize,
          llvm::ArrayRef<std::vector<ColumnSlice>> sets) = 0;
  /// One run of prepared set `index`, in ms.
  virtual double time(size_t index) = 0;
  /// The host, for reports ("AMD EPYC 7B13").
  virtual std::string host() const = 0;
};

struct VerifyOptions {
  /// Seconds the timed rounds may take; the first (untimed) round and
  /// preparing the sets are not counted.
  double seconds = 5.0;
  /// Timed rounds over all sets: at least minRounds however long they
  /// take, at most maxRounds however fast.
  unsigned minRounds = 3;
  unsigned maxRounds = 25;
};

/// Checks that `count` candidates can be verified for this search; the
/// message says why not (another algorithm than NeuroShard, a priced plan).
std::optional<std::string> checkVerifyTop(unsigned count, Algorithm algorithm);

/// Most seconds --verify-seconds accepts.
constexpr double kMaxVerifySeconds = 3600.0;
/// Checks --verify-seconds; the message names the value.
std::optional<std::string> checkVerifySeconds(double seconds);

/// Times every distinct device set of `result.candidates` with `timer`: one
/// untimed round, then rounds over all sets (each round in another order,
/// so that no set always follows the same one) until `options.seconds` are
/// spent, and takes each set's median. Each candidate is priced with its
/// devices' measured compute and the model's communication
/// (completePlanCosts), and `result`'s plan and cost become those of the
/// candidate whose slowest device measured lowest (ties: the model's
/// order); its cost stays the model's, so that the plan prices the same
/// everywhere. Sets `result.verification`. Needs at least one candidate.
llvm::Error verifyCandidates(PlanResult &result,
                             llvm::ArrayRef<TableSpec> tables,
                             const Topology &topology, CostModel &model,
                             SetTimer &timer, const VerifyOptions &options);

/// "chosen: table-greedy-grid, measured 3.02 ms against 3.41 ms for the
/// model's choice (neuroshard), which it predicted at 2.71 ms", or why the
/// model's choice stood.
std::string describeVerification(const PlanVerification &verification);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_PLANVERIFICATION_H
