//===- CompiledModel.cpp - A NeuroShard module ready to run ---------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/CompiledModel.h"
#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"
#include "neuroshard/Execution/ArenaCaches.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"

using namespace mlir;
using namespace mlir::neuroshard;
using namespace ::neuroshard::execution;
namespace abi = ::neuroshard::kernel_abi;
namespace inputs = ::neuroshard::inputs;

/// Adds `hostName`, a host function of `kernel`'s signature `type` that
/// calls it, and returns its name: the pipeline turns the call into a
/// launch, and the host can call the function.
static StringRef addHostCall(ModuleOp module, StringRef hostName,
                             StringRef kernel, FunctionType type) {
  MLIRContext *ctx = module.getContext();
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(module.getBody());
  Location loc = builder.getUnknownLoc();
  if (!module.lookupSymbol(kernel))
    func::FuncOp::create(builder, loc, kernel, type).setPrivate();
  auto host = func::FuncOp::create(builder, loc, hostName, type);
  host->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  Block *body = host.addEntryBlock();
  builder.setInsertionPointToStart(body);
  func::CallOp::create(builder, loc, kernel, TypeRange{}, body->getArguments());
  func::ReturnOp::create(builder, loc);
  return hostName;
}

struct CompiledModel::Impl {
  ModelInfo info;
  std::unique_ptr<ExecutionEngine> engine;
  PackedFunction backward = nullptr;
  /// CUDA: the launch of the row cache fetch kernel (KernelABI.h), through
  /// which the backward step fetches as the compiled code does.
  PackedFunction deviceFetch = nullptr;
  /// CUDA: the runtime's last failure ("" if none). The lowered host code
  /// cannot return errors, so every run checks it afterwards.
  const char *(*cudaLastError)() = nullptr;
  /// Per lookup: metadata and concatenated inputs for the backward kernel.
  const ModelData *prepared = nullptr;
  uint64_t preparedVersion = 0;
  std::vector<abi::PackedShardSet<int64_t>> lookups;
  /// The caches of the shards in host memory, bound to `cached`'s arena
  /// (ArenaCaches.h), which the compiled code and the backward fetch
  /// through.
  ArenaCaches caches;
  const ModelData *cached = nullptr;

  /// Makes the caches those of `data` and the ones compiled code calls.
  void useCaches(ModelData &data) {
    if (cached != &data) {
      caches.bind(info, data);
      cached = &data;
    }
    ArenaCaches::current() = &caches;
  }

  /// The first failure of a fetch since the last check (callers name the
  /// step).
  llvm::Error checkCaches() {
    if (std::optional<std::string> error = caches.takeError())
      return llvm::createStringError(*error);
    return llvm::Error::success();
  }

  /// CUDA: runs the global constructors (which load the kernels onto the
  /// device) once, before the first run rather than at compile time, so that
  /// a module compiles on a machine without a GPU.
  void initializeDevice() {
    if (cudaLastError)
      engine->initialize();
  }

  llvm::Error checkDevice(const char *step) {
    if (!cudaLastError || !*cudaLastError())
      return llvm::Error::success();
    return llvm::createStringError(llvm::Twine(step) +
                                   " on CUDA failed: " + cudaLastError());
  }
};

CompiledModel::~CompiledModel() {
  // Compiled code of another model must not fetch through these caches.
  if (impl && ArenaCaches::current() == &impl->caches)
    ArenaCaches::current() = nullptr;
}

