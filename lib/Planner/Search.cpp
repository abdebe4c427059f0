//===- Search.cpp - Sharding search algorithms and their entry point ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/Search.h"
#include "Placement.h"
#include "neuroshard/Planner/PlanIO.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

using namespace llvm;
using namespace neuroshard::detail;

namespace neuroshard {

namespace {
struct AlgorithmInfo {
  Algorithm algorithm;
  StringLiteral name;
};
} // namespace

static constexpr AlgorithmInfo kAlgorithms[] = {
    {Algorithm::NeuroShard, "neuroshard"},
    {Algorithm::TableGreedyGrid, "table-greedy-grid"},
    {Algorithm::Random, "random"},
    {Algorithm::SizeGreedy, "size-greedy"},
    {Algorithm::DimGreedy, "dim-greedy"},
    {Algorithm::LookupGreedy, "lookup-greedy"},
    {Algorithm::SizeLookupGreedy, "size-lookup-greedy"},
    {Algorithm::UniformSplitGreedy, "uniform-split-greedy"},
};

StringRef algorithmName(Algorithm algorithm) {
  for (const AlgorithmInfo &info : kAlgorithms)
    if (info.algorithm == algorithm)
      return info.name;
  llvm_unreachable("every algorithm has a name");
}

std::optional<Algorithm> parseAlgorithm(StringRef name) {
  for (const AlgorithmInfo &info : kAlgorithms)
    if (info.name == name)
      return info.algorithm;
  return std::nullopt;
}

ArrayRef<Algorithm> allAlgorithms() {
  static const std::vector<Algorithm> algorithms = [] {
    std::vector<Algorithm> all;
    for (const AlgorithmInfo &info : kAlgorithms)
      all.push_back(info.algorithm);
    return all;
  }();
  return algorithms;
}

std::string algorithmNameList() {
  SmallVector<StringRef> names;
  for (const AlgorithmInfo &info : kAlgorithms)
    names.push_back(info.name);
  return join(names, ", ");
}

Error validateSearchOptions(const SearchOptions &options) {
  auto invalid = [](StringRef option, const Twine &requirement, double value) {
    return createStringError(inconvertibleErrorCode(),
                             formatv("{0} must be {1}, got {2}", option,
                                     requirement.str(), format("%g", value)));
  };
  auto between = [](unsigned low, unsigned high) {
    return formatv("between {0} and {1}", low, high).str();
  };
  if (options.beamWidth == 0 || options.beamWidth > kMaxBeamWidth)
    return invalid("beam-width", between(1, kMaxBeamWidth), options.beamWidth);
  if (options.candidates == 0 || options.candidates > kMaxCandidates)
    return invalid("candidates", between(1, kMaxCandidates),
                   options.candidates);
  if (options.maxSteps > kMaxSteps)
    return invalid("max-steps", between(0, kMaxSteps), options.maxSteps);
  if (options.gridSteps == 0 || options.gridSteps > kMaxGridSteps)
    return invalid("grid-steps", between(1, kMaxGridSteps), options.gridSteps);
  if (!(options.thresholdMin > 0.0) || !(options.thresholdMin <= kMaxThreshold))
    return invalid(
        "threshold-min",
        formatv("a positive number up to {0}", format("%g", kMaxThreshold)),
        options.thresholdMin);
  if (!(options.thresholdMax >= options.thresholdMin) ||
      !(options.thresholdMax <= kMaxThreshold))
    return invalid("threshold-max",
                   formatv("at least threshold-min ({0}) and at most {1}",
                           format("%g", options.thresholdMin),
                           format("%g", kMaxThreshold)),
                   options.thresholdMax);
  if (options.keepCandidates > kMaxKeepCandidates)
    return invalid("verify-top", between(0, kMaxKeepCandidates),
                   options.keepCandidates);
  return Error::success();
}

/// Records on `result` which model priced its plan and what the model says
/// of the problem: its warnings, one about result.plan when its row pieces
/// or replicas are priced by a model that never saw one, and every table
/// outside its training ranges.
static void recordModel(PlanResult &result, const CostModel &model) {
  result.costModelName = model.name().str();
  result.costModelDescription = model.description();
  result.warnings = model.warnings();
  auto pieces = count_if(result.plan.shards, [](const Shard &shard) {
    return shard.distributesRows();
  });
  if (pieces && !model.coversRowPieces())
    result.warnings.push_back(formatv(
        "{0} of the plan's shards are row pieces or replicas, which cost "
        "model '{1}' was not trained on: it prices a row piece as a table of "
        "its rows with their share of the bags, and a replica as the table "
        "with its device's share of the batch",
        pieces, model.name()));
  result.tablesOutsideRanges = model.tablesOutsideRanges();
}

ShardingKindSet defaultShardingKinds(StringRef deviceKind) {
  return isCPUDeviceKind(deviceKind) ? kTableColumnKinds : kAllShardingKinds;
}

Expected<ShardingKindSet> resolveShardingKinds(StringRef option,
                                               StringRef deviceKind,
                                               OptionSpelling spell) {
  if (option == "default")
    return defaultShardingKinds(deviceKind);
  if (option == "all")
    return kAllShardingKinds;
  Expected<ShardingKindSet> kinds = parseShardingKindList(option);
  if (!kinds)
    return createStringError(inconvertibleErrorCode(),
                             spell("sharding-types") + ": " +
                                 toString(kinds.takeError()) +
                                 ", 'all' or 'default'");
  return kinds;
}

unsigned autoSearchSteps(unsigned numDevices) {
  return std::min<unsigned>(kMaxSteps, std::max(10u, 2 * numDevices));
}

Expected<SearchOptions> makeSearchOptions(StringRef algorithm,
                                          const SearchOptions &values,
                                          bool progress) {
  SearchOptions options = values;
  std::optional<Algorithm> parsed = parseAlgorithm(algorithm);
  if (!parsed)
    return createStringError(inconvertibleErrorCode(),
                             formatv("algorithm: unknown algorithm '{0}' "
                                     "(expected one of: {1})",
                                     algorithm, algorithmNameList()));
  options.algorithm = *parsed;
  options.progress = nullptr;
  if (progress)
    options.progress = [](const SearchProgress &step) {
      errs() << formatProgress(step) << "\n";
    };
  if (Error err = validateSearchOptions(options))
    return std::move(err);
  return options;
}

static Error infeasible(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Finite inputs can still price a plan at inf or nan (an overflow in a
/// cost model); such a plan would print as a cost of 0.
static Error checkFiniteCost(const PlanCost &plan) {
  for (auto [d, cost] : enumerate(plan.devices))
    if (!std::isfinite(cost.totalMs()) || !std::isfinite(plan.maxMs))
      return infeasible(formatv(
          "the cost model priced device {0} at {1} ms (compute {2}, backward "
          "exchange {3}, forward exchange {4}); check the tables' pooling "
          "factors, the batch "
          "size and the bandwidths",
          d, format("%g", cost.totalMs()), format("%g", cost.computeMs),
          format("%g", cost.bwCommMs), format("%g", cost.fwCommMs)));
  return Error::success();
}

/// The slices a search starts from, after rejecting problems no plan can
/// satisfy. Whole tables, except that when `canSplit` a table larger than
/// the largest device is halved until its slices fit there.
static Expected<std::vector<ColumnSlice>>
initialSlices(ArrayRef<TableSpec> tables, const Topology &topology,
              bool canSplit) {
  unsigned n = topology.numDevices();
  uint64_t largest = 0, capacity = 0;
  for (unsigned d = 0; d < n; ++d) {
    largest = std::max(largest, topology.usableBytes(d));
    capacity += topology.usableBytes(d);
  }
  // What the messages say a size and a capacity count.
  std::string storage = describeStorage(topology);
  std::string usable = describeUsable(topology);
  std::vector<uint64_t> pinnedBytes(n, 0);
  uint64_t needed = 0;
  std::vector<ColumnSlice> slices;
  for (auto [index, table] : enumerate(tables)) {
    unsigned t = index;
    uint64_t bytes = topology.shardBytes(table, table.dim);
    needed += bytes;
    if (table.pinnedDevice) {
      unsigned d = *table.pinnedDevice;
      if (bytes > topology.usableBytes(d)) {
        auto [need, have] = formatGBPair(bytes, topology.usableBytes(d));
        return infeasible(formatv("table '{0}' needs {1}{2} but device {3}, "
                                  "which it is pinned to, has {4}{5}",
                                  table.name, need, storage, d, have, usable));
      }
      pinnedBytes[d] += bytes;
      slices.push_back({t, 0, table.dim});
      continue;
    }
    bool columnsMay = !table.noSplit && table.allows(ShardingKind::ColumnWise);
    bool rowsMay = !table.noSplit && table.rows >= 2 &&
                   (table.allows(ShardingKind::RowWise) ||
                    table.allows(ShardingKind::TableRowWise));
    unsigned mostRowPieces = mostRowBlocks(table, topology);
    ColumnSlice whole{t, 0, table.dim};
    if (!table.allows(ShardingKind::TableWise) && !columnsMay && !rowsMay) {
      // Data-parallel only: a replica on every device.
      uint64_t smallest = topology.usableBytes(0);
      for (unsigned d = 1; d < n; ++d)
        smallest = std::min(smallest, topology.usableBytes(d));
      if (bytes > smallest) {
        auto [need, have] = formatGBPair(bytes, smallest);
        return infeasible(formatv("table '{0}' may only be data_parallel and "
                                  "its replicas need {1}{2} on every device, "
                                  "but the smallest device has {3}{4}",
                                  table.name, need, storage, have, usable));
      }
      needed += bytes * (n - 1);
      for (const ColumnSlice &replica : replicas(whole, n))
        slices.push_back(replica);
      continue;
    }
    int64_t width = table.dim;
    // A table whose constraints exclude table-wise starts in pieces: its
    // columns halved, else its rows cut as TorchRec cuts them, one block per
    // device (per device of a node for table-row-wise).
    if (!table.allows(ShardingKind::TableWise) && columnsMay &&
        width % (2 * kColumnAlignment) == 0)
      width /= 2;
    // A table in host memory also starts in pieces that one node's host
    // memory holds.
    auto tooLarge = [&](int64_t columns) {
      return topology.shardBytes(table, columns) > largest ||
             topology.hostShardBytes(table, columns) >
                 topology.hostMemoryBytes();
    };
    while (tooLarge(width) && canSplit && columnsMay &&
           width % (2 * kColumnAlignment) == 0)
      width /= 2;
    int64_t blocks = 1;
    if ((!table.allows(ShardingKind::TableWise) && width == table.dim &&
         rowsMay) ||
        (topology.shardBytes(table, width) > largest && canSplit && rowsMay)) {
      // Whole columns in the fewest row blocks that fit the largest device.
      width = table.dim;
      blocks = table.allows(ShardingKind::TableWise) ? 2 : mostRowPieces;
      auto blockBytes = [&](int64_t pieces) {
        return topology.shardBytes(table, width,
                                   (table.rows + pieces - 1) / pieces);
      };
      while (blockBytes(blocks) > largest && blocks < mostRowPieces)
        ++blocks;
      if (blockBytes(blocks) > largest) {
        auto [need, have] = formatGBPair(bytes, largest);
        return infeasible(formatv(
            "table '{0}' needs {1}{2} but the largest device has {3}{4}, and "
            "its rows in {5} blocks still need {6} each",
            table.name, need, storage, have, usable, blocks,
            formatGB(blockBytes(blocks))));
      }
    }
    if (topology.shardBytes(table, width) > largest && blocks == 1) {
      auto [need, have] = formatGBPair(bytes, largest);
      std::string why;
      if (canSplit)
        why = table.noSplit ? " and it may not be split"
              : !columnsMay
                  ? formatv(" and its constraints allow only {0}",
                            shardingKindList(table.shardingKinds))
                        .str()
                  : formatv(" and its narrowest shards ({0} of {1} "
                            "columns) still need {2}{3}",
                            width, table.dim,
                            formatGB(topology.shardBytes(table, width)),
                            rowsMay || table.noSplit || table.rows < 2
                                ? ""
                                : "; row pieces (row_wise) are not among "
                                  "the sharding types allowed")
                        .str();
      return infeasible(formatv("table '{0}' needs {1}{2} but the largest "
                                "device has {3}{4}{5}",
                                table.name, need, storage, have, usable, why));
    }
    if (blocks > 1) {
      for (const ColumnSlice &piece : rowPieces(table, whole, blocks))
        slices.push_back(piece);
      continue;
    }
    for (int64_t begin = 0; begin < table.dim; begin += width)
      slices.push_back({t, begin, begin + width});
  }
  for (unsigned d = 0; d < n; ++d)
    if (pinnedBytes[d] > topology.usableBytes(d)) {
      auto [need, have] = formatGBPair(pinnedBytes[d], topology.usableBytes(d));
      return infeasible(formatv("the tables pinned to device {0} need {1}{2} "
                                "but it has {3}{4}",
                                d, need, storage, have, usable));
    }
  if (needed > capacity) {
    auto [need, have] = formatGBPair(needed, capacity);
    return infeasible(formatv("the tables need {0}{1} in total but the {2} "
                              "devices have {3}{4}",
                              need, storage, n, have, usable));
  }
  return std::move(slices);
}

/// How many times the search's plan a person's obvious plan
/// (bestStructuredPlan) may cost and still be improved by moves, which
/// relieve one device at a time: the most they took off a start in the
/// structured tests was 19% (big-mid-small on 4 devices, 0.5999 to
/// 0.4862 ms), and a start far above is not worth their time
/// (docs/planner.md, "Local improvement").
constexpr double kMostStartGap = 1.5;

/// How many times the returned plan's modelled cost a baseline's plan may
/// be priced at and still be timed by measured selection besides the
/// search's candidates: the model overprices the plans its search does not
/// pick (by up to 40% on the baselines' slowest devices), and a plan beyond
/// this is not one measurement would choose.
constexpr double kTimedBaselineCostRatio = 1.5;

/// Prices the plans of every baseline (whole tables or, for
/// uniform-split-greedy, even pieces, placed by a proxy) from the search's
/// initial `slices`, and replaces `result`'s plan with the cheapest of them
/// if it ranks before the plan the search found: NeuroShard's plan is never
/// worse under its model than a plan any baseline makes. A baseline that
/// fails (it cannot place the tables) offers no plan. Returns the plans
/// offered, cheapest first.
static std::vector<PlanCandidate>
keepCheaperBaseline(PlanResult &result, ArrayRef<ColumnSlice> slices,
                    const SearchOptions &options, SearchContext &ctx) {
  std::vector<PlanCandidate> offered;
  uint64_t statesExplored = ctx.stats.statesExplored;
  for (Algorithm algorithm : allAlgorithms()) {
    if (algorithm == Algorithm::NeuroShard ||
        algorithm == Algorithm::TableGreedyGrid)
      continue;
    SearchOptions baselineOptions = options;
    baselineOptions.algorithm = algorithm;
    Expected<PlanResult> baseline =
        runBaseline(makePlacementInput(
                        ctx.tables, ctx.topology,
                        std::vector<ColumnSlice>(slices.begin(), slices.end())),
                    baselineOptions, ctx);
    if (!baseline) {
      consumeError(baseline.takeError());
      continue;
    }
    offered.push_back(PlanCandidate{algorithmName(algorithm).str(),
                                    baseline->plan, baseline->cost});
    if (!rankedBefore(baseline->cost, result.cost))
      continue;
    result.plan = std::move(baseline->plan);
    result.cost = std::move(baseline->cost);
  }
  ctx.stats.statesExplored = statesExplored;
  std::stable_sort(offered.begin(), offered.end(),
                   [](const PlanCandidate &a, const PlanCandidate &b) {
                     return rankedBefore(a.cost, b.cost);
                   });
  return offered;
}

/// What makes two plans the same candidate: each device's shards, and on
/// one node not which device holds which set (the devices are alike).
static std::vector<std::vector<Shard>>
candidateSignature(const ShardingPlan &plan, const Topology &topology) {
  std::vector<std::vector<Shard>> devices(topology.numDevices());
  for (const Shard &shard : plan.shards)
    devices[shard.device].push_back(Shard::of(shard.slice(), 0));
  for (std::vector<Shard> &shards : devices)
    sortShards(shards);
  if (topology.numNodes() == 1)
    llvm::sort(devices, [](const auto &a, const auto &b) {
      return std::lexicographical_compare(
          a.begin(), a.end(), b.begin(), b.end(),
          [](const Shard &x, const Shard &y) { return x.slice() < y.slice(); });
    });
  return devices;
}

/// The candidates a NeuroShard search returns: `count` distinct plans of
/// `found` (the beam's best states and the table-wise plan) and the best of
/// `baselines`, in the model's order, always keeping the table-wise plan and
/// the best baseline's and filling the rest with the beam's best; then, with
/// a count of 2 or more, every other baseline's distinct plan that the model
/// prices within kTimedBaselineCostRatio of the returned plan (except the
/// random placement's). The returned plan is first.
static std::vector<PlanCandidate>
selectCandidates(const PlanResult &result, std::vector<PlanCandidate> found,
                 std::vector<PlanCandidate> baselines, unsigned count,
                 const Topology &topology) {
  StringRef neuroshard = algorithmName(Algorithm::NeuroShard);
  std::vector<PlanCandidate> all;
  all.push_back({neuroshard.str(), result.plan, result.cost});
  size_t bestBaseline = found.size();
  for (PlanCandidate &baseline : baselines)
    found.push_back(std::move(baseline));
  std::vector<std::vector<std::vector<Shard>>> seen = {
      candidateSignature(result.plan, topology)};
  // Whether a candidate of `all` is one of the other baselines'.
  SmallVector<bool> extra = {false};
  for (auto [i, candidate] : enumerate(found)) {
    auto signature = candidateSignature(candidate.plan, topology);
    auto same = llvm::find(seen, signature);
    if (same != seen.end()) {
      // A beam state (or the returned plan) may make a baseline's or the
      // table-wise plan: it is named, and kept, as that one.
      PlanCandidate &kept = all[same - seen.begin()];
      if (candidate.origin != neuroshard && kept.origin == neuroshard)
        kept.origin = candidate.origin;
      continue;
    }
    seen.push_back(std::move(signature));
    all.push_back(std::move(candidate));
    extra.push_back(i > bestBaseline);
  }
  std::vector<PlanCandidate> chosen;
  chosen.push_back(std::move(all.front()));
  for (bool fromBeam : {false, true})
    for (auto [candidate, isExtra] : zip_equal(
             MutableArrayRef(all).drop_front(), ArrayRef(extra).drop_front()))
      if (!isExtra && (candidate.origin == neuroshard) == fromBeam &&
          chosen.size() < count)
        chosen.push_back(std::move(candidate));
  double costLimit = kTimedBaselineCostRatio * result.cost.maxMs;
  if (count >= 2)
    for (auto [candidate, isExtra] : zip_equal(
             MutableArrayRef(all).drop_front(), ArrayRef(extra).drop_front()))
      if (isExtra && candidate.cost.maxMs <= costLimit &&
          candidate.origin != algorithmName(Algorithm::Random))
        chosen.push_back(std::move(candidate));
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const PlanCandidate &a, const PlanCandidate &b) {
                     return rankedBefore(a.cost, b.cost);
                   });
  return chosen;
}

/// The tables with the kinds `allowed` lets them take.
static Expected<std::vector<TableSpec>>
restrictKinds(ArrayRef<TableSpec> tables, ShardingKindSet allowed) {
  std::vector<TableSpec> restricted(tables.begin(), tables.end());
  for (TableSpec &table : restricted) {
    ShardingKindSet kinds = table.shardingKinds & allowed;
    if (kinds == 0)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("table '{0}' may be {1} but the plan may use only {2}",
                  table.name, shardingKindList(table.shardingKinds),
                  shardingKindList(allowed)));
    table.shardingKinds = kinds;
  }
  return std::move(restricted);
}

