//===- Baselines.cpp - Random and proxy-greedy table placement ------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The baselines of docs/design.md §4 place whole tables without consulting the
// cost model (it prices only the final plan). The proxy greedies are one greedy
// run whose device cost is the sum of a per-table proxy; random picks a
// uniformly random device with room. The uniform-split baseline cuts the
// tables costlier than a device's fair share into equal pieces and balances
// the sum of the pieces' costs alone, as a planner that splits hot tables
// evenly and then packs by cost would.
//
//===----------------------------------------------------------------------===//

#include "Placement.h"

#include <cmath>
#include <random>

using namespace llvm;

namespace neuroshard {
namespace detail {

/// The per-table proxy cost a greedy baseline balances.
static double proxyCost(Algorithm algorithm, const TableSpec &table,
                        const ColumnSlice &slice) {
  double width = static_cast<double>(slice.width());
  switch (algorithm) {
  case Algorithm::SizeGreedy:
    return static_cast<double>(table.sliceBytes(slice.width()));
  case Algorithm::DimGreedy:
    return width;
  case Algorithm::LookupGreedy:
    return width * table.totalPoolingFactor();
  case Algorithm::SizeLookupGreedy:
    return width * table.totalPoolingFactor() *
           std::log10(static_cast<double>(table.rows));
  default:
    return 0.0;
  }
}

/// Places the slices in placement order, each on a random device with room.
/// Uses `rng() % choices` rather than std::uniform_int_distribution, whose
/// algorithm differs between standard libraries, so plans are the same
/// everywhere.
static void placeRandomly(GreedyRun &run, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const PlacementInput &input = *run.input;
  SmallVector<unsigned> choices;
  for (uint32_t slice : input.order) {
    choices.clear();
    for (unsigned d = 0, e = run.loads.size(); d < e; ++d)
      if ((input.pinned[slice] < 0 || input.pinned[slice] == int(d)) &&
          run.hasMemoryFor(slice, d))
        choices.push_back(d);
    if (choices.empty()) {
      run.fail(slice);
      return;
    }
    run.place(slice, choices[rng() % choices.size()]);
    ++run.next;
  }
}

Expected<PlanResult> runBaseline(PlacementInput input,
                                 const SearchOptions &options,
                                 SearchContext &ctx) {
  if (options.algorithm == Algorithm::UniformSplitGreedy) {
    if (Error err = orderByModelCost({&input}, ctx.cache))
      return std::move(err);
    input = makePlacementInput(
        ctx.tables, ctx.topology,
        splitAboveFairShare(input, ctx.tables, ctx.topology.numDevices()));
    if (Error err = orderByModelCost({&input}, ctx.cache))
      return std::move(err);
  } else {
    for (const ColumnSlice &slice : input.slices)
      input.sortCost.push_back(
          proxyCost(options.algorithm, ctx.tables[slice.table], slice));
  }
  // Random's proxy is zero: it places largest first, and a non-empty
  // additiveCost makes priceRuns ask the model for the final device costs.
  input.additiveCost = input.sortCost;
  sortPlacementOrder(input);

  GreedyRun run(input, ctx.capacities, std::numeric_limits<double>::infinity());
  ctx.stats.greedyRuns += 1;
  ctx.stats.statesExplored = 1;
  if (options.algorithm == Algorithm::Random) {
    placeRandomly(run, options.seed);
  } else if (Error err = runGreedyLockstep(run, ctx)) {
    return std::move(err);
  }
  if (!run.succeeded())
    return placementError(ctx, input, outcomeOf(run, PlanCost()));
  Expected<std::vector<PlanCost>> costs = priceRuns({&run}, ctx);
  if (!costs)
    return costs.takeError();
  PlanResult result;
  result.plan = makePlan(input, outcomeOf(run, costs->front()));
  result.cost = std::move(costs->front());
  return std::move(result);
}

} // namespace detail
} // namespace neuroshard
