//===- ShardTables.cpp - The --neuroshard-shard pass ----------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A thin adapter between the IR and the planner: tables become TableSpecs,
// the planner picks a plan, and the plan becomes fused per-device lookups, an
// all-to-all and the slices that give every original lookup its result back.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Transforms/Passes.h"

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Support/FileIO.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace mlir::neuroshard {
#define GEN_PASS_DEF_SHARDTABLES
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

/// Everything the rewrite needs to know about one table.
struct TableInfo {
  TableOp op;
  SmallVector<EmbeddingBagOp> lookups;
};

struct ShardTablesPass
    : public mlir::neuroshard::impl::ShardTablesBase<ShardTablesPass> {
  using ShardTablesBase::ShardTablesBase;

  void runOnOperation() override;

private:
  FailureOr<::neuroshard::Topology> buildTopology(ModuleOp module);
  FailureOr<int64_t> findBatchSize(ArrayRef<TableInfo> tables);
  FailureOr<std::vector<::neuroshard::TableSpec>>
  buildTableSpecs(ArrayRef<TableInfo> tables, unsigned numDevices);
  FailureOr<::neuroshard::SearchOptions> buildSearchOptions(ModuleOp module);
  void rewriteBlock(ArrayRef<EmbeddingBagOp> lookups,
                    const DenseMap<Operation *, unsigned> &tableOfLookup,
                    unsigned numTables, const ::neuroshard::Topology &topology,
                    const ::neuroshard::ShardingPlan &plan);
  void attachPlan(ModuleOp module, ArrayRef<::neuroshard::TableSpec> specs,
                  const ::neuroshard::PlanResult &result,
                  const ::neuroshard::Topology &topology);
  LogicalResult writeReports(ModuleOp module,
                             ArrayRef<::neuroshard::TableSpec> specs,
                             const ::neuroshard::Topology &topology,
                             const ::neuroshard::PlanResult &result);
};

} // namespace

/// Emits `error` (from the planner or a cost model) as a diagnostic at `loc`.
static LogicalResult emitPlannerError(Location loc, llvm::Error error) {
  return emitError(loc) << llvm::toString(std::move(error));
}

FailureOr<::neuroshard::Topology>
ShardTablesPass::buildTopology(ModuleOp module) {
  TopologyAttr attr = module->getAttrOfType<TopologyAttr>(
      NeuroShardDialect::getTopologyAttrName());
  unsigned numDevices = devices ? static_cast<unsigned>(devices)
                        : attr  ? static_cast<unsigned>(attr.getDevices())
                                : 0;
  if (numDevices == 0)
    return module.emitError()
           << "no device count: give the module a 'neuroshard.topology' "
              "attribute or pass devices=N";
  if (::neuroshard::RuleViolation v =
          ::neuroshard::checkDeviceCount(numDevices))
    return module.emitError() << *v;

  std::vector<double> memory;
  if (!memoryGb.empty()) {
    llvm::Expected<std::vector<double>> parsed =
        ::neuroshard::parseMemoryGBList(memoryGb);
    if (!parsed)
      return module.emitError()
             << "memory-gb entry " << llvm::toString(parsed.takeError());
    memory = std::move(*parsed);
    if (memory.size() == 1)
      memory.assign(numDevices, memory.front());
    if (memory.size() != numDevices)
      return module.emitError()
             << "memory-gb lists " << memory.size() << " capacities for "
             << numDevices << " devices";
  } else if (attr && attr.getDevices() == numDevices) {
    ArrayRef<double> capacities = attr.getMemoryGb().asArrayRef();
    memory.assign(capacities.begin(), capacities.end());
  } else if (attr && llvm::all_equal(attr.getMemoryGb().asArrayRef())) {
    memory.assign(numDevices, attr.getMemoryGb()[0]);
  } else {
    return module.emitError()
           << "no memory capacity for " << numDevices
           << " devices: pass memory-gb=X (one value or a comma list)";
  }

  ::neuroshard::Topology topology;
  topology.memoryGB = std::move(memory);
  std::optional<::neuroshard::Optimizer> parsedOptimizer =
      ::neuroshard::parseOptimizer(optimizer);
  if (!parsedOptimizer)
    return module.emitError()
           << "unknown optimizer '" << optimizer << "'; expected one of "
           << ::neuroshard::optimizerNameList();
  topology.optimizer = *parsedOptimizer;
  if (::neuroshard::RuleViolation v =
          ::neuroshard::checkReservedFraction(reservedMemory))
    return module.emitError() << "reserved-memory: " << *v;
  topology.reservedFraction = reservedMemory;
  return topology;
}

