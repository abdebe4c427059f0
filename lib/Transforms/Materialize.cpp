//===- Materialize.cpp - The --neuroshard-materialize pass ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Turns the plan recorded in the tables' `shards` into what every device
// runs: per block, one fused lookup per device, the exchange between the
// devices, and the slices that give every original lookup its result back.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Transforms/Materialize.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/Passes.h"
#include "neuroshard/Transforms/PlanAnnotation.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <tuple>

namespace mlir::neuroshard {
#define GEN_PASS_DEF_MATERIALIZE
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

/// The table `lookup` reads, if it has shards.
static TableOp shardedTableOf(EmbeddingBagOp lookup) {
  auto table = SymbolTable::lookupNearestSymbolFrom<TableOp>(
      lookup, lookup.getTableAttr());
  return table && table.getShardsAttr() ? table : TableOp();
}

/// The lookups of sharded tables in `block`, in block order.
static SmallVector<EmbeddingBagOp> shardedLookupsOf(Block *block) {
  SmallVector<EmbeddingBagOp> lookups;
  for (auto lookup : block->getOps<EmbeddingBagOp>())
    if (shardedTableOf(lookup))
      lookups.push_back(lookup);
  return lookups;
}

/// The lookup of `lookups` (all in one block) that comes last.
static Operation *lastLookup(ArrayRef<EmbeddingBagOp> lookups) {
  Operation *last = lookups.front();
  for (EmbeddingBagOp lookup : lookups)
    if (last->isBeforeInBlock(lookup))
      last = lookup;
  return last;
}

namespace {

/// How a table's pieces are placed.
enum class Layout { Columns, RowPieces, Replicas };

/// A sharded table that lookups of one block read: its shards (row ranges
/// first, then columns) and those lookups in block order.
struct BlockTable {
  TableOp op;
  SmallVector<ShardAttr> shards;
  SmallVector<EmbeddingBagOp> lookups;
  Layout layout = Layout::Columns;
};

/// Where a lookup's pieces land: per shard of its table, the column of the
/// exchanged buffer (whole tables and column pieces) or of its device's
/// fused result (row pieces and replicas).
using PieceColumns = DenseMap<Operation *, SmallVector<int64_t>>;

/// Calls `visit(table, s, shard, lookup)` for every lookup of every table
/// of `layout` in `tables` whose shard `s` is on `device`: tables in order,
/// then shards, then lookups, which is the order of a fused lookup's
/// entries.
template <typename Visit>
void forEachPieceOn(llvm::MapVector<Operation *, BlockTable> &tables,
                    Layout layout, int64_t device, Visit visit) {
  for (BlockTable &table : llvm::make_second_range(tables)) {
    if (table.layout != layout)
      continue;
    for (auto [s, shard] : llvm::enumerate(table.shards)) {
      if (shard.getDevice() != device)
        continue;
      for (EmbeddingBagOp lookup : table.lookups)
        visit(table, s, shard, lookup);
    }
  }
}

/// Whole rows `[0, rows)` of columns `[column, column + width)` of `source`.
Value sliceColumns(PatternRewriter &rewriter, Location loc, Value source,
                   int64_t column, int64_t width) {
  auto type = cast<RankedTensorType>(source.getType());
  if (column == 0 && width == type.getDimSize(1))
    return source;
  return tensor::ExtractSliceOp::create(
      rewriter, loc, source,
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                             rewriter.getIndexAttr(column)},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(type.getDimSize(0)),
                             rewriter.getIndexAttr(width)},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                             rewriter.getIndexAttr(1)});
}

/// `pieces` side by side along `dim` (one piece is itself).
Value concat(PatternRewriter &rewriter, Location loc, int64_t dim,
             ArrayRef<Value> pieces) {
  if (pieces.size() == 1)
    return pieces.front();
  return tensor::ConcatOp::create(rewriter, loc, dim, pieces).getResult();
}

/// The batch rows device `device` of `numDevices` owns: even slices, the
/// first `batch % N` devices taking one more bag. Returns (first, count).
std::pair<int64_t, int64_t> batchSlice(int64_t batch, int64_t numDevices,
                                       int64_t device) {
  int64_t base = batch / numDevices, extra = batch % numDevices;
  int64_t first = device * base + std::min(device, extra);
  return {first, base + (device < extra ? 1 : 0)};
}

