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

/// A sharded table that lookups of one block read: its shards in column
/// order and those lookups in block order.
struct BlockTable {
  SmallVector<ShardAttr> shards;
  SmallVector<EmbeddingBagOp> lookups;
};

/// Rewrites every lookup of a sharded table in the block of the lookup it
/// matches. The fused lookups go after the block's last lookup, so that
/// every index and offset operand dominates them.
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
      table.shards = llvm::to_vector(
          cast<TableOp>(op).getShardsAttr().getAsRange<ShardAttr>());
      llvm::sort(table.shards, [](ShardAttr a, ShardAttr b) {
        return a.getColBegin() < b.getColBegin();
      });
    }

    Operation *last = lastLookup(lookups);
    rewriter.setInsertionPointAfter(last);
    Location loc = last->getLoc();
    auto firstType = lookups.front().getResult().getType();
    int64_t batch = firstType.getDimSize(0);
    Type elementType = firstType.getElementType();

    // Column of the exchanged buffer where each shard of a lookup's table
    // lands, for every lookup.
    DenseMap<Operation *, SmallVector<int64_t>> columnsOf;
    SmallVector<Value> deviceBuffers;
    int64_t totalWidth = 0;
    int64_t numDevices = topology.getDevices();
    for (int64_t device = 0; device < numDevices; ++device) {
      SmallVector<Attribute> tableRefs, modes;
      SmallVector<int64_t> begins, ends;
      SmallVector<Value> indices, offsets;
      SmallVector<EmbeddingBagOp> fused;
      int64_t width = 0;
      for (BlockTable &table : llvm::make_second_range(tables)) {
        for (auto [s, shard] : llvm::enumerate(table.shards)) {
          if (shard.getDevice() != device)
            continue;
          for (EmbeddingBagOp lookup : table.lookups) {
            SmallVector<int64_t> &columns = columnsOf[lookup];
            columns.resize(table.shards.size());
            columns[s] = totalWidth + width;
            tableRefs.push_back(lookup.getTableAttr());
            modes.push_back(lookup.getModeAttr());
            begins.push_back(shard.getColBegin());
            ends.push_back(shard.getColEnd());
            indices.push_back(lookup.getIndices());
            offsets.push_back(lookup.getOffsets());
            fused.push_back(lookup);
            width += shard.getWidth();
          }
        }
      }
      auto type = RankedTensorType::get({batch, width}, elementType);
      if (tableRefs.empty()) {
        deviceBuffers.push_back(tensor::EmptyOp::create(
            rewriter, loc, type.getShape(), elementType));
      } else {
        auto [poolingFactors, accessHists] = entryStatistics(rewriter, fused);
        deviceBuffers.push_back(FusedEmbeddingBagOp::create(
            rewriter, loc, type, rewriter.getI64IntegerAttr(device),
            rewriter.getArrayAttr(tableRefs),
            rewriter.getDenseI64ArrayAttr(begins),
            rewriter.getDenseI64ArrayAttr(ends), rewriter.getArrayAttr(modes),
            indices, offsets, poolingFactors, accessHists));
      }
      totalWidth += width;
    }

    // Even batch slices; the first `batch % N` devices take one more bag.
    SmallVector<Type> sliceTypes;
    for (int64_t device = 0; device < numDevices; ++device) {
      int64_t rows = batch / numDevices + (device < batch % numDevices ? 1 : 0);
      sliceTypes.push_back(
          RankedTensorType::get({rows, totalWidth}, elementType));
    }
    auto exchange =
        AllToAllOp::create(rewriter, loc, sliceTypes, deviceBuffers);
    // With fewer bags than devices the last devices own no rows; their
    // empty slices take no part in the batch (a concatenation would place
    // them past its end).
    SmallVector<Value> owned;
    for (Value slice : exchange.getResults())
      if (cast<RankedTensorType>(slice.getType()).getDimSize(0) > 0)
        owned.push_back(slice);
    Value all = owned.size() > 1 ? tensor::ConcatOp::create(rewriter, loc,
                                                            /*dim=*/0, owned)
                                       .getResult()
                : owned.empty() ? exchange.getResult(0)
                                : owned.front();

    for (BlockTable &table : llvm::make_second_range(tables)) {
      for (EmbeddingBagOp lookup : table.lookups) {
        SmallVector<Value> pieces;
        for (auto [shard, column] :
             llvm::zip_equal(table.shards, columnsOf[lookup]))
          pieces.push_back(tensor::ExtractSliceOp::create(
              rewriter, lookup.getLoc(), all,
              ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                                     rewriter.getIndexAttr(column)},
              ArrayRef<OpFoldResult>{rewriter.getIndexAttr(batch),
                                     rewriter.getIndexAttr(shard.getWidth())},
              ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                                     rewriter.getIndexAttr(1)}));
        Value result = pieces.size() == 1
                           ? pieces.front()
                           : tensor::ConcatOp::create(rewriter, lookup.getLoc(),
                                                      /*dim=*/1, pieces)
                                 .getResult();
        rewriter.replaceOp(lookup, result);
      }
    }
    return success();
  }

private:
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
    if (failed(readTopology(module, "materializing a plan")))
      return signalPassFailure();

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