FailureOr<int64_t> ShardTablesPass::findBatchSize(ArrayRef<TableInfo> tables) {
  EmbeddingBagOp first;
  for (TableInfo info : tables) {
    for (EmbeddingBagOp lookup : info.lookups) {
      int64_t batch = lookup.getResult().getType().getDimSize(0);
      if (ShapedType::isDynamic(batch))
        return lookup.emitOpError()
               << "has a dynamic batch size; the sharding pass plans for a "
                  "static batch";
      if (!first) {
        first = lookup;
        continue;
      }
      int64_t expected = first.getResult().getType().getDimSize(0);
      if (batch != expected) {
        InFlightDiagnostic diag =
            lookup.emitOpError()
            << "looks up table '" << info.op.getSymName() << "' for a batch of "
            << batch << " but other lookups use a batch of " << expected
            << "; every device runs one batch";
        diag.attachNote(first.getLoc()) << "batch of " << expected << " here";
        return failure();
      }
    }
  }
  if (!first)
    return ModuleOp(getOperation()).emitError()
           << "has tables but no neuroshard.embedding_bag lookups to shard";
  return first.getResult().getType().getDimSize(0);
}

FailureOr<std::vector<::neuroshard::TableSpec>>
ShardTablesPass::buildTableSpecs(ArrayRef<TableInfo> tables,
                                 unsigned numDevices) {
  std::vector<::neuroshard::TableSpec> specs;
  for (TableInfo info : tables) {
    TableOp table = info.op;
    // Lookups with statistics of their own are the table's features; the
    // verifier has checked each pair.
    SmallVector<EmbeddingBagOp> featured;
    for (EmbeddingBagOp lookup : info.lookups)
      if (lookup.getPoolingFactor())
        featured.push_back(lookup);
    if (!featured.empty() && featured.size() != info.lookups.size()) {
      EmbeddingBagOp bare = *llvm::find_if(
          info.lookups, [](EmbeddingBagOp l) { return !l.getPoolingFactor(); });
      return bare.emitOpError()
             << "looks up table '" << table.getSymName()
             << "' without statistics of its own, but " << featured.size()
             << " of its " << info.lookups.size()
             << " lookups have them; give every lookup of a shared table "
                "its pooling_factor and access_hist, or none";
    }
    if (featured.empty() && !table.hasCostStatistics())
      return table.emitOpError()
             << "table '" << table.getSymName() << "' has no "
             << (table.getPoolingFactorAttr() ? "access_hist"
                                              : "pooling_factor")
             << "; the cost model needs pooling_factor and the 17-bin "
                "access_hist of every table (or of every lookup of it)";
    ::neuroshard::TableSpec spec;
    spec.name = table.getReportName().str();
    spec.rows = table.getNumRows();
    spec.dim = table.getNumCols();
    spec.elementBytes = table.getElementType().getIntOrFloatBitWidth() / 8;
    if (featured.empty()) {
      spec.poolingFactor = *table.getPoolingFactorValue();
      llvm::copy(*table.getAccessHist(), spec.accessHist.begin());
    }
    for (auto [i, lookup] : llvm::enumerate(featured)) {
      ::neuroshard::FeatureStats stats;
      stats.poolingFactor = lookup.getPoolingFactor()->convertToDouble();
      llvm::copy(*lookup.getAccessHist(), stats.accessHist.begin());
      if (i == 0) {
        spec.poolingFactor = stats.poolingFactor;
        spec.accessHist = stats.accessHist;
      } else {
        spec.moreFeatures.push_back(stats);
      }
    }
    // Checked before the narrowing, which would wrap a device past 2^32.
    if (std::optional<int64_t> pinned = table.getPinnedDevice()) {
      if (::neuroshard::RuleViolation v =
              ::neuroshard::checkPinnedDevice(*pinned, numDevices))
        return table.emitOpError() << "table '" << spec.name << "': " << *v;
      spec.pinnedDevice = static_cast<unsigned>(*pinned);
    }
    spec.noSplit = table.getNoSplit();
    // The verifier has checked the same rules against the module's
    // topology; the pass's options may name another.
    if (::neuroshard::RuleViolation v =
            ::neuroshard::checkTable(spec, numDevices))
      return table.emitOpError() << "table '" << spec.name << "': " << *v;
    specs.push_back(std::move(spec));
  }
  return specs;
}

