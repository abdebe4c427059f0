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
// multiples of the warp, and grids from one block to the runtime's; and one
// of bucketizations, which the emulated bucketization kernels must split as
// `neuroshard.bucketize` defines.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EMULATION_KERNELSWEEP_H
#define NEUROSHARD_EMULATION_KERNELSWEEP_H

#include "neuroshard/Emulation/SIMTEmulator.h"
#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>

namespace neuroshard {

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
  /// The backward launches' float atomic instructions, and the most that
  /// one launch sent to one address.
  int64_t atomics = 0, hottestAtomics = 0;

  /// Adds `other`'s counts (and keeps the hotter of the two addresses).
  void add(const SweepTotals &other) {
    cases += other.cases;
    launches += other.launches;
    shuffles += other.shuffles;
    elements += other.elements;
    atomics += other.atomics;
    hottestAtomics = std::max(hottestAtomics, other.hottestAtomics);
  }
};

/// The buffers of a shard set for both executions: `packed`'s metadata and
/// inputs, tables at `layout` in an arena of `arenaSize` weights, weights
/// and output gradient drawn in [-1, 1) from `seed`.
execution::PreparedSet prepareSet(kernel_abi::PackedShardSet<int64_t> packed,
                                  std::vector<int64_t> layout,
                                  int64_t arenaSize, int64_t batch, bool i32,
                                  uint64_t seed);

/// Runs forward, then backward with SGD at `learningRate`, on `set` both
/// emulated with `launch` and with the CPU kernels (which update `set`);
/// fails at the first element that differs or a launch that breaks a rule.
llvm::Error compareWithCPU(EmulatedKernels &emulated,
                           execution::CPUKernels &reference,
                           execution::PreparedSet &set,
                           const LaunchConfig &launch, float learningRate,
                           SweepTotals &totals);

/// Runs the sweep; fails at the first case whose results differ from the
/// CPU kernels' (naming the case, the element and both values) or whose
/// launch breaks a rule.
llvm::Error runKernelSweep(EmulatedKernels &emulated,
                           execution::CPUKernels &reference,
                           const SweepOptions &options, llvm::raw_ostream &log,
                           SweepTotals &totals);

/// Runs `options.cases` bucketizations through the emulated count, scan and
/// scatter kernels and checks every block's offsets and indices against
/// neuroshard.bucketize's definition: one to five row blocks starting at row
/// 0 or later (some i64 ones beyond 2^32), no bag, one bag or up to 100
/// bags over several warps, empty and long bags, indices below, inside and
/// above the blocks, i32 and i64, blocks of 32..256 threads and grids from
/// one block to the runtime's. Fails at the first case that differs.
llvm::Error runBucketizeSweep(EmulatedKernels &emulated,
                              const SweepOptions &options,
                              llvm::raw_ostream &log, SweepTotals &totals);

} // namespace emulation
} // namespace neuroshard

#endif // NEUROSHARD_EMULATION_KERNELSWEEP_H
