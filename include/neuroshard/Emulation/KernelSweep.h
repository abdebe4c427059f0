//===- KernelSweep.h - Emulated CUDA kernels against the CPU ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A deterministic sweep of shard sets and launch shapes on which the
// emulated CUDA kernels (forward and backward with SGD) must agree with the
// generic CPU kernels: widths 1..300, split shards, empty and long bags,
// sum and mean, repeated indices, i32 and i64 indices, aligned and
// unaligned tables (the vector and the scalar path), block sizes that are
// multiples of the warp, and grids from one block to the runtime's.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EMULATION_KERNELSWEEP_H
#define NEUROSHARD_EMULATION_KERNELSWEEP_H

#include "neuroshard/Emulation/SIMTEmulator.h"

#include "llvm/Support/raw_ostream.h"

namespace neuroshard {
namespace execution {
class CPUKernels;
} // namespace execution

namespace emulation {

struct SweepOptions {
  int64_t cases = 200;
  uint64_t seed = 1;
  /// Every launch uses this block size when non-zero, instead of the
  /// case's own.
  int64_t threadsPerBlock = 0;
  /// Prints one line per case.
  bool verbose = false;
};

struct SweepTotals {
  int64_t cases = 0, launches = 0, shuffles = 0, elements = 0;
};

/// Runs the sweep; fails at the first case whose results differ from the
/// CPU kernels' (naming the case, the element and both values) or whose
/// launch breaks a rule.
llvm::Error runKernelSweep(EmulatedKernels &emulated,
                           execution::CPUKernels &reference,
                           const SweepOptions &options, llvm::raw_ostream &log,
                           SweepTotals &totals);

} // namespace emulation
} // namespace neuroshard

#endif // NEUROSHARD_EMULATION_KERNELSWEEP_H
