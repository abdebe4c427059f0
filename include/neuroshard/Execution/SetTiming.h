//===- SetTiming.h - Timing device sets with the fused CPU kernels -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The SetTimer that measured selection (Selection/PlanVerification.h) uses on
// a CPU: each device set runs as one fused forward and backward-SGD call of
// the generic kernels, on index streams generated from its tables'
// statistics, after a cache flush, as neuroshard-collect times the samples
// the CPU cost models are trained on.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_SETTIMING_H
#define NEUROSHARD_EXECUTION_SETTIMING_H

#include "neuroshard/Selection/PlanVerification.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace neuroshard {
namespace execution {

struct KernelSetTimerOptions {
  /// Cache flush before every timed run (MiB; 0: none), so that a timed
  /// run starts from cold caches as neuroshard-collect's do.
  unsigned flushMB = 64;
  /// Untimed runs of a set before each timing. A set run right after other
  /// sets is slower for its first few runs, by an amount that depends on
  /// the set (on a Zen 5 at batch 4096 the first run measured 1.13 times
  /// the settled time on average and up to 1.26 times, the fourth 1.04),
  /// and neuroshard-collect, which times the calibration samples and the
  /// evaluation, times a set after 3 untimed runs too (docs/planner.md,
  /// "Measured selection").
  unsigned warmupRuns = 3;
  /// Whether the untimed runs are flushed too, as neuroshard-collect
  /// flushes them. A timed run follows a flush either way; what the flushes
  /// before the untimed runs add is time. Unflushed, a round's ratios
  /// spread more, but the rounds are so much cheaper that a second of
  /// timing tells candidates apart twice as well at batch 1024, and as
  /// well at 4096 (docs/planner.md, "Cheaper rounds").
  bool flushUntimedRuns = false;
  /// Timed runs of a set, one after another, in one timing (at least 1);
  /// the timing is their median. Most of what moves a timing moves all the
  /// runs of a round alike (the draw, where the weights lie, the machine's
  /// state), so that a second or third run in the same round adds little
  /// (docs/planner.md, "Cheaper rounds"): one run, and more rounds.
  unsigned runsPerTiming = 1;
  /// Memory the sets' data may take (bytes; 0: what the system has free).
  double memoryLimitBytes = 0.0;
  /// Seed of the index streams: draw d reads the streams of seed
  /// inputs::mixSeed(seed, d).
  uint64_t seed = 1;
  /// Draws of the index streams every set is prepared on (at least 1): the
  /// rounds of measured selection go through them in turn.
  unsigned draws = kDefaultInputDraws;
  /// Huge pages (runtime::kHugePageBytes) by which each draw lays its sets
  /// out further into the weight arena than the draw before (0: all at the
  /// start). Where a set's weights lie is the one part of its data that
  /// would otherwise stay from draw to draw (each draw packs its own inputs
  /// and outputs), and it moves a set's time: on a 2-core Zen 3 virtual
  /// machine, three processes timing the same 48 device sets on the same
  /// draws found every other candidate faster than the table-wise plan in
  /// one process (median ratios 0.86-0.93) and none in the two others
  /// (1.05-1.25). With each draw at another place the rounds of one process
  /// disagree as the processes did, so that the rounds' spread shows how
  /// far a choice can be trusted (VerifyOptions::spreadFactor). An odd
  /// count, so that the draws do not fall on the same place in larger
  /// power-of-two blocks.
  unsigned drawShiftPages = 17;
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
