//===- SetTiming.h - Timing device sets with the fused CPU kernels -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The SetTimer that measured selection (Planner/PlanVerification.h) uses on
// a CPU: each device set runs as one fused forward and backward-SGD call of
// the generic kernels, on index streams generated from its tables'
// statistics, after a cache flush, as neuroshard-collect times the samples
// the CPU cost models are trained on.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_SETTIMING_H
#define NEUROSHARD_EXECUTION_SETTIMING_H

#include "neuroshard/Planner/PlanVerification.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace neuroshard {
namespace execution {

struct KernelSetTimerOptions {
  /// Cache flush before every run (MiB; 0: none).
  unsigned flushMB = 64;
  /// Runs of a set, one after another, in one timing; the timing is their
  /// median. neuroshard-collect, which times the calibration samples and
  /// the evaluation, runs a set several times in a row too: a set run once
  /// right after other sets measures slower than that, and not in the same
  /// order.
  unsigned runsPerTiming = 5;
  /// Memory the sets' data may take (bytes; 0: what the system has free).
  double memoryLimitBytes = 0.0;
  /// Seed of the index streams.
  uint64_t seed = 1;
};

/// Compiles the kernels; fails with the JIT's error.
llvm::Expected<std::unique_ptr<SetTimer>>
createKernelSetTimer(const KernelSetTimerOptions &options = {});

/// Installs createKernelSetTimer (default options) as the planner's
/// SetTimer factory (registerSetTimerFactory), so that planning verifies
/// candidates in this program.
void registerKernelSetTimer();

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_SETTIMING_H
