//===- Plan.cpp - The --neuroshard-plan pass ------------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A thin adapter between the IR and the planner: tables become TableSpecs,
// tables too large for the devices go to host memory, the planner picks a
// plan, and the plan is recorded on the module (every table's shards with
// their caches, the topology and the plan's costs). Rewriting the lookups
// is --neuroshard-materialize's job.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Transforms/Passes.h"

#include "PassOptionErrors.h"

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Planner/HostTierChoice.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Planner/TopologyOptions.h"
#include "neuroshard/Sharding/AccessEstimate.h"
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

  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    return initializeWithHelp(
        *this, options, errorHandler, [&](StringRef part, auto handler) {
          return PlanBase::initializeOptions(part, handler);
        });
  }

  void runOnOperation() override;

private:
  FailureOr<::neuroshard::Topology> buildTopology(ModuleOp module);
  FailureOr<int64_t> findBatchSize(ModuleOp module,
                                   ArrayRef<ModuleTable> tables);
  FailureOr<::neuroshard::SearchOptions>
  buildSearchOptions(ModuleOp module, const ::neuroshard::Topology &topology);
};

} // namespace

/// Emits `error` (from the planner or a cost model) as a diagnostic at `loc`.
static LogicalResult emitPlannerError(Location loc, llvm::Error error) {
  return emitError(loc) << llvm::toString(std::move(error));
}

FailureOr<::neuroshard::Topology> PlanPass::buildTopology(ModuleOp module) {
  TopologyAttr attr = module->getAttrOfType<TopologyAttr>(
      NeuroShardDialect::getTopologyAttrName());
  ::neuroshard::TopologyOptions given;
  if (devices)
    given.devices = devices;
  if (!memoryGb.empty())
    given.memoryGB = memoryGb;
  if (nodes)
    given.nodes = nodes;
  if (devicesPerNode)
    given.devicesPerNode = devicesPerNode;
  for (auto [name, text, gbps] :
       {std::make_tuple("hbm-gbps", &hbmGbps, &given.hbmGBps),
        std::make_tuple("intra-node-gbps", &intraNodeGbps,
                        &given.intraNodeGBps),
        std::make_tuple("inter-node-gbps", &interNodeGbps,
                        &given.interNodeGBps),
        std::make_tuple("host-gbps", &hostGbps, &given.hostGBps)}) {
    if (text->empty())
      continue;
    double value;
    if (StringRef(*text).trim().getAsDouble(value))
      return module.emitError()
             << name << ": '" << *text << "' is not a number of GB/s";
    *gbps = value;
  }
  if (!hostMemoryGb.empty()) {
    double value;
    if (StringRef(hostMemoryGb).trim().getAsDouble(value))
      return module.emitError() << "host-memory-gb: '" << hostMemoryGb
                                << "' is not a number of GB";
    given.hostMemoryGB = value;
  }
  if (!deviceKind.empty())
    given.deviceKind = deviceKind;
  given.optimizer = optimizer;
  given.reservedFraction = reservedMemory;
  if (!attr && !given.devices && !given.nodes && !given.devicesPerNode)
    return module.emitError()
           << "no device count: give the module a 'neuroshard.topology' "
              "attribute or pass devices=N";
  ::neuroshard::TopologyDescription input;
  if (attr)
    input = ::neuroshard::TopologyDescription::of(topologyOf(attr));
  llvm::Expected<::neuroshard::Topology> topology = ::neuroshard::makeTopology(
      given, input, "the module's topology", std::nullopt,
      [](StringRef name) { return name.str(); });
  if (!topology)
    return emitPlannerError(module.getLoc(), topology.takeError());
  return std::move(*topology);
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
PlanPass::buildSearchOptions(ModuleOp module,
                             const ::neuroshard::Topology &topology) {
  ::neuroshard::SearchOptions values;
  values.beamWidth = beamWidth;
  values.candidates = candidates;
  values.maxSteps = maxSteps;
  values.gridSteps = gridSteps;
  values.thresholdMin = thresholdMin;
  values.thresholdMax = thresholdMax;
  values.seed = seed;
  llvm::Expected<::neuroshard::ShardingKindSet> kinds =
      ::neuroshard::resolveShardingKinds(
          shardingTypes, topology.deviceKind,
          [](StringRef name) { return name.str(); });
  if (!kinds)
    return emitPlannerError(module.getLoc(), kinds.takeError());
  values.shardingKinds = *kinds;
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
  int64_t pricedBatch = batchSize;
  if (pricedBatch < 0) {
    module.emitError() << "batch-size: the batch size must be positive (or "
                          "0 for the lookups' batch of "
                       << *batch << "), got " << pricedBatch;
    return signalPassFailure();
  }
  // The plan may be priced at another batch than the lookups' (the global
  // batch of training, say); the statistics describe the lookups' batch
  // and are carried to it as neuroshard-plan --batch-size carries a task's.
  topology->batchSize = pricedBatch ? pricedBatch : *batch;
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
    if (topology->batchSize != *batch)
      for (unsigned f = 0; f < spec->numFeatures(); ++f) {
        ::neuroshard::FeatureStats stats = spec->feature(f);
        ::neuroshard::AccessBins bins = ::neuroshard::rescaleAccessHistogram(
            stats.accessHist, spec->rows, stats.poolingFactor, *batch,
            topology->batchSize);
        if (f == 0)
          spec->accessHist = bins;
        else
          spec->moreFeatures[f - 1].accessHist = bins;
      }
    specs.push_back(std::move(*spec));
  }
  // Tables too large for the devices go to the nodes' host memory behind
  // device caches, as neuroshard-plan sends them (Planner/HostTierChoice.h).
  llvm::Expected<std::vector<::neuroshard::TableSpec>> planned =
      ::neuroshard::tablesForPlanning(specs, *topology, /*given=*/nullptr);
  if (!planned) {
    (void)emitPlannerError(module.getLoc(), planned.takeError());
    return signalPassFailure();
  }
  specs = std::move(*planned);
  FailureOr<::neuroshard::SearchOptions> options =
      buildSearchOptions(module, *topology);
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
  llvm::Expected<std::optional<unsigned>> verifyCount =
      ::neuroshard::parseVerifyTop(verifyTop);
  if (!verifyCount) {
    module.emitError() << "verify-top: "
                       << llvm::toString(verifyCount.takeError());
    return signalPassFailure();
  }
  ::neuroshard::VerifyRequest request;
  request.top = *verifyCount;
  request.options.seconds = verifySeconds;
  request.options.minGain = verifyMinGain;
  request.options.spreadFactor = verifySpreadFactor;
  request.experience = experience;
  request.exportDir = verifyExport;
  request.timingsDir = verifyTimings;
  auto result = ::neuroshard::planWithVerification(
      specs, *topology, *options, **model, request,
      [](StringRef name) { return name.str(); });
  if (!result) {
    (void)emitPlannerError(module.getLoc(), result.takeError());
    return signalPassFailure();
  }
  if (modelWarnings)
    for (const std::string &warning : result->warnings)
      mlir::emitWarning(module.getLoc()) << warning;
  if (result->exported)
    mlir::emitRemark(module.getLoc())
        << "not verified yet: the " << result->candidates.size()
        << " candidates' " << result->exported->sets
        << " distinct device sets were written to '" << result->exported->dir
        << "'; time them where the plan runs (scripts/gpu/verify.sh run), "
           "then plan again with verify-timings="
        << result->exported->dir;

  // Options override the module's topology, so record the one that was
  // planned for.
  writeTopology(module, *topology);
  writeShards(*tables, specs, result->plan);
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