/// The types of every device's batch slice of a `batch x width` result.
SmallVector<Type> batchSliceTypes(int64_t batch, int64_t numDevices,
                                  int64_t width, Type elementType) {
  SmallVector<Type> types;
  for (int64_t device = 0; device < numDevices; ++device)
    types.push_back(RankedTensorType::get(
        {batchSlice(batch, numDevices, device).second, width}, elementType));
  return types;
}

/// The rows `[first, end)` of a table of `rows` rows that `shard` holds.
std::pair<int64_t, int64_t> rowRangeOf(ShardAttr shard, int64_t rows) {
  return {shard.getRowBegin(), shard.getRowEndIn(rows)};
}

/// The bucketized (indices, offsets) of each lookup of a row-split table,
/// by the lookup and the rows of the block.
using RowBlocks = DenseMap<std::tuple<Operation *, int64_t, int64_t>,
                           std::pair<Value, Value>>;

/// One fused lookup being built: its entries and their lookups.
struct FusedBuilder {
  SmallVector<Attribute> tableRefs, modes;
  SmallVector<int64_t> rowBegins, rowEnds, colBegins, colEnds;
  SmallVector<Value> indices, offsets;
  SmallVector<EmbeddingBagOp> lookups;
  int64_t width = 0;
  bool anyRows = false;

  /// Adds an entry and returns its first column in the result.
  int64_t add(EmbeddingBagOp lookup, ShardAttr shard, int64_t tableRows,
              PoolingModeAttr mode, Value entryIndices, Value entryOffsets) {
    ::neuroshard::Shard piece = toPlanShard(shard, 0, tableRows);
    tableRefs.push_back(lookup.getTableAttr());
    modes.push_back(mode);
    rowBegins.push_back(piece.rowBegin);
    rowEnds.push_back(piece.rowEnd);
    anyRows |= !piece.allRows();
    colBegins.push_back(shard.getColBegin());
    colEnds.push_back(shard.getColEnd());
    indices.push_back(entryIndices);
    offsets.push_back(entryOffsets);
    lookups.push_back(lookup);
    int64_t column = width;
    width += shard.getWidth();
    return column;
  }
};

