//===- ModelAnalysis.cpp - What a NeuroShard module computes --------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/ModelAnalysis.h"
#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/SPMD.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace mlir::neuroshard;
using namespace ::neuroshard::execution;
namespace abi = ::neuroshard::kernel_abi;
namespace ex = ::neuroshard::execution;
namespace inputs = ::neuroshard::inputs;

llvm::Expected<ModelInfo> ex::analyzeModel(ModuleOp module,
                                           llvm::StringRef entry) {
  ModelInfo info;
  info.rank = getProgramRank(module);
  for (TableOp table : module.getOps<TableOp>())
    if (!table.getElementType().isF32())
      return llvm::createStringError(
          "table '" + table.getSymName() +
          "' has a non-f32 element type; only f32 tables "
          "execute");
  // The arena the lowering gives the entry: one TableInfo per piece.
  KernelTableLayout layout = layoutWeightArena(module);
  for (auto &[name, piece] : layout.arena) {
    auto table = module.lookupSymbol<TableOp>(name);
    TableInfo t;
    t.stats.name = table.getSymName().str();
    t.stats.rows = table.getNumRows();
    t.stats.dim = piece.colEnd - piece.colBegin;
    t.columnBegin = piece.colBegin;
    if (table.hasCostStatistics()) {
      t.hasStatistics = true;
      t.stats.poolingFactor = *table.getPoolingFactorValue();
      llvm::ArrayRef<double> hist = *table.getAccessHist();
      for (unsigned j = 0; j < kNumAccessBins && j < hist.size(); ++j)
        t.stats.accessHist[j] = hist[j];
    }
    info.tables.push_back(t);
  }
  auto findPiece = [&](llvm::StringRef table, int64_t colBegin, int64_t width) {
    return layout.find(StringAttr::get(module.getContext(), table), colBegin,
                       width);
  };

  func::FuncOp func;
  if (entry.empty()) {
    llvm::SmallVector<func::FuncOp> candidates;
    for (func::FuncOp f : module.getOps<func::FuncOp>())
      if (f.isPublic() && !f.isExternal() &&
          !f->hasAttr(NeuroShardDialect::getBackwardOfAttrName()))
        candidates.push_back(f);
    if (candidates.size() != 1) {
      std::string names;
      for (func::FuncOp f : candidates)
        names += (names.empty() ? "@" : ", @") + f.getSymName().str();
      return llvm::createStringError(
          "the module has " + llvm::Twine(candidates.size()) +
          " public functions" + (names.empty() ? "" : " (" + names + ")") +
          "; name the one to run with --entry");
    }
    func = candidates.front();
  } else {
    func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func || func.isExternal())
      return llvm::createStringError("the module has no function @" + entry +
                                     " with a body");
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
      return llvm::createStringError(
          "result #" + llvm::Twine(i) + " of " + where + " has type " + text +
          "; results must be static 2-D f32 tensors");
    }
    info.resultShapes.push_back({tensor.getDimSize(0), tensor.getDimSize(1)});
  }

  // Input pairs, keyed by argument numbers.
  std::map<std::pair<unsigned, unsigned>, unsigned> pairIds;
  llvm::Error failure = llvm::Error::success();
  // Row pieces read bucketized indices and replicas a slice of the
  // offsets: both come from the lookup's arguments.
  bool distributesRows = false;
  auto traceToArgument = [&](Value v) -> Value {
    if (auto bucketize = v.getDefiningOp<BucketizeOp>()) {
      distributesRows = true;
      bool isIndices = llvm::is_contained(bucketize.getBlockIndices(), v);
      return isIndices ? bucketize.getIndices() : bucketize.getOffsets();
    }
    if (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>()) {
      distributesRows = true;
      return slice.getSource();
    }
    return v;
  };
  auto argNumber = [&](Value v, llvm::StringRef what,
                       Operation *op) -> std::optional<unsigned> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner() == &func.getBody().front())
      return arg.getArgNumber();
    std::string name = op->getName().getStringRef().str();
    failure = llvm::createStringError(
        "the " + what + " of a " + name + " in " + where +
        " are not a function argument; neuroshard-run "
        "generates lookup inputs for arguments only");
    return std::nullopt;
  };
  auto addShard = [&](Operation *op, llvm::StringRef table, int64_t colBegin,
                      int64_t width, PoolingMode mode, Value indices,
                      Value offsets, std::optional<double> ownPooling,
                      llvm::ArrayRef<double> ownHist,
                      std::vector<abi::ShardDescriptor> &shards) -> bool {
    indices = traceToArgument(indices);
    offsets = traceToArgument(offsets);
    auto idx = argNumber(indices, "indices", op);
    if (!idx)
      return false;
    auto off = argNumber(offsets, "offsets", op);
    if (!off)
      return false;
    auto offType = cast<RankedTensorType>(offsets.getType());
    if (!offType.hasStaticShape()) {
      failure = llvm::createStringError(
          "offsets argument #" + llvm::Twine(*off) + " of " + where +
          " has a dynamic size; the batch size must "
          "be static");
      return false;
    }
    const KernelTableLayout::Piece *piece = findPiece(table, colBegin, width);
    if (!piece) {
      failure = llvm::createStringError("columns [" + llvm::Twine(colBegin) +
                                        ", " + llvm::Twine(colBegin + width) +
                                        ") of table '" + table +
                                        "' are read in " + where +
                                        " but the weight arena does not hold "
                                        "them");
      return false;
    }
    auto key = std::make_pair(*idx, *off);
    auto it = pairIds.find(key);
    int64_t tableOrdinal = piece->ordinal;
    if (it == pairIds.end()) {
      InputPair pair;
      pair.indicesArg = *idx;
      pair.offsetsArg = *off;
      pair.table = tableOrdinal;
      pair.batch = offType.getDimSize(0) - 1;
      pair.indicesAreI32 = cast<RankedTensorType>(indices.getType())
                               .getElementType()
                               .isInteger(32);
      if (ownPooling) {
        inputs::TableStats stats = info.tables[tableOrdinal].stats;
        stats.poolingFactor = *ownPooling;
        for (unsigned j = 0; j < kNumAccessBins && j < ownHist.size(); ++j)
          stats.accessHist[j] = ownHist[j];
        pair.stats = stats;
      }
      it =
          pairIds.insert({key, static_cast<unsigned>(info.pairs.size())}).first;
      info.pairs.push_back(pair);
    } else if (info.tables[info.pairs[it->second].table].stats.name != table) {
      failure = llvm::createStringError(
          "arguments #" + llvm::Twine(*idx) + " and #" + llvm::Twine(*off) +
          " of " + where + " feed lookups of two tables ('" +
          info.tables[info.pairs[it->second].table].stats.name + "' and '" +
          table + "')");
      return false;
    }
    abi::ShardDescriptor shard;
    shard.table = tableOrdinal;
    shard.rowStride = info.tables[tableOrdinal].stats.dim;
    shard.colBegin = colBegin - piece->colBegin;
    shard.width = width;
    shard.mode = abi::poolingMode(mode == PoolingMode::Mean);
    shard.input = it->second;
    shards.push_back(shard);
    return true;
  };

  ExchangeOp exchangeOp;
  func.walk([&](Operation *op) {
    if (failure)
      return WalkResult::interrupt();
    std::vector<abi::ShardDescriptor> shards;
    int64_t device = -1;
    if (auto exchange = dyn_cast<ExchangeOp>(op)) {
      exchangeOp = exchange;
      if (!info.exchange.widths.empty()) {
        failure = llvm::createStringError(
            where + " has more than one neuroshard.exchange");
        return WalkResult::interrupt();
      }
      info.exchange.widths.assign(exchange.getWidths().begin(),
                                  exchange.getWidths().end());
      info.exchange.batches.assign(exchange.getBatches().begin(),
                                   exchange.getBatches().end());
      info.exchange.rank = static_cast<int64_t>(exchange.getRank());
      return WalkResult::advance();
    }
    if (auto bag = dyn_cast<EmbeddingBagOp>(op)) {
      auto table = module.lookupSymbol<TableOp>(bag.getTableAttr());
      int64_t dim = table ? table.getNumCols() : 0;
      std::optional<double> pooling;
      if (bag.getPoolingFactor())
        pooling = bag.getPoolingFactor()->convertToDouble();
      if (!addShard(op, bag.getTable(), 0, dim, bag.getMode(), bag.getIndices(),
                    bag.getOffsets(), pooling,
                    bag.getAccessHist().value_or(ArrayRef<double>()), shards))
        return WalkResult::interrupt();
    } else if (auto fused = dyn_cast<FusedEmbeddingBagOp>(op)) {
      device = static_cast<int64_t>(fused.getDevice());
      for (unsigned i = 0; i < fused.getNumEntries(); ++i) {
        auto mode = cast<PoolingModeAttr>(fused.getModes()[i]).getValue();
        std::optional<double> pooling;
        ArrayRef<double> hist;
        if (std::optional<ArrayRef<double>> factors =
                fused.getPoolingFactors()) {
          pooling = (*factors)[i];
          hist =
              fused.getAccessHists()->slice(i * kNumAccessBins, kNumAccessBins);
        }
        if (!addShard(op, fused.getEntryTable(i), fused.getColBegins()[i],
                      fused.getEntryWidth(i), mode, fused.getIndices()[i],
                      fused.getOffsets()[i], pooling, hist, shards))
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
    lookup.device = device;
    lookup.distributesRows = distributesRows;
    distributesRows = false;
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
    for (abi::ShardDescriptor &shard : lookup.shards)
      shard.input = renumber[shard.input];

  std::vector<int> role(info.numArguments, 0);
  for (const InputPair &pair : info.pairs) {
    if (role[pair.indicesArg] == 2 || role[pair.offsetsArg] == 1)
      return llvm::createStringError(
          "argument #" + llvm::Twine(pair.indicesArg) + " of " + where +
          " is used both as indices and as offsets");
    role[pair.indicesArg] = 1;
    role[pair.offsetsArg] = 2;
  }
  for (unsigned i = 0; i < info.numArguments; ++i) {
    // A rank's program keeps the inputs of other ranks' lookups.
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (role[i] == 0 && info.rank && type && type.getRank() == 1 &&
        type.getElementType().isInteger())
      continue;
    if (role[i] == 0) {
      std::string text;
      llvm::raw_string_ostream(text) << func.getArgument(i).getType();
      return llvm::createStringError(
          "argument #" + llvm::Twine(i) + " of " + where + " (" + text +
          ") is not the indices or offsets of a lookup; "
          "neuroshard-run can only generate lookup inputs");
    }
  }
  if (info.rank && info.exchange.widths.empty())
    return llvm::createStringError("the program of rank " +
                                   llvm::Twine(*info.rank) +
                                   " has no "
                                   "neuroshard.exchange in " +
                                   where);

  // The backward function, and where each result's gradient goes.
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    auto of = f->getAttrOfType<FlatSymbolRefAttr>(
        NeuroShardDialect::getBackwardOfAttrName());
    if (!of || of.getValue() != info.entry || !exchangeOp)
      continue;
    info.backwardEntry = f.getSymName().str();
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      std::string why;
      FailureOr<SmallVector<ExchangedColumns>> traced =
          traceExchangedColumns(value, exchangeOp.getResult(), why);
      if (failed(traced))
        return llvm::createStringError("result #" + llvm::Twine(i) + " of " +
                                       where + ": " + why);
      std::vector<ResultColumns> pieces;
      for (const ExchangedColumns &piece : *traced)
        pieces.push_back({piece.column, piece.source, piece.width});
      info.resultColumns.push_back(std::move(pieces));
    }
  }
  return info;
}

llvm::Error ex::checkComparable(const ModelInfo &a, const ModelInfo &b) {
  if (a.tables.size() != b.tables.size())
    return llvm::createStringError("the modules have " +
                                   llvm::Twine(a.tables.size()) + " and " +
                                   llvm::Twine(b.tables.size()) + " tables");
  for (size_t t = 0; t < a.tables.size(); ++t) {
    const inputs::TableStats &x = a.tables[t].stats, &y = b.tables[t].stats;
    if (x.name != y.name || x.rows != y.rows || x.dim != y.dim)
      return llvm::createStringError(
          "table " + llvm::Twine(t) + " differs: '" + x.name + "' (" +
          llvm::Twine(x.rows) + " x " + llvm::Twine(x.dim) + ") against '" +
          y.name + "' (" + llvm::Twine(y.rows) + " x " + llvm::Twine(y.dim) +
          ")");
  }
  if (a.numArguments != b.numArguments || a.pairs.size() != b.pairs.size())
    return llvm::createStringError(
        "the entry functions take different arguments");
  for (size_t p = 0; p < a.pairs.size(); ++p)
    if (a.pairs[p].indicesArg != b.pairs[p].indicesArg ||
        a.pairs[p].offsetsArg != b.pairs[p].offsetsArg ||
        a.pairs[p].table != b.pairs[p].table ||
        a.pairs[p].batch != b.pairs[p].batch)
      return llvm::createStringError(
          "arguments #" + llvm::Twine(a.pairs[p].indicesArg) + " and #" +
          llvm::Twine(a.pairs[p].offsetsArg) +
          " feed different lookups in the two modules");
  if (a.resultShapes != b.resultShapes)
    return llvm::createStringError(
        "the entry functions return different result shapes");
  return llvm::Error::success();
}
