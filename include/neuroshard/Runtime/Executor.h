//===- Executor.h - Compile and run NeuroShard modules on the CPU -*- C++
//-*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What `neuroshard-run` and cost-data collection execute with:
//
// * `analyzeModel` reads a NeuroShard module (sharded or not) before it is
//   lowered: its tables, which function arguments are which lookup's indices
//   and offsets, and every lookup's shards.
// * `ModelData` holds what a run feeds the model: the weight arena (tables
//   in module order, optionally capped to a number of rows), the generated
//   indices and offsets of every lookup, and output gradients.
// * `CompiledModel` lowers a module with `--neuroshard-to-cpu` (or, for a
//   CUDA GPU, `--neuroshard-cuda-pipeline`), JIT-compiles the host code
//   with MLIR's ExecutionEngine, and runs the entry function (forward) and
//   the generic backward-SGD kernel per lookup.
// * `CPUKernels` compiles only the generic kernels and calls them on shard
//   sets given at run time, so any number of sets is timed with one
//   compilation.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_EXECUTOR_H
#define NEUROSHARD_RUNTIME_EXECUTOR_H

#include "neuroshard/Runtime/InputGenerator.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace neuroshard {
namespace runtime {

/// Allocates `bytes` for a weight arena: on a cache-line (64-byte) boundary,
/// so that rows whose size is a multiple of 64 bytes start on a line and the
/// kernels' wide vector loads of a row do not straddle two lines each; from
/// kHugePageBytes up, on a huge-page boundary with transparent huge pages
/// requested (Linux), so that random row gathers over large tables miss the
/// TLB far less often. Release with `freeArena(p, bytes)`.
void *allocateArena(size_t bytes);
void freeArena(void *p, size_t bytes);
constexpr size_t kHugePageBytes = size_t(2) << 20;

template <typename T> struct ArenaAllocator {
  using value_type = T;
  ArenaAllocator() = default;
  template <typename U> ArenaAllocator(const ArenaAllocator<U> &) {}
  T *allocate(size_t n) {
    return static_cast<T *>(allocateArena(n * sizeof(T)));
  }
  void deallocate(T *p, size_t n) { freeArena(p, n * sizeof(T)); }
  template <typename U> bool operator==(const ArenaAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const ArenaAllocator<U> &) const {
    return false;
  }
};

/// A weight arena.
using WeightVector = std::vector<float, ArenaAllocator<float>>;

/// A table as the runtime sees it.
struct TableInfo {
  inputs::TableStats stats; // name, rows, dim, pooling factor, histogram
  bool hasStatistics = false;
};

/// One shard of a lookup: columns [colBegin, colBegin + width) of a table,
/// pooled with `mode` (KernelABI.h) over the bags of input pair `pair`.
struct ShardRef {
  int64_t table = 0;
  int64_t colBegin = 0;
  int64_t width = 0;
  int64_t mode = 0;
  unsigned pair = 0;
};

/// One lookup op (embedding_bag or fused_embedding_bag) of the entry.
struct LookupInfo {
  std::vector<ShardRef> shards;
  int64_t batch = 0;
  int64_t width = 0;
};

/// The entry arguments of one lookup input: indices and offsets.
struct InputPair {
  unsigned indicesArg = 0;
  unsigned offsetsArg = 0;
  int64_t table = 0;
  int64_t batch = 0;
  bool indicesAreI32 = false;
};

struct ModelInfo {
  std::string entry;
  unsigned numArguments = 0;
  std::vector<TableInfo> tables;
  std::vector<InputPair> pairs;
  std::vector<LookupInfo> lookups;
  /// Static shapes of the entry's results (all 2-D f32).
  std::vector<std::vector<int64_t>> resultShapes;
};

/// Reads `module` before lowering. `entry` empty means the module's only
/// public function. Errors name the function, argument or op at fault.
llvm::Expected<ModelInfo> analyzeModel(mlir::ModuleOp module,
                                       llvm::StringRef entry);

/// Checks that two models can be compared: same tables, arguments and
/// result shapes.
llvm::Error checkComparable(const ModelInfo &a, const ModelInfo &b);

/// The data of a run.
struct ModelData {
  /// Rows allocated per table (the table's rows, or the cap).
  std::vector<int64_t> allocatedRows;
  std::vector<int64_t> layout;
  WeightVector weights;
  /// Per input pair: generated indices and offsets (i64), and i32 copies
  /// for pairs whose arguments are i32.
  std::vector<inputs::LookupInputs> inputs;
  std::vector<std::vector<int32_t>> indices32, offsets32;
  /// Per lookup: its output gradient (batch x width, row-major).
  std::vector<std::vector<float>> gradients;
};

struct DataOptions {
  uint64_t seed = 0;
  /// Cap on the rows allocated per table (0: no cap).
  int64_t maxRows = 0;
  /// Refuse to allocate a weight arena larger than this.
  uint64_t maxWeightBytes = uint64_t(16) << 30;
};

/// Generates weights, inputs and gradients for `info` deterministically.
llvm::Expected<ModelData> generateData(const ModelInfo &info,
                                       const DataOptions &options);

/// Replaces the generated lookup inputs with given ones: `arguments` maps
/// entry argument numbers (as strings) to integer arrays, and must give both
/// the indices and the offsets of every lookup input. Offsets are checked
/// (B + 1 entries from 0, non-decreasing, ending at the number of indices);
/// indices are not (see findOutOfRangeIndex).
llvm::Error replaceInputs(const ModelInfo &info, ModelData &data,
                          const llvm::json::Object &arguments);

/// The first index outside its table's allocated rows, if any:
/// "table 't3' (argument 4), bag 17: index 5003 is outside [0, 5000)".
std::optional<std::string> findOutOfRangeIndex(const ModelInfo &info,
                                               const ModelData &data);

/// Where a compiled model runs.
enum class Target { CPU, CUDA };

struct CompileOptions {
  Target target = Target::CPU;
  /// CUDA: the architecture the kernels are compiled for.
  std::string cudaChip = "sm_90";
  /// CUDA: the shared library with the mgpu* entry points the lowered host
  /// code calls (NeuroShard's libneuroshard_cuda_runtime.so).
  std::string cudaRuntimeLibrary;
};

/// A module lowered for the CPU or a CUDA GPU and JIT-compiled. On CUDA,
/// every kernel call copies its buffers to the device and its result back,
/// so a run's time includes those copies.
class CompiledModel {
public:
  ~CompiledModel();
  /// Lowers a clone of `module` (which `info` describes) and compiles it.
  static llvm::Expected<std::unique_ptr<CompiledModel>>
  compile(mlir::ModuleOp module, const ModelInfo &info,
          const CompileOptions &options = {});