/// planSharding within the kinds options.shardingKinds allows.
static Expected<PlanResult> planWithinKinds(ArrayRef<TableSpec> givenTables,
                                            const Topology &topology,
                                            const SearchOptions &options,
                                            CostModel &model) {
  auto start = std::chrono::steady_clock::now();
  if (options.shardingKinds == 0)
    return createStringError(inconvertibleErrorCode(),
                             "sharding-types: no sharding type is allowed");
  Expected<std::vector<TableSpec>> restricted =
      restrictKinds(givenTables, options.shardingKinds);
  if (!restricted)
    return restricted.takeError();
  ArrayRef<TableSpec> tables = *restricted;
  if (Error err = validateProblem(tables, topology))
    return std::move(err);
  if (Error err = validateSearchOptions(options))
    return std::move(err);
  if (Error err = checkCostModelSupports(model, topology))
    return std::move(err);
  bool canSplit = options.algorithm == Algorithm::NeuroShard ||
                  options.algorithm == Algorithm::UniformSplitGreedy;
  Expected<std::vector<ColumnSlice>> slices =
      initialSlices(tables, topology, canSplit);
  if (!slices)
    return slices.takeError();
  if (Error err = model.prepare(tables, topology))
    return std::move(err);

  SearchStats stats;
  ComputeCostCache cache(model, stats);
  SearchContext ctx(tables, topology, model, cache, stats);
  ctx.start = start;
  PlacementInput root = makePlacementInput(tables, topology, *slices);
  Expected<PlanResult> result = [&]() -> Expected<PlanResult> {
    switch (options.algorithm) {
    case Algorithm::NeuroShard: {
      BeamBudget budget;
      budget.levels = options.maxSteps ? options.maxSteps
                                       : autoSearchSteps(topology.numDevices());
      budget.stopWithoutProgress = options.maxSteps == 0;
      budget.seedUniformSplits = true;
      budget.keepCandidates = options.keepCandidates;
      Expected<PlanResult> searched =
          runColumnBeamSearch(std::move(root), options, budget, ctx);
      if (!searched)
        return searched;
      std::vector<PlanCandidate> baselines =
          keepCheaperBaseline(*searched, *slices, options, ctx);
      // No device holds two pieces of one table (docs/planner.md, "Clean
      // pieces and structured candidates"): they are joined, and the
      // joined plan priced.
      ShardingPlan joined = searched->plan;
      if (joinPiecesPerDevice(tables, joined)) {
        if (Error err = validatePlan(tables, topology, joined)) {
          consumeError(std::move(err));
        } else {
          Expected<std::vector<PlanCost>> cost =
              pricePlans(ctx, ArrayRef(joined));
          if (!cost)
            return cost.takeError();
          searched->plan = std::move(joined);
          searched->cost = std::move(cost->front());
          // The baselines' plans (whole tables) may now rank before it.
          if (!baselines.empty() &&
              rankedBefore(baselines.front().cost, searched->cost)) {
            searched->plan = baselines.front().plan;
            searched->cost = baselines.front().cost;
          }
        }
      }
      // A person's obvious plans are always priced too. The search's plan
      // and the best of those are each cleaned (a split that pays nothing
      // put back whole) and improved by moves off the busiest device, which
      // may leave such a split again; the better is returned.
      Expected<std::optional<PlanCandidate>> structured =
          bestStructuredPlan(ctx);
      if (!structured)
        return structured.takeError();
      SmallVector<std::pair<ShardingPlan, PlanCost>, 2> starts = {
          {searched->plan, searched->cost}};
      if (*structured)
        starts.emplace_back(std::move((*structured)->plan),
                            std::move((*structured)->cost));
      for (auto [i, start] : enumerate(starts)) {
        auto &[startPlan, startCost] = start;
        if (Error err = unsplitWherePaysNothing(ctx, startPlan, startCost))
          return std::move(err);
        // Moves do not close a gap that wide: a start far above the plan
        // kept so far is not improved.
        if (i > 0 && startCost.maxMs > kMostStartGap * searched->cost.maxMs)
          continue;
        if (Error err = improveLocally(ctx, startPlan, startCost))
          return std::move(err);
        if (Error err = unsplitWherePaysNothing(ctx, startPlan, startCost))
          return std::move(err);
        if (i == 0 || rankedBefore(startCost, searched->cost)) {
          searched->plan = std::move(startPlan);
          searched->cost = std::move(startCost);
        }
      }
      if (options.keepCandidates)
        searched->candidates = selectCandidates(
            *searched, std::move(searched->candidates), std::move(baselines),
            options.keepCandidates, topology);
      return searched;
    }
    case Algorithm::TableGreedyGrid:
      // The grid search is the beam search's pricing of its root state.
      return runColumnBeamSearch(std::move(root), options, BeamBudget(), ctx);
    default:
      return runBaseline(std::move(root), options, ctx);
    }
  }();
  if (!result)
    return result.takeError();
  if (Error err = checkFiniteCost(result->cost))
    return std::move(err);
  result->algorithm = options.algorithm;
  recordModel(*result, model);
  stats.timeMs = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  result->stats = stats;
  return result;
}

