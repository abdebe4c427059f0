//===- Executor.cpp - Compile and run NeuroShard modules on the CPU -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/Executor.h"
#include "neuroshard/Conversion/LookupLowering.h"
#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"
#include "neuroshard/Conversion/Passes.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/Statistics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#if defined(__linux__)
#include <sys/mman.h>
#endif

using namespace mlir;
using namespace mlir::neuroshard;
using namespace ::neuroshard::runtime;
namespace abi = ::neuroshard::kernel_abi;
namespace inputs = ::neuroshard::inputs;
namespace rt = ::neuroshard::runtime;

void *rt::allocateArena(size_t bytes) {
  if (bytes < kHugePageBytes)
    return ::operator new (bytes, std::align_val_t{64});
  void *p = ::operator new (bytes, std::align_val_t{kHugePageBytes});
#if defined(MADV_HUGEPAGE)
  // Advice only: where transparent huge pages are off, the arena keeps
  // normal pages.
  (void)::madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void rt::freeArena(void *p, size_t bytes) {
  ::operator delete (
      p,
      std::align_val_t{bytes < kHugePageBytes ? size_t(64) : kHugePageBytes});
}

namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

template <typename T> using Desc1 = StridedMemRefType<T, 1>;
using Desc2 = StridedMemRefType<float, 2>;

template <typename T, typename Allocator>
Desc1<T> desc1(std::vector<T, Allocator> &v) {
  Desc1<T> d;
  d.basePtr = d.data = v.data();
  d.offset = 0;
  d.sizes[0] = static_cast<int64_t>(v.size());
  d.strides[0] = 1;
  return d;
}

Desc2 desc2(std::vector<float> &v, int64_t rows, int64_t cols) {
  Desc2 d;
  d.basePtr = d.data = v.data();
  d.offset = 0;
  d.sizes[0] = rows;
  d.sizes[1] = cols;
  d.strides[0] = cols;
  d.strides[1] = 1;
  return d;
}

template <typename I>
using ForwardFn = void (*)(Desc1<int64_t> *, Desc1<int64_t> *, Desc1<float> *,
                           Desc1<I> *, Desc1<I> *, Desc2 *);
template <typename I>
using BackwardFn = void (*)(Desc1<int64_t> *, Desc1<int64_t> *, Desc1<float> *,
                            Desc1<I> *, Desc1<I> *, Desc2 *, float);

/// Collects the diagnostics of a failing pass pipeline into one message.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(messages);
          if (!messages.empty())
            os << "\n";
          os << diag.getLocation() << ": " << diag;
          return success();
        }) {}
  std::string messages;

private:
  ScopedDiagnosticHandler handler;
};

/// Lowers `module` in place with --neuroshard-to-cpu (or, for CUDA,
/// --neuroshard-cuda-pipeline) and JIT-compiles its host code.
llvm::Expected<std::unique_ptr<ExecutionEngine>>
lowerAndCompile(ModuleOp module, const CompileOptions &compileOptions = {}) {
  MLIRContext *ctx = module.getContext();
  bool cuda = compileOptions.target == Target::CUDA;
  if (cuda) {
    DialectRegistry registry;
    registerAllGPUToLLVMIRTranslations(registry);
    ctx->appendDialectRegistry(registry);
  }
  {
    DiagnosticCollector diagnostics(ctx);
    PassManager pm(ctx);
    if (cuda) {
      CUDAPipelineOptions cudaOptions;
      cudaOptions.chip = compileOptions.cudaChip;
      std::string why = buildCUDAPipeline(pm, cudaOptions);
      if (!why.empty())
        return makeError("cannot lower for CUDA: " + why);
    } else {
      buildNeuroShardToCPUPipeline(pm);
    }
    if (failed(pm.run(module)))
      return makeError(llvm::Twine("lowering to ") +
                       (cuda ? "CUDA" : "the CPU") + " failed:\n" +
                       diagnostics.messages);
  }
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);

  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto machine = builder->createTargetMachine();
  if (!machine)
    return machine.takeError();
  auto transformer = makeOptimizingTransformer(3, 0, machine->get());
  ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  llvm::SmallVector<llvm::StringRef, 1> libraries;
  if (cuda) {
    if (!llvm::sys::fs::exists(compileOptions.cudaRuntimeLibrary))
      return makeError("NeuroShard's CUDA runtime library '" +
                       compileOptions.cudaRuntimeLibrary + "' does not exist");
    libraries.push_back(compileOptions.cudaRuntimeLibrary);
    options.sharedLibPaths = libraries;
  }
  DiagnosticCollector diagnostics(ctx);
  auto engine = ExecutionEngine::create(module, options, std::move(*machine));
  if (!engine)
    return llvm::joinErrors(engine.takeError(),
                            makeError(diagnostics.messages));
  return std::move(*engine);
}