FailureOr<::neuroshard::SearchOptions>
ShardTablesPass::buildSearchOptions(ModuleOp module) {
  ::neuroshard::SearchOptions options;
  std::optional<::neuroshard::Algorithm> parsed =
      ::neuroshard::parseAlgorithm(algorithm);
  if (!parsed)
    return module.emitError()
           << "unknown algorithm '" << algorithm << "'; expected one of "
           << ::neuroshard::algorithmNameList();
  options.algorithm = *parsed;
  options.beamWidth = beamWidth;
  options.candidates = candidates;
  options.maxSteps = maxSteps;
  options.gridSteps = gridSteps;
  options.seed = seed;
  if (progress)
    options.progress = [](const ::neuroshard::SearchProgress &step) {
      llvm::errs() << ::neuroshard::formatProgress(step) << "\n";
    };
  if (llvm::Error error = ::neuroshard::validateSearchOptions(options))
    return emitPlannerError(module.getLoc(), std::move(error));
  return options;
}

/// The lookup of `lookups` (all in one block) that comes last.
static Operation *lastLookup(ArrayRef<EmbeddingBagOp> lookups) {
  Operation *last = lookups.front();
  for (EmbeddingBagOp lookup : lookups)
    if (last->isBeforeInBlock(lookup))
      last = lookup;
  return last;
}

/// Checks that the lookups of one block can be fused: the fused lookups go
/// after the last lookup, so no result may be used before it, and one
/// exchange buffer holds one element type.
static LogicalResult checkBlockCanBeFused(Block *block,
                                          ArrayRef<EmbeddingBagOp> lookups) {
  Operation *last = lastLookup(lookups);
  for (EmbeddingBagOp lookup : lookups)
    for (Operation *user : lookup->getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (inBlock && (inBlock == last || inBlock->isBeforeInBlock(last)))
        return lookup.emitOpError()
               << "has a use before the last lookup of its block; the "
                  "sharding pass fuses all lookups of a block and needs "
                  "their uses to follow them";
    }
  EmbeddingBagOp first = lookups.front();
  Type elementType = first.getResult().getType().getElementType();
  for (EmbeddingBagOp lookup : lookups)
    if (lookup.getResult().getType().getElementType() != elementType)
      return lookup.emitOpError()
             << "produces " << lookup.getResult().getType().getElementType()
             << " but other lookups of the block produce " << elementType
             << "; one exchange buffer holds one element type";
  return success();
}