/// Rewrites every lookup of a sharded table in the block of the lookup it
/// matches. The fused lookups go after the block's last lookup, so that
/// every index and offset operand dominates them.
///
/// Whole tables and column pieces are looked up for the whole batch and
/// exchanged (`neuroshard.all_to_all`). The indices of a table split by
/// rows are bucketized by its row ranges; each row piece pools its part of
/// every bag (sums), and the partial sums of each column cell are reduced
/// while the batch is scattered (`neuroshard.reduce_scatter`, which divides
/// mean bags after the sum). A replicated table is looked up on every
/// device for that device's slice of the batch, which needs no exchange.
struct MaterializeBlockLookups : public OpRewritePattern<EmbeddingBagOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(EmbeddingBagOp root,
                                PatternRewriter &rewriter) const override {
    if (!shardedTableOf(root))
      return rewriter.notifyMatchFailure(root, "its table has no shards");
    auto module = root->getParentOfType<ModuleOp>();
    TopologyAttr topology = getEnclosingTopology(root);
    if (!topology)
      return rewriter.notifyMatchFailure(root, "the module has no topology");
    SmallVector<EmbeddingBagOp> lookups = shardedLookupsOf(root->getBlock());

    // Tables in module order, as the plan lists them.
    llvm::MapVector<Operation *, BlockTable> tables;
    for (TableOp table : module.getOps<TableOp>())
      tables[table] = {};
    for (EmbeddingBagOp lookup : lookups)
      tables[shardedTableOf(lookup)].lookups.push_back(lookup);
    for (auto &[op, table] : tables) {
      if (table.lookups.empty())
        continue;
      table.op = cast<TableOp>(op);
      int64_t rows = table.op.getNumRows();
      table.shards =
          llvm::to_vector(table.op.getShardsAttr().getAsRange<ShardAttr>());
      llvm::sort(table.shards, [&](ShardAttr a, ShardAttr b) {
        return std::make_tuple(toPlanShard(a, 0, rows).rowBegin,
                               a.getColBegin(), a.getDevice()) <
               std::make_tuple(toPlanShard(b, 0, rows).rowBegin,
                               b.getColBegin(), b.getDevice());
      });
      if (table.shards.front().getReplica())
        table.layout = Layout::Replicas;
      else if (llvm::any_of(table.shards, [&](ShardAttr shard) {
                 return !toPlanShard(shard, 0, rows).allRows();
               }))
        table.layout = Layout::RowPieces;
    }

    Operation *last = lastLookup(lookups);
    rewriter.setInsertionPointAfter(last);
    Location loc = last->getLoc();
    auto firstType = lookups.front().getResult().getType();
    int64_t batch = firstType.getDimSize(0);
    Type elementType = firstType.getElementType();
    int64_t numDevices = topology.getDevices();

    // The row blocks every lookup of a row-split table reads.
    RowBlocks blocks;
    for (BlockTable &table : llvm::make_second_range(tables))
      if (table.layout == Layout::RowPieces)
        for (EmbeddingBagOp lookup : table.lookups)
          bucketize(rewriter, table, lookup, blocks);

    // Per device, one fused lookup over the whole batch: the exchanged
    // pieces first, then the row pieces.
    PieceColumns exchangedColumn, rowPieceColumn;
    SmallVector<Value> deviceResults, exchanged;
    int64_t exchangedWidth = 0;
    for (int64_t device = 0; device < numDevices; ++device) {
      FusedBuilder fused;
      forEachPieceOn(tables, Layout::Columns, device,
                     [&](BlockTable &table, size_t s, ShardAttr shard,
                         EmbeddingBagOp lookup) {
                       SmallVector<int64_t> &columns = exchangedColumn[lookup];
                       columns.resize(table.shards.size());
                       columns[s] =
                           exchangedWidth +
                           fused.add(lookup, shard, table.op.getNumRows(),
                                     lookup.getModeAttr(), lookup.getIndices(),
                                     lookup.getOffsets());
                     });
      int64_t deviceExchangedWidth = fused.width;
      auto sum = PoolingModeAttr::get(getContext(), PoolingMode::Sum);
      forEachPieceOn(tables, Layout::RowPieces, device,
                     [&](BlockTable &table, size_t s, ShardAttr shard,
                         EmbeddingBagOp lookup) {
                       auto [firstRow, endRow] =
                           rowRangeOf(shard, table.op.getNumRows());
                       auto [blockIndices, blockOffsets] =
                           blocks.lookup({lookup, firstRow, endRow});
                       SmallVector<int64_t> &columns = rowPieceColumn[lookup];
                       columns.resize(table.shards.size());
                       columns[s] =
                           fused.add(lookup, shard, table.op.getNumRows(), sum,
                                     blockIndices, blockOffsets);
                     });
      Value result = build(rewriter, loc, device, batch, elementType, fused);
      deviceResults.push_back(result);
      if (deviceExchangedWidth == 0 && fused.width > 0)
        exchanged.push_back(tensor::EmptyOp::create(
            rewriter, loc, ArrayRef<int64_t>{batch, 0}, elementType));
      else
        exchanged.push_back(
            sliceColumns(rewriter, loc, result, 0, deviceExchangedWidth));
      exchangedWidth += deviceExchangedWidth;
    }

    // The exchange of whole tables and column pieces, stacked back into the
    // whole batch.
    Value all;
    if (exchangedWidth > 0)
      all = exchange(rewriter, loc, batch, numDevices, exchangedWidth,
                     elementType, exchanged);

    // The replicas: every device looks up its slice of the batch.
    PieceColumns replicaColumn;
    SmallVector<Value> replicaResults(numDevices);
    for (int64_t device = 0; device < numDevices; ++device) {
      int64_t first, count;
      std::tie(first, count) = batchSlice(batch, numDevices, device);
      if (count == 0)
        continue;
      FusedBuilder fused;
      forEachPieceOn(
          tables, Layout::Replicas, device,
          [&](BlockTable &table, size_t, ShardAttr shard,
              EmbeddingBagOp lookup) {
            Value offsets = tensor::ExtractSliceOp::create(
                rewriter, loc, lookup.getOffsets(),
                ArrayRef<OpFoldResult>{rewriter.getIndexAttr(first)},
                ArrayRef<OpFoldResult>{rewriter.getIndexAttr(count + 1)},
                ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
            replicaColumn[lookup].push_back(
                fused.add(lookup, shard, table.op.getNumRows(),
                          lookup.getModeAttr(), lookup.getIndices(), offsets));
          });
      if (!fused.tableRefs.empty())
        replicaResults[device] =
            build(rewriter, loc, device, count, elementType, fused);
    }

    for (BlockTable &table : llvm::make_second_range(tables)) {
      for (EmbeddingBagOp lookup : table.lookups) {
        Location at = lookup.getLoc();
        Value result;
        switch (table.layout) {
        case Layout::Columns: {
          SmallVector<Value> pieces;
          for (auto [shard, column] :
               llvm::zip_equal(table.shards, exchangedColumn[lookup]))
            pieces.push_back(
                sliceColumns(rewriter, at, all, column, shard.getWidth()));
          result = concat(rewriter, at, /*dim=*/1, pieces);
          break;
        }
        case Layout::RowPieces:
          result = reduceRowPieces(rewriter, at, table, lookup,
                                   rowPieceColumn[lookup], deviceResults,
                                   numDevices);
          break;
        case Layout::Replicas: {
          SmallVector<Value> slices;
          unsigned entry = 0;
          for (auto [device, fused] : llvm::enumerate(replicaResults)) {
            if (!fused)
              continue;
            slices.push_back(sliceColumns(rewriter, at, fused,
                                          replicaColumn[lookup][entry++],
                                          table.op.getNumCols()));
          }
          result = concat(rewriter, at, /*dim=*/0, slices);
          break;
        }
        }
        rewriter.replaceOp(lookup, result);
      }
    }
    return success();
  }

private:
  /// Bucketizes `lookup`'s indices by its table's row ranges. When the
  /// ranges partition the rows, one op splits them; otherwise each range is
  /// a bucket of its own.
  static void bucketize(PatternRewriter &rewriter, BlockTable &table,
                        EmbeddingBagOp lookup, RowBlocks &blocks) {
    int64_t rows = table.op.getNumRows();
    SmallVector<std::pair<int64_t, int64_t>> ranges;
    for (ShardAttr shard : table.shards) {
      std::pair<int64_t, int64_t> range = rowRangeOf(shard, rows);
      if (!llvm::is_contained(ranges, range))
        ranges.push_back(range);
    }
    llvm::sort(ranges);
    bool partition = ranges.front().first == 0 && ranges.back().second == rows;
    for (size_t r = 1; r < ranges.size(); ++r)
      partition &= ranges[r].first == ranges[r - 1].second;
    SmallVector<SmallVector<int64_t>> bucketings;
    if (partition) {
      SmallVector<int64_t> cuts = {0};
      for (auto range : ranges)
        cuts.push_back(range.second);
      bucketings.push_back(cuts);
    } else {
      for (auto range : ranges) {
        // A piece of every row reads the lookup's own indices.
        if (range == std::make_pair(int64_t{0}, rows))
          blocks[{lookup, 0, rows}] = {lookup.getIndices(),
                                       lookup.getOffsets()};
        else
          bucketings.push_back({range.first, range.second});
      }
    }
    Type indicesType = RankedTensorType::get(
        {ShapedType::kDynamic},
        getElementTypeOrSelf(lookup.getIndices().getType()));
    Type offsetsType = lookup.getOffsets().getType();
    for (ArrayRef<int64_t> cuts : bucketings) {
      size_t k = cuts.size() - 1;
      SmallVector<Type> types(k, indicesType);
      types.append(k, offsetsType);
      auto op = BucketizeOp::create(rewriter, lookup.getLoc(), types,
                                    lookup.getIndices(), lookup.getOffsets(),
                                    rewriter.getDenseI64ArrayAttr(cuts));
      for (size_t j = 0; j < k; ++j)
        blocks[{lookup, cuts[j], cuts[j + 1]}] = {op.getBlockIndices()[j],
                                                  op.getBlockOffsets()[j]};
    }
  }

  /// The fused lookup `fused` describes on `device`, `batch` bags, or an
  /// empty buffer when it has no entries.
  static Value build(PatternRewriter &rewriter, Location loc, int64_t device,
                     int64_t batch, Type elementType, FusedBuilder &fused) {
    auto type = RankedTensorType::get({batch, fused.width}, elementType);
    if (fused.tableRefs.empty())
      return tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                     elementType);
    auto [poolingFactors, accessHists] =
        entryStatistics(rewriter, fused.lookups);
    DenseI64ArrayAttr rowBegins, rowEnds;
    if (fused.anyRows) {
      rowBegins = rewriter.getDenseI64ArrayAttr(fused.rowBegins);
      rowEnds = rewriter.getDenseI64ArrayAttr(fused.rowEnds);
    }
    auto op = FusedEmbeddingBagOp::create(
        rewriter, loc, type, rewriter.getI64IntegerAttr(device),
        rewriter.getArrayAttr(fused.tableRefs),
        rewriter.getDenseI64ArrayAttr(fused.colBegins),
        rewriter.getDenseI64ArrayAttr(fused.colEnds),
        rewriter.getArrayAttr(fused.modes), fused.indices, fused.offsets,
        poolingFactors, accessHists, rowBegins, rowEnds);
    return op.getResult();
  }

  /// The all-to-all of the exchanged columns, stacked back into the batch.
  static Value exchange(PatternRewriter &rewriter, Location loc, int64_t batch,
                        int64_t numDevices, int64_t width, Type elementType,
                        ArrayRef<Value> buffers) {
    auto op = AllToAllOp::create(
        rewriter, loc, batchSliceTypes(batch, numDevices, width, elementType),
        buffers);
    return stackOwnedRows(rewriter, loc, op.getResults());
  }

  /// The devices' batch slices stacked into the whole batch. With fewer
  /// bags than devices the last devices own no rows; their empty slices
  /// take no part (a concatenation would place them past its end).
  static Value stackOwnedRows(PatternRewriter &rewriter, Location loc,
                              ValueRange slices) {
    SmallVector<Value> owned;
    for (Value slice : slices)
      if (cast<RankedTensorType>(slice.getType()).getDimSize(0) > 0)
        owned.push_back(slice);
    if (owned.empty())
      return slices.front();
    return concat(rewriter, loc, /*dim=*/0, owned);
  }

  /// A row-split table's lookup: per cell of the columns its pieces cut,
  /// the reduce-scatter of the partial sums of the pieces that hold it.
  static Value reduceRowPieces(PatternRewriter &rewriter, Location loc,
                               BlockTable &table, EmbeddingBagOp lookup,
                               ArrayRef<int64_t> columns,
                               ArrayRef<Value> deviceResults,
                               int64_t numDevices) {
    SmallVector<int64_t> cuts;
    for (ShardAttr shard : table.shards) {
      cuts.push_back(shard.getColBegin());
      cuts.push_back(shard.getColEnd());
    }
    llvm::sort(cuts);
    cuts.erase(llvm::unique(cuts), cuts.end());
    bool mean = lookup.getMode() == PoolingMode::Mean;
    auto type = lookup.getResult().getType();
    int64_t batch = type.getDimSize(0);
    SmallVector<Value> cells;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      int64_t begin = cuts[c], width = cuts[c + 1] - cuts[c];
      SmallVector<Value> partials;
      for (auto [shard, column] : llvm::zip_equal(table.shards, columns))
        if (shard.getColBegin() <= begin && begin < shard.getColEnd())
          partials.push_back(
              sliceColumns(rewriter, loc, deviceResults[shard.getDevice()],
                           column + begin - shard.getColBegin(), width));
      auto op = ReduceScatterOp::create(
          rewriter, loc,
          batchSliceTypes(batch, numDevices, width, type.getElementType()),
          partials, mean ? lookup.getOffsets() : Value());
      cells.push_back(stackOwnedRows(rewriter, loc, op.getResults()));
    }
    return concat(rewriter, loc, /*dim=*/1, cells);
  }

  /// Lookups with statistics of their own keep them per entry of the fused
  /// lookup; the other entries of the same op get their tables' statistics.
  /// Null when no entry has statistics of its own.
  static std::pair<DenseF64ArrayAttr, DenseF64ArrayAttr>
  entryStatistics(PatternRewriter &rewriter, ArrayRef<EmbeddingBagOp> fused) {
    if (llvm::none_of(fused, [](EmbeddingBagOp lookup) {
          return lookup.getPoolingFactor().has_value();
        }))
      return {};
    SmallVector<double> factors, bins;
    for (EmbeddingBagOp lookup : fused) {
      TableOp table = shardedTableOf(lookup);
      bool own = lookup.getPoolingFactor().has_value();
      factors.push_back(own ? lookup.getPoolingFactor()->convertToDouble()
                            : table.getPoolingFactorValue().value_or(0.0));
      std::optional<ArrayRef<double>> hist =
          own ? lookup.getAccessHist() : table.getAccessHist();
      if (hist)
        llvm::append_range(bins, *hist);
      else
        bins.append(::neuroshard::kNumAccessBins, 0.0);
    }
    return {rewriter.getDenseF64ArrayAttr(factors),
            rewriter.getDenseF64ArrayAttr(bins)};
  }
};

} // namespace

