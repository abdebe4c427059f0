//===- ColumnBeamSearch.cpp - NeuroShard's column-wise beam search --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A state is the set of column slices left after some splits; it is priced
// by the greedy grid search. Each level splits every candidate of every beam
// state in half, prices all new states together (one lockstep grid search,
// so the model sees one batched query per placement step), and keeps the
// beam-width cheapest. States are identified by their multiset of (table,
// width) pairs, so split orders [a, b] and [b, a] are explored once, and so
// are states that split the other half of a table to the same widths:
// equivalent states cannot fill the beam.
//
//===----------------------------------------------------------------------===//

#include "Placement.h"

#include "neuroshard/Planner/PlanEvaluation.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <numeric>

using namespace llvm;

namespace neuroshard {
namespace detail {

namespace {
struct BeamState {
  PlacementInput input;
  PlacementOutcome outcome;
};
} // namespace

static bool isSplittable(const TableSpec &table, const ColumnSlice &slice) {
  return !table.noSplit && !table.pinnedDevice &&
         slice.width() % (2 * kColumnAlignment) == 0;
}

/// Indices of the splittable slices among the `count` largest by bytes and
/// the `count` most expensive alone, in slice order.
static std::vector<uint32_t> splitCandidates(const PlacementInput &input,
                                             ArrayRef<TableSpec> tables,
                                             unsigned count) {
  std::vector<uint32_t> splittable;
  for (auto [i, slice] : enumerate(input.slices))
    if (isSplittable(tables[slice.table], slice))
      splittable.push_back(i);
  auto topBy = [&](auto key) {
    std::vector<uint32_t> top = splittable;
    size_t kept = std::min<size_t>(count, top.size());
    std::partial_sort(top.begin(), top.begin() + kept, top.end(),
                      [&](uint32_t a, uint32_t b) {
                        return std::make_pair(key(a), b) >
                               std::make_pair(key(b), a);
                      });
    top.resize(kept);
    return top;
  };
  std::vector<uint32_t> candidates =
      topBy([&](uint32_t i) { return double(input.bytes[i]); });
  std::vector<uint32_t> byCost =
      topBy([&](uint32_t i) { return input.sortCost[i]; });
  candidates.insert(candidates.end(), byCost.begin(), byCost.end());
  llvm::sort(candidates);
  candidates.erase(std::unique(candidates.begin(), candidates.end()),
                   candidates.end());
  return candidates;
}

/// The two halves of a slice.
static std::pair<ColumnSlice, ColumnSlice> halves(const ColumnSlice &slice) {
  int64_t middle = slice.colBegin + slice.width() / 2;
  return {{slice.table, slice.colBegin, middle},
          {slice.table, middle, slice.colEnd}};
}

/// The slices of `input` with slice `index` replaced by its two halves.
static std::vector<ColumnSlice> splitSlice(const PlacementInput &input,
                                           uint32_t index) {
  std::vector<ColumnSlice> slices = input.slices;
  auto [lower, upper] = halves(slices[index]);
  slices[index] = lower;
  slices.insert(slices.begin() + index + 1, upper);
  return slices;
}

/// The key of splitSlice(input, index), without building the slices.
static SetKey splitKey(const PlacementInput &input, uint32_t index) {
  auto [lower, upper] = halves(input.slices[index]);
  SetKey whole = input.keys[index];
  SetKey key = {input.key.first - whole.first, input.key.second - whole.second};
  return addKeys(addKeys(key, sliceKey(lower)), sliceKey(upper));
}

/// Prices `states` (whose outcomes are unset) with one grid search.
static Error priceStates(MutableArrayRef<BeamState> states,
                         ArrayRef<double> thresholds, SearchContext &ctx) {
  std::vector<PlacementInput *> inputs;
  for (BeamState &state : states)
    inputs.push_back(&state.input);
  if (Error err = orderByModelCost(inputs, ctx.cache))
    return err;
  std::vector<const PlacementInput *> constInputs(inputs.begin(), inputs.end());
  Expected<std::vector<PlacementOutcome>> outcomes =
      runGridSearch(constInputs, thresholds, ctx);
  if (!outcomes)
    return outcomes.takeError();
  for (auto [state, outcome] : zip_equal(states, *outcomes))
    state.outcome = std::move(outcome);
  ctx.stats.statesExplored += states.size();
  return Error::success();
}

/// `plan` with the shards of `table` that share a device merged into one,
/// laid out one device after another in the order the devices first hold
/// the table's columns; nullopt if no device holds two of its shards.
static std::optional<ShardingPlan> mergeTable(const ShardingPlan &plan,
                                              unsigned table) {
  SmallVector<std::pair<unsigned, int64_t>> widths; // (device, width)
  bool merges = false;
  for (const Shard &shard : plan.shards) {
    if (shard.table != table)
      continue;
    auto it = llvm::find_if(
        widths, [&](const auto &entry) { return entry.first == shard.device; });
    if (it == widths.end()) {
      widths.emplace_back(shard.device, shard.width());
      continue;
    }
    it->second += shard.width();
    merges = true;
  }
  if (!merges)
    return std::nullopt;
  ShardingPlan merged;
  bool placed = false;
  for (const Shard &shard : plan.shards) {
    if (shard.table != table) {
      merged.shards.push_back(shard);
      continue;
    }
    if (placed)
      continue;
    placed = true;
    int64_t begin = 0;
    for (auto [device, width] : widths) {
      merged.shards.push_back({table, begin, begin + width, device});
      begin += width;
    }
  }
  return merged;
}

/// Merges, table by table, the column pieces that the search left on one
/// device, keeping each merge that does not make the plan's cost worse: a
/// merged piece reads its indices once instead of once per piece, and the
/// search, which only halves slices, cannot join pieces it split apart.
static Error mergePiecesOnOneDevice(PlanResult &result, SearchContext &ctx) {
  for (unsigned table = 0; table < ctx.tables.size(); ++table) {
    std::optional<ShardingPlan> merged = mergeTable(result.plan, table);
    if (!merged)
      continue;
    Expected<PlanCost> cost =
        evaluatePlan(ctx.tables, ctx.topology, *merged, ctx.model);
    if (!cost)
      return cost.takeError();
    if (cost->maxMs > result.cost.maxMs)
      continue;
    result.plan = std::move(*merged);
    result.cost = std::move(*cost);
  }
  return Error::success();
}

Expected<PlanResult> runColumnBeamSearch(PlacementInput root,
                                         const SearchOptions &options,
                                         SearchContext &ctx) {
  std::vector<double> thresholds = gridThresholds(options);
  std::vector<BeamState> beam(1);
  beam.front().input = std::move(root);
  if (Error err = priceStates(beam, thresholds, ctx))
    return std::move(err);
  BeamState best = beam.front();
  DenseSet<SetKey> visited = {best.input.key};
  auto report = [&](unsigned level) {
    if (!options.progress)
      return;
    SearchProgress progress;
    progress.level = level;
    progress.maxLevels = options.maxSteps;
    progress.statesExplored = ctx.stats.statesExplored;
    if (best.outcome.feasible)
      progress.bestMs = best.outcome.costMs;
    progress.elapsedMs = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - ctx.start)
                             .count();
    options.progress(progress);
  };
  report(0);