/// Adds `neuroshard_run_backward_i64`, a host function with the backward
/// kernel's signature that calls it, and returns its name.
StringRef addBackwardHostCall(ModuleOp module) {
  static constexpr llvm::StringLiteral kName = "neuroshard_run_backward_i64";
  MLIRContext *ctx = module.getContext();
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(module.getBody());
  Location loc = builder.getUnknownLoc();
  auto type = builder.getFunctionType(
      embeddingKernelOperandTypes(ctx, abi::kBackwardI64, /*isBackward=*/true),
      {});
  if (!module.lookupSymbol(abi::kBackwardI64)) {
    auto kernel = func::FuncOp::create(builder, loc, abi::kBackwardI64, type);
    kernel.setPrivate();
  }
  auto host = func::FuncOp::create(builder, loc, kName, type);
  host->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  Block *body = host.addEntryBlock();
  builder.setInsertionPointToStart(body);
  func::CallOp::create(builder, loc, abi::kBackwardI64, TypeRange{},
                       body->getArguments());
  func::ReturnOp::create(builder, loc);
  return kName;
}

llvm::Expected<void *> lookupKernel(ExecutionEngine &engine,
                                    llvm::StringRef name) {
  auto fn = engine.lookup((llvm::Twine("_mlir_ciface_") + name).str());
  if (!fn)
    return fn.takeError();
  return *fn;
}

int64_t modeOf(PoolingMode mode) {
  return mode == PoolingMode::Mean ? int64_t(abi::kMean) : int64_t(abi::kSum);
}