void mlir::neuroshard::populateMaterializePatterns(
    RewritePatternSet &patterns) {
  patterns.add<MaterializeBlockLookups>(patterns.getContext());
}

void mlir::neuroshard::configureMaterializeTarget(ConversionTarget &target) {
  target.addLegalDialect<NeuroShardDialect, tensor::TensorDialect>();
  target.addDynamicallyLegalOp<EmbeddingBagOp>(
      [](EmbeddingBagOp lookup) { return !shardedTableOf(lookup); });
}

/// Checks what the pattern needs of the lookups of one block: static batch
/// sizes, all the same; one element type (one exchange buffer holds one);
/// and no use before the last lookup, after which the fused lookups go.
static LogicalResult checkBlockCanBeFused(ArrayRef<EmbeddingBagOp> lookups) {
  EmbeddingBagOp first = lookups.front();
  RankedTensorType firstType = first.getResult().getType();
  for (EmbeddingBagOp lookup : lookups) {
    RankedTensorType type = lookup.getResult().getType();
    if (type.isDynamicDim(0))
      return lookup.emitOpError()
             << "has a dynamic batch size; materializing a plan needs a "
                "static batch";
    if (type.getDimSize(0) != firstType.getDimSize(0)) {
      InFlightDiagnostic diag =
          lookup.emitOpError()
          << "looks up a batch of " << type.getDimSize(0)
          << " but other lookups of its block use a batch of "
          << firstType.getDimSize(0) << "; every device runs one batch";
      diag.attachNote(first.getLoc())
          << "batch of " << firstType.getDimSize(0) << " here";
      return diag;
    }
    if (type.getElementType() != firstType.getElementType())
      return lookup.emitOpError()
             << "produces " << type.getElementType()
             << " but other lookups of the block produce "
             << firstType.getElementType()
             << "; one exchange buffer holds one element type";
  }
  Operation *last = lastLookup(lookups);
  Block *block = last->getBlock();
  for (EmbeddingBagOp lookup : lookups)
    for (Operation *user : lookup->getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (inBlock && (inBlock == last || inBlock->isBeforeInBlock(last)))
        return lookup.emitOpError()
               << "has a use before the last lookup of its block; the "
                  "sharding pass fuses all lookups of a block and needs "
                  "their uses to follow them";
    }
  return success();
}