  for (unsigned level = 0; level < options.maxSteps; ++level) {
    std::vector<BeamState> children;
    for (const BeamState &parent : beam)
      for (uint32_t candidate :
           splitCandidates(parent.input, ctx.tables, options.candidates)) {
        if (!visited.insert(splitKey(parent.input, candidate)).second)
          continue;
        BeamState &child = children.emplace_back();
        child.input = makePlacementInput(ctx.tables, ctx.topology,
                                         splitSlice(parent.input, candidate));
      }
    if (children.empty())
      break;
    if (Error err = priceStates(children, thresholds, ctx))
      return std::move(err);

    // Infeasible states rank last (their cost is infinite) but may still
    // lead to feasible children when memory is what stands in the way.
    std::vector<size_t> ranking(children.size());
    std::iota(ranking.begin(), ranking.end(), 0);
    std::stable_sort(ranking.begin(), ranking.end(), [&](size_t a, size_t b) {
      return children[a].outcome.costMs < children[b].outcome.costMs;
    });
    const BeamState &levelBest = children[ranking.front()];
    if (levelBest.outcome.feasible &&
        (!best.outcome.feasible ||
         levelBest.outcome.costMs < best.outcome.costMs))
      best = levelBest;
    std::vector<BeamState> next;
    for (size_t i = 0; i < std::min<size_t>(options.beamWidth, ranking.size());
         ++i)
      next.push_back(std::move(children[ranking[i]]));
    beam = std::move(next);
    report(level + 1);
  }

  if (!best.outcome.feasible)
    return placementError(ctx, best.input, best.outcome);
  PlanResult result;
  result.plan = makePlan(best.input, best.outcome);
  result.cost = std::move(best.outcome.cost);
  if (Error err = mergePiecesOnOneDevice(result, ctx))
    return std::move(err);
  return std::move(result);
}

} // namespace detail
} // namespace neuroshard