/// Rewrites the lookups of one block, which checkBlockCanBeFused accepted.
/// The fused lookups go after the last lookup so that every index and offset
/// operand dominates them.
void ShardTablesPass::rewriteBlock(
    ArrayRef<EmbeddingBagOp> lookups,
    const DenseMap<Operation *, unsigned> &tableOfLookup, unsigned numTables,
    const ::neuroshard::Topology &topology,
    const ::neuroshard::ShardingPlan &plan) {
  SmallVector<SmallVector<EmbeddingBagOp>> lookupsOfTable(numTables);
  for (EmbeddingBagOp lookup : lookups)
    lookupsOfTable[tableOfLookup.at(lookup)].push_back(lookup);

  Operation *last = lastLookup(lookups);
  OpBuilder builder(&getContext());
  builder.setInsertionPointAfter(last);
  Location loc = last->getLoc();
  EmbeddingBagOp firstLookup = lookups.front();
  auto firstType = firstLookup.getResult().getType();
  int64_t batch = firstType.getDimSize(0);
  Type elementType = firstType.getElementType();

  // Column of the exchanged buffer where (shard, lookup) lands.
  DenseMap<std::pair<unsigned, Operation *>, int64_t> columnOf;
  SmallVector<Value> deviceBuffers;
  int64_t totalWidth = 0;
  unsigned numDevices = topology.numDevices();
  for (unsigned device = 0; device < numDevices; ++device) {
    SmallVector<Attribute> tableRefs, modes;
    SmallVector<int64_t> begins, ends;
    SmallVector<Value> indices, offsets;
    SmallVector<EmbeddingBagOp> fused;
    int64_t width = 0;
    for (auto [shardIndex, shard] : llvm::enumerate(plan.shards)) {
      if (shard.device != device)
        continue;
      for (EmbeddingBagOp lookup : lookupsOfTable[shard.table]) {
        columnOf[{static_cast<unsigned>(shardIndex), lookup}] =
            totalWidth + width;
        tableRefs.push_back(lookup.getTableAttr());
        modes.push_back(lookup.getModeAttr());
        begins.push_back(shard.colBegin);
        ends.push_back(shard.colEnd);
        indices.push_back(lookup.getIndices());
        offsets.push_back(lookup.getOffsets());
        fused.push_back(lookup);
        width += shard.width();
      }
    }
    auto type = RankedTensorType::get({batch, width}, elementType);
    if (tableRefs.empty()) {
      deviceBuffers.push_back(
          tensor::EmptyOp::create(builder, loc, type.getShape(), elementType));
    } else {
      // Lookups with statistics of their own keep them per entry; the
      // other entries of the same op get their tables' statistics.
      DenseF64ArrayAttr poolingFactors, accessHists;
      if (llvm::any_of(fused, [](EmbeddingBagOp lookup) {
            return lookup.getPoolingFactor().has_value();
          })) {
        SmallVector<double> factors, bins;
        for (EmbeddingBagOp lookup : fused) {
          auto table = SymbolTable::lookupNearestSymbolFrom<TableOp>(
              lookup, lookup.getTableAttr());
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
        poolingFactors = builder.getDenseF64ArrayAttr(factors);
        accessHists = builder.getDenseF64ArrayAttr(bins);
      }
      deviceBuffers.push_back(FusedEmbeddingBagOp::create(
          builder, loc, type, builder.getI64IntegerAttr(device),
          builder.getArrayAttr(tableRefs), builder.getDenseI64ArrayAttr(begins),
          builder.getDenseI64ArrayAttr(ends), builder.getArrayAttr(modes),
          indices, offsets, poolingFactors, accessHists));
    }
    totalWidth += width;
  }

  // Even batch slices; the first `batch % N` devices take one more bag.
  SmallVector<Type> sliceTypes;
  for (unsigned device = 0; device < numDevices; ++device) {
    int64_t rows = batch / numDevices + (device < batch % numDevices ? 1 : 0);
    sliceTypes.push_back(
        RankedTensorType::get({rows, totalWidth}, elementType));
  }
  auto exchange = AllToAllOp::create(builder, loc, sliceTypes, deviceBuffers);
  // With fewer bags than devices the last devices own no rows; their empty
  // slices take no part in the batch (a concatenation would place them past
  // its end).
  SmallVector<Value> owned;
  for (Value slice : exchange.getResults())
    if (cast<RankedTensorType>(slice.getType()).getDimSize(0) > 0)
      owned.push_back(slice);
  Value all =
      owned.size() > 1
          ? tensor::ConcatOp::create(builder, loc, /*dim=*/0, owned).getResult()
      : owned.empty() ? exchange.getResult(0)
                      : owned.front();

  for (auto [table, tableLookups] : llvm::enumerate(lookupsOfTable)) {
    for (EmbeddingBagOp lookup : tableLookups) {
      SmallVector<Value> pieces;
      for (auto [shardIndex, shard] : llvm::enumerate(plan.shards)) {
        if (shard.table != table)
          continue;
        int64_t column = columnOf.lookup({shardIndex, lookup});
        pieces.push_back(tensor::ExtractSliceOp::create(
            builder, lookup.getLoc(), all,
            ArrayRef<OpFoldResult>{builder.getIndexAttr(0),
                                   builder.getIndexAttr(column)},
            ArrayRef<OpFoldResult>{builder.getIndexAttr(batch),
                                   builder.getIndexAttr(shard.width())},
            ArrayRef<OpFoldResult>{builder.getIndexAttr(1),
                                   builder.getIndexAttr(1)}));
      }
      Value result = pieces.size() == 1
                         ? pieces.front()
                         : tensor::ConcatOp::create(builder, lookup.getLoc(),
                                                    /*dim=*/1, pieces)
                               .getResult();
      lookup.getResult().replaceAllUsesWith(result);
      lookup.erase();
    }
  }
}

void ShardTablesPass::attachPlan(ModuleOp module,
                                 ArrayRef<::neuroshard::TableSpec> specs,
                                 const ::neuroshard::PlanResult &result,
                                 const ::neuroshard::Topology &topology) {
  Builder b(&getContext());
  std::vector<uint64_t> memoryUsed =
      ::neuroshard::deviceMemoryBytes(specs, topology, result.plan);
  std::vector<uint64_t> weightBytes =
      ::neuroshard::deviceWeightBytes(specs, topology, result.plan);
  SmallVector<Attribute> perDevice;
  for (auto [device, cost] : llvm::enumerate(result.cost.devices)) {
    perDevice.push_back(b.getDictionaryAttr({
        b.getNamedAttr("device", b.getI64IntegerAttr(device)),
        b.getNamedAttr(
            "memory_used_gb",
            b.getF64FloatAttr(memoryUsed[device] / ::neuroshard::kBytesPerGB)),
        b.getNamedAttr(
            "weights_gb",
            b.getF64FloatAttr(weightBytes[device] / ::neuroshard::kBytesPerGB)),
        b.getNamedAttr("capacity_gb",
                       b.getF64FloatAttr(topology.memoryGB[device])),
        b.getNamedAttr("compute_ms", b.getF64FloatAttr(cost.computeMs)),
        b.getNamedAttr("bw_comm_ms", b.getF64FloatAttr(cost.bwCommMs)),
        b.getNamedAttr("fw_comm_ms", b.getF64FloatAttr(cost.fwCommMs)),
        b.getNamedAttr("total_ms", b.getF64FloatAttr(cost.totalMs())),
    }));
  }
  module->setAttr(
      NeuroShardDialect::getPlanAttrName(),
      b.getDictionaryAttr({
          b.getNamedAttr(
              "algorithm",
              b.getStringAttr(::neuroshard::algorithmName(result.algorithm))),
          b.getNamedAttr("cost_model", b.getStringAttr(result.costModelName)),
          b.getNamedAttr("cost_ms", b.getF64FloatAttr(result.cost.maxMs)),
          b.getNamedAttr(
              "optimizer",
              b.getStringAttr(::neuroshard::optimizerName(topology.optimizer))),
          b.getNamedAttr("reserved_fraction",
                         b.getF64FloatAttr(topology.reservedFraction)),
          b.getNamedAttr("per_device", b.getArrayAttr(perDevice)),
          b.getNamedAttr(
              "search",
              b.getDictionaryAttr({
                  b.getNamedAttr("time_ms",
                                 b.getF64FloatAttr(result.stats.timeMs)),
                  b.getNamedAttr("cost_queries",
                                 b.getI64IntegerAttr(result.stats.costQueries)),
                  b.getNamedAttr("cache_hits",
                                 b.getI64IntegerAttr(result.stats.cacheHits)),
                  b.getNamedAttr(
                      "states_explored",
                      b.getI64IntegerAttr(result.stats.statesExplored)),
              })),
      }));
}

/// Writes the `option` report to `path` ("-" is standard output).
static LogicalResult
writeReport(ModuleOp module, StringRef option, StringRef path,
            llvm::function_ref<void(llvm::raw_ostream &)> write) {
  if (llvm::Error err = ::neuroshard::writeOutputFile(path, write))
    return module.emitError()
           << option << ": " << llvm::toString(std::move(err));
  return success();
}

LogicalResult
ShardTablesPass::writeReports(ModuleOp module,
                              ArrayRef<::neuroshard::TableSpec> specs,
                              const ::neuroshard::Topology &topology,
                              const ::neuroshard::PlanResult &result) {
  if (!planOut.empty() &&
      failed(writeReport(module, "plan-out", planOut, [&](raw_ostream &os) {
        ::neuroshard::writePlanJSON(os, specs, topology, result);
      })))
    return failure();
  if (!planTable.empty() &&
      failed(writeReport(module, "plan-table", planTable, [&](raw_ostream &os) {
        ::neuroshard::printPlanTable(os, specs, topology, result);
      })))
    return failure();
  if (!torchrecOut.empty() &&
      failed(writeReport(
          module, "torchrec-out", torchrecOut, [&](raw_ostream &os) {
            ::neuroshard::writeTorchRecPlan(os, specs, topology, result);
          })))
    return failure();
  return success();
}

void ShardTablesPass::runOnOperation() {
  ModuleOp module = getOperation();

  // Tables in program order, each with its lookups.
  llvm::MapVector<Operation *, TableInfo> tableInfos;
  for (auto table : module.getOps<TableOp>()) {
    if (table.getShards()) {
      table.emitOpError()
          << "table '" << table.getSymName()
          << "' is already sharded; --neuroshard-shard plans unsharded "
             "modules only";
      return signalPassFailure();
    }
    tableInfos[table] = TableInfo{table, {}};
  }
  if (tableInfos.empty())
    return markAllAnalysesPreserved();

  llvm::MapVector<Block *, SmallVector<EmbeddingBagOp>> lookupsOfBlock;
  DenseMap<Operation *, unsigned> tableOfLookup;
  WalkResult walk = module.walk([&](Operation *op) {
    if (isa<FusedEmbeddingBagOp, AllToAllOp>(op)) {
      op->emitOpError() << "is already sharded IR; --neuroshard-shard plans "
                           "unsharded modules only";
      return WalkResult::interrupt();
    }
    auto lookup = dyn_cast<EmbeddingBagOp>(op);
    if (!lookup)
      return WalkResult::advance();
    auto table = SymbolTable::lookupNearestSymbolFrom<TableOp>(
        lookup, lookup.getTableAttr());
    auto it = table ? tableInfos.find(table) : tableInfos.end();
    if (it == tableInfos.end()) {
      lookup.emitOpError() << "refers to " << lookup.getTableAttr()
                           << ", which is not a table of this module";
      return WalkResult::interrupt();
    }
    it->second.lookups.push_back(lookup);
    tableOfLookup[lookup] = std::distance(tableInfos.begin(), it);
    lookupsOfBlock[lookup->getBlock()].push_back(lookup);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
  for (auto &[block, lookups] : lookupsOfBlock)
    if (failed(checkBlockCanBeFused(block, lookups)))
      return signalPassFailure();

  SmallVector<TableInfo> tables =
      llvm::to_vector(llvm::make_second_range(tableInfos));
  FailureOr<::neuroshard::Topology> topology = buildTopology(module);
  FailureOr<int64_t> batch = findBatchSize(tables);
  if (failed(topology) || failed(batch))
    return signalPassFailure();
  topology->batchSize = *batch;
  FailureOr<std::vector<::neuroshard::TableSpec>> specs =
      buildTableSpecs(tables, topology->numDevices());
  FailureOr<::neuroshard::SearchOptions> options = buildSearchOptions(module);
  if (failed(specs) || failed(options))
    return signalPassFailure();

  if (std::optional<std::string> problem =
          ::neuroshard::checkRiskMargin(costRisk)) {
    module.emitError() << "cost-risk: " << *problem;
    return signalPassFailure();
  }
  ::neuroshard::CostModelOptions modelOptions;
  modelOptions.riskMargin = costRisk;
  auto model =
      ::neuroshard::createCostModel(costModel, *topology, modelOptions);
  if (!model) {
    (void)emitPlannerError(module.getLoc(), model.takeError());
    return signalPassFailure();
  }
  auto result =
      ::neuroshard::planSharding(*specs, *topology, *options, **model);
  if (!result) {
    (void)emitPlannerError(module.getLoc(), result.takeError());
    return signalPassFailure();
  }

  for (const std::string &warning : result->warnings)
    mlir::emitWarning(module.getLoc()) << warning;
  if (failed(writeReports(module, *specs, *topology, *result)))
    return signalPassFailure();

  // Every check has passed: rewrite the module. Options override the
  // module's topology, so record the one that was planned for.
  MLIRContext *ctx = &getContext();
  module->setAttr(
      NeuroShardDialect::getTopologyAttrName(),
      TopologyAttr::get(ctx, topology->numDevices(),
                        DenseF64ArrayAttr::get(ctx, topology->memoryGB)));
  for (auto [index, info] : llvm::enumerate(tables)) {
    SmallVector<Attribute> shards;
    for (const ::neuroshard::Shard &shard : result->plan.shards)
      if (shard.table == index)
        shards.push_back(
            ShardAttr::get(ctx, shard.colBegin, shard.colEnd, shard.device));
    info.op.setShardsAttr(ArrayAttr::get(ctx, shards));
  }

  for (auto &[block, lookups] : lookupsOfBlock)
    rewriteBlock(lookups, tableOfLookup, tables.size(), *topology,
                 result->plan);
  attachPlan(module, *specs, *result, *topology);

  numTables = tables.size();
  numShards = result->plan.shards.size();
  numColumnSplits = result->plan.shards.size() - tables.size();
  predictedCostUs =
      static_cast<uint64_t>(std::llround(result->cost.maxMs * 1e3));
  numCostQueries = result->stats.costQueries;
  numCacheHits = result->stats.cacheHits;
  searchTimeUs =
      static_cast<uint64_t>(std::llround(result->stats.timeMs * 1e3));
}