llvm::Expected<std::unique_ptr<CompiledModel>>
CompiledModel::compile(ModuleOp module, const ModelInfo &info,
                       const CompileOptions &options) {
  OwningOpRef<ModuleOp> clone(module.clone());
  auto func = clone->lookupSymbol<func::FuncOp>(info.entry);
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(module.getContext()));
  if (!info.backwardEntry.empty())
    if (auto backward = clone->lookupSymbol<func::FuncOp>(info.backwardEntry))
      backward->setAttr("llvm.emit_c_interface",
                        UnitAttr::get(module.getContext()));
  // The backward kernel is called from the host. On the CPU the kernel
  // itself is a host function; on CUDA a host function calls it, and the
  // pipeline turns that call into a launch.
  StringRef backwardName = abi::kBackwardI64, fetchName;
  if (options.target == Target::CUDA) {
    MLIRContext *ctx = module.getContext();
    backwardName = addHostCall(
        *clone, "neuroshard_run_backward_i64", abi::kBackwardI64,
        FunctionType::get(ctx,
                          embeddingKernelOperandTypes(ctx, abi::kBackwardI64,
                                                      /*isBackward=*/true),
                          {}));
    fetchName = addHostCall(
        *clone, "neuroshard_run_row_cache_fetch_i64",
        abi::kRowCacheFetchKernelI64,
        FunctionType::get(
            ctx, rowCacheFetchOperandTypes(ctx, abi::kRowCacheFetchKernelI64),
            {}));
  }
  // Shards in host memory are read through their caches, which the
  // compiled code fetches from the run (on CUDA, with the fetch kernel on a
  // copy of the cache's state that the run hands out).
  CompileOptions withCaches = options;
  for (auto &entry : ArenaCaches::entryPoints())
    withCaches.hostSymbols.push_back(entry);
  auto engine = lowerAndCompile(*clone, withCaches);
  if (!engine)
    return engine.takeError();
  std::unique_ptr<CompiledModel> model(new CompiledModel());
  model->impl = std::make_unique<Impl>();
  model->impl->info = info;
  model->impl->engine = std::move(*engine);
  auto backward = lookupPacked(*model->impl->engine, backwardName);
  if (!backward)
    return backward.takeError();
  model->impl->backward = *backward;
  if (options.target == Target::CUDA) {
    auto fetch = lookupPacked(*model->impl->engine, fetchName);
    if (!fetch)
      return fetch.takeError();
    model->impl->deviceFetch = *fetch;
    auto lastError = model->impl->engine->lookup("neuroshardCudaLastError");
    if (!lastError)
      return lastError.takeError();
    model->impl->cudaLastError =
        reinterpret_cast<const char *(*)()>(*lastError);
  }
  return model;
}

namespace {

/// The descriptors of an entry's arguments: its lookup inputs (empty ones
/// for arguments no lookup of this program reads), in argument order,
/// kept at fixed addresses for the call.
struct InputDescriptors {
  std::vector<MemRef1D<int64_t>> desc64;
  std::vector<MemRef1D<int32_t>> desc32;
  std::vector<int64_t> nothing;
  MemRef1D<int64_t> unused;
  std::vector<void *> descriptors;

  InputDescriptors(const ModelInfo &info, ModelData &data)
      : descriptors(info.numArguments, nullptr) {
    desc64.reserve(info.numArguments);
    desc32.reserve(info.numArguments);
    // Offsets follow the element type of their indices (embedding_bag
    // requires it; fused entries are built from such pairs).
    for (size_t p = 0; p < info.pairs.size(); ++p) {
      const InputPair &pair = info.pairs[p];
      if (pair.indicesAreI32) {
        desc32.push_back(memref1D(data.indices32[p]));
        descriptors[pair.indicesArg] = &desc32.back();
        desc32.push_back(memref1D(data.offsets32[p]));
        descriptors[pair.offsetsArg] = &desc32.back();
      } else {
        desc64.push_back(memref1D(data.inputs[p].indices));
        descriptors[pair.indicesArg] = &desc64.back();
        desc64.push_back(memref1D(data.inputs[p].offsets));
        descriptors[pair.offsetsArg] = &desc64.back();
      }
    }
    unused = memref1D(nothing);
    for (void *&d : descriptors)
      if (!d)
        d = &unused;
  }
  InputDescriptors(const InputDescriptors &) = delete;
  InputDescriptors &operator=(const InputDescriptors &) = delete;
};

} // namespace

llvm::Error CompiledModel::forward(ModelData &data,
                                   std::vector<std::vector<float>> &outputs) {
  const ModelInfo &info = impl->info;
  InputDescriptors in(info, data);
  std::vector<void *> descriptors = in.descriptors;
  MemRef1D<float> weights = memref1D(data.weights);
  MemRef1D<int64_t> layout = memref1D(data.layout);
  descriptors.push_back(&weights);
  descriptors.push_back(&layout);
  outputs.resize(info.resultShapes.size());
  std::vector<MemRef2D> outs;
  outs.reserve(info.resultShapes.size());
  for (size_t r = 0; r < info.resultShapes.size(); ++r) {
    int64_t rows = info.resultShapes[r][0], cols = info.resultShapes[r][1];
    outputs[r].assign(static_cast<size_t>(rows * cols), 0.0f);
    outs.push_back(memref2D(outputs[r].data(), rows, cols));
    descriptors.push_back(&outs.back());
  }
  std::vector<void *> args;
  for (void *&d : descriptors)
    args.push_back(&d);
  impl->initializeDevice();
  impl->useCaches(data);
  if (llvm::Error err =
          impl->engine->invokePacked("_mlir_ciface_" + info.entry, args))
    return err;
  if (llvm::Error err = impl->checkCaches())
    return err;
  return impl->checkDevice("forward");
}