/// Whether some table may take a kind beyond whole tables and column
/// pieces under `options`, while every table may also take one of those.
static bool widensTableColumnSpace(ArrayRef<TableSpec> tables,
                                   const SearchOptions &options) {
  bool wider = false;
  for (const TableSpec &table : tables) {
    ShardingKindSet kinds = table.shardingKinds & options.shardingKinds;
    if (!(kinds & kTableColumnKinds))
      return false;
    wider |= (kinds & ~kTableColumnKinds) != 0;
  }
  return wider;
}

/// Keeps in `kept` whichever of its plan and `other`'s ranks first, with
/// the work of both searches in its statistics.
static void keepBetter(PlanResult &kept, PlanResult &&other) {
  SearchStats both = kept.stats;
  both.timeMs += other.stats.timeMs;
  both.costQueries += other.stats.costQueries;
  both.cacheHits += other.stats.cacheHits;
  both.modelCalls += other.stats.modelCalls;
  both.statesExplored += other.stats.statesExplored;
  both.greedyRuns += other.stats.greedyRuns;
  both.movesTried += other.stats.movesTried;
  both.movesTaken += other.stats.movesTaken;
  if (rankedBefore(other.cost, kept.cost))
    kept = std::move(other);
  kept.stats = both;
}

static Expected<PlanResult> planWithinSpace(ArrayRef<TableSpec> tables,
                                            const Topology &topology,
                                            const SearchOptions &options,
                                            CostModel &model);

