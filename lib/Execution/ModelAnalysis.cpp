//===- ModelAnalysis.cpp - What a NeuroShard module computes --------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/ModelAnalysis.h"
#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <map>

using namespace mlir;
using namespace mlir::neuroshard;
using namespace ::neuroshard::execution;
namespace abi = ::neuroshard::kernel_abi;
namespace ex = ::neuroshard::execution;
namespace inputs = ::neuroshard::inputs;

/// The output columns of `fused` that a reduce-scatter divides by whole
/// bags' lengths, each with the offsets it divides by.
static FailureOr<SmallVector<std::tuple<int64_t, int64_t, Value>>>
meanReducedColumns(FusedEmbeddingBagOp fused, std::string &why) {
  SmallVector<std::tuple<int64_t, int64_t, Value>> ranges;
  for (Operation *user : fused.getResult().getUsers()) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice)
      continue;
    for (Operation *sliceUser : slice->getUsers()) {
      auto reduce = dyn_cast<ReduceScatterOp>(sliceUser);
      if (!reduce || !reduce.getMeanOffsets())
        continue;
      ArrayRef<int64_t> offsets = slice.getStaticOffsets();
      ArrayRef<int64_t> sizes = slice.getStaticSizes();
      if (offsets.size() != 2 || ShapedType::isDynamic(offsets[1]) ||
          ShapedType::isDynamic(sizes[1])) {
        why = "a neuroshard.reduce_scatter with mean reads columns of the "
              "fused lookup of device " +
              std::to_string(fused.getDevice()) +
              " at a dynamic position; their gradient cannot be scaled";
        return failure();
      }
      ranges.emplace_back(offsets[1], offsets[1] + sizes[1],
                          reduce.getMeanOffsets());
    }
  }
  return ranges;
}

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
    t.rowBegin = piece.rowBegin;
    t.rowEnd = piece.rowEnd;
    t.cacheOf = piece.cacheOf;
    t.cacheRows = piece.cacheRows;
    if (table.hasCostStatistics()) {
      t.hasStatistics = true;
      t.stats.poolingFactor = *table.getPoolingFactorValue();
      llvm::ArrayRef<double> hist = *table.getAccessHist();
      for (unsigned j = 0; j < kNumAccessBins && j < hist.size(); ++j)
        t.stats.accessHist[j] = hist[j];
    }
    info.tables.push_back(t);
  }
  auto findPiece = [&](llvm::StringRef table, int64_t rowBegin, int64_t rowEnd,
                       int64_t colBegin, int64_t width) {
    return layout.find(StringAttr::get(module.getContext(), table), rowBegin,
                       rowEnd, colBegin, width);
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
  // What entry `i` of `fused` reads of its lookup's inputs: the bucket of
  // its rows and the slice of its bags. They must agree with the rows the
  // entry names, which the backward updates.
  auto entryReads = [&](FusedEmbeddingBagOp fused, unsigned i,
                        int64_t tableRows) -> std::optional<ShardReads> {
    ShardReads reads;
    reads.rowBegin = getEntryRowBegin(fused, i);
    reads.rowEnd = isRowPieceEntry(fused, i) ? (*fused.getRowEnds())[i]
                                             : ::neuroshard::kAllRows;
    std::string entry = "entry #" + std::to_string(i) + " (table '" +
                        fused.getEntryTable(i).str() +
                        "') of the fused lookup of device " +
                        std::to_string(fused.getDevice()) + " in " + where;
    Value indices = fused.getIndices()[i], offsets = fused.getOffsets()[i];
    if (std::optional<std::pair<BucketizeOp, unsigned>> bucket =
            getBucketizeBlock(indices)) {
      auto [bucketize, block] = *bucket;
      ArrayRef<int64_t> rows = bucketize.getRows();
      int64_t entryEnd = std::min(reads.rowEnd, tableRows);
      if (offsets != bucketize.getBlockOffsets()[block]) {
        failure = llvm::createStringError(
            entry + " reads the indices of one bucket and other offsets");
        return std::nullopt;
      }
      if (rows[block] != reads.rowBegin || rows[block + 1] != entryEnd) {
        failure = llvm::createStringError(
            entry + " names rows [" + llvm::Twine(reads.rowBegin) + ", " +
            llvm::Twine(entryEnd) + ") but reads the bucket of rows [" +
            llvm::Twine(rows[block]) + ", " + llvm::Twine(rows[block + 1]) +
            ")");
        return std::nullopt;
      }
    } else if (!reads.allRows()) {
      failure = llvm::createStringError(
          entry + " names rows [" + llvm::Twine(reads.rowBegin) + ", " +
          llvm::Twine(reads.rowEnd) +
          ") but reads indices that no neuroshard.bucketize shifted to "
          "them");
      return std::nullopt;
    }
    if (auto slice = offsets.getDefiningOp<tensor::ExtractSliceOp>()) {
      ArrayRef<int64_t> first = slice.getStaticOffsets();
      if (first.size() != 1 || ShapedType::isDynamic(first[0])) {
        failure = llvm::createStringError(
            entry + " reads a slice of its offsets at a dynamic position");
        return std::nullopt;
      }
      reads.firstBag = first[0];
    }
    return reads;
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
  auto addShard = [&](Operation *op, llvm::StringRef table,
                      const ShardReads &rows, int64_t colBegin, int64_t width,
                      PoolingMode mode, Value indices, Value offsets,
                      std::optional<double> ownPooling,
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
    const KernelTableLayout::Piece *piece =
        findPiece(table, rows.rowBegin, rows.rowEnd, colBegin, width);
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

  func.walk([&](Operation *op) {
    if (failure)
      return WalkResult::interrupt();
    std::vector<abi::ShardDescriptor> shards;
    std::vector<ShardReads> reads;
    std::vector<int64_t> caches;
    int64_t device = -1;
    if (auto bag = dyn_cast<EmbeddingBagOp>(op)) {
      auto table = module.lookupSymbol<TableOp>(bag.getTableAttr());
      int64_t dim = table ? table.getNumCols() : 0;
      std::optional<double> pooling;
      if (bag.getPoolingFactor())
        pooling = bag.getPoolingFactor()->convertToDouble();
      if (!addShard(op, bag.getTable(), ShardReads(), 0, dim, bag.getMode(),
                    bag.getIndices(), bag.getOffsets(), pooling,
                    bag.getAccessHist().value_or(ArrayRef<double>()), shards))
        return WalkResult::interrupt();
    } else if (auto fused = dyn_cast<FusedEmbeddingBagOp>(op)) {
      device = static_cast<int64_t>(fused.getDevice());
      std::string why;
      FailureOr<SmallVector<std::tuple<int64_t, int64_t, Value>>> meanColumns =
          meanReducedColumns(fused, why);
      if (failed(meanColumns)) {
        failure = llvm::createStringError(why + " (in " + where + ")");
        return WalkResult::interrupt();
      }
      int64_t outColumn = 0;
      for (unsigned i = 0; i < fused.getNumEntries(); ++i) {
        auto table = module.lookupSymbol<TableOp>(fused.getEntryTable(i));
        std::optional<ShardReads> entry =
            entryReads(fused, i, table ? table.getNumRows() : 0);
        if (!entry)
          return WalkResult::interrupt();
        int64_t width = fused.getEntryWidth(i);
        for (auto [begin, end, meanOffsets] : *meanColumns) {
          if (end <= outColumn || outColumn + width <= begin)
            continue;
          if (traceToArgument(meanOffsets) !=
              traceToArgument(fused.getOffsets()[i])) {
            failure = llvm::createStringError(
                "a neuroshard.reduce_scatter in " + where +
                " divides the partial sums of table '" +
                fused.getEntryTable(i) +
                "' by the lengths of other bags than the lookup's");
            return WalkResult::interrupt();
          }
          entry->wholeBagMean = true;
        }
        outColumn += width;
        reads.push_back(*entry);
        auto mode = cast<PoolingModeAttr>(fused.getModes()[i]).getValue();
        std::optional<double> pooling;
        ArrayRef<double> hist;
        if (std::optional<ArrayRef<double>> factors =
                fused.getPoolingFactors()) {
          pooling = (*factors)[i];
          hist =
              fused.getAccessHists()->slice(i * kNumAccessBins, kNumAccessBins);
        }
        if (!addShard(op, fused.getEntryTable(i), *entry,
                      fused.getColBegins()[i], fused.getEntryWidth(i), mode,
                      fused.getIndices()[i], fused.getOffsets()[i], pooling,
                      hist, shards))
          return WalkResult::interrupt();
        const KernelTableLayout::Piece *cache = layout.findCache(
            StringAttr::get(module.getContext(), fused.getEntryTable(i)),
            entry->rowBegin,
            std::min(entry->rowEnd, table ? table.getNumRows() : 0),
            fused.getColBegins()[i], fused.getColEnds()[i]);
        caches.push_back(cache ? cache->ordinal : -1);
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
    if (distributesRows)
      lookup.reads = std::move(reads);
    if (llvm::any_of(caches, [](int64_t cache) { return cache >= 0; }))
      lookup.caches = std::move(caches);
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
  // The backward function of a rank's program.
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    auto of = f->getAttrOfType<FlatSymbolRefAttr>(
        NeuroShardDialect::getBackwardOfAttrName());
    if (of && of.getValue() == info.entry && info.rank)
      info.backwardEntry = f.getSymName().str();
  }
  return info;
}

llvm::Error ex::checkComparable(const ModelInfo &a, const ModelInfo &b) {
  // The device caches of shards in host memory come after the tables, and
  // only one module may have them.
  auto tables = [](const ModelInfo &info) {
    return size_t(llvm::count_if(
        info.tables, [](const TableInfo &t) { return !t.isCache(); }));
  };
  if (tables(a) != tables(b))
    return llvm::createStringError("the modules have " +
                                   llvm::Twine(tables(a)) + " and " +
                                   llvm::Twine(tables(b)) + " tables");
  for (size_t t = 0; t < tables(a); ++t) {
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

llvm::Expected<std::vector<std::vector<ResultSource>>>
ex::traceResultSources(ModuleOp module, const ModelInfo &info) {
  auto func = module.lookupSymbol<func::FuncOp>(info.entry);
  auto ret =
      func ? dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator())
           : func::ReturnOp();
  if (!ret)
    return llvm::createStringError("@" + info.entry +
                                   " does not end in func.return");
  std::string where = "@" + info.entry;
  llvm::DenseMap<Operation *, std::vector<bool>> reached;
  std::string why;

  // The function argument a lookup's indices come from.
  auto indicesArgument = [&](Value v) -> std::optional<unsigned> {
    if (auto bucketize = v.getDefiningOp<BucketizeOp>())
      v = bucketize.getIndices();
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getArgNumber();
    return std::nullopt;
  };
  // Columns [col, col + width) of `v`, placed at column `at` of a result.
  std::function<bool(Value, int64_t, int64_t, int64_t,
                     std::vector<ResultSource> &)>
      trace = [&](Value v, int64_t col, int64_t width, int64_t at,
                  std::vector<ResultSource> &out) -> bool {
    if (width <= 0)
      return true;
    Operation *op = v.getDefiningOp();
    // Columns of `inputs` laid side by side.
    auto traceSideBySide = [&](ValueRange inputs) {
      int64_t begin = 0;
      for (Value input : inputs) {
        int64_t w = cast<RankedTensorType>(input.getType()).getDimSize(1);
        int64_t from = std::max(col, begin),
                to = std::min(col + width, begin + w);
        if (from < to &&
            !trace(input, from - begin, to - from, at + from - col, out))
          return false;
        begin += w;
      }
      return true;
    };
    // The same columns of other bags (or partial sums): the first input
    // says where they come from, the others are reached too.
    auto traceEach = [&](ValueRange inputs) {
      bool first = true;
      for (Value input : inputs) {
        if (cast<RankedTensorType>(input.getType()).getDimSize(0) == 0)
          continue;
        std::vector<ResultSource> ignored;
        if (!trace(input, col, width, at, first ? out : ignored))
          return false;
        first = false;
      }
      return true;
    };
    if (auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(op)) {
      ArrayRef<int64_t> offsets = slice.getStaticOffsets();
      if (offsets.size() != 2 || ShapedType::isDynamic(offsets[1])) {
        why = "a tensor.extract_slice in " + where +
              " takes columns at a dynamic position";
        return false;
      }
      return trace(slice.getSource(), col + offsets[1], width, at, out);
    }
    if (auto concat = dyn_cast_or_null<tensor::ConcatOp>(op))
      return concat.getDim() == 1 ? traceSideBySide(concat.getInputs())
                                  : traceEach(concat.getInputs());
    if (auto exchange = dyn_cast_or_null<AllToAllOp>(op))
      return traceSideBySide(exchange.getInputs());
    if (auto reduce = dyn_cast_or_null<ReduceScatterOp>(op))
      return traceEach(reduce.getInputs());
    if (auto fused = dyn_cast_or_null<FusedEmbeddingBagOp>(op)) {
      std::vector<bool> &columns = reached[op];
      columns.resize(fused.getType().getDimSize(1), false);
      std::fill(columns.begin() + col, columns.begin() + col + width, true);
      int64_t outColumn = 0;
      for (unsigned i = 0; i < fused.getNumEntries(); ++i) {
        int64_t w = fused.getEntryWidth(i);
        int64_t from = std::max(col, outColumn),
                to = std::min(col + width, outColumn + w);
        if (from < to) {
          std::optional<unsigned> arg = indicesArgument(fused.getIndices()[i]);
          if (!arg) {
            why = "the indices of table '" + fused.getEntryTable(i).str() +
                  "' in " + where + " are not a function argument";
            return false;
          }
          out.push_back({at + from - col, to - from, *arg,
                         fused.getColBegins()[i] + from - outColumn});
        }
        outColumn += w;
      }
      return true;
    }
    if (auto bag = dyn_cast_or_null<EmbeddingBagOp>(op)) {
      std::optional<unsigned> arg = indicesArgument(bag.getIndices());
      if (!arg) {
        why = "the indices of table '" + bag.getTable().str() + "' in " +
              where + " are not a function argument";
        return false;
      }
      out.push_back({at, width, *arg, col});
      return true;
    }
    why = op ? "a result of " + where + " is computed by '" +
                   op->getName().getStringRef().str() +
                   "'; only lookups, slices, concatenations, the exchange and "
                   "the reduce-scatter lead back to the tables"
             : "a result of " + where + " is an argument, not a lookup";
    return false;
  };

  std::vector<std::vector<ResultSource>> sources;
  for (Value value : ret.getOperands()) {
    std::vector<ResultSource> pieces;
    int64_t width = cast<RankedTensorType>(value.getType()).getDimSize(1);
    if (!trace(value, 0, width, 0, pieces))
      return llvm::createStringError(why);
    sources.push_back(std::move(pieces));
  }
  llvm::Error unreached = llvm::Error::success();
  func.walk([&](FusedEmbeddingBagOp fused) {
    std::vector<bool> columns = reached.lookup(fused);
    columns.resize(fused.getType().getDimSize(1), false);
    auto missing = std::find(columns.begin(), columns.end(), false);
    if (missing == columns.end())
      return WalkResult::advance();
    unreached = llvm::createStringError(
        "column " + llvm::Twine(missing - columns.begin()) +
        " of the fused lookup of device " + llvm::Twine(fused.getDevice()) +
        " in " + where +
        " reaches no result, so the backward check cannot give it the "
        "gradient a single-process run gives it");
    return WalkResult::interrupt();
  });
  if (unreached)
    return std::move(unreached);
  return sources;
}