llvm::Error
CompiledModel::backwardEntry(ModelData &data,
                             std::vector<std::vector<float>> &resultGradients,
                             float learningRate) {
  const ModelInfo &info = impl->info;
  if (info.backwardEntry.empty())
    return llvm::createStringError(
        "@" + info.entry +
        " has no backward function; build the "
        "rank's program with "
        "--neuroshard-spmd=\"rank=R\" --neuroshard-spmd-backward");
  if (resultGradients.size() != info.resultShapes.size())
    return llvm::createStringError(
        "got " + llvm::Twine(resultGradients.size()) + " gradients for the " +
        llvm::Twine(info.resultShapes.size()) + " results of @" + info.entry);
  // Arguments: the entry's, the results' gradients, the learning rate, then
  // the weight arena and its layout.
  InputDescriptors in(info, data);
  std::vector<void *> descriptors = in.descriptors;
  std::vector<MemRef2D> gradients;
  gradients.reserve(resultGradients.size());
  for (size_t r = 0; r < resultGradients.size(); ++r) {
    int64_t rows = info.resultShapes[r][0], cols = info.resultShapes[r][1];
    if (resultGradients[r].size() != static_cast<size_t>(rows * cols))
      return llvm::createStringError(
          "the gradient of result #" + llvm::Twine(r) + " of @" + info.entry +
          " has " + llvm::Twine(resultGradients[r].size()) +
          " values; expected " + llvm::Twine(rows) + " x " + llvm::Twine(cols));
    gradients.push_back(memref2D(resultGradients[r].data(), rows, cols));
    descriptors.push_back(&gradients.back());
  }
  MemRef1D<float> weights = memref1D(data.weights);
  MemRef1D<int64_t> layout = memref1D(data.layout);
  std::vector<void *> args;
  for (void *&d : descriptors)
    args.push_back(&d);
  args.push_back(&learningRate);
  void *weightsDescriptor = &weights, *layoutDescriptor = &layout;
  args.push_back(&weightsDescriptor);
  args.push_back(&layoutDescriptor);
  impl->initializeDevice();
  impl->useCaches(data);
  if (llvm::Error err = impl->engine->invokePacked(
          "_mlir_ciface_" + info.backwardEntry, args))
    return err;
  if (llvm::Error err = impl->checkCaches())
    return err;
  return impl->checkDevice("backward");
}

/// The part of `in` a shard reads: the indices in its rows of `batch` bags
/// from its first. The arena holds its table whole, so the indices keep
/// their rows.
static inputs::LookupInputs readsOf(const inputs::LookupInputs &in,
                                    const ShardReads &reads, int64_t batch) {
  inputs::LookupInputs part;
  part.offsets.reserve(static_cast<size_t>(batch + 1));
  part.offsets.push_back(0);
  for (int64_t b = reads.firstBag; b < reads.firstBag + batch; ++b) {
    for (int64_t k = in.offsets[b]; k < in.offsets[b + 1]; ++k)
      if (in.indices[k] >= reads.rowBegin && in.indices[k] < reads.rowEnd)
        part.indices.push_back(in.indices[k]);
    part.offsets.push_back(static_cast<int64_t>(part.indices.size()));
  }
  return part;
}

/// Fetches `rows` through cache `piece` into `locations` with the fetch
/// kernel `deviceFetch` on CUDA (KernelABI.h), else on the host.
static void fetchRows(ArenaCaches &caches, PackedFunction deviceFetch,
                      ModelData &data, int64_t piece, int64_t flags,
                      std::vector<int64_t> &rows,
                      std::vector<int64_t> &locations) {
  if (!deviceFetch) {
    caches.fetch(piece, flags, rows.data(), int64_t(rows.size()),
                 locations.data());
    return;
  }
  // The kernel works on the cache's own state: the launch copies it to the
  // device and back.
  std::vector<int64_t> &state =
      caches.beginDeviceFetch(piece, flags, /*indexBits=*/64);
  MemRef1D<int64_t> stateDesc = memref1D(state), rowsDesc = memref1D(rows),
                    locationsDesc = memref1D(locations);
  MemRef1D<float> weightsDesc = memref1D(data.weights);
  void *pointers[] = {&stateDesc, &weightsDesc, &rowsDesc, &locationsDesc};
  void *arguments[] = {&pointers[0], &pointers[1], &pointers[2], &pointers[3],
                       &flags};
  deviceFetch(arguments);
}