Expected<PlanResult> planSharding(ArrayRef<TableSpec> tables,
                                  const Topology &topology,
                                  const SearchOptions &options,
                                  CostModel &model) {
  Expected<PlanResult> result =
      planWithinSpace(tables, topology, options, model);
  if (options.algorithm != Algorithm::NeuroShard || topology.numNodes() < 2 ||
      llvm::none_of(
          tables, [](const TableSpec &table) { return table.inHostMemory(); }))
    return result;
  // Placement keeps each node's host memory within its capacity, which
  // steers the beam away from states whose runs overfill a node on the
  // way; a search without that bound may still end in a plan that fits.
  // It runs as well, and its plan is kept where it fits and ranks better
  // (or where the bounded search found none).
  Topology unbounded = topology;
  unbounded.hostMemoryGB = double(kMaxDeviceGB);
  SearchOptions quiet = options;
  quiet.progress = nullptr;
  Expected<PlanResult> free = planWithinSpace(tables, unbounded, quiet, model);
  if (!free) {
    consumeError(free.takeError());
    return result;
  }
  if (Error err = validatePlan(tables, topology, free->plan)) {
    consumeError(std::move(err));
    return result;
  }
  // Its candidates for measured selection must fit the nodes too.
  llvm::erase_if(free->candidates, [&](const PlanCandidate &candidate) {
    Error err = validatePlan(tables, topology, candidate.plan);
    bool overfills = bool(err);
    consumeError(std::move(err));
    return overfills;
  });
  if (!result) {
    consumeError(result.takeError());
    return free;
  }
  keepBetter(*result, std::move(*free));
  return result;
}

