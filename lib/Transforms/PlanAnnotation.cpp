//===- PlanAnnotation.cpp - Plans as the IR records them ------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Transforms/PlanAnnotation.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <tuple>

using namespace mlir;
using namespace mlir::neuroshard;

FailureOr<SmallVector<ModuleTable>>
mlir::neuroshard::collectModuleTables(ModuleOp module) {
  llvm::MapVector<Operation *, ModuleTable> tables;
  for (TableOp table : module.getOps<TableOp>())
    tables[table] = ModuleTable{table, {}};
  WalkResult walk = module.walk([&](EmbeddingBagOp lookup) {
    auto table = SymbolTable::lookupNearestSymbolFrom<TableOp>(
        lookup, lookup.getTableAttr());
    auto it = table ? tables.find(table) : tables.end();
    if (it == tables.end()) {
      lookup.emitOpError() << "refers to " << lookup.getTableAttr()
                           << ", which is not a table of this module";
      return WalkResult::interrupt();
    }
    it->second.lookups.push_back(lookup);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return llvm::to_vector(llvm::make_second_range(tables));
}

/// A lookup's own statistics.
static ::neuroshard::FeatureStats lookupStatistics(EmbeddingBagOp lookup) {
  ::neuroshard::FeatureStats stats;
  stats.poolingFactor = lookup.getPoolingFactor()->convertToDouble();
  llvm::copy(*lookup.getAccessHist(), stats.accessHist.begin());
  return stats;
}

FailureOr<::neuroshard::TableSpec>
mlir::neuroshard::buildTableSpec(const ModuleTable &info, unsigned numDevices,
                                 bool statistics) {
  TableOp table = info.op;
  ::neuroshard::TableSpec spec;
  spec.name = table.getReportName().str();
  spec.rows = table.getNumRows();
  spec.dim = table.getNumCols();
  spec.elementBytes = table.getElementType().getIntOrFloatBitWidth() / 8;
  // Checked before the narrowing, which would wrap a device past 2^32.
  if (std::optional<int64_t> pinned = table.getPinnedDevice()) {
    if (::neuroshard::RuleViolation v =
            ::neuroshard::checkPinnedDevice(*pinned, numDevices))
      return table.emitOpError() << "table '" << spec.name << "': " << *v;
    spec.pinnedDevice = static_cast<unsigned>(*pinned);
  }
  spec.noSplit = table.getNoSplit();
  // The verifier has checked that every shard has a cache or none has.
  if (ArrayAttr shards = table.getShardsAttr())
    for (ShardAttr shard : shards.getAsRange<ShardAttr>())
      if (shard.isCached()) {
        int64_t rows = shard.getRowEndIn(spec.rows) - shard.getRowBegin();
        spec.cacheFraction = ::neuroshard::TableSpec::widenCacheFraction(
            spec.cacheFraction.value_or(0.0), shard.getCacheRows(), rows);
      }
  // The verifier has checked the names.
  if (std::optional<ArrayAttr> kinds = table.getShardingTypes()) {
    spec.shardingKinds = 0;
    for (StringRef kind : kinds->getAsValueRange<StringAttr>())
      spec.shardingKinds |=
          ::neuroshard::kindBit(*::neuroshard::parseShardingKind(kind));
  }
  if (!statistics)
    return spec;

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
           << (table.getPoolingFactorAttr() ? "access_hist" : "pooling_factor")
           << "; the cost model needs pooling_factor and the 17-bin "
              "access_hist of every table (or of every lookup of it)";
  if (featured.empty()) {
    spec.poolingFactor = *table.getPoolingFactorValue();
    llvm::copy(*table.getAccessHist(), spec.accessHist.begin());
    return spec;
  }
  for (auto [i, lookup] : llvm::enumerate(featured)) {
    ::neuroshard::FeatureStats stats = lookupStatistics(lookup);
    if (i == 0) {
      spec.poolingFactor = stats.poolingFactor;
      spec.accessHist = stats.accessHist;
    } else {
      spec.moreFeatures.push_back(stats);
    }
  }
  return spec;
}

FailureOr<std::vector<::neuroshard::TableSpec>>
mlir::neuroshard::buildTableSpecs(ArrayRef<ModuleTable> tables,
                                  unsigned numDevices) {
  std::vector<::neuroshard::TableSpec> specs;
  for (const ModuleTable &table : tables) {
    FailureOr<::neuroshard::TableSpec> spec =
        buildTableSpec(table, numDevices, /*statistics=*/false);
    if (failed(spec))
      return failure();
    specs.push_back(std::move(*spec));
  }
  return specs;
}

::neuroshard::ShardingPlan
mlir::neuroshard::readShards(ArrayRef<ModuleTable> tables) {
  ::neuroshard::ShardingPlan plan;
  for (auto [index, info] : llvm::enumerate(tables)) {
    ArrayAttr shards = TableOp(info.op).getShardsAttr();
    if (!shards)
      continue;
    size_t first = plan.shards.size();
    for (ShardAttr shard : shards.getAsRange<ShardAttr>())
      plan.shards.push_back(toPlanShard(shard, static_cast<unsigned>(index),
                                        TableOp(info.op).getNumRows()));
    std::sort(plan.shards.begin() + first, plan.shards.end(),
              [](const ::neuroshard::Shard &a, const ::neuroshard::Shard &b) {
                return std::tie(a.rowBegin, a.colBegin, a.device) <
                       std::tie(b.rowBegin, b.colBegin, b.device);
              });
  }
  return plan;
}

void mlir::neuroshard::writeShards(ArrayRef<ModuleTable> tables,
                                   ArrayRef<::neuroshard::TableSpec> specs,
                                   const ::neuroshard::ShardingPlan &plan) {
  for (auto [index, info] : llvm::enumerate(tables)) {
    TableOp table = info.op;
    MLIRContext *ctx = table.getContext();
    const ::neuroshard::TableSpec &spec = specs[index];
    SmallVector<Attribute> shards;
    for (const ::neuroshard::Shard &shard : plan.shards)
      if (shard.table == index)
        shards.push_back(toShardAttr(ctx, shard, table.getNumRows(),
                                     spec.cacheRows(shard.numRows(spec))));
    table.setShardsAttr(ArrayAttr::get(ctx, shards));
  }
}

::neuroshard::Topology mlir::neuroshard::topologyOf(TopologyAttr attr) {
  ::neuroshard::Topology topology;
  topology.memoryGB.reserve(attr.getDevices());
  for (int64_t device = 0; device < attr.getDevices(); ++device)
    topology.memoryGB.push_back(attr.getDeviceMemoryGb(device));
  if (attr.getNodes() > 1)
    topology.devicesPerNode = attr.getDevices() / attr.getNodes();
  topology.hbmBandwidthGBps = attr.getHbmGbps();
  topology.intraNodeBandwidthGBps = attr.getIntraNodeGbps();
  topology.interNodeBandwidthGBps = attr.getInterNodeGbps();
  topology.deviceKind = attr.getDeviceKind().str();
  topology.hostMemoryGB = attr.getHostMemoryGb();
  topology.hostBandwidthGBps = attr.getHostGbps();
  return topology;
}

FailureOr<::neuroshard::Topology>
mlir::neuroshard::readTopology(ModuleOp module, StringRef purpose) {
  auto attr = module->getAttrOfType<TopologyAttr>(
      NeuroShardDialect::getTopologyAttrName());
  if (!attr)
    return module.emitError()
           << "has no '" << NeuroShardDialect::getTopologyAttrName()
           << "' attribute; " << purpose
           << " needs the devices and their memory";
  return topologyOf(attr);
}

void mlir::neuroshard::writeTopology(ModuleOp module,
                                     const ::neuroshard::Topology &topology) {
  MLIRContext *ctx = module.getContext();
  module->setAttr(
      NeuroShardDialect::getTopologyAttrName(),
      TopologyAttr::get(ctx, topology.numDevices(),
                        DenseF64ArrayAttr::get(ctx, topology.memoryGB),
                        topology.numNodes(), topology.hbmBandwidthGBps,
                        topology.intraNodeBandwidthGBps,
                        topology.interNodeBandwidthGBps, topology.deviceKind,
                        topology.hostMemoryGB, topology.hostBandwidthGBps));
}

//===----------------------------------------------------------------------===//
// The plan record
//===----------------------------------------------------------------------===//

void mlir::neuroshard::writePlanRecord(ModuleOp module,
                                       ArrayRef<::neuroshard::TableSpec> tables,
                                       const ::neuroshard::Topology &topology,
                                       const ::neuroshard::PlanResult &result) {
  Builder b(module.getContext());
  std::vector<uint64_t> memoryUsed =
      ::neuroshard::deviceMemoryBytes(tables, topology, result.plan);
  std::vector<uint64_t> weightBytes =
      ::neuroshard::deviceWeightBytes(tables, topology, result.plan);
  auto gb = [&](uint64_t bytes) {
    return b.getF64FloatAttr(bytes / ::neuroshard::kBytesPerGB);
  };
  SmallVector<Attribute> perDevice;
  for (auto [device, cost] : llvm::enumerate(result.cost.devices))
    perDevice.push_back(b.getDictionaryAttr({
        b.getNamedAttr("device", b.getI64IntegerAttr(device)),
        b.getNamedAttr("memory_used_gb", gb(memoryUsed[device])),
        b.getNamedAttr("weights_gb", gb(weightBytes[device])),
        b.getNamedAttr("capacity_gb",
                       b.getF64FloatAttr(topology.memoryGB[device])),
        b.getNamedAttr("compute_ms", b.getF64FloatAttr(cost.computeMs)),
        b.getNamedAttr("bw_comm_ms", b.getF64FloatAttr(cost.bwCommMs)),
        b.getNamedAttr("fw_comm_ms", b.getF64FloatAttr(cost.fwCommMs)),
        b.getNamedAttr("total_ms", b.getF64FloatAttr(cost.totalMs())),
    }));
  SmallVector<Attribute> warnings;
  for (const std::string &warning : result.warnings)
    warnings.push_back(b.getStringAttr(warning));
  const ::neuroshard::SearchStats &stats = result.stats;
  auto count = [&](uint64_t n) { return b.getI64IntegerAttr(n); };
  SmallVector<NamedAttribute> entries({
      b.getNamedAttr("algorithm",
                     b.getStringAttr(::neuroshard::planOriginName(result))),
      b.getNamedAttr("cost_model", b.getStringAttr(result.costModelName)),
      b.getNamedAttr("cost_model_description",
                     b.getStringAttr(result.costModelDescription)),
      b.getNamedAttr("warnings", b.getArrayAttr(warnings)),
      b.getNamedAttr("cost_ms", b.getF64FloatAttr(result.cost.maxMs)),
      b.getNamedAttr("optimizer", b.getStringAttr(::neuroshard::optimizerName(
                                      topology.optimizer))),
      b.getNamedAttr("reserved_fraction",
                     b.getF64FloatAttr(topology.reservedFraction)),
      b.getNamedAttr("per_device", b.getArrayAttr(perDevice)),
      b.getNamedAttr(
          "search",
          b.getDictionaryAttr({
              b.getNamedAttr("time_ms", b.getF64FloatAttr(stats.timeMs)),
              b.getNamedAttr("cost_queries", count(stats.costQueries)),
              b.getNamedAttr("cache_hits", count(stats.cacheHits)),
              b.getNamedAttr("model_calls", count(stats.modelCalls)),
              b.getNamedAttr("states_explored", count(stats.statesExplored)),
              b.getNamedAttr("greedy_runs", count(stats.greedyRuns)),
              b.getNamedAttr("moves_tried", count(stats.movesTried)),
              b.getNamedAttr("moves_taken", count(stats.movesTaken)),
          })),
  });
  if (!result.tablesOutsideRanges.empty()) {
    SmallVector<Attribute> outside;
    for (const std::string &table : result.tablesOutsideRanges)
      outside.push_back(b.getStringAttr(table));
    entries.push_back(
        b.getNamedAttr("tables_outside_ranges", b.getArrayAttr(outside)));
  }
  if (!result.tableComputeMs.empty())
    entries.push_back(b.getNamedAttr(
        "table_compute_ms", b.getDenseF64ArrayAttr(result.tableComputeMs)));
  if (const std::optional<::neuroshard::ExpectedSlowest> &expected =
          result.expected)
    entries.push_back(b.getNamedAttr(
        "expected",
        b.getDictionaryAttr({
            b.getNamedAttr("compute_ms",
                           b.getF64FloatAttr(expected->computeMs)),
            b.getNamedAttr("predicted_ms",
                           b.getF64FloatAttr(expected->predictedMs)),
            b.getNamedAttr("log_error_mean",
                           b.getF64FloatAttr(expected->error.logMean)),
            b.getNamedAttr("log_error_sd",
                           b.getF64FloatAttr(expected->error.logSd)),
        })));
  if (const std::optional<::neuroshard::PlanLowerBound> &bound =
          result.lowerBound)
    entries.push_back(b.getNamedAttr(
        "lower_bound",
        b.getDictionaryAttr({
            b.getNamedAttr("ms", b.getF64FloatAttr(bound->ms)),
            b.getNamedAttr("work_ms", b.getF64FloatAttr(bound->workMs)),
            b.getNamedAttr("piece_ms", b.getF64FloatAttr(bound->pieceMs)),
            b.getNamedAttr("hardest_table", count(bound->hardestTable)),
        })));
  if (const std::optional<::neuroshard::PlanVerification> &verification =
          result.verification) {
    MLIRContext *context = module.getContext();
    unsigned noise = verification->selectionNoiseComparisons;
    SmallVector<Attribute> candidates;
    for (const ::neuroshard::CandidateMeasurement &candidate :
         verification->candidates) {
      SmallVector<double> computeMs;
      for (const ::neuroshard::DeviceCost &device : candidate.measured.devices)
        computeMs.push_back(device.computeMs);
      candidates.push_back(MeasuredCandidateAttr::get(
          context, candidate.origin, APFloat(candidate.predicted.maxMs),
          APFloat(candidate.measured.maxMs), b.getDenseF64ArrayAttr(computeMs),
          APFloat(candidate.pairedRatio), APFloat(candidate.meanRatio),
          candidate.rounds, candidate.roundsFaster,
          APFloat(candidate.requiredGain)));
    }
    // Only rounds the budget cut short say what a choice would have taken,
    // and only a model that records the host's noise of measured selection
    // (ModelProvenance::selectionNoise) what it asked: the attribute leaves
    // out the zeros of the others.
    entries.push_back(b.getNamedAttr(
        "verification",
        VerificationAttr::get(
            context, verification->host, verification->device,
            verification->sets.size(), verification->rounds,
            verification->draws, verification->roundsNeeded,
            APFloat(verification->seconds),
            APFloat(verification->budgetCut ? verification->neededSeconds
                                            : 0.0),
            APFloat(verification->minGain), APFloat(verification->roundSpread),
            verification->spreadFreedom, verification->racing,
            APFloat(noise ? verification->selectionNoise : 0.0), noise,
            APFloat(noise ? verification->noiseGain : 0.0),
            verification->chosen, verification->incumbent,
            verification->experiencePath, b.getArrayAttr(candidates))));
  }
  module->setAttr(NeuroShardDialect::getPlanAttrName(),
                  b.getDictionaryAttr(entries));
}

namespace {
/// Reads the entries of one dictionary of the plan record, naming the
/// entry in every error.
class RecordReader {
public:
  RecordReader(ModuleOp module, DictionaryAttr dict, std::string where)
      : module(module), dict(dict), where(std::move(where)) {}

  InFlightDiagnostic fail() {
    return module.emitError()
           << "has a malformed '" << NeuroShardDialect::getPlanAttrName()
           << "': " << where;
  }

  template <typename AttrT>
  FailureOr<AttrT> get(StringRef key, StringRef kind) {
    auto value = dict.getAs<AttrT>(key);
    if (!value)
      return fail() << " needs '" << key << "' (" << kind << ")";
    return value;
  }

  FailureOr<double> number(StringRef key) {
    FailureOr<FloatAttr> value = get<FloatAttr>(key, "a float");
    if (failed(value))
      return failure();
    return value->getValueAsDouble();
  }

  FailureOr<uint64_t> count(StringRef key) {
    FailureOr<IntegerAttr> value = get<IntegerAttr>(key, "an integer");
    if (failed(value))
      return failure();
    if (value->getValue().isNegative())
      return fail() << " has a negative '" << key << "'";
    return value->getValue().getZExtValue();
  }

  FailureOr<StringRef> string(StringRef key) {
    FailureOr<StringAttr> value = get<StringAttr>(key, "a string");
    if (failed(value))
      return failure();
    return value->getValue();
  }

  /// A list of strings, each an `element` ("a warning") for errors;
  /// `optional` lists that records may lack read as empty.
  FailureOr<std::vector<std::string>> strings(StringRef key, StringRef element,
                                              bool optional = false) {
    if (optional && !dict.get(key))
      return std::vector<std::string>();
    FailureOr<ArrayAttr> list = get<ArrayAttr>(key, "strings");
    if (failed(list))
      return failure();
    std::vector<std::string> texts;
    for (Attribute entry : *list) {
      auto text = dyn_cast<StringAttr>(entry);
      if (!text)
        return fail() << " has " << element << " that is not a string";
      texts.push_back(text.str());
    }
    return texts;
  }

private:
  ModuleOp module;
  DictionaryAttr dict;
  std::string where;
};
} // namespace

/// Reads what measured selection recorded (writePlanRecord) into `result`:
/// the candidates' costs and ratios, and the count of the sets timed (their
/// contents are not recorded). The attribute's verifier has checked it.
static void readVerificationRecord(VerificationAttr record,
                                   ::neuroshard::PlanResult &result) {
  ::neuroshard::PlanVerification verification;
  verification.host = record.getHost().str();
  verification.device = record.getDevice().str();
  verification.sets.resize(record.getSets());
  verification.rounds = record.getRounds();
  verification.draws = record.getDraws();
  verification.roundsNeeded = record.getRoundsNeeded();
  verification.budgetCut = record.getSecondsNeeded().convertToDouble() > 0.0;
  verification.neededSeconds = record.getSecondsNeeded().convertToDouble();
  verification.minGain = record.getMinGain().convertToDouble();
  verification.roundSpread = record.getRoundSpread().convertToDouble();
  verification.spreadFreedom = record.getSpreadFreedom();
  verification.racing = record.getRacing();
  verification.selectionNoise = record.getSelectionNoise().convertToDouble();
  verification.selectionNoiseComparisons =
      record.getSelectionNoiseComparisons();
  verification.noiseGain = record.getNoiseGain().convertToDouble();
  verification.seconds = record.getSeconds().convertToDouble();
  verification.chosen = record.getChosen();
  verification.incumbent = record.getIncumbent();
  verification.experiencePath = record.getExperience().str();
  for (auto candidate :
       record.getCandidates().getAsRange<MeasuredCandidateAttr>()) {
    ::neuroshard::CandidateMeasurement &out =
        verification.candidates.emplace_back();
    out.origin = candidate.getOrigin().str();
    out.predicted.maxMs = candidate.getPredictedMs().convertToDouble();
    out.measured.maxMs = candidate.getMeasuredMs().convertToDouble();
    for (double ms : candidate.getMeasuredComputeMs().asArrayRef())
      out.measured.devices.push_back({ms, 0.0, 0.0});
    out.pairedRatio = candidate.getPairedRatio().convertToDouble();
    out.meanRatio = candidate.getMeanRatio().convertToDouble();
    out.rounds = candidate.getRounds();
    out.roundsFaster = candidate.getRoundsFaster();
    out.requiredGain = candidate.getRequiredGain().convertToDouble();
  }
  result.verification = std::move(verification);
}

/// Reads the costs and origin of `record` into `plan`.
static LogicalResult readPlanRecord(ModuleOp module, DictionaryAttr record,
                                    RecordedPlan &plan) {
  RecordReader fields(module, record, "the plan");
  ::neuroshard::PlanResult &result = plan.result;
  FailureOr<StringRef> algorithm = fields.string("algorithm");
  FailureOr<StringRef> model = fields.string("cost_model");
  FailureOr<StringRef> description = fields.string("cost_model_description");
  FailureOr<std::vector<std::string>> warnings =
      fields.strings("warnings", "a warning");
  FailureOr<std::vector<std::string>> outside = fields.strings(
      "tables_outside_ranges", "a table outside the ranges", /*optional=*/true);
  FailureOr<double> maxMs = fields.number("cost_ms");
  FailureOr<StringRef> optimizer = fields.string("optimizer");
  FailureOr<double> reserved = fields.number("reserved_fraction");
  FailureOr<ArrayAttr> perDevice =
      fields.get<ArrayAttr>("per_device", "one dictionary per device");
  FailureOr<DictionaryAttr> search =
      fields.get<DictionaryAttr>("search", "a dictionary");
  if (failed(algorithm) || failed(model) || failed(description) ||
      failed(warnings) || failed(outside) || failed(maxMs) ||
      failed(optimizer) || failed(reserved) || failed(perDevice) ||
      failed(search))
    return failure();

  result.algorithm = ::neuroshard::parseAlgorithm(*algorithm);
  if (!result.algorithm && *algorithm != "given")
    return fields.fail() << " names the unknown algorithm '" << *algorithm
                         << "'";
  result.costModelName = model->str();
  result.costModelDescription = description->str();
  result.warnings = std::move(*warnings);
  result.tablesOutsideRanges = std::move(*outside);
  std::optional<::neuroshard::Optimizer> parsedOptimizer =
      ::neuroshard::parseOptimizer(*optimizer);
  if (!parsedOptimizer)
    return fields.fail() << " names the unknown optimizer '" << *optimizer
                         << "'";
  plan.topology.optimizer = *parsedOptimizer;
  if (::neuroshard::RuleViolation v =
          ::neuroshard::checkReservedFraction(*reserved))
    return fields.fail() << " has 'reserved_fraction' " << *v;
  plan.topology.reservedFraction = *reserved;

  unsigned devices = plan.topology.numDevices();
  if (perDevice->size() != devices)
    return fields.fail() << " lists " << perDevice->size()
                         << " devices in 'per_device' but the topology has "
                         << devices;
  result.cost.maxMs = *maxMs;
  for (auto [device, entry] : llvm::enumerate(*perDevice)) {
    auto dict = dyn_cast<DictionaryAttr>(entry);
    if (!dict)
      return fields.fail() << " has a 'per_device' entry " << device
                           << " that is not a dictionary";
    RecordReader costs(module, dict,
                       "per_device entry " + std::to_string(device));
    FailureOr<double> compute = costs.number("compute_ms");
    FailureOr<double> bwComm = costs.number("bw_comm_ms");
    FailureOr<double> fwComm = costs.number("fw_comm_ms");
    if (failed(compute) || failed(bwComm) || failed(fwComm))
      return failure();
    result.cost.devices.push_back({*compute, *bwComm, *fwComm});
  }

  RecordReader stats(module, *search, "its 'search'");
  FailureOr<double> timeMs = stats.number("time_ms");
  FailureOr<uint64_t> queries = stats.count("cost_queries");
  FailureOr<uint64_t> hits = stats.count("cache_hits");
  FailureOr<uint64_t> calls = stats.count("model_calls");
  FailureOr<uint64_t> states = stats.count("states_explored");
  FailureOr<uint64_t> greedy = stats.count("greedy_runs");
  if (failed(timeMs) || failed(queries) || failed(hits) || failed(calls) ||
      failed(states) || failed(greedy))
    return failure();
  result.stats = {*timeMs, *queries, *hits, *calls, *states, *greedy};
  // Plans recorded before the search improved locally lack the moves.
  for (auto [key, field] :
       {std::pair("moves_tried", &result.stats.movesTried),
        std::pair("moves_taken", &result.stats.movesTaken)}) {
    if (!search->contains(key))
      continue;
    FailureOr<uint64_t> moves = stats.count(key);
    if (failed(moves))
      return failure();
    *field = *moves;
  }
  if (auto tableCosts = record.get("table_compute_ms")) {
    auto costs = dyn_cast<DenseF64ArrayAttr>(tableCosts);
    if (!costs || costs.size() != static_cast<int64_t>(plan.tables.size()))
      return fields.fail() << " has a 'table_compute_ms' that is not an "
                              "array<f64> of one cost per table ("
                           << plan.tables.size() << ")";
    result.tableComputeMs.assign(costs.asArrayRef().begin(),
                                 costs.asArrayRef().end());
  }
  if (auto expected = record.getAs<DictionaryAttr>("expected")) {
    RecordReader figures(module, expected, "its 'expected'");
    FailureOr<double> computeMs = figures.number("compute_ms");
    FailureOr<double> predictedMs = figures.number("predicted_ms");
    FailureOr<double> logMean = figures.number("log_error_mean");
    FailureOr<double> logSd = figures.number("log_error_sd");
    if (failed(computeMs) || failed(predictedMs) || failed(logMean) ||
        failed(logSd))
      return failure();
    result.expected = ::neuroshard::ExpectedSlowest{
        *computeMs, *predictedMs, {*logMean, *logSd}};
  }
  if (auto bound = record.getAs<DictionaryAttr>("lower_bound")) {
    RecordReader figures(module, bound, "its 'lower_bound'");
    FailureOr<double> ms = figures.number("ms");
    FailureOr<double> workMs = figures.number("work_ms");
    FailureOr<double> pieceMs = figures.number("piece_ms");
    FailureOr<uint64_t> hardest = figures.count("hardest_table");
    if (failed(ms) || failed(workMs) || failed(pieceMs) || failed(hardest))
      return failure();
    if (*hardest >= plan.tables.size())
      return fields.fail() << " has a 'lower_bound' whose hardest_table "
                           << *hardest << " is not one of its "
                           << plan.tables.size() << " tables";
    result.lowerBound = ::neuroshard::PlanLowerBound{
        *ms, *workMs, *pieceMs, static_cast<unsigned>(*hardest)};
  }
  if (Attribute verification = record.get("verification")) {
    auto typed = dyn_cast<VerificationAttr>(verification);
    if (!typed)
      return fields.fail() << " has a 'verification' that is not a "
                              "#neuroshard.verification attribute";
    readVerificationRecord(typed, result);
  }
  return success();
}

FailureOr<RecordedPlan> mlir::neuroshard::readRecordedPlan(ModuleOp module,
                                                           bool requireCosts) {
  FailureOr<SmallVector<ModuleTable>> tables = collectModuleTables(module);
  if (failed(tables))
    return failure();
  if (tables->empty())
    return module.emitError() << "has no neuroshard.table to export a plan of";
  FailureOr<::neuroshard::Topology> topology =
      readTopology(module, "exporting a plan");
  if (failed(topology))
    return failure();
  RecordedPlan plan;
  plan.topology = std::move(*topology);
  for (ModuleTable &table : *tables) {
    if (!table.op.getShardsAttr())
      return table.op.emitOpError()
             << "table '" << table.op.getSymName()
             << "' has no shards; export a module whose tables a plan has "
                "placed (--neuroshard-plan or --neuroshard-import-plan)";
    FailureOr<::neuroshard::TableSpec> spec =
        buildTableSpec(table, plan.topology.numDevices(), /*statistics=*/false);
    if (failed(spec))
      return failure();
    plan.tables.push_back(std::move(*spec));
  }
  plan.result.plan = readShards(*tables);

  auto record = module->getAttrOfType<DictionaryAttr>(
      NeuroShardDialect::getPlanAttrName());
  if (!record) {
    if (requireCosts)
      return module.emitError()
             << "has no '" << NeuroShardDialect::getPlanAttrName()
             << "': only a module planned by --neuroshard-plan records the "
                "plan's costs (neuroshard-plan TASK --price PLAN prices a "
                "plan made elsewhere)";
    return plan;
  }
  if (failed(readPlanRecord(module, record, plan)))
    return failure();
  plan.priced = true;
  return plan;
}