/// The backward kernel's shard set of `lookup`, whose shards in host memory
/// update their caches: each such shard's indices, as its local rows, are
/// fetched through its cache (one step per cache, marking the rows dirty),
/// and it reads the cache's virtual table at the locations.
static abi::PackedShardSet<int64_t>
throughCaches(const ModelInfo &info, const LookupInfo &lookup, ModelData &data,
              ArenaCaches &caches, PackedFunction deviceFetch) {
  std::vector<abi::ShardDescriptor> shards = lookup.shards;
  std::vector<inputs::LookupInputs> parts;
  std::vector<int64_t> begun;
  for (size_t s = 0; s < shards.size(); ++s) {
    const inputs::LookupInputs &in = data.inputs[shards[s].input];
    parts.push_back(lookup.distributesRows
                        ? readsOf(in, lookup.reads[s], lookup.batch)
                        : in);
    shards[s].input = s;
    int64_t cache = lookup.caches[s];
    if (cache < 0)
      continue;
    std::vector<int64_t> rows = parts.back().indices;
    int64_t first = info.tables[cache].rowBegin;
    for (int64_t &row : rows)
      row -= first;
    int64_t flags = ::neuroshard::runtime::kRowCacheWrites;
    if (!llvm::is_contained(begun, cache)) {
      begun.push_back(cache);
      flags |= ::neuroshard::runtime::kRowCacheBeginsStep;
    }
    fetchRows(caches, deviceFetch, data, cache, flags, rows,
              parts.back().indices);
    shards[s].table = cache;
  }
  std::vector<const inputs::LookupInputs *> pointers;
  for (const inputs::LookupInputs &part : parts)
    pointers.push_back(&part);
  return abi::packShardSet<int64_t>(shards, pointers);
}

void CompiledModel::flushCaches() { impl->caches.flush(); }

std::vector<std::pair<std::string, ::neuroshard::runtime::RowCacheStats>>
CompiledModel::cacheStats() const {
  return impl->caches.stats();
}

llvm::Error CompiledModel::backward(ModelData &data, float learningRate) {
  const ModelInfo &info = impl->info;
  if (data.gradients.size() != info.lookups.size())
    return llvm::createStringError("the data holds gradients for " +
                                   llvm::Twine(data.gradients.size()) +
                                   " lookups but @" + info.entry + " has " +
                                   llvm::Twine(info.lookups.size()));
  for (size_t l = 0; l < info.lookups.size(); ++l)
    if (data.gradients[l].size() !=
        static_cast<size_t>(info.lookups[l].batch * info.lookups[l].width))
      return llvm::createStringError("the gradient of lookup " +
                                     llvm::Twine(l) +
                                     " has the wrong size for @" + info.entry);
  if (impl->prepared != &data || impl->preparedVersion != data.inputsVersion) {
    // The model's arena keeps every table whole; the shards already say so.
    std::vector<const inputs::LookupInputs *> pairs;
    for (const inputs::LookupInputs &in : data.inputs)
      pairs.push_back(&in);
    impl->lookups.clear();
    for (const LookupInfo &lookup : info.lookups) {
      // A lookup with caches packs its set at every step (throughCaches).
      if (!lookup.caches.empty()) {
        impl->lookups.emplace_back();
        continue;
      }
      if (!lookup.distributesRows) {
        impl->lookups.push_back(
            abi::packShardSet<int64_t>(lookup.shards, pairs));
        continue;
      }
      // Each shard updates with what it read in the forward: a row piece
      // the indices of its rows, a replica its slice of the bags.
      std::vector<abi::ShardDescriptor> shards = lookup.shards;
      std::vector<inputs::LookupInputs> parts;
      for (size_t s = 0; s < shards.size(); ++s) {
        parts.push_back(readsOf(data.inputs[shards[s].input], lookup.reads[s],
                                lookup.batch));
        shards[s].input = s;
      }
      std::vector<const inputs::LookupInputs *> partPointers;
      for (const inputs::LookupInputs &part : parts)
        partPointers.push_back(&part);
      impl->lookups.push_back(abi::packShardSet<int64_t>(shards, partPointers));
    }
    impl->prepared = &data;
    impl->preparedVersion = data.inputsVersion;
  }
  impl->initializeDevice();
  impl->useCaches(data);
  KernelOperands<int64_t> operands;
  operands.layout = memref1D(data.layout);
  operands.weights = memref1D(data.weights);
  operands.lr = learningRate;
  for (size_t l = 0; l < info.lookups.size(); ++l) {
    abi::PackedShardSet<int64_t> cachedSet;
    if (!info.lookups[l].caches.empty()) {
      cachedSet = throughCaches(info, info.lookups[l], data, impl->caches,
                                impl->deviceFetch);
      if (llvm::Error err = impl->checkCaches())
        return err;
    }
    abi::PackedShardSet<int64_t> &set =
        info.lookups[l].caches.empty() ? impl->lookups[l] : cachedSet;
    operands.meta = memref1D(set.layout.meta);
    operands.indices = memref1D(set.indices);
    operands.offsets = memref1D(set.offsets);
    operands.out = memref2D(data.gradients[l].data(), info.lookups[l].batch,
                            info.lookups[l].width);
    callKernel(impl->backward, operands, /*isBackward=*/true);
    if (llvm::Error err = impl->checkDevice("backward"))
      return err;
  }
  return llvm::Error::success();
}
