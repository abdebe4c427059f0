//===- CPUKernelCalls.cpp - Generic kernels called on shard sets ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"

#include <algorithm>
#include <cassert>

using namespace mlir;
using namespace mlir::neuroshard;
using namespace ::neuroshard::execution;
namespace abi = ::neuroshard::kernel_abi;
namespace inputs = ::neuroshard::inputs;

namespace {

/// Calls `kernel` on `set` with the given index buffers and `out` as its
/// matrix operand (the output or the gradient).
template <typename Index>
void callOnSet(PackedFunction kernel, PreparedSet &set,
               std::vector<Index> &indices, std::vector<Index> &offsets,
               MutableArrayRef<float> out, bool isBackward,
               float learningRate) {
  KernelOperands<Index> operands;
  operands.meta = memref1D(set.meta);
  operands.layout = memref1D(set.layout);
  operands.weights = set.sharedWeights.empty() ? memref1D(set.weights)
                                               : memref1D(set.sharedWeights);
  operands.indices = memref1D(indices);
  operands.offsets = memref1D(offsets);
  operands.out = memref2D(out.data(), set.batch, set.width);
  operands.lr = learningRate;
  callKernel(kernel, operands, isBackward);
}

/// The output and the gradient the kernels use: the lent ones where lent.
MutableArrayRef<float> outputOf(PreparedSet &set) {
  return set.sharedOutput.empty() ? MutableArrayRef<float>(set.output)
                                  : set.sharedOutput;
}
MutableArrayRef<float> gradientOf(PreparedSet &set) {
  return set.sharedGradient.empty() ? MutableArrayRef<float>(set.gradient)
                                    : set.sharedGradient;
}

} // namespace

CPUKernels::~CPUKernels() = default;

llvm::Expected<std::unique_ptr<CPUKernels>> CPUKernels::compile() {
  static MLIRContext context;
  static bool loaded = [] {
    context.loadDialect<NeuroShardDialect, func::FuncDialect>();
    return true;
  }();
  (void)loaded;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  auto engine = lowerAndCompile(*module);
  if (!engine)
    return engine.takeError();
  std::unique_ptr<CPUKernels> kernels(new CPUKernels());
  kernels->engine = std::move(*engine);
  PackedFunction *slots[] = {&kernels->forwardI32, &kernels->forwardI64,
                             &kernels->backwardI32, &kernels->backwardI64};
  const char *names[] = {abi::kForwardI32, abi::kForwardI64, abi::kBackwardI32,
                         abi::kBackwardI64};
  for (int i = 0; i < 4; ++i) {
    auto fn = lookupPacked(*kernels->engine, names[i]);
    if (!fn)
      return fn.takeError();
    *slots[i] = *fn;
  }
  return kernels;
}

namespace {
/// adoptPackedSet without the output and the gradient.
void adoptPackedIndices(PreparedSet &set, abi::PackedShardSet<int64_t> packed,
                        int64_t batch, bool indicesAreI32) {
  set.batch = batch;
  set.width = packed.layout.width;
  set.indicesAreI32 = indicesAreI32;
  set.meta = std::move(packed.layout.meta);
  set.indices = std::move(packed.indices);
  set.offsets = std::move(packed.offsets);
  if (indicesAreI32) {
    set.indices32.assign(set.indices.begin(), set.indices.end());
    set.offsets32.assign(set.offsets.begin(), set.offsets.end());
  }
}
} // namespace

void ::neuroshard::execution::adoptPackedSet(
    PreparedSet &set, abi::PackedShardSet<int64_t> packed, int64_t batch,
    bool indicesAreI32) {
  adoptPackedIndices(set, std::move(packed), batch, indicesAreI32);
  set.output.assign(static_cast<size_t>(batch * set.width), 0.0f);
  set.gradient.resize(set.output.size());
}

int64_t CPUKernels::packIndices(PreparedSet &set,
                                const std::vector<KernelShard> &shards,
                                int64_t batch, bool indicesAreI32,
                                int64_t tableAlignment) {
  assert(tableAlignment > 0 && "table bases align to a positive count");
  // Every shard is its own table and pools over its own input pair.
  std::vector<abi::ShardDescriptor> descriptors(shards.size());
  std::vector<const inputs::LookupInputs *> pairs(shards.size());
  set.layout.clear();
  int64_t arena = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    abi::ShardDescriptor &descriptor = descriptors[s];
    descriptor.table = static_cast<int64_t>(s);
    descriptor.rowStride = descriptor.width = shards[s].width;
    descriptor.mode = shards[s].mode;
    descriptor.input = s;
    pairs[s] = shards[s].inputs;
    // By default laid out as a run's arena is (ModelData, LaunchManifest),
    // so that a set times as it runs.
    arena = abi::alignUp(arena, tableAlignment);
    set.layout.push_back(arena);
    arena += shards[s].rows * shards[s].width;
  }
  set.output.clear();
  set.gradient.clear();
  adoptPackedIndices(set, abi::packShardSet<int64_t>(descriptors, pairs), batch,
                     indicesAreI32);
  return arena;
}

void CPUKernels::fillGradient(MutableArrayRef<float> gradient, int64_t batch,
                              int64_t width, uint64_t gradientSeed) {
  assert(gradient.size() >= size_t(batch * width) && "gradient too small");
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < width; ++c)
      gradient[size_t(b * width + c)] =
          inputs::gradientValue(gradientSeed, b, c);
}

int64_t CPUKernels::packInputs(PreparedSet &set,
                               const std::vector<KernelShard> &shards,
                               int64_t batch, uint64_t gradientSeed,
                               bool indicesAreI32, int64_t tableAlignment) {
  int64_t arena =
      packIndices(set, shards, batch, indicesAreI32, tableAlignment);
  set.output.assign(static_cast<size_t>(batch * set.width), 0.0f);
  set.gradient.resize(set.output.size());
  fillGradient(set.gradient, batch, set.width, gradientSeed);
  return arena;
}

PreparedSet CPUKernels::prepare(const std::vector<KernelShard> &shards,
                                int64_t batch, uint64_t gradientSeed,
                                bool indicesAreI32) {
  PreparedSet set;
  int64_t arena = packInputs(set, shards, batch, gradientSeed, indicesAreI32);
  set.weights.resize(static_cast<size_t>(arena));
  for (size_t s = 0; s < shards.size(); ++s)
    std::copy(shards[s].weights,
              shards[s].weights + shards[s].rows * shards[s].width,
              set.weights.begin() + set.layout[s]);
  return set;
}

void CPUKernels::forward(PreparedSet &set) {
  if (set.indicesAreI32)
    callOnSet(forwardI32, set, set.indices32, set.offsets32, outputOf(set),
              /*isBackward=*/false, 0.0f);
  else
    callOnSet(forwardI64, set, set.indices, set.offsets, outputOf(set),
              /*isBackward=*/false, 0.0f);
}

void CPUKernels::backward(PreparedSet &set, float learningRate) {
  if (set.indicesAreI32)
    callOnSet(backwardI32, set, set.indices32, set.offsets32, gradientOf(set),
              /*isBackward=*/true, learningRate);
  else
    callOnSet(backwardI64, set, set.indices, set.offsets, gradientOf(set),
              /*isBackward=*/true, learningRate);
}
