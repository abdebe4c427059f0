//===- Plan.cpp - The --neuroshard-plan pass ------------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A thin adapter between the IR and the planner: tables become TableSpecs,
// the planner picks a plan, and the plan is recorded on the module (every
// table's shards, the topology and the plan's costs). Rewriting the lookups
// is --neuroshard-materialize's job.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Transforms/Passes.h"

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Transforms/PlanAnnotation.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

namespace mlir::neuroshard {
#define GEN_PASS_DEF_PLAN
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

struct PlanPass : public mlir::neuroshard::impl::PlanBase<PlanPass> {
  using PlanBase::PlanBase;

  void runOnOperation() override;

private:
  FailureOr<::neuroshard::Topology> buildTopology(ModuleOp module);
  FailureOr<int64_t> findBatchSize(ModuleOp module,
                                   ArrayRef<ModuleTable> tables);
  FailureOr<::neuroshard::SearchOptions> buildSearchOptions(ModuleOp module);
};

} // namespace

/// Emits `error` (from the planner or a cost model) as a diagnostic at `loc`.
static LogicalResult emitPlannerError(Location loc, llvm::Error error) {
  return emitError(loc) << llvm::toString(std::move(error));
}

FailureOr<::neuroshard::Topology> PlanPass::buildTopology(ModuleOp module) {
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

FailureOr<int64_t> PlanPass::findBatchSize(ModuleOp module,
                                           ArrayRef<ModuleTable> tables) {
  EmbeddingBagOp first;
  for (ModuleTable info : tables) {
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
    return module.emitError()
           << "has tables but no neuroshard.embedding_bag lookups to shard";
  return first.getResult().getType().getDimSize(0);
}

FailureOr<::neuroshard::SearchOptions>
PlanPass::buildSearchOptions(ModuleOp module) {
  ::neuroshard::SearchOptions values;
  values.beamWidth = beamWidth;
  values.candidates = candidates;
  values.maxSteps = maxSteps;
  values.gridSteps = gridSteps;
  values.thresholdMin = thresholdMin;
  values.thresholdMax = thresholdMax;
  values.seed = seed;
  llvm::Expected<::neuroshard::SearchOptions> options =
      ::neuroshard::makeSearchOptions(algorithm, values, progress);
  if (!options)
    return emitPlannerError(module.getLoc(), options.takeError());
  return std::move(*options);
}

void PlanPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<SmallVector<ModuleTable>> tables = collectModuleTables(module);
  if (failed(tables))
    return signalPassFailure();
  if (tables->empty())
    return markAllAnalysesPreserved();
  for (ModuleTable &table : *tables)
    if (table.op.getShards()) {
      table.op.emitOpError()
          << "table '" << table.op.getSymName()
          << "' already has shards; --neuroshard-plan plans modules whose "
             "tables have none";
      return signalPassFailure();
    }
  WalkResult sharded = module.walk([](Operation *op) {
    if (!isa<FusedEmbeddingBagOp, AllToAllOp>(op))
      return WalkResult::advance();
    op->emitOpError() << "is already sharded IR; --neuroshard-plan plans "
                         "unsharded modules only";
    return WalkResult::interrupt();
  });
  if (sharded.wasInterrupted())
    return signalPassFailure();

  FailureOr<::neuroshard::Topology> topology = buildTopology(module);
  FailureOr<int64_t> batch = findBatchSize(module, *tables);
  if (failed(topology) || failed(batch))
    return signalPassFailure();
  topology->batchSize = *batch;
  std::vector<::neuroshard::TableSpec> specs;
  for (ModuleTable &table : *tables) {
    FailureOr<::neuroshard::TableSpec> spec =
        buildTableSpec(table, topology->numDevices(), /*statistics=*/true);
    if (failed(spec))
      return signalPassFailure();
    // The verifier has checked the same rules against the module's
    // topology; the pass's options may name another.
    if (::neuroshard::RuleViolation v =
            ::neuroshard::checkTable(*spec, topology->numDevices())) {
      table.op.emitOpError() << "table '" << spec->name << "': " << *v;
      return signalPassFailure();
    }
    specs.push_back(std::move(*spec));
  }
  FailureOr<::neuroshard::SearchOptions> options = buildSearchOptions(module);
  if (failed(options))
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
  auto result = ::neuroshard::planSharding(specs, *topology, *options, **model);
  if (!result) {
    (void)emitPlannerError(module.getLoc(), result.takeError());
    return signalPassFailure();
  }
  for (const std::string &warning : result->warnings)
    mlir::emitWarning(module.getLoc()) << warning;

  // Options override the module's topology, so record the one that was
  // planned for.
  writeTopology(module, *topology);
  writeShards(*tables, result->plan);
  writePlanRecord(module, specs, *topology, *result);

  numTables = tables->size();
  numShards = result->plan.shards.size();
  numColumnSplits = result->plan.shards.size() - tables->size();
  predictedCostUs =
      static_cast<uint64_t>(std::llround(result->cost.maxMs * 1e3));
  numCostQueries = result->stats.costQueries;
  numCacheHits = result->stats.cacheHits;
  searchTimeUs =
      static_cast<uint64_t>(std::llround(result->stats.timeMs * 1e3));
}