/// The search over the kinds `options` allows, and where row pieces and
/// replicas widen them, over whole tables and column pieces as well.
static Expected<PlanResult> planWithinSpace(ArrayRef<TableSpec> tables,
                                            const Topology &topology,
                                            const SearchOptions &options,
                                            CostModel &model) {
  Expected<PlanResult> result =
      planWithinKinds(tables, topology, options, model);
  if (!result || options.algorithm != Algorithm::NeuroShard ||
      !widensTableColumnSpace(tables, options))
    return result;
  // Row pieces and replicas widen the space, and a beam of a few states
  // may follow them away from a plan of whole tables and column pieces
  // that ranks better: the search over those alone runs as well, and the
  // better plan is returned, so that the wider space never does worse.
  SearchOptions narrower = options;
  narrower.shardingKinds &= kTableColumnKinds;
  narrower.progress = nullptr;
  Expected<PlanResult> tableColumn =
      planWithinKinds(tables, topology, narrower, model);
  if (!tableColumn) {
    // No plan of whole tables and column pieces (a table too large for
    // them): the wider space's plan stands.
    consumeError(tableColumn.takeError());
    return result;
  }
  keepBetter(*result, std::move(*tableColumn));
  return result;
}

Expected<PlanResult> pricePlan(ArrayRef<TableSpec> tables,
                               const Topology &topology, const PlanFile &given,
                               CostModel &model) {
  auto start = std::chrono::steady_clock::now();
  if (Error err = validateProblem(tables, topology))
    return std::move(err);
  if (Error err = validatePlanFile(tables, topology, given))
    return std::move(err);
  const ShardingPlan &plan = given.plan;
  Expected<PlanCost> cost = evaluatePlan(tables, topology, plan, model);
  if (!cost)
    return cost.takeError();
  if (Error err = checkFiniteCost(*cost))
    return std::move(err);
  PlanResult result;
  result.algorithm = given.algorithm;
  result.plan = plan;
  sortShards(result.plan.shards);
  recordModel(result, model);
  llvm::append_range(result.warnings, given.notes);
  result.cost = std::move(*cost);
  result.searched = false;
  if (Error err = addPlanEstimates(result, tables, topology, model))
    return std::move(err);
  result.stats.timeMs = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  return std::move(result);
}