namespace {

struct MaterializePass
    : public mlir::neuroshard::impl::MaterializeBase<MaterializePass> {
  using MaterializeBase::MaterializeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<SmallVector<ModuleTable>> tables = collectModuleTables(module);
    if (failed(tables))
      return signalPassFailure();
    if (llvm::all_of(*tables,
                     [](ModuleTable &table) { return table.lookups.empty(); }))
      return markAllAnalysesPreserved();

    // A plan places every table, so an annotation is all or nothing.
    auto unplaced = llvm::find_if(
        *tables, [](ModuleTable &table) { return !table.op.getShardsAttr(); });
    if (unplaced != tables->end()) {
      size_t placed = llvm::count_if(*tables, [](ModuleTable &table) {
        return table.op.getShardsAttr() != nullptr;
      });
      if (placed == 0)
        module.emitError()
            << "has lookups but no table has shards; record a plan with "
               "--neuroshard-plan or --neuroshard-import-plan first";
      else
        unplaced->op.emitOpError()
            << "table '" << unplaced->op.getSymName() << "' has no shards but "
            << placed << " of the module's " << tables->size()
            << " tables do; a plan places every table";
      return signalPassFailure();
    }
    FailureOr<::neuroshard::Topology> topology =
        readTopology(module, "materializing a plan");
    if (failed(topology))
      return signalPassFailure();
    // What the shards take of every device's memory (a shard in host memory
    // its cache) and of every node's host memory, weights alone: a plan
    // written by hand is held to the memory the planner's are.
    FailureOr<std::vector<::neuroshard::TableSpec>> specs =
        buildTableSpecs(*tables, topology->numDevices());
    if (failed(specs))
      return signalPassFailure();
    if (llvm::Error err = ::neuroshard::validatePlan(*specs, *topology,
                                                     readShards(*tables))) {
      module.emitError() << llvm::toString(std::move(err));
      return signalPassFailure();
    }

    llvm::MapVector<Block *, SmallVector<EmbeddingBagOp>> lookupsOfBlock;
    module.walk([&](EmbeddingBagOp lookup) {
      lookupsOfBlock[lookup->getBlock()].push_back(lookup);
    });
    for (auto &lookups : llvm::make_second_range(lookupsOfBlock))
      if (failed(checkBlockCanBeFused(lookups)))
        return signalPassFailure();

    ConversionTarget target(getContext());
    configureMaterializeTarget(target);
    RewritePatternSet patterns(&getContext());
    populateMaterializePatterns(patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
