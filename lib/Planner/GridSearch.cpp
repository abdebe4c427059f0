//===- GridSearch.cpp - Greedy placement over a grid of dim limits --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The greedy grid search: every placement input is placed once per dim
// threshold (and once without a limit), the runs advancing in lockstep so
// that their cost queries batch, and the cheapest run of each input kept.
// Inputs no order of cost can pack run again with large slices first.
//
//===----------------------------------------------------------------------===//

#include "Placement.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <memory>

using namespace llvm;

namespace neuroshard {
namespace detail {

std::vector<double> gridThresholds(const SearchOptions &options) {
  std::vector<double> thresholds;
  unsigned steps = options.gridSteps;
  for (unsigned i = 0; i < steps; ++i)
    thresholds.push_back(steps == 1
                             ? options.thresholdMin
                             : options.thresholdMin + (options.thresholdMax -
                                                       options.thresholdMin) *
                                                          i / (steps - 1));
  return thresholds;
}

/// Runs the placements, prices the successful ones and keeps, per input,
/// the cheapest (the earliest run on ties).
static Error runAndKeepBest(std::vector<GreedyRun> &runs,
                            ArrayRef<unsigned> inputOfRun,
                            MutableArrayRef<PlacementOutcome> outcomes,
                            SearchContext &ctx) {
  ctx.stats.greedyRuns += runs.size();
  if (Error err = runGreedyLockstep(runs, ctx))
    return err;
  std::vector<const GreedyRun *> succeeded;
  std::vector<unsigned> inputOfSucceeded;
  for (auto [run, input] : zip_equal(runs, inputOfRun)) {
    if (run.succeeded()) {
      succeeded.push_back(&run);
      inputOfSucceeded.push_back(input);
      continue;
    }
    PlacementOutcome &outcome = outcomes[input];
    outcome.failedSlice = run.failedSlice;
    outcome.maxFreeAtFailure = run.maxFreeAtFailure;
    outcome.maxHostFreeAtFailure = run.maxHostFreeAtFailure;
  }
  Expected<std::vector<PlanCost>> costs = priceRuns(succeeded, ctx);
  if (!costs)
    return costs.takeError();
  for (auto [run, input, cost] :
       zip_equal(succeeded, inputOfSucceeded, *costs)) {
    PlacementOutcome candidate = outcomeOf(*run, std::move(cost));
    if (rankedBefore(candidate, outcomes[input]))
      outcomes[input] = std::move(candidate);
  }
  return Error::success();
}

Expected<std::vector<PlacementOutcome>>
runGridSearch(ArrayRef<const PlacementInput *> inputs,
              ArrayRef<double> thresholds, SearchContext &ctx,
              ArrayRef<double> probeLimits) {
  assert((probeLimits.empty() || probeLimits.size() == inputs.size()) &&
         "one probe limit per input");
  unsigned n = ctx.topology.numDevices();
  double averageDim = ctx.totalDim / n;
  std::vector<PlacementOutcome> outcomes(inputs.size());
  bool recordMembers = ctx.cache.termWidth() == 0;
  std::vector<GreedyRun> runs;
  std::vector<unsigned> inputOfRun;
  // Besides the thresholds, one run has no dim limit: the reference gives
  // up when every threshold fails, and where pooled columns cost less than
  // the balance of compute (many narrow tables beside a few hot ones), the
  // limit keeps narrow tables off the devices that should take them all.
  std::vector<double> limits;
  for (double threshold : thresholds)
    limits.push_back(threshold * averageDim);
  limits.push_back(std::numeric_limits<double>::infinity());
  // On several nodes, three more runs keep a table's pieces in the node of
  // its first where there is room, at the lowest and the highest threshold
  // and without a limit: which is cheaper, together or spread, depends on
  // how a table's lookups weigh against the balance of the devices.
  std::vector<double> affinityLimits = {limits.front(), limits.end()[-2],
                                        limits.back()};
  affinityLimits.erase(
      std::unique(affinityLimits.begin(), affinityLimits.end()),
      affinityLimits.end());
  bool nodeAffinity = ctx.topology.numNodes() > 1 &&
                      ctx.topology.nodeSize() <= kMaxAffinityNodeSize;
  auto addRuns = [&](const PlacementInput &input, unsigned i,
                     ArrayRef<double> runLimits) {
    for (double limit : runLimits) {
      runs.emplace_back(input, ctx.capacities, limit, recordMembers);
      inputOfRun.push_back(i);
    }
    // Without a table in pieces, keeping pieces together changes nothing.
    bool hasPieces =
        llvm::adjacent_find(input.slices,
                            [](const ColumnSlice &a, const ColumnSlice &b) {
                              return a.table == b.table;
                            }) != input.slices.end();
    if (!nodeAffinity || !hasPieces)
      return;
    for (double limit : affinityLimits) {
      runs.emplace_back(input, ctx.capacities, limit, recordMembers,
                        ctx.topology.nodeSize());
      inputOfRun.push_back(i);
    }
  };
  for (auto [i, input] : enumerate(inputs)) {
    if (probeLimits.empty()) {
      addRuns(*input, i, limits);
      continue;
    }
    addRuns(*input, i, probeLimits.slice(i, 1));
  }
  if (Error err = runAndKeepBest(runs, inputOfRun, outcomes, ctx))
    return std::move(err);
  if (!probeLimits.empty())
    return std::move(outcomes);

  // Where no run placed every slice, the greedy runs again with the slices
  // that take more than a share of the smallest device's memory placed
  // first, largest first: in the order of cost, slices that are cheap but
  // large come late and find every device partly filled. The shares go
  // from a half (a slice that needs a device nearly to itself) down to
  // none (every slice by its bytes); each distinct order is run once. A
  // state with a slice larger than every device (a table the search has
  // yet to split) fits in no order. A dim limit only makes packing
  // harder: the packing orders run at the highest threshold and without a
  // limit.
  uint64_t smallest = *llvm::min_element(ctx.capacities);
  uint64_t largest = *llvm::max_element(ctx.capacities);
  std::vector<double> packingLimits(
      limits.end() - std::min<size_t>(2, limits.size()), limits.end());
  std::vector<unsigned> unplaced;
  for (auto [i, outcome] : enumerate(outcomes))
    if (!outcome.feasible &&
        llvm::all_of(inputs[i]->bytes,
                     [&](uint64_t bytes) { return bytes <= largest; }))
      unplaced.push_back(i);
  if (unplaced.empty())
    return std::move(outcomes);
  runs.clear();
  inputOfRun.clear();
  std::vector<std::unique_ptr<PlacementInput>> reordered;
  for (unsigned i : unplaced) {
    std::vector<std::vector<uint32_t>> tried = {inputs[i]->order};
    for (unsigned share : kLargeFirstShares) {
      auto copy = std::make_unique<PlacementInput>(*inputs[i]);
      orderLargeFirst(*copy, share ? smallest / share : 0);
      if (llvm::is_contained(tried, copy->order))
        continue;
      tried.push_back(copy->order);
      addRuns(*copy, i, packingLimits);
      reordered.push_back(std::move(copy));
    }
  }
  std::vector<PlacementOutcome> packed(inputs.size());
  if (Error err = runAndKeepBest(runs, inputOfRun, packed, ctx))
    return std::move(err);
  for (unsigned i : unplaced)
    if (packed[i].feasible)
      outcomes[i] = std::move(packed[i]);
  return std::move(outcomes);
}

} // namespace detail
} // namespace neuroshard
