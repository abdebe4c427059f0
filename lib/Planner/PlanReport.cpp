//===- PlanReport.cpp - The readable plan table and its metrics -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/PlanReport.h"
#include "neuroshard/Sharding/HostTier.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace llvm;

namespace neuroshard {

std::vector<double> stragglerWaitMs(const PlanCost &cost) {
  double latest = 0.0;
  for (const DeviceCost &device : cost.devices)
    latest = std::max(latest, device.busyMs());
  std::vector<double> waits;
  for (const DeviceCost &device : cost.devices)
    waits.push_back(
        std::min(device.fwCommMs, std::max(0.0, latest - device.busyMs())));
  return waits;
}

Imbalance planImbalance(const PlanCost &cost) {
  std::vector<double> waits = stragglerWaitMs(cost);
  Imbalance imbalance;
  double busySum = 0.0, busyMax = 0.0, computeSum = 0.0, computeMax = 0.0;
  double busyMin = HUGE_VAL;
  for (auto [d, device] : enumerate(cost.devices)) {
    double busy = device.totalMs() - waits[d];
    busySum += busy;
    busyMin = std::min(busyMin, busy);
    computeSum += device.computeMs;
    computeMax = std::max(computeMax, device.computeMs);
    if (busy > busyMax) {
      busyMax = busy;
      imbalance.busiestDevice = d;
    }
  }
  double n = double(cost.devices.size());
  if (busySum > 0.0)
    imbalance.busy = busyMax / (busySum / n);
  if (computeSum > 0.0)
    imbalance.compute = computeMax / (computeSum / n);
  if (busyMax > 0.0)
    imbalance.busyOverLeast = busyMin > 0.0 ? busyMax / busyMin : HUGE_VAL;
  return imbalance;
}

/// What the device table's columns mean, under every table.
static constexpr StringLiteral kPlanTableLegend =
    "\n*         the slowest device: its total is the plan's cost (it waits "
    "too where its own exchange is the longest)\n"
    "compute   the device's fused kernel: forward, backward and update\n"
    "bwd exch  the backward exchange: pooled-output gradients sent back to "
    "the devices that hold the pieces\n"
    "fwd exch  the forward exchange: indices out, pooled outputs back, less "
    "the wait\n"
    "wait      time idle at the forward exchange until the last device has "
    "computed\n";

unsigned slowestDevice(const PlanCost &cost) {
  unsigned slowest = 0;
  for (auto [d, device] : enumerate(cost.devices))
    if (device.totalMs() > cost.devices[slowest].totalMs())
      slowest = d;
  return slowest;
}

/// Where a piece lies in its table: "" for the whole table, "[0:64]" for a
/// column slice, "[rows 0:5000]" for a row piece, "[rows 0:5000, 0:64]"
/// for both, " (replica)" for a replica.
static std::string pieceRange(const TableSpec &table, const Shard &shard) {
  if (shard.replica)
    return " (replica)";
  std::string columns =
      shard.width() == table.dim
          ? std::string()
          : formatv("{0}:{1}", shard.colBegin, shard.colEnd).str();
  if (shard.allRows())
    return columns.empty() ? columns : "[" + columns + "]";
  std::string rows =
      formatv("rows {0}:{1}", shard.rowBegin, shard.slice().rowEndIn(table))
          .str();
  return "[" + rows + (columns.empty() ? "" : ", " + columns) + "]";
}

/// "user", "user[0:64]", "user[rows 0:5000]", "user (replica)".
static std::string shardLabel(const TableSpec &table, const Shard &shard) {
  return table.name + pieceRange(table, shard);
}

std::string describeVerification(const PlanVerification &verification) {
  const CandidateMeasurement &chosen =
      verification.candidates[verification.chosen];
  const CandidateMeasurement &incumbent =
      verification.candidates[verification.incumbent];
  auto rounds = [&](const CandidateMeasurement &candidate) {
    return formatv("{0}% faster on the rounds' geometric mean ({1}% in the "
                   "median round, faster in {2} of {3} rounds)",
                   format("%.1f", 100.0 * (1.0 - candidate.meanRatio)),
                   format("%.1f", 100.0 * (1.0 - candidate.pairedRatio)),
                   candidate.roundsFaster, candidate.rounds)
        .str();
  };
  // The gain a candidate needed, and where the host's noise or the rounds'
  // spread raised it above the least gain, that noise or spread.
  auto neededGain = [&](const CandidateMeasurement &candidate, StringRef what) {
    double gain = std::max(candidate.requiredGain, verification.minGain);
    std::string text =
        formatv("the {0}% gain {1}",
                format("%g", std::round(1000.0 * gain) / 10.0), what)
            .str();
    if (gain <= verification.minGain)
      return text;
    std::vector<std::string> causes;
    if (verification.roundSpread > 0.0 ||
        !verification.selectionNoiseComparisons) {
      std::string spread =
          formatv("its {0} rounds' ratios spread {1}%", candidate.rounds,
                  format("%.1f", 100.0 * verification.roundSpread))
              .str();
      if (verification.spreadFreedom)
        spread +=
            formatv(" ({0} degrees of freedom)", verification.spreadFreedom)
                .str();
      causes.push_back(spread);
    }
    if (verification.selectionNoiseComparisons)
      causes.push_back(
          formatv("measured selection on this host strays {0}% beyond its "
                  "rounds' spread ({1} comparisons at calibration)",
                  format("%.1f", 100.0 * verification.selectionNoise),
                  verification.selectionNoiseComparisons)
              .str());
    text += ", as " + join(causes, " and ");
    if (verification.racing &&
        (verification.spreadFreedom || verification.selectionNoiseComparisons))
      text += formatv(" and {0} {1} raced it", verification.racing,
                      verification.racing == 1 ? "candidate" : "candidates")
                  .str();
    return text;
  };
  // The incumbent as the text names it.
  std::string incumbentName =
      verification.incumbent == 0
          ? formatv("the model's best plan ({0})", incumbent.origin).str()
          : formatv("candidate {0} ({1}), the plan that splits no table",
                    verification.incumbent + 1, incumbent.origin)
                .str();
  if (verification.chosen == verification.incumbent) {
    std::string text =
        formatv("chosen: {0}, measured {1} ms (predicted {2} ms)",
                incumbentName, format("%.4g", incumbent.measured.maxMs),
                format("%.4g", incumbent.predicted.maxMs))
            .str();
    if (verification.budgetCut)
      text += formatv(": the budget ran out after {0} of the {1} rounds a "
                      "choice needs (one per draw of the inputs), which would "
                      "take about {2} s of timing, so no other candidate "
                      "could replace it",
                      verification.rounds, verification.roundsNeeded,
                      format("%.1f", verification.neededSeconds))
                  .str();
    std::optional<size_t> best;
    for (auto [i, candidate] : enumerate(verification.candidates))
      if (i != verification.incumbent && candidate.meanRatio < 1.0 &&
          (!best ||
           candidate.meanRatio < verification.candidates[*best].meanRatio))
        best = i;
    if (!best)
      return text + (verification.budgetCut
                         ? "; none was faster in the rounds timed"
                         : ", no slower than any other candidate");
    const CandidateMeasurement &other = verification.candidates[*best];
    if (verification.budgetCut)
      return formatv("{0}; the fastest other, candidate {1} ({2}), was {3}",
                     text, *best + 1, other.origin, rounds(other))
          .str();
    return formatv("{0}; the fastest other, candidate {1} ({2}), was {3}: "
                   "within the noise, below {4}",
                   text, *best + 1, other.origin, rounds(other),
                   neededGain(other, "that replaces it"))
        .str();
  }
  return formatv("chosen: candidate {0} ({1}), measured {2} ms (predicted {3} "
                 "ms) against {4} ms for {5}; {6}, beyond {7}",
                 verification.chosen + 1, chosen.origin,
                 format("%.4g", chosen.measured.maxMs),
                 format("%.4g", chosen.predicted.maxMs),
                 format("%.4g", incumbent.measured.maxMs), incumbentName,
                 rounds(chosen), neededGain(chosen, "it needed"))
      .str();
}

void printPlanTable(raw_ostream &os, ArrayRef<TableSpec> tables,
                    const Topology &topology, const PlanResult &result,
                    bool perTable, bool withWarnings) {
  unsigned n = topology.numDevices();
  std::vector<uint64_t> memory =
      deviceMemoryBytes(tables, topology, result.plan);
  std::string nodes = topology.numNodes() > 1
                          ? formatv(" ({0} nodes of {1})", topology.numNodes(),
                                    topology.nodeSize())
                                .str()
                          : std::string();
  os << formatv("NeuroShard plan: {0} on {1} devices{2}, cost {3} ms\n",
                planOriginName(result), n, nodes,
                format("%.4f", result.cost.maxMs));
  os << "cost model: " << result.costModelDescription << "\n";
  if (topology.optimizer != Optimizer::SGD || topology.reservedFraction > 0)
    os << formatv("memory: weights and {0} state; {1}% of each device "
                  "reserved, so {2}% usable\n",
                  optimizerName(topology.optimizer),
                  format("%g", 100.0 * topology.reservedFraction),
                  format("%g", 100.0 * (1.0 - topology.reservedFraction)));
  if (withWarnings)
    for (const std::string &warning : result.warnings)
      os << "warning: " << warning << "\n";
  os << "\n";
  os << formatv("{0,6}  {1,-23}  {2,12}  {3,12}  {4,12}  {5,10}  {6,12}  "
                "{7}\n",
                "device", "memory used (GB)", "compute (ms)", "bwd exch (ms)",
                "fwd exch (ms)", "wait (ms)", "total (ms)", "shards");
  std::vector<double> waits = stragglerWaitMs(result.cost);
  Imbalance imbalance = planImbalance(result.cost);
  unsigned slowest = slowestDevice(result.cost);
  double usedGB = 0.0, capacityGB = 0.0;
  for (unsigned d = 0; d < n; ++d) {
    const DeviceCost &cost = result.cost.devices[d];
    SmallVector<std::string> labels;
    for (const Shard &shard : result.plan.shards)
      if (shard.device == d)
        labels.push_back(shardLabel(tables[shard.table], shard));
    double used = memory[d] / kBytesPerGB,
           capacity = topology.usableBytes(d) / kBytesPerGB;
    std::string memoryText = formatv(
        "{0} / {1} ({2}%)", format("%.2f", used), format("%.2f", capacity),
        format("%.0f", capacity > 0 ? 100.0 * used / capacity : 0.0));
    os << formatv("{0,6}  {1,-23}  {2,12}  {3,12}  {4,12}  {5,10}  {6,12}  "
                  "{7}\n",
                  d, memoryText, format("%.4f", cost.computeMs),
                  format("%.4f", cost.bwCommMs),
                  format("%.4f", cost.fwCommMs - waits[d]),
                  format("%.4f", waits[d]),
                  format("%.4f%s", cost.totalMs(), d == slowest ? "*" : " "),
                  join(labels, ", "));
    usedGB += used;
    capacityGB += capacity;
  }
  std::string least = std::isfinite(imbalance.busyOverLeast)
                          ? formatv("{0} x the least busy",
                                    format("%.3f", imbalance.busyOverLeast))
                                .str()
                          : std::string("while a device is idle");
  os << formatv(
      "\nimbalance: the busiest device ({0}) works {1} x the mean device and "
      "{2} (compute and its own exchange; {3} x the mean in compute alone); "
      "the others wait for it. memory: {4} of {5} GB used ({6}%)\n",
      imbalance.busiestDevice, format("%.3f", imbalance.busy), least,
      format("%.3f", imbalance.compute), format("%.2f", usedGB),
      format("%.2f", capacityGB),
      format("%.0f", capacityGB > 0 ? 100.0 * usedGB / capacityGB : 0.0));
  // The tables kept in host memory, their caches and what these serve.
  std::vector<HostTableUse> hostUses =
      hostTierUse(tables, topology, result.plan);
  if (!hostUses.empty()) {
    std::vector<std::string> kept;
    for (const HostTableUse &use : hostUses)
      kept.push_back(
          formatv("'{0}' ({1} GB, caches of {2}% of its rows, "
                  "expected hit rate {3}%)",
                  tables[use.table].name,
                  format("%.1f", use.hostBytes / kBytesPerGB),
                  format("%.3g", 100.0 * *tables[use.table].cacheFraction),
                  format("%.1f", 100.0 * use.hitRate()))
              .str());
    std::vector<uint64_t> hostBytes =
        nodeHostMemoryBytes(tables, topology, result.plan);
    uint64_t most = *llvm::max_element(hostBytes);
    os << formatv("host memory: {0}; the fullest node keeps {1} of {2} GB "
                  "(misses cross at {3} GB/s)\n",
                  join(kept, ", "), format("%.1f", most / kBytesPerGB),
                  format("%.1f", topology.hostMemoryGB),
                  format("%g", topology.hostBandwidthGBps));
  }
  if (const std::optional<PlanLowerBound> &bound = result.lowerBound) {
    std::string why =
        bound->workMs > 0.0
            ? formatv("the cheapest share of '{0}' costs {1} ms, the least "
                      "work with no piece above the bound {2} ms per device",
                      tables[bound->hardestTable].name,
                      format("%.4f", bound->pieceMs),
                      format("%.4f", bound->workMs))
                  .str()
            : formatv("the cheapest share of '{0}' alone; the model's set "
                      "costs are not sums, so total work is not counted",
                      tables[bound->hardestTable].name)
                  .str();
    os << formatv("lower bound: {0} ms under this model; the plan is within "
                  "{1}% of it ({2}; exchanges not counted)\n",
                  format("%.4f", bound->ms),
                  format("%.1f", 100.0 * bound->gap(result.cost.maxMs)), why);
  }
  if (const std::optional<ExpectedSlowest> &expected = result.expected)
    os << formatv(
        "expected slowest device: {0} ms of compute, {1} x the "
        "largest prediction, if each device strays from its "
        "prediction as the model does on held-out sets (log error "
        "mean {2}, sd {3})\n",
        format("%.4f", expected->computeMs),
        format("%.3f", expected->predictedMs > 0
                           ? expected->computeMs / expected->predictedMs
                           : 1.0),
        format("%+.3f", expected->error.logMean),
        format("%.3f", expected->error.logSd));
  if (perTable) {
    std::vector<ShardingKind> kinds = tableKinds(tables, topology, result.plan);
    std::vector<uint64_t> tableBytes =
        tableMemoryBytes(tables, topology, result.plan);
    bool costed = result.tableComputeMs.size() == tables.size();
    os << formatv("\n{0,-24}  {1,12}  {2,5}  {3,9}  {4,8}  {5,-15}  {6,11}  "
                  "{7,12}  {8}\n",
                  "table", "rows", "dim", "size (GB)", "pooling", "type",
                  "memory (GB)", "compute (ms)", "placement");
    for (auto [t, table] : enumerate(tables)) {
      SmallVector<std::string> places;
      bool replicated = false;
      for (const Shard &shard : result.plan.shards)
        if (shard.table == t) {
          replicated |= shard.replica;
          std::string range = pieceRange(table, shard);
          places.push_back(range.empty()
                               ? formatv("device {0}", shard.device).str()
                               : formatv("{0} on device {1}",
                                         StringRef(range).ltrim(), shard.device)
                                     .str());
        }
      if (replicated) {
        places.clear();
        places.push_back("a replica on every device (data_parallel)");
      }
      os << formatv("{0,-24}  {1,12}  {2,5}  {3,9}  {4,8}  {5,-15}  {6,11}  "
                    "{7,12}  {8}\n",
                    table.name, table.rows, table.dim,
                    format("%.3f", table.bytes() / kBytesPerGB),
                    format("%.2f", table.poolingFactor),
                    shardingKindName(kinds[t]),
                    format("%.3f", tableBytes[t] / kBytesPerGB),
                    costed ? formatv("{0:F4}", result.tableComputeMs[t]).str()
                           : std::string("-"),
                    join(places, ", "));
    }
  }
  os << kPlanTableLegend;
  if (perTable)
    os << "type      a table's sharding type (TorchRec's names)\n"
          "memory    a table's weights and optimizer state, on all devices\n"
          "compute   for a table, its pieces' kernels, each priced alone\n";
  const SearchStats &stats = result.stats;
  if (!result.searched) {
    os << formatv("\npriced in {0} ms\n", format("%.1f", stats.timeMs));
    return;
  }
  os << formatv("\nsearch: {0} ms, {1} cost queries ({2} "
                "cache hits), {3} model calls, {4} states explored, {5} "
                "greedy runs, {6} of {7} moves taken\n",
                format("%.1f", stats.timeMs), stats.costQueries,
                stats.cacheHits, stats.modelCalls, stats.statesExplored,
                stats.greedyRuns, stats.movesTaken, stats.movesTried);
  if (const std::optional<PlanResult::SetExport> &exported = result.exported)
    os << formatv("\nnot verified yet: the {0} candidates' {1} distinct "
                  "device sets were written to '{2}'; time them where the "
                  "plan runs (neuroshard-cuda-runner --manifest {2}/{3} "
                  "--collect {2}/{4}, with the kernels {2}/{5}), then plan "
                  "again with the same options and --verify-timings {2}\n",
                  result.candidates.size(), exported->sets, exported->dir,
                  exported->manifest, exported->samples, exported->kernels);
  if (!result.verification)
    return;
  const PlanVerification &verification = *result.verification;
  std::string onDraws;
  if (verification.draws > 1)
    onDraws = formatv(" on {0} draws of the inputs", verification.draws);
  os << formatv("\nverified on '{0}': {1} device sets timed in {2} round{3}"
                "{4}, {5} s\n",
                verification.host, verification.sets.size(),
                verification.rounds, verification.rounds == 1 ? "" : "s",
                onDraws, format("%.1f", verification.seconds));
  os << formatv("  {0,-9}  {1,-22}  {2,14}  {3,13}  {4,15}  {5,6}  {6,6}\n",
                "candidate", "origin", "predicted (ms)", "measured (ms)",
                formatv("vs. candidate {0}", verification.incumbent + 1),
                "median", "rounds");
  for (auto [i, candidate] : enumerate(verification.candidates))
    os << formatv("{0} {1,-9}  {2,-22}  {3,14}  {4,13}  {5,15}  {6,6}  {7,6}\n",
                  i == verification.chosen ? ">" : " ", i + 1, candidate.origin,
                  format("%.4f", candidate.predicted.maxMs),
                  format("%.4f", candidate.measured.maxMs),
                  format("%.3f", candidate.meanRatio),
                  format("%.3f", candidate.pairedRatio), candidate.rounds);
  os << describeVerification(verification) << "\n";
  if (!verification.experiencePath.empty())
    os << formatv("the {0} sets were appended to '{1}'\n",
                  verification.sets.size(), verification.experiencePath);
}

} // namespace neuroshard