/// Builds the metadata and concatenated inputs of one lookup over the
/// model's arena (tables keep their full row stride).
void buildLookupBuffers(const ModelInfo &info, const ModelData &data,
                        const LookupInfo &lookup, std::vector<int64_t> &meta,
                        std::vector<int64_t> &indices,
                        std::vector<int64_t> &offsets) {
  std::map<unsigned, std::pair<int64_t, int64_t>> bases; // pair -> bases
  meta.clear();
  indices.clear();
  offsets.clear();
  int64_t outColumn = 0;
  for (const ShardRef &shard : lookup.shards) {
    auto it = bases.find(shard.pair);
    if (it == bases.end()) {
      const inputs::LookupInputs &in = data.inputs[shard.pair];
      it = bases
               .insert({shard.pair,
                        {static_cast<int64_t>(indices.size()),
                         static_cast<int64_t>(offsets.size())}})
               .first;
      indices.insert(indices.end(), in.indices.begin(), in.indices.end());
      offsets.insert(offsets.end(), in.offsets.begin(), in.offsets.end());
    }
    int64_t fields[abi::kShardFields] = {
        shard.table,       info.tables[shard.table].stats.dim,
        shard.colBegin,    shard.width,
        outColumn,         it->second.first,
        it->second.second, shard.mode};
    meta.insert(meta.end(), fields, fields + abi::kShardFields);
    outColumn += shard.width;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

llvm::Expected<ModelInfo> rt::analyzeModel(ModuleOp module,
                                           llvm::StringRef entry) {
  ModelInfo info;
  llvm::DenseMap<llvm::StringRef, int64_t> ordinals;
  for (TableOp table : module.getOps<TableOp>()) {
    if (!table.getElementType().isF32())
      return makeError("table '" + table.getSymName() +
                       "' has a non-f32 element type; only f32 tables "
                       "execute");
    TableInfo t;
    t.stats.name = table.getSymName().str();
    t.stats.rows = table.getNumRows();
    t.stats.dim = table.getNumCols();
    if (table.hasCostStatistics()) {
      t.hasStatistics = true;
      t.stats.poolingFactor = *table.getPoolingFactorValue();
      llvm::ArrayRef<double> hist = *table.getAccessHist();
      for (unsigned j = 0; j < inputs::kNumHistogramBins && j < hist.size();
           ++j)
        t.stats.accessHist[j] = hist[j];
    }
    ordinals[table.getSymName()] = static_cast<int64_t>(info.tables.size());
    info.tables.push_back(t);
  }

  func::FuncOp func;
  if (entry.empty()) {
    llvm::SmallVector<func::FuncOp> candidates;
    for (func::FuncOp f : module.getOps<func::FuncOp>())
      if (f.isPublic() && !f.isExternal())
        candidates.push_back(f);
    if (candidates.size() != 1) {
      std::string names;
      for (func::FuncOp f : candidates)
        names += (names.empty() ? "@" : ", @") + f.getSymName().str();
      return makeError("the module has " + llvm::Twine(candidates.size()) +
                       " public functions" +
                       (names.empty() ? "" : " (" + names + ")") +
                       "; name the one to run with --entry");
    }
    func = candidates.front();
  } else {
    func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func || func.isExternal())
      return makeError("the module has no function @" + entry + " with a body");
  }
  info.entry = func.getSymName().str();
  info.numArguments = func.getNumArguments();
  std::string where = "@" + info.entry;

  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() != 2 || !tensor.hasStaticShape() ||
        !tensor.getElementType().isF32()) {
      std::string text;
      llvm::raw_string_ostream(text) << type;
      return makeError("result #" + llvm::Twine(i) + " of " + where +
                       " has type " + text +
                       "; results must be static 2-D f32 tensors");
    }
    info.resultShapes.push_back({tensor.getDimSize(0), tensor.getDimSize(1)});
  }

  // Input pairs, keyed by argument numbers.
  std::map<std::pair<unsigned, unsigned>, unsigned> pairIds;
  std::vector<std::vector<ShardRef>> lookupShards;
  std::vector<int64_t> lookupBatch;
  llvm::Error failure = llvm::Error::success();
  auto argNumber = [&](Value v, llvm::StringRef what,
                       Operation *op) -> std::optional<unsigned> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner() == &func.getBody().front())
      return arg.getArgNumber();
    std::string name = op->getName().getStringRef().str();
    failure = makeError("the " + what + " of a " + name + " in " + where +
                        " are not a function argument; neuroshard-run "
                        "generates lookup inputs for arguments only");
    return std::nullopt;
  };
  auto addShard = [&](Operation *op, llvm::StringRef table, int64_t colBegin,
                      int64_t width, int64_t mode, Value indices, Value offsets,
                      std::vector<ShardRef> &shards) -> bool {
    auto idx = argNumber(indices, "indices", op);
    if (!idx)
      return false;
    auto off = argNumber(offsets, "offsets", op);
    if (!off)
      return false;
    auto offType = cast<RankedTensorType>(offsets.getType());
    if (!offType.hasStaticShape()) {
      failure =
          makeError("offsets argument #" + llvm::Twine(*off) + " of " + where +
                    " has a dynamic size; the batch size must "
                    "be static");
      return false;
    }
    auto key = std::make_pair(*idx, *off);
    auto it = pairIds.find(key);
    int64_t tableOrdinal = ordinals.lookup(table);
    if (it == pairIds.end()) {
      InputPair pair;
      pair.indicesArg = *idx;
      pair.offsetsArg = *off;
      pair.table = tableOrdinal;
      pair.batch = offType.getDimSize(0) - 1;
      pair.indicesAreI32 = cast<RankedTensorType>(indices.getType())
                               .getElementType()
                               .isInteger(32);
      it =
          pairIds.insert({key, static_cast<unsigned>(info.pairs.size())}).first;
      info.pairs.push_back(pair);
    } else if (info.pairs[it->second].table != tableOrdinal) {
      failure = makeError("arguments #" + llvm::Twine(*idx) + " and #" +
                          llvm::Twine(*off) + " of " + where +
                          " feed lookups of two tables ('" +
                          info.tables[info.pairs[it->second].table].stats.name +
                          "' and '" + table + "')");
      return false;
    }
    shards.push_back({tableOrdinal, colBegin, width, mode, it->second});
    return true;
  };

  func.walk([&](Operation *op) {
    if (failure)
      return WalkResult::interrupt();
    std::vector<ShardRef> shards;
    if (auto bag = dyn_cast<EmbeddingBagOp>(op)) {
      int64_t dim = info.tables[ordinals.lookup(bag.getTable())].stats.dim;
      if (!addShard(op, bag.getTable(), 0, dim, modeOf(bag.getMode()),
                    bag.getIndices(), bag.getOffsets(), shards))
        return WalkResult::interrupt();
    } else if (auto fused = dyn_cast<FusedEmbeddingBagOp>(op)) {
      for (unsigned i = 0; i < fused.getNumEntries(); ++i) {
        auto mode = cast<PoolingModeAttr>(fused.getModes()[i]).getValue();
        if (!addShard(op, fused.getEntryTable(i), fused.getColBegins()[i],
                      fused.getEntryWidth(i), modeOf(mode),
                      fused.getIndices()[i], fused.getOffsets()[i], shards))
          return WalkResult::interrupt();
      }
    } else {
      return WalkResult::advance();
    }
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    LookupInfo lookup;
    lookup.shards = std::move(shards);
    lookup.batch = type.getDimSize(0);
    lookup.width = type.getDimSize(1);
    info.lookups.push_back(std::move(lookup));
    return WalkResult::advance();
  });
  if (failure)
    return std::move(failure);

  // Renumber pairs by argument order so that a model and its sharded form
  // (same signature, lookups in another order) agree.
  std::vector<unsigned> order(info.pairs.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    return info.pairs[a].indicesArg < info.pairs[b].indicesArg;
  });
  std::vector<unsigned> renumber(order.size());
  std::vector<InputPair> sorted;
  for (unsigned i = 0; i < order.size(); ++i) {
    renumber[order[i]] = i;
    sorted.push_back(info.pairs[order[i]]);
  }
  info.pairs = std::move(sorted);
  for (LookupInfo &lookup : info.lookups)
    for (ShardRef &shard : lookup.shards)
      shard.pair = renumber[shard.pair];

  std::vector<int> role(info.numArguments, 0);
  for (const InputPair &pair : info.pairs) {
    if (role[pair.indicesArg] == 2 || role[pair.offsetsArg] == 1)
      return makeError("argument #" + llvm::Twine(pair.indicesArg) + " of " +
                       where + " is used both as indices and as offsets");
    role[pair.indicesArg] = 1;
    role[pair.offsetsArg] = 2;
  }
  for (unsigned i = 0; i < info.numArguments; ++i)
    if (role[i] == 0) {
      std::string text;
      llvm::raw_string_ostream(text) << func.getArgument(i).getType();
      return makeError("argument #" + llvm::Twine(i) + " of " + where + " (" +
                       text +
                       ") is not the indices or offsets of a lookup; "
                       "neuroshard-run can only generate lookup inputs");
    }
  return info;
}

