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
// Unlike the reference, states are ranked by all their device costs from
// the slowest down (rankedBefore), so that splitting one of several tables
// tied at the maximum counts as progress; a move may halve a whole group of
// equally expensive slices at once; and the search starts from the states
// that split every table costlier than a device's fair share into equal
// pieces as well as from the unsplit one.
//
// Where the tables' sharding types allow, a move may also cut a table's
// rows into k blocks (k chosen among powers of two up to the devices it
// may spread over) or halve a row block, and replicate a whole table on
// every device (a data-parallel table).
//
//===----------------------------------------------------------------------===//

#include "Placement.h"

#include "neuroshard/Planner/PlanEvaluation.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace llvm;

namespace neuroshard {
namespace detail {

/// Children of a level priced at every threshold, per state of the beam;
/// the rest are placed at their parent's best dim limit alone.
constexpr unsigned kFullyPricedPerBeamState = 3;
/// Row-piece counts a move offers a table in full (2, 4, ... up to the
/// devices: four on up to 8 devices) before it keeps those near the
/// table's fair share alone (rowPieceCounts).
constexpr unsigned kMostRowCounts = 4;

namespace {
struct BeamState {
  PlacementInput input;
  PlacementOutcome outcome;
};
} // namespace

/// The slices of `eligible` (indices into input's slices) among the
/// `count` largest by bytes and the `count` most expensive alone, in slice
/// order.
static std::vector<uint32_t> largestAndCostliest(const PlacementInput &input,
                                                 ArrayRef<uint32_t> eligible,
                                                 unsigned count) {
  auto topBy = [&](auto key) {
    std::vector<uint32_t> top(eligible.begin(), eligible.end());
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

namespace {
/// What a move does to the slices it names.
enum class MoveKind : uint8_t {
  /// Halve each slice's columns.
  HalveColumns,
  /// Cut each slice's rows into `pieces` blocks.
  SplitRows,
  /// Replace each slice (a whole table) by a replica on every device.
  Replicate,
};
struct Move {
  MoveKind kind = MoveKind::HalveColumns;
  /// Indices into the state's slices, ascending.
  std::vector<uint32_t> slices;
  unsigned pieces = 2;
  friend bool operator==(const Move &a, const Move &b) {
    return a.kind == b.kind && a.slices == b.slices && a.pieces == b.pieces;
  }
};
} // namespace

/// The pieces `move` makes of `slice`.
static std::vector<ColumnSlice>
piecesOf(const ColumnSlice &slice, const Move &move, const SearchContext &ctx) {
  switch (move.kind) {
  case MoveKind::HalveColumns: {
    int64_t middle = slice.colBegin + slice.width() / 2;
    ColumnSlice lower = slice, upper = slice;
    lower.colEnd = middle;
    upper.colBegin = middle;
    return {lower, upper};
  }
  case MoveKind::SplitRows:
    return rowPieces(ctx.tables[slice.table], slice, move.pieces);
  case MoveKind::Replicate:
    return replicas(slice, ctx.topology.numDevices());
  }
  return {slice};
}

/// The slices of `input` with each slice `move` names replaced by its
/// pieces (which keeps them sorted).
static std::vector<ColumnSlice> splitSlices(const PlacementInput &input,
                                            const Move &move,
                                            const SearchContext &ctx) {
  std::vector<ColumnSlice> slices;
  slices.reserve(input.slices.size() + move.slices.size());
  const uint32_t *next = move.slices.data();
  const uint32_t *end = next + move.slices.size();
  for (auto [i, slice] : enumerate(input.slices)) {
    if (next == end || *next != i) {
      slices.push_back(slice);
      continue;
    }
    for (const ColumnSlice &piece : piecesOf(slice, move, ctx))
      slices.push_back(piece);
    ++next;
  }
  return slices;
}

/// The key of splitSlices(input, move), without building the slices.
static SetKey splitKey(const PlacementInput &input, const Move &move,
                       const SearchContext &ctx) {
  SetKey key = input.key;
  for (uint32_t index : move.slices) {
    SetKey whole = input.keys[index];
    key = {key.first - whole.first, key.second - whole.second};
    for (const ColumnSlice &piece : piecesOf(input.slices[index], move, ctx))
      key = addKeys(key, sliceKey(piece));
  }
  return key;
}

/// Whether two costs are the same up to rounding.
static bool sameCost(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

/// The piece counts a move may cut slice `i` of `input` into: for a whole
/// table that may be row-wise, 2, 4, 8, ... up to the devices it may
/// spread over (all of them, or a node's for a table-row-wise table) and
/// that count itself; 2 for a row piece of two rows or more; none
/// otherwise. Where that makes more than kMostRowCounts counts (many
/// devices), only 2 and those within a factor of two of the blocks that
/// bring the slice's cost alone down to a device's fair share `share`:
/// fewer blocks leave its device the slowest, more read the table's
/// indices on more devices for no balance gained.
static std::vector<unsigned> rowPieceCounts(const PlacementInput &input,
                                            uint32_t i, double share,
                                            const SearchContext &ctx) {
  const ColumnSlice &slice = input.slices[i];
  const TableSpec &table = ctx.tables[slice.table];
  if (!slice.allRows()) {
    if (!slice.replica && slice.numRows(table) >= 2)
      return {2};
    return {};
  }
  if (!mayRowSplit(table, slice, ctx.topology))
    return {};
  // A whole table's rows are all of its rows.
  unsigned most = mostRowBlocks(table, ctx.topology);
  std::vector<unsigned> counts;
  for (unsigned k = 2; k <= most; k *= 2)
    counts.push_back(k);
  if (most >= 2 && (counts.empty() || counts.back() != most))
    counts.push_back(most);
  if (counts.size() <= kMostRowCounts || !(share > 0.0))
    return counts;
  double wanted = std::max(2.0, input.sortCost[i] / share);
  llvm::erase_if(counts, [&](unsigned k) {
    return k != 2 && (k < wanted / 2.0 || k > wanted * 2.0);
  });
  return counts;
}

/// Whether replicating `slice` may pay: the pooled values and indices its
/// exchange moves exceed the gradient values the all-reduce would move.
static bool worthReplicating(const PlacementInput &input, uint32_t i,
                             const SearchContext &ctx) {
  const ColumnSlice &slice = input.slices[i];
  const TableSpec &table = ctx.tables[slice.table];
  if (!mayReplicate(table, slice))
    return false;
  for (uint64_t capacity : ctx.capacities)
    if (input.bytes[i] > capacity)
      return false;
  double bags = static_cast<double>(ctx.topology.batchSize);
  double exchanged = 2.0 * bags * table.dim * table.numFeatures() +
                     bags * table.totalPoolingFactor();
  double gradients = 2.0 * static_cast<double>(table.rows) * table.dim;
  return exchanged > gradients;
}

/// Adds the moves of one kind: each candidate (among the `count` largest
/// and costliest slices the kind applies to) alone, into each piece count
/// it allows, and together with the other slices that cost exactly as much
/// and allow that count (K equal hot tables tie at the maximum: cutting one
/// of them cannot lower it, cutting all K does). `counts[i]` lists the
/// piece counts slice i allows, none where the kind does not apply.
static void addMovesWithTies(MoveKind kind,
                             ArrayRef<std::vector<unsigned>> counts,
                             const PlacementInput &input, unsigned count,
                             std::vector<Move> &moves) {
  std::vector<uint32_t> eligible;
  for (auto [i, allowed] : enumerate(counts))
    if (!allowed.empty())
      eligible.push_back(i);
  std::vector<uint32_t> candidates =
      largestAndCostliest(input, eligible, count);
  for (uint32_t candidate : candidates)
    for (unsigned pieces : counts[candidate])
      moves.push_back({kind, {candidate}, pieces});
  for (uint32_t candidate : candidates)
    for (unsigned pieces : counts[candidate]) {
      Move group{kind, {}, pieces};
      for (uint32_t i : eligible)
        if (sameCost(input.sortCost[i], input.sortCost[candidate]) &&
            llvm::is_contained(counts[i], pieces))
          group.slices.push_back(i);
      if (group.slices.size() > 1 && llvm::find(moves, group) == moves.end())
        moves.push_back(std::move(group));
    }
}

/// The moves of one level from `input`: halving columns and cutting rows
/// (addMovesWithTies), and replicating each of the `count` costliest
/// tables worth replicating.
static std::vector<Move> splitMoves(const PlacementInput &input,
                                    const SearchContext &ctx, unsigned count) {
  std::vector<Move> moves;
  std::vector<std::vector<unsigned>> halves, rowCounts;
  double share = fairShare(input, ctx.topology.numDevices());
  for (auto [i, slice] : enumerate(input.slices)) {
    halves.push_back(isSplittable(ctx.tables[slice.table], slice)
                         ? std::vector<unsigned>{2}
                         : std::vector<unsigned>{});
    rowCounts.push_back(rowPieceCounts(input, i, share, ctx));
  }
  addMovesWithTies(MoveKind::HalveColumns, halves, input, count, moves);
  addMovesWithTies(MoveKind::SplitRows, rowCounts, input, count, moves);
  std::vector<uint32_t> replicable;
  for (uint32_t i = 0; i < input.slices.size(); ++i)
    if (worthReplicating(input, i, ctx))
      replicable.push_back(i);
  size_t kept = std::min<size_t>(count, replicable.size());
  std::partial_sort(replicable.begin(), replicable.begin() + kept,
                    replicable.end(), [&](uint32_t a, uint32_t b) {
                      return std::make_pair(input.sortCost[a], b) >
                             std::make_pair(input.sortCost[b], a);
                    });
  for (uint32_t i : ArrayRef(replicable).take_front(kept))
    moves.push_back({MoveKind::Replicate, {i}, 0});
  return moves;
}

/// The states that split every splittable slice whose cost alone exceeds a
/// device's fair share (the total of the costs alone over the devices)
/// into equal power-of-two pieces: for each cap P = 2, 4, ... up to the
/// device count, the fewest pieces, at most P, that bring it to that
/// share, as far as its width allows. Several caps, because a piece reads
/// every index of its table: past some count, more pieces cost more than
/// the balance they buy, and the beam, which only splits, could not merge
/// them back. `input` must be ordered by model cost (orderByModelCost).
static std::vector<std::vector<ColumnSlice>>
uniformSplits(const PlacementInput &input, ArrayRef<TableSpec> tables,
              unsigned numDevices) {
  double share = fairShare(input, numDevices);
  std::vector<std::vector<ColumnSlice>> states;
  int64_t reached = 1;
  for (int64_t cap = 2; cap <= numDevices && reached == cap / 2; cap *= 2) {
    std::vector<ColumnSlice> slices;
    reached = 1;
    for (auto [i, slice] : enumerate(input.slices)) {
      int64_t pieces = 1;
      if (isSplittable(tables[slice.table], slice))
        while (input.sortCost[i] / pieces > share && 2 * pieces <= cap &&
               slice.width() % (2 * pieces * kColumnAlignment) == 0)
          pieces *= 2;
      int64_t width = slice.width() / pieces;
      for (int64_t p = 0; p < pieces; ++p) {
        ColumnSlice piece = slice;
        piece.colBegin = slice.colBegin + p * width;
        piece.colEnd = slice.colBegin + (p + 1) * width;
        slices.push_back(piece);
      }
      reached = std::max(reached, pieces);
    }
    // A cap no slice reaches adds nothing a smaller one did not.
    if (reached == cap)
      states.push_back(std::move(slices));
  }
  return states;
}

/// Prices `states` with one grid search (runGridSearch), at every
/// threshold, or with `probeLimits` at those dim limits alone.
static Error priceStates(ArrayRef<BeamState *> states,
                         ArrayRef<double> thresholds, SearchContext &ctx,
                         ArrayRef<double> probeLimits = {}) {
  std::vector<PlacementInput *> inputs;
  for (BeamState *state : states)
    inputs.push_back(&state->input);
  if (Error err = orderByModelCost(inputs, ctx.cache))
    return err;
  std::vector<const PlacementInput *> constInputs(inputs.begin(), inputs.end());
  Expected<std::vector<PlacementOutcome>> outcomes =
      runGridSearch(constInputs, thresholds, ctx, probeLimits);
  if (!outcomes)
    return outcomes.takeError();
  for (auto [state, outcome] : zip_equal(states, *outcomes))
    state->outcome = std::move(outcome);
  return Error::success();
}

/// Prices the new `states` at every threshold.
static Error priceStates(MutableArrayRef<BeamState> states,
                         ArrayRef<double> thresholds, SearchContext &ctx) {
  std::vector<BeamState *> all;
  for (BeamState &state : states)
    all.push_back(&state);
  ctx.stats.statesExplored += states.size();
  return priceStates(all, thresholds, ctx);
}

/// Prices the children of one level and returns them best first. Each
/// child is first placed once, at the dim limit that placed its parent
/// best (`parentLimits`), or where that fails without one. The
/// `fullyPriced` best of those, and those still not placed, are then
/// priced at every threshold (and in the packing orders where needed):
/// their price can only fall, so they rank before the rest, and the beam
/// keeps states priced as the grid search prices them, at a fraction of
/// the placements.
static Expected<std::vector<size_t>>
priceChildren(MutableArrayRef<BeamState> children,
              ArrayRef<double> parentLimits, ArrayRef<double> thresholds,
              unsigned fullyPriced, SearchContext &ctx) {
  ctx.stats.statesExplored += children.size();
  std::vector<BeamState *> all;
  for (BeamState &child : children)
    all.push_back(&child);
  auto ranking = [&] {
    std::vector<size_t> order(children.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return rankedBefore(children[a].outcome, children[b].outcome);
    });
    return order;
  };
  if (children.size() <= fullyPriced) {
    if (Error err = priceStates(all, thresholds, ctx))
      return std::move(err);
    return ranking();
  }
  if (Error err = priceStates(all, thresholds, ctx, parentLimits))
    return std::move(err);
  // A child that placement could not place (a split that adds pooled
  // columns, replicas that add them on every device) is placed again
  // without a dim limit.
  std::vector<BeamState *> failed;
  for (auto [child, limit] : zip_equal(all, parentLimits))
    if (!child->outcome.feasible && !std::isinf(limit))
      failed.push_back(child);
  if (!failed.empty()) {
    std::vector<double> none(failed.size(),
                             std::numeric_limits<double>::infinity());
    if (Error err = priceStates(failed, thresholds, ctx, none))
      return std::move(err);
  }
  std::vector<size_t> first = ranking();
  std::vector<BeamState *> best;
  for (auto [rank, i] : enumerate(first))
    if (rank < fullyPriced || !children[i].outcome.feasible)
      best.push_back(&children[i]);
  if (Error err = priceStates(best, thresholds, ctx))
    return std::move(err);
  return ranking();
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
    // Row pieces and replicas are not column pieces to join.
    if (shard.distributesRows())
      return std::nullopt;
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
static Error mergePiecesOnOneDevice(ShardingPlan &plan, PlanCost &planCost,
                                    SearchContext &ctx) {
  for (unsigned table = 0; table < ctx.tables.size(); ++table) {
    std::optional<ShardingPlan> merged = mergeTable(plan, table);
    if (!merged)
      continue;
    Expected<PlanCost> cost =
        evaluatePlan(ctx.tables, ctx.topology, *merged, ctx.model);
    if (!cost)
      return cost.takeError();
    if (cost->maxMs > planCost.maxMs)
      continue;
    plan = std::move(*merged);
    planCost = std::move(*cost);
  }
  return Error::success();
}

/// The `count` best feasible states seen so far, best first.
namespace {
class KeptStates {
public:
  explicit KeptStates(unsigned count) : count(count) {}
  void consider(ArrayRef<BeamState> states) {
    for (const BeamState &state : states) {
      if (!state.outcome.feasible)
        continue;
      if (kept.size() == count &&
          (count == 0 || !rankedBefore(state.outcome, kept.back().outcome)))
        continue;
      auto at = llvm::upper_bound(kept, state,
                                  [](const BeamState &a, const BeamState &b) {
                                    return rankedBefore(a.outcome, b.outcome);
                                  });
      kept.insert(at, state);
      if (kept.size() > count)
        kept.pop_back();
    }
  }
  ArrayRef<BeamState> states() const { return kept; }

private:
  unsigned count;
  std::vector<BeamState> kept;
};
} // namespace

/// The candidate of a feasible state: its plan with pieces on one device
/// merged.
static Expected<PlanCandidate>
candidateOf(const BeamState &state, StringRef origin, SearchContext &ctx) {
  PlanCandidate candidate;
  candidate.origin = origin.str();
  candidate.plan = makePlan(state.input, state.outcome);
  candidate.cost = state.outcome.cost;
  if (Error err = mergePiecesOnOneDevice(candidate.plan, candidate.cost, ctx))
    return std::move(err);
  return std::move(candidate);
}

/// How many of the devices share the slowest device's cost.
static unsigned tiedAtMaximum(const PlacementOutcome &outcome) {
  unsigned tied = 0;
  for (double cost : outcome.ranked)
    if (cost >= outcome.costMs * (1.0 - 1e-6))
      ++tied;
  return tied;
}

/// Whether `now` is progress over `before`: a lower maximum, or the same
/// maximum on fewer devices.
static bool madeProgress(const PlacementOutcome &now,
                         const PlacementOutcome &before) {
  if (!before.feasible)
    return now.feasible;
  if (!now.feasible)
    return false;
  if (!sameCost(now.costMs, before.costMs))
    return now.costMs < before.costMs;
  return tiedAtMaximum(now) < tiedAtMaximum(before);
}

Expected<PlanResult> runColumnBeamSearch(PlacementInput root,
                                         const SearchOptions &options,
                                         const BeamBudget &budget,
                                         SearchContext &ctx) {
  std::vector<double> thresholds = gridThresholds(options);
  std::vector<BeamState> beam(1);
  beam.front().input = std::move(root);
  if (Error err = priceStates(beam, thresholds, ctx))
    return std::move(err);
  // States that differ may make the same plan: keep enough to fill the
  // candidates after duplicates are dropped.
  KeptStates kept(budget.keepCandidates ? 2 * budget.keepCandidates + 2 : 0);
  kept.consider(beam);
  std::optional<BeamState> unsplit;
  if (budget.keepCandidates)
    unsplit = beam.front();
  DenseSet<SetKey> visited = {beam.front().input.key};
  if (budget.seedUniformSplits) {
    std::vector<BeamState> seeds;
    std::vector<std::vector<ColumnSlice>> seedSlices = uniformSplits(
        beam.front().input, ctx.tables, ctx.topology.numDevices());
    seedSlices.push_back(splitAboveFairShare(beam.front().input, ctx.tables,
                                             ctx.topology.numDevices()));
    seedSlices.push_back(
        rowSplitAboveFairShare(beam.front().input, ctx.tables, ctx.topology));
    for (std::vector<ColumnSlice> &slices : seedSlices) {
      BeamState seed;
      seed.input =
          makePlacementInput(ctx.tables, ctx.topology, std::move(slices));
      if (visited.insert(seed.input.key).second)
        seeds.push_back(std::move(seed));
    }
    if (!seeds.empty()) {
      if (Error err = priceStates(seeds, thresholds, ctx))
        return std::move(err);
      kept.consider(seeds);
      for (BeamState &seed : seeds)
        beam.push_back(std::move(seed));
      std::stable_sort(beam.begin(), beam.end(),
                       [](const BeamState &a, const BeamState &b) {
                         return rankedBefore(a.outcome, b.outcome);
                       });
      if (beam.size() > options.beamWidth)
        beam.resize(options.beamWidth);
    }
  }
  BeamState best = beam.front();
  auto report = [&](unsigned level) {
    if (!options.progress)
      return;
    SearchProgress progress;
    progress.level = level;
    progress.maxLevels = budget.levels;
    progress.statesExplored = ctx.stats.statesExplored;
    if (best.outcome.feasible)
      progress.bestMs = best.outcome.costMs;
    progress.elapsedMs = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - ctx.start)
                             .count();
    options.progress(progress);
  };
  report(0);

  unsigned idleLevels = 0;
  for (unsigned level = 0; level < budget.levels; ++level) {
    std::vector<BeamState> children;
    std::vector<double> parentLimits;
    for (const BeamState &parent : beam)
      for (const Move &move :
           splitMoves(parent.input, ctx, options.candidates)) {
        if (!visited.insert(splitKey(parent.input, move, ctx)).second)
          continue;
        BeamState &child = children.emplace_back();
        child.input = makePlacementInput(ctx.tables, ctx.topology,
                                         splitSlices(parent.input, move, ctx));
        parentLimits.push_back(parent.outcome.dimLimit);
      }
    if (children.empty())
      break;
    // Infeasible states rank last (their cost is infinite) but may still
    // lead to feasible children when memory is what stands in the way.
    Expected<std::vector<size_t>> ranked =
        priceChildren(children, parentLimits, thresholds,
                      kFullyPricedPerBeamState * options.beamWidth, ctx);
    if (!ranked)
      return ranked.takeError();
    std::vector<size_t> &ranking = *ranked;
    kept.consider(children);
    const BeamState &levelBest = children[ranking.front()];
    bool progress = madeProgress(levelBest.outcome, best.outcome);
    if (rankedBefore(levelBest.outcome, best.outcome))
      best = levelBest;
    std::vector<BeamState> next;
    for (size_t i = 0; i < std::min<size_t>(options.beamWidth, ranking.size());
         ++i)
      next.push_back(std::move(children[ranking[i]]));
    beam = std::move(next);
    report(level + 1);
    idleLevels = progress ? 0 : idleLevels + 1;
    if (budget.stopWithoutProgress && idleLevels >= kBeamPatience)
      break;
  }

  if (!best.outcome.feasible)
    return placementError(ctx, best.input, best.outcome);
  PlanResult result;
  result.plan = makePlan(best.input, best.outcome);
  result.cost = std::move(best.outcome.cost);
  if (Error err = mergePiecesOnOneDevice(result.plan, result.cost, ctx))
    return std::move(err);
  for (const BeamState &state : kept.states()) {
    Expected<PlanCandidate> candidate =
        candidateOf(state, algorithmName(Algorithm::NeuroShard), ctx);
    if (!candidate)
      return candidate.takeError();
    result.candidates.push_back(std::move(*candidate));
  }
  // The root state whole is the table-wise plan (table-greedy-grid), unless
  // tables too large for any device were split up front.
  if (unsplit && unsplit->outcome.feasible &&
      unsplit->input.slices.size() == ctx.tables.size()) {
    Expected<PlanCandidate> candidate =
        candidateOf(*unsplit, algorithmName(Algorithm::TableGreedyGrid), ctx);
    if (!candidate)
      return candidate.takeError();
    result.candidates.push_back(std::move(*candidate));
  }
  return std::move(result);
}

} // namespace detail
} // namespace neuroshard
