//===- DistributedRun.h - A sharded module on one rank per device -*- C++ -*-=//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Runs a sharded module as it is meant to run, one MPI rank per device:
// every rank builds its own program from the module (`--neuroshard-spmd`),
// allocates only the shards its device holds, and runs its fused lookup, the
// exchange over MPI and, with `backward`, the reverse exchange and its fused
// SGD update. Rank 0 gathers the results (and the updated weights) and can
// compare them with a single-process run of the original module; every
// rank's weight bytes and step time, split into compute and exchange, are
// gathered there too. Any front end (neuroshard-run --distributed is one)
// runs a plan across ranks with it.
//
// Built when MPI is found (NEUROSHARD_HAS_MPI), as NeuroShardDistributedRun.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_DISTRIBUTEDRUN_H
#define NEUROSHARD_EXECUTION_DISTRIBUTEDRUN_H

#include "neuroshard/Execution/ModelData.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace neuroshard {
namespace execution {

/// This process's part in an MPI job, for the lifetime of the object: MPI
/// is initialised unless it already is, and finalised at the end if this
/// object initialised it.
class MPIJob {
public:
  MPIJob();
  ~MPIJob();
  MPIJob(const MPIJob &) = delete;
  MPIJob &operator=(const MPIJob &) = delete;

  int rank() const { return rankInWorld; }
  int size() const { return worldSize; }

private:
  bool initialized = false;
  int rankInWorld = 0, worldSize = 1;
};

struct DistributedRunOptions {
  /// The sharded module, which every rank reads.
  std::string modulePath;
  /// When set, the original module, run on rank 0 alone on the same data
  /// to compare its results (and, with `backward`, its weights) with.
  std::string comparePath;
  /// The function to run (empty: the only public one).
  std::string entry;
  /// Seed, row cap and memory limits of every rank's data.
  DataOptions data;
  /// When set, lookup inputs read with readInputsFile instead of generated.
  std::string inputsPath;
  /// Runs the backward functions (reverse exchange and SGD update) after
  /// the forward pass.
  bool backward = false;
  float learningRate = 0.01f;
  /// Untimed and timed steps after the checked one (no timing when `iters`
  /// is 0).
  unsigned warmup = 0, iters = 0;
  /// Skips the check of every index against its table's rows.
  bool trustInputs = false;
  /// Ranks per node for the exchange, which runs between nodes and then
  /// inside each when there are several. 0: the plan's node size when the
  /// module's topology has several nodes, else the ranks that share a
  /// machine (MPI_COMM_TYPE_SHARED).
  unsigned devicesPerNode = 0;
  /// Names the program in the error of a rank that fails alone.
  std::string programName;
};

/// Medians over the timed steps of one rank (ms); the exchange includes the
/// wait for the slowest rank.
struct RankTiming {
  double step = 0, compute = 0, exchange = 0;
};

/// What one rank holds and how long its steps took.
struct RankReport {
  /// Shards placed on the rank's device.
  int shards = 0;
  /// The shards' full weights (what the plan counts) and what was
  /// allocated (rows capped by DataOptions::maxRows).
  double weightBytes = 0, allocatedWeightBytes = 0;
  /// The plan's weights for the device (GB), when the module has a
  /// neuroshard.plan that lists them, and whether the rank holds as much.
  std::optional<double> planWeightsGB;
  bool matchesPlan = true;
  std::optional<RankTiming> timing;
  /// Bytes the rank sent to other ranks of its node and to other nodes in
  /// the checked step's exchanges (forward, and backward with it).
  double intraNodeBytes = 0, interNodeBytes = 0;
};

/// The outcome of runDistributed. Every rank gets its rank, the job's size
/// and the entry's description; the results, the comparison and the
/// per-rank reports are gathered on rank 0 only.
struct DistributedRunResult {
  int rank = 0, ranks = 1;
  /// Ranks per node of the exchange (`ranks` on one node).
  int ranksPerNode = 1;
  /// The entry of the sharded module and its lookup inputs and tables.
  std::string entry;
  size_t lookupInputs = 0, tables = 0;
  /// Every result of the entry, whole, and its [rows, cols].
  std::vector<std::vector<float>> results;
  std::vector<std::vector<int64_t>> resultShapes;
  /// With a comparison: the largest relative difference of the results
  /// and, with `backward`, of the updated weights.
  std::optional<double> outputDiff, weightDiff;
  std::vector<RankReport> perRank;

  /// Whether the module's plan lists any device's weights.
  bool hasPlan() const;
  /// Whether every rank holds the weights its device has in the plan.
  bool weightsMatchPlan() const;
};

/// Runs `options.modulePath`, a sharded module, on this rank of the job. Every
/// rank calls it with the same options while an MPIJob lives. A failure
/// every rank meets alike (a module not sharded for this many ranks, inputs
/// that cannot be read, a module to compare with that does not match) is
/// returned on every rank, with its message complete on rank 0. A failure
/// of this rank alone is written to standard error as "PROGRAM: error: rank
/// R: MESSAGE" and aborts the job (MPI_Abort): the other ranks may already
/// wait for this one in a collective.
llvm::Expected<DistributedRunResult>
runDistributed(mlir::MLIRContext &context,
               const DistributedRunOptions &options);

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_DISTRIBUTEDRUN_H