Error addPlanEstimates(PlanResult &result, ArrayRef<TableSpec> tables,
                       const Topology &topology, CostModel &model) {
  Expected<std::optional<ExpectedSlowest>> expected =
      expectedSlowestDevice(tables, topology, result.plan, model);
  if (!expected)
    return expected.takeError();
  result.expected = std::move(*expected);

  // Each piece priced as a set of its own.
  std::vector<ColumnSlice> pieces;
  for (const Shard &shard : result.plan.shards)
    pieces.push_back(shard.slice());
  std::vector<ArrayRef<ColumnSlice>> sets(pieces.begin(), pieces.end());
  std::vector<double> costs(sets.size());
  if (!sets.empty())
    if (Error err = model.predictCompute(sets, costs))
      return err;
  result.tableComputeMs.assign(tables.size(), 0.0);
  for (auto [piece, cost] : zip_equal(pieces, costs))
    result.tableComputeMs[piece.table] += cost;

  Expected<PlanLowerBound> bound = computeLowerBound(tables, topology, model);
  if (!bound)
    return bound.takeError();
  result.lowerBound = *bound;
  return Error::success();
}

StringRef planOriginName(const PlanResult &result) {
  return result.algorithm ? algorithmName(*result.algorithm) : "given";
}

std::string formatProgress(const SearchProgress &progress) {
  std::string best =
      progress.bestMs
          ? formatv("best {0} ms", format("%.4f", *progress.bestMs)).str()
          : std::string("no feasible plan yet");
  return formatv("search: level {0} of {1}, {2} states priced, {3}, {4} s",
                 progress.level, progress.maxLevels, progress.statesExplored,
                 best, format("%.1f", progress.elapsedMs / 1000.0))
      .str();
}

} // namespace neuroshard