llvm::Error rt::checkComparable(const ModelInfo &a, const ModelInfo &b) {
  if (a.tables.size() != b.tables.size())
    return makeError("the modules have " + llvm::Twine(a.tables.size()) +
                     " and " + llvm::Twine(b.tables.size()) + " tables");
  for (size_t t = 0; t < a.tables.size(); ++t) {
    const inputs::TableStats &x = a.tables[t].stats, &y = b.tables[t].stats;
    if (x.name != y.name || x.rows != y.rows || x.dim != y.dim)
      return makeError("table " + llvm::Twine(t) + " differs: '" + x.name +
                       "' (" + llvm::Twine(x.rows) + " x " +
                       llvm::Twine(x.dim) + ") against '" + y.name + "' (" +
                       llvm::Twine(y.rows) + " x " + llvm::Twine(y.dim) + ")");
  }
  if (a.numArguments != b.numArguments || a.pairs.size() != b.pairs.size())
    return makeError("the entry functions take different arguments");
  for (size_t p = 0; p < a.pairs.size(); ++p)
    if (a.pairs[p].indicesArg != b.pairs[p].indicesArg ||
        a.pairs[p].offsetsArg != b.pairs[p].offsetsArg ||
        a.pairs[p].table != b.pairs[p].table ||
        a.pairs[p].batch != b.pairs[p].batch)
      return makeError("arguments #" + llvm::Twine(a.pairs[p].indicesArg) +
                       " and #" + llvm::Twine(a.pairs[p].offsetsArg) +
                       " feed different lookups in the two modules");
  if (a.resultShapes != b.resultShapes)
    return makeError("the entry functions return different result shapes");
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

llvm::Expected<ModelData> rt::generateData(const ModelInfo &info,
                                           const DataOptions &options) {
  ModelData data;
  uint64_t bytes = 0;
  for (const TableInfo &table : info.tables) {
    int64_t rows = table.stats.rows;
    if (options.maxRows > 0)
      rows = std::min(rows, options.maxRows);
    data.layout.push_back(static_cast<int64_t>(bytes / sizeof(float)));
    data.allocatedRows.push_back(rows);
    bytes += static_cast<uint64_t>(rows) * table.stats.dim * sizeof(float);
  }
  if (bytes > options.maxWeightBytes) {
    auto gib = [](uint64_t b) {
      return llvm::formatv("{0:F2}", double(b) / double(1ull << 30)).str();
    };
    return makeError("the weights of " + llvm::Twine(info.tables.size()) +
                     " tables need " + gib(bytes) + " GiB, more than the " +
                     gib(options.maxWeightBytes) +
                     " GiB allowed; cap the rows per table with --max-rows");
  }
  data.weights.resize(bytes / sizeof(float));
  for (size_t t = 0; t < info.tables.size(); ++t) {
    const inputs::TableStats &stats = info.tables[t].stats;
    uint64_t key =
        inputs::mixSeed(options.seed, inputs::hashString(stats.name));
    inputs::fillWeights(key, data.allocatedRows[t], 0, stats.dim,
                        data.weights.data() + data.layout[t], stats.dim);
  }

  for (const InputPair &pair : info.pairs) {
    const TableInfo &table = info.tables[pair.table];
    if (!table.hasStatistics)
      return makeError("table '" + table.stats.name +
                       "' has no pooling_factor and access_hist; inputs are "
                       "generated from them");
    data.inputs.push_back(inputs::generateLookup(
        table.stats, pair.batch, options.seed, pair.indicesArg,
        data.allocatedRows[pair.table]));
    const inputs::LookupInputs &in = data.inputs.back();
    data.indices32.emplace_back(in.indices.begin(), in.indices.end());
    data.offsets32.emplace_back(in.offsets.begin(), in.offsets.end());
    if (pair.indicesAreI32 &&
        (in.offsets.back() > INT32_MAX ||
         data.allocatedRows[pair.table] > int64_t(INT32_MAX) + 1))
      return makeError("the i32 inputs of table '" + table.stats.name +
                       "' cannot hold its indices or offsets");
  }

  for (const LookupInfo &lookup : info.lookups) {
    std::vector<float> grad(static_cast<size_t>(lookup.batch * lookup.width));
    int64_t outColumn = 0;
    for (const ShardRef &shard : lookup.shards) {
      uint64_t key = inputs::mixSeed(options.seed ^ 0x6772616469656e74ULL,
                                     info.pairs[shard.pair].indicesArg);
      for (int64_t b = 0; b < lookup.batch; ++b)
        for (int64_t c = 0; c < shard.width; ++c)
          grad[b * lookup.width + outColumn + c] =
              inputs::gradientValue(key, b, shard.colBegin + c);
      outColumn += shard.width;
    }
    data.gradients.push_back(std::move(grad));
  }
  return data;
}

llvm::Error rt::replaceInputs(const ModelInfo &info, ModelData &data,
                              const llvm::json::Object &arguments) {
  auto read = [&](unsigned arg, bool i32,
                  std::vector<int64_t> &out) -> llvm::Error {
    const llvm::json::Array *values = arguments.getArray(std::to_string(arg));
    if (!values)
      return makeError("no values for argument #" + llvm::Twine(arg) + " of @" +
                       info.entry);
    out.clear();
    for (const llvm::json::Value &v : *values) {
      std::optional<int64_t> x = v.getAsInteger();
      if (!x || (i32 && (*x < INT32_MIN || *x > INT32_MAX)))
        return makeError("argument #" + llvm::Twine(arg) + " element " +
                         llvm::Twine(out.size()) + " is not an " +
                         (i32 ? "i32" : "i64") + " integer");
      out.push_back(*x);
    }
    return llvm::Error::success();
  };
  for (size_t p = 0; p < info.pairs.size(); ++p) {
    const InputPair &pair = info.pairs[p];
    inputs::LookupInputs in;
    if (llvm::Error e = read(pair.indicesArg, pair.indicesAreI32, in.indices))
      return e;
    if (llvm::Error e = read(pair.offsetsArg, pair.indicesAreI32, in.offsets))
      return e;
    std::string where = "offsets argument #" + std::to_string(pair.offsetsArg);
    if (static_cast<int64_t>(in.offsets.size()) != pair.batch + 1)
      return makeError(where + " has " + llvm::Twine(in.offsets.size()) +
                       " values; the batch of " + llvm::Twine(pair.batch) +
                       " needs " + llvm::Twine(pair.batch + 1));
    if (in.offsets.front() != 0)
      return makeError(where + " must start at 0, not " +
                       llvm::Twine(in.offsets.front()));
    for (int64_t b = 0; b < pair.batch; ++b)
      if (in.offsets[b + 1] < in.offsets[b])
        return makeError(where + " decreases at bag " + llvm::Twine(b) + ": " +
                         llvm::Twine(in.offsets[b]) + " then " +
                         llvm::Twine(in.offsets[b + 1]));
    if (in.offsets.back() != static_cast<int64_t>(in.indices.size()))
      return makeError(where + " ends at " + llvm::Twine(in.offsets.back()) +
                       " but indices argument #" +
                       llvm::Twine(pair.indicesArg) + " has " +
                       llvm::Twine(in.indices.size()) + " values");
    data.indices32[p].assign(in.indices.begin(), in.indices.end());
    data.offsets32[p].assign(in.offsets.begin(), in.offsets.end());
    data.inputs[p] = std::move(in);
  }
  return llvm::Error::success();
}

std::optional<std::string> rt::findOutOfRangeIndex(const ModelInfo &info,
                                                   const ModelData &data) {
  for (size_t p = 0; p < info.pairs.size(); ++p) {
    const InputPair &pair = info.pairs[p];
    const inputs::LookupInputs &in = data.inputs[p];
    int64_t rows = data.allocatedRows[pair.table];
    for (int64_t b = 0; b + 1 < static_cast<int64_t>(in.offsets.size()); ++b)
      for (int64_t k = in.offsets[b]; k < in.offsets[b + 1]; ++k)
        if (in.indices[k] < 0 || in.indices[k] >= rows)
          return "table '" + info.tables[pair.table].stats.name +
                 "' (argument #" + std::to_string(pair.indicesArg) + "), bag " +
                 std::to_string(b) + ": index " +
                 std::to_string(in.indices[k]) + " is outside [0, " +
                 std::to_string(rows) + ")";
  }
  return std::nullopt;
}

Timing rt::timeRuns(unsigned warmup, unsigned iters,
                    llvm::function_ref<void()> step,
                    llvm::function_ref<void()> beforeEach) {
  std::vector<double> ms;
  for (unsigned run = 0; run < warmup + iters; ++run) {
    if (beforeEach)
      beforeEach();
    auto start = std::chrono::steady_clock::now();
    step();
    auto stop = std::chrono::steady_clock::now();
    if (run >= warmup)
      ms.push_back(
          std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(ms.begin(), ms.end());
  Timing timing;
  timing.median = ::neuroshard::sortedMedian(ms);
  timing.min = ms.front();
  timing.max = ms.back();
  return timing;
}

double rt::maxRelativeDifference(llvm::ArrayRef<float> a,
                                 llvm::ArrayRef<float> b) {
  double maxDiff = 0.0, maxRef = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    maxDiff = std::max(maxDiff, std::fabs(double(a[i]) - double(b[i])));
    maxRef = std::max(maxRef, std::fabs(double(b[i])));
  }
  if (a.size() != b.size())
    return INFINITY;
  return maxRef == 0.0 ? maxDiff : maxDiff / maxRef;
}

//===----------------------------------------------------------------------===//
// CompiledModel
//===----------------------------------------------------------------------===//

struct CompiledModel::Impl {
  ModelInfo info;
  std::unique_ptr<ExecutionEngine> engine;
  BackwardFn<int64_t> backward = nullptr;
  /// CUDA: the runtime's last failure ("" if none). The lowered host code
  /// cannot return errors, so every run checks it afterwards.
  const char *(*cudaLastError)() = nullptr;
  /// Per lookup: metadata and concatenated inputs for the backward kernel.
  const ModelData *prepared = nullptr;
  std::vector<std::vector<int64_t>> meta, indices, offsets;

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
    return makeError(llvm::Twine(step) + " on CUDA failed: " + cudaLastError());
  }
};

CompiledModel::~CompiledModel() = default;

llvm::Expected<std::unique_ptr<CompiledModel>>
CompiledModel::compile(ModuleOp module, const ModelInfo &info,
                       const CompileOptions &options) {
  OwningOpRef<ModuleOp> clone(module.clone());
  auto func = clone->lookupSymbol<func::FuncOp>(info.entry);
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(module.getContext()));
  // The backward kernel is called from the host. On the CPU the kernel
  // itself is a host function; on CUDA a host function calls it, and the
  // pipeline turns that call into a launch.
  StringRef backwardName = abi::kBackwardI64;
  if (options.target == Target::CUDA)
    backwardName = addBackwardHostCall(*clone);
  auto engine = lowerAndCompile(*clone, options);
  if (!engine)
    return engine.takeError();
  std::unique_ptr<CompiledModel> model(new CompiledModel());
  model->impl = std::make_unique<Impl>();
  model->impl->info = info;
  model->impl->engine = std::move(*engine);
  auto backward = lookupKernel(*model->impl->engine, backwardName);
  if (!backward)
    return backward.takeError();
  model->impl->backward = reinterpret_cast<BackwardFn<int64_t>>(*backward);
  if (options.target == Target::CUDA) {
    auto lastError = model->impl->engine->lookup("neuroshardCudaLastError");
    if (!lastError)
      return lastError.takeError();
    model->impl->cudaLastError =
        reinterpret_cast<const char *(*)()>(*lastError);
  }
  return model;
}

