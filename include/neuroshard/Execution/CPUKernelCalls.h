//===- CPUKernelCalls.h - Generic kernels called on shard sets --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Compiles only the generic CPU kernels of KernelABI.h (the IR that
// Conversion/BuildCPUKernels.cpp builds) and calls them on shard sets given
// at run time, so that cost-data collection times any number of sets with
// one compilation.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_CPUKERNELCALLS_H
#define NEUROSHARD_EXECUTION_CPUKERNELCALLS_H

#include "neuroshard/Execution/JIT.h"
#include "neuroshard/Runtime/Arena.h"
#include "neuroshard/Runtime/InputGenerator.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace neuroshard {
namespace execution {

/// A shard set for direct kernel calls: tables packed one after another in
/// `weights` (row stride = width), all with their own inputs.
struct KernelShard {
  const float *weights = nullptr; // rows x width, row-major
  int64_t rows = 0;
  int64_t width = 0;
  int64_t mode = kernel_abi::kSum;
  const inputs::LookupInputs *inputs = nullptr;
};

/// Buffers of one shard set for direct kernel calls: the shards' weights
/// packed into one arena (each shard is its own table, row stride = width),
/// concatenated indices and offsets, metadata, output and gradient.
struct PreparedSet {
  int64_t batch = 0;
  int64_t width = 0;
  bool indicesAreI32 = false;
  std::vector<int64_t> layout, meta, indices, offsets;
  std::vector<int32_t> indices32, offsets32;
  runtime::WeightVector weights;
  /// Where not empty, the weights the kernels use instead of `weights`:
  /// part of an arena the caller owns and lends to many sets.
  llvm::MutableArrayRef<float> sharedWeights;
  std::vector<float> output, gradient;
  /// Where not empty, the output and the gradient the kernels use instead
  /// of `output` and `gradient` (batch x width elements each): buffers the
  /// caller owns and lends to many sets, as it does the weights.
  llvm::MutableArrayRef<float> sharedOutput, sharedGradient;
};

/// Makes `set` the buffers of `packed` for a batch of `batch` bags: its
/// metadata, indices and offsets (with i32 copies when `indicesAreI32`), a
/// zeroed output and a gradient of the output's size. The weights, the
/// layout and the gradient's values are the caller's.
void adoptPackedSet(PreparedSet &set,
                    kernel_abi::PackedShardSet<int64_t> packed, int64_t batch,
                    bool indicesAreI32);

/// The generic kernels alone, compiled once and called on shard sets that
/// are only known at run time.
class CPUKernels {
public:
  ~CPUKernels();
  static llvm::Expected<std::unique_ptr<CPUKernels>> compile();

  /// Packs `shards` for a batch of `batch` bags (every shard's inputs must
  /// have batch + 1 offsets); gradients are drawn with `gradientSeed`.
  static PreparedSet prepare(const std::vector<KernelShard> &shards,
                             int64_t batch, uint64_t gradientSeed,
                             bool indicesAreI32 = false);
  /// Everything `prepare` does except the weights: resets `set` for
  /// `shards` (whose `weights` are not read) and lays out each shard's rows
  /// in the arena, in order, each base aligned to `tableAlignment` floats
  /// (a run's arena: kernel_abi::kArenaAlignment), returning the arena size
  /// the set needs (elements). The caller owns `set.weights` (or lends
  /// `set.sharedWeights`), so one arena can serve many sets.
  static int64_t
  packInputs(PreparedSet &set, const std::vector<KernelShard> &shards,
             int64_t batch, uint64_t gradientSeed, bool indicesAreI32 = false,
             int64_t tableAlignment = kernel_abi::kArenaAlignment);
  /// Everything `packInputs` does except the output and the gradient,
  /// which `set` leaves empty: the caller lends `set.sharedOutput` and
  /// `set.sharedGradient`, so that sets that never run at the same time
  /// share them.
  static int64_t
  packIndices(PreparedSet &set, const std::vector<KernelShard> &shards,
              int64_t batch, bool indicesAreI32 = false,
              int64_t tableAlignment = kernel_abi::kArenaAlignment);
  /// Fills `gradient`, batch x width elements row-major, with the values
  /// `packInputs` draws with `gradientSeed`.
  static void fillGradient(llvm::MutableArrayRef<float> gradient, int64_t batch,
                           int64_t width, uint64_t gradientSeed);
  void forward(PreparedSet &set);
  void backward(PreparedSet &set, float learningRate);

private:
  CPUKernels() = default;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  PackedFunction forwardI32 = nullptr, forwardI64 = nullptr;
  PackedFunction backwardI32 = nullptr, backwardI64 = nullptr;
};

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_CPUKERNELCALLS_H
