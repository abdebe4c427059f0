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
               std::vector<float> &out, bool isBackward, float learningRate) {
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

void ::neuroshard::execution::adoptPackedSet(
    PreparedSet &set, abi::PackedShardSet<int64_t> packed, int64_t batch,
    bool indicesAreI32) {
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
  set.output.assign(static_cast<size_t>(batch * set.width), 0.0f);
  set.gradient.resize(set.output.size());
}

int64_t CPUKernels::packInputs(PreparedSet &set,
                               const std::vector<KernelShard> &shards,
                               int64_t batch, uint64_t gradientSeed,
                               bool indicesAreI32) {
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
    set.layout.push_back(arena);
    arena += shards[s].rows * shards[s].width;
  }
  adoptPackedSet(set, abi::packShardSet<int64_t>(descriptors, pairs), batch,
                 indicesAreI32);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < set.width; ++c)
      set.gradient[b * set.width + c] =
          inputs::gradientValue(gradientSeed, b, c);
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
    callOnSet(forwardI32, set, set.indices32, set.offsets32, set.output,
              /*isBackward=*/false, 0.0f);
  else
    callOnSet(forwardI64, set, set.indices, set.offsets, set.output,
              /*isBackward=*/false, 0.0f);
}

void CPUKernels::backward(PreparedSet &set, float learningRate) {
  if (set.indicesAreI32)
    callOnSet(backwardI32, set, set.indices32, set.offsets32, set.gradient,
              /*isBackward=*/true, learningRate);
  else
    callOnSet(backwardI64, set, set.indices, set.offsets, set.gradient,
              /*isBackward=*/true, learningRate);
}
