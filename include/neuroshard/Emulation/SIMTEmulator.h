//===- SIMTEmulator.h - The CUDA kernels run on the CPU by warps -*- C++
//-*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Runs the GPU-dialect kernels that `--neuroshard-to-cuda` generates (the
// same bodies the CUDA pipeline turns into PTX) on the host, with warp
// semantics, so that the CUDA kernels are executed by the test suite on
// machines without a GPU.
//
// Each `gpu.func` of the kernels module is cloned into a host `func.func`
// in which `gpu.thread_id`, `gpu.block_id`, `gpu.block_dim`, `gpu.grid_dim`
// and `gpu.shuffle` become calls of a small runtime; the host module is
// lowered to LLVM and JIT-compiled with MLIR's ExecutionEngine. A launch
// runs the blocks of the grid (and the warps of each block) in a random
// order; the lanes of a warp are coroutines that run in lock step: each
// lane runs up to its next shuffle, and once every live lane waits the
// shuffle is checked against the rules of PTX `shfl.sync` (every lane of
// the member mask present, at the same shuffle with the same mode and
// width) and the lanes exchange their values together.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EMULATION_SIMTEMULATOR_H
#define NEUROSHARD_EMULATION_SIMTEMULATOR_H

#include "neuroshard/Execution/JIT.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <iterator>
#include <memory>
#include <string>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace neuroshard {
namespace emulation {

/// Deliberate defects a test can put into the kernels before they are
/// emulated, to show that the emulator catches them.
enum class KernelDefect {
  None,
  /// Every lane keeps its own index instead of receiving the broadcast one:
  /// the first `gpu.shuffle idx` of each kernel returns its input.
  DropIndexShuffle,
  /// The warp-wide maximum of the bag lengths is skipped (the `xor`
  /// shuffles return their input), so the chunk loop around the index
  /// shuffles is no longer warp-uniform.
  DropWarpMax,
  /// The bag loop stops one index early: the length read from the offsets
  /// is decremented (but not below 0).
  ShortBag,
  /// The prefix sums of bucketization add nothing from lower lanes (the
  /// `up` shuffles return their input), so block offsets are wrong from the
  /// second bag on.
  DropScanShuffle,
};

/// Parses `none`, `drop-index-shuffle`, `drop-warp-max`, `short-bag` or
/// `drop-scan-shuffle`.
bool parseKernelDefect(llvm::StringRef text, KernelDefect &defect);

/// One launch: the grid, the block (x only; y = z = 1) and the seed of the
/// random order of blocks and warps.
struct LaunchConfig {
  int64_t gridX = 1, gridY = 1, blockX = 256;
  uint64_t seed = 1;
};

/// What one launch did. A float atomic instruction counts once, whether it
/// adds one float or a vector of four; `hottestAtomics` is the most atomic
/// instructions that went to one address, which the hardware serializes.
struct LaunchStats {
  int64_t blocks = 0, warps = 0, shuffles = 0;
  int64_t atomics = 0, hottestAtomics = 0;
};

/// The operands of one bucketization kernel, in the order of KernelABI.h's
/// kBucketizeOperands.
template <typename Index> struct BucketizeOperands {
  execution::MemRef1D<int64_t> rows;
  execution::MemRef1D<Index> indices, offsets, blockOffsets, blockIndices;
};

/// The kernels of KernelABI.h, JIT-compiled for emulation.
class EmulatedKernels {
public:
  ~EmulatedKernels();

  /// Emulates the kernels module of `source` (a module holding the
  /// `gpu.module` that `--neuroshard-to-cuda` emits; it is not changed).
  static llvm::Expected<std::unique_ptr<EmulatedKernels>>
  compile(mlir::ModuleOp source, KernelDefect defect = KernelDefect::None);

  /// Generates the kernels with `--neuroshard-to-cuda` (no host code) in
  /// `context` and emulates them.
  static llvm::Expected<std::unique_ptr<EmulatedKernels>>
  compileGenerated(mlir::MLIRContext &context,
                   KernelDefect defect = KernelDefect::None);

  /// Launches kernel `name` on `operands`. Fails on a broken shuffle rule
  /// (naming the block, warp, lanes and shuffle) or on a launch CUDA
  /// refuses, such as a block larger than the kernel's launch bound.
  template <typename Index>
  llvm::Error launch(llvm::StringRef name,
                     execution::KernelOperands<Index> &operands,
                     const LaunchConfig &config, LaunchStats *stats = nullptr);

  /// Launches bucketization kernel `name` (one step) on `operands`.
  template <typename Index>
  llvm::Error
  launchBucketize(llvm::StringRef name, BucketizeOperands<Index> &operands,
                  const LaunchConfig &config, LaunchStats *stats = nullptr);

  /// Launches kernel `name` on `arguments`, one per operand as the JIT's
  /// packed interface takes them: the address of a pointer to a memref's
  /// descriptor, or of a scalar.
  llvm::Error launchPacked(llvm::StringRef name, void **arguments,
                           const LaunchConfig &config,
                           LaunchStats *stats = nullptr);

private:
  EmulatedKernels() = default;

  std::unique_ptr<mlir::ExecutionEngine> engine;
  /// Each kernel's launch bound (`nvvm.maxntid`), where it has one.
  llvm::StringMap<int64_t> maxThreads;
};

/// Packs `operands` as KernelABI.h orders them and launches.
template <typename Index>
llvm::Error EmulatedKernels::launch(llvm::StringRef name,
                                    execution::KernelOperands<Index> &operands,
                                    const LaunchConfig &config,
                                    LaunchStats *stats) {
  execution::PackedKernelArguments<Index> packed(operands);
  return launchPacked(name, packed.arguments, config, stats);
}

template <typename Index>
llvm::Error EmulatedKernels::launchBucketize(llvm::StringRef name,
                                             BucketizeOperands<Index> &operands,
                                             const LaunchConfig &config,
                                             LaunchStats *stats) {
  void *descriptors[] = {&operands.rows, &operands.indices, &operands.offsets,
                         &operands.blockOffsets, &operands.blockIndices};
  static_assert(std::size(descriptors) == kernel_abi::kBucketizeNumOperands);
  void *arguments[std::size(descriptors)];
  for (size_t i = 0; i < std::size(descriptors); ++i)
    arguments[i] = &descriptors[i];
  return launchPacked(name, arguments, config, stats);
}

} // namespace emulation
} // namespace neuroshard

#endif // NEUROSHARD_EMULATION_SIMTEMULATOR_H