llvm::Error CompiledModel::forward(ModelData &data,
                                   std::vector<std::vector<float>> &outputs) {
  const ModelInfo &info = impl->info;
  // Descriptors must stay at fixed addresses during the call.
  std::vector<Desc1<int64_t>> desc64;
  std::vector<Desc1<int32_t>> desc32;
  desc64.reserve(info.numArguments + 2);
  desc32.reserve(info.numArguments);
  std::vector<void *> descriptors(info.numArguments, nullptr);
  // Offsets follow the element type of their indices (embedding_bag
  // requires it; fused entries are built from such pairs).
  for (size_t p = 0; p < info.pairs.size(); ++p) {
    const InputPair &pair = info.pairs[p];
    if (pair.indicesAreI32) {
      desc32.push_back(desc1(data.indices32[p]));
      descriptors[pair.indicesArg] = &desc32.back();
      desc32.push_back(desc1(data.offsets32[p]));
      descriptors[pair.offsetsArg] = &desc32.back();
    } else {
      desc64.push_back(desc1(data.inputs[p].indices));
      descriptors[pair.indicesArg] = &desc64.back();
      desc64.push_back(desc1(data.inputs[p].offsets));
      descriptors[pair.offsetsArg] = &desc64.back();
    }
  }
  Desc1<float> weights = desc1(data.weights);
  desc64.push_back(desc1(data.layout));
  descriptors.push_back(&weights);
  descriptors.push_back(&desc64.back());
  outputs.resize(info.resultShapes.size());
  std::vector<Desc2> outs;
  outs.reserve(info.resultShapes.size());
  for (size_t r = 0; r < info.resultShapes.size(); ++r) {
    int64_t rows = info.resultShapes[r][0], cols = info.resultShapes[r][1];
    outputs[r].assign(static_cast<size_t>(rows * cols), 0.0f);
    outs.push_back(desc2(outputs[r], rows, cols));
    descriptors.push_back(&outs.back());
  }
  std::vector<void *> args;
  for (void *&d : descriptors)
    args.push_back(&d);
  impl->initializeDevice();
  if (llvm::Error err =
          impl->engine->invokePacked("_mlir_ciface_" + info.entry, args))
    return err;
  return impl->checkDevice("forward");
}