  /// Runs the entry function; `outputs[i]` receives result i (row-major).
  llvm::Error forward(ModelData &data,
                      std::vector<std::vector<float>> &outputs);
  /// Runs the backward-SGD kernel of every lookup with its gradient.
  llvm::Error backward(ModelData &data, float learningRate);

private:
  CompiledModel() = default;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Median, fastest and slowest of timed runs, in ms.
struct Timing {
  double median = 0, min = 0, max = 0;
};

/// Runs `step` `warmup` times, then `iters` (>= 1) times timed, calling
/// `beforeEach` (untimed; e.g. a cache flush) before every run.
Timing timeRuns(unsigned warmup, unsigned iters,
                llvm::function_ref<void()> step,
                llvm::function_ref<void()> beforeEach = {});

/// Element-wise comparison: max |a - b| divided by max |b| (0 when both are
/// empty or all zero).
double maxRelativeDifference(llvm::ArrayRef<float> a, llvm::ArrayRef<float> b);

/// A shard set for direct kernel calls: tables packed one after another in
/// `weights` (row stride = width), all with their own inputs.
struct KernelShard {
  const float *weights = nullptr; // rows x width, row-major
  int64_t rows = 0;
  int64_t width = 0;
  int64_t mode = 0;
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
  WeightVector weights;
  std::vector<float> output, gradient;
};

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
  /// in the arena, returning the arena size the set needs (elements). The
  /// caller owns `set.weights`, so one arena can serve many sets.
  static int64_t packInputs(PreparedSet &set,
                            const std::vector<KernelShard> &shards,
                            int64_t batch, uint64_t gradientSeed,
                            bool indicesAreI32 = false);
  void forward(PreparedSet &set);
  void backward(PreparedSet &set, float learningRate);

private:
  CPUKernels() = default;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void *forwardI32 = nullptr, *forwardI64 = nullptr;
  void *backwardI32 = nullptr, *backwardI64 = nullptr;
};

} // namespace runtime
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_EXECUTOR_H