llvm::Error CompiledModel::backward(ModelData &data, float learningRate) {
  const ModelInfo &info = impl->info;
  if (data.gradients.size() != info.lookups.size())
    return makeError("the data holds gradients for " +
                     llvm::Twine(data.gradients.size()) + " lookups but @" +
                     info.entry + " has " + llvm::Twine(info.lookups.size()));
  for (size_t l = 0; l < info.lookups.size(); ++l)
    if (data.gradients[l].size() !=
        static_cast<size_t>(info.lookups[l].batch * info.lookups[l].width))
      return makeError("the gradient of lookup " + llvm::Twine(l) +
                       " has the wrong size for @" + info.entry);
  if (impl->prepared != &data) {
    impl->meta.resize(info.lookups.size());
    impl->indices.resize(info.lookups.size());
    impl->offsets.resize(info.lookups.size());
    for (size_t l = 0; l < info.lookups.size(); ++l)
      buildLookupBuffers(info, data, info.lookups[l], impl->meta[l],
                         impl->indices[l], impl->offsets[l]);
    impl->prepared = &data;
  }
  impl->initializeDevice();
  Desc1<int64_t> layout = desc1(data.layout);
  Desc1<float> weights = desc1(data.weights);
  for (size_t l = 0; l < info.lookups.size(); ++l) {
    const LookupInfo &lookup = info.lookups[l];
    Desc1<int64_t> meta = desc1(impl->meta[l]);
    Desc1<int64_t> indices = desc1(impl->indices[l]);
    Desc1<int64_t> offsets = desc1(impl->offsets[l]);
    Desc2 grad = desc2(data.gradients[l], lookup.batch, lookup.width);
    impl->backward(&meta, &layout, &weights, &indices, &offsets, &grad,
                   learningRate);
    if (llvm::Error err = impl->checkDevice("backward"))
      return err;
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// CPUKernels
//===----------------------------------------------------------------------===//

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
  void **slots[] = {&kernels->forwardI32, &kernels->forwardI64,
                    &kernels->backwardI32, &kernels->backwardI64};
  const char *names[] = {abi::kForwardI32, abi::kForwardI64, abi::kBackwardI32,
                         abi::kBackwardI64};
  for (int i = 0; i < 4; ++i) {
    auto fn = lookupKernel(*kernels->engine, names[i]);
    if (!fn)
      return fn.takeError();
    *slots[i] = *fn;
  }
  return kernels;
}

int64_t CPUKernels::packInputs(PreparedSet &set,
                               const std::vector<KernelShard> &shards,
                               int64_t batch, uint64_t gradientSeed,
                               bool indicesAreI32) {
  set.batch = batch;
  set.width = 0;
  set.indicesAreI32 = indicesAreI32;
  set.layout.clear();
  set.meta.clear();
  set.indices.clear();
  set.offsets.clear();
  int64_t arena = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    const KernelShard &shard = shards[s];
    int64_t fields[abi::kShardFields] = {
        static_cast<int64_t>(s),
        shard.width,
        0,
        shard.width,
        set.width,
        static_cast<int64_t>(set.indices.size()),
        static_cast<int64_t>(set.offsets.size()),
        shard.mode};
    set.meta.insert(set.meta.end(), fields, fields + abi::kShardFields);
    set.layout.push_back(arena);
    set.indices.insert(set.indices.end(), shard.inputs->indices.begin(),
                       shard.inputs->indices.end());
    set.offsets.insert(set.offsets.end(), shard.inputs->offsets.begin(),
                       shard.inputs->offsets.end());
    arena += shard.rows * shard.width;
    set.width += shard.width;
  }
  if (indicesAreI32) {
    set.indices32.assign(set.indices.begin(), set.indices.end());
    set.offsets32.assign(set.offsets.begin(), set.offsets.end());
  }
  set.output.assign(static_cast<size_t>(batch * set.width), 0.0f);
  set.gradient.resize(set.output.size());
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
  Desc1<int64_t> meta = desc1(set.meta), layout = desc1(set.layout);
  Desc1<float> weights = desc1(set.weights);
  Desc2 out = desc2(set.output, set.batch, set.width);
  if (set.indicesAreI32) {
    Desc1<int32_t> indices = desc1(set.indices32),
                   offsets = desc1(set.offsets32);
    reinterpret_cast<ForwardFn<int32_t>>(forwardI32)(&meta, &layout, &weights,
                                                     &indices, &offsets, &out);
    return;
  }
  Desc1<int64_t> indices = desc1(set.indices), offsets = desc1(set.offsets);
  reinterpret_cast<ForwardFn<int64_t>>(forwardI64)(&meta, &layout, &weights,
                                                   &indices, &offsets, &out);
}

void CPUKernels::backward(PreparedSet &set, float learningRate) {
  Desc1<int64_t> meta = desc1(set.meta), layout = desc1(set.layout);
  Desc1<float> weights = desc1(set.weights);
  Desc2 grad = desc2(set.gradient, set.batch, set.width);
  if (set.indicesAreI32) {
    Desc1<int32_t> indices = desc1(set.indices32),
                   offsets = desc1(set.offsets32);
    reinterpret_cast<BackwardFn<int32_t>>(backwardI32)(
        &meta, &layout, &weights, &indices, &offsets, &grad, learningRate);
    return;
  }
  Desc1<int64_t> indices = desc1(set.indices), offsets = desc1(set.offsets);
  reinterpret_cast<BackwardFn<int64_t>>(backwardI64)(
      &meta, &layout, &weights, &indices, &offsets, &grad, learningRate);
}
