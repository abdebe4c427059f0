//===- OptimalityTest.cpp - The search and the bound against the optimum --===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// On small problems every plan of whole tables and column parts can be
// priced: 2 to 6 tables on 4 devices, each table's columns dealt to the
// devices in quarters (or halves, or whole, for narrow tables) in every
// way there is, each device's part one contiguous piece as the planner
// leaves it. An exhaustive solver prices them all with the model, exactly
// as the planner prices a plan, and finds the optimum. On 50 generated
// problems for each model (the analytical one and the shipped default),
// the lower bound is at or below the optimum and the search is within 1%
// of it.
//
//===----------------------------------------------------------------------===//

#include "PlannerTestSupport.h"
#include "TestProblems.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/CostModel/InitCostModels.h"
#include "neuroshard/Planner/LowerBound.h"
#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Sharding/Traffic.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <map>
#include <random>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

constexpr unsigned kDevices = 4;
constexpr unsigned kProblems = 50;
/// The most plans one problem may have, so that each solves in seconds.
constexpr uint64_t kMostPlans = 150000;

/// A problem and the units its tables' columns are dealt in.
struct SmallProblem {
  std::vector<TableSpec> tables;
  /// Per table: how many parts of equal width its columns are dealt in
  /// (4, 2, or 1 for a table kept whole).
  std::vector<unsigned> units;
};

/// Every way to deal `units` parts to kDevices devices (how many each
/// gets), in a fixed order.
std::vector<std::array<unsigned, kDevices>> deals(unsigned units) {
  std::vector<std::array<unsigned, kDevices>> out;
  std::array<unsigned, kDevices> deal{};
  auto recurse = [&](auto &self, unsigned device, unsigned left) -> void {
    if (device + 1 == kDevices) {
      deal[device] = left;
      out.push_back(deal);
      return;
    }
    for (unsigned take = 0; take <= left; ++take) {
      deal[device] = take;
      self(self, device + 1, left - take);
    }
  };
  recurse(recurse, 0, units);
  return out;
}

/// A problem of 2 to 6 tables drawn from `rng`, whose plans number at most
/// kMostPlans: rows log-uniform in [1e3, 1e7], pooling factors in [1, 60],
/// dims 4 (kept whole), 8 (halves) or 16 to 128 (quarters); whole tables
/// and column pieces only.
SmallProblem drawProblem(std::mt19937_64 &rng) {
  std::uniform_int_distribution<unsigned> tableCount(2, 6);
  std::uniform_real_distribution<double> logRows(3.0, 7.0), pooling(1.0, 60.0);
  const int64_t dims[] = {4, 8, 16, 32, 64, 128};
  std::uniform_int_distribution<unsigned> dimIndex(0, std::size(dims) - 1);
  SmallProblem problem;
  unsigned count = tableCount(rng);
  uint64_t plans = 1;
  while (problem.tables.size() < count) {
    int64_t dim = dims[dimIndex(rng)];
    unsigned units = dim >= 16 ? 4 : dim / 4;
    uint64_t ways = deals(units).size();
    if (plans * ways > kMostPlans) {
      if (problem.tables.size() >= 2)
        break;
      continue;
    }
    plans *= ways;
    std::string name = "t" + std::to_string(problem.tables.size());
    TableSpec table =
        makeTable(name, static_cast<int64_t>(std::pow(10.0, logRows(rng))), dim,
                  std::round(pooling(rng) * 4.0) / 4.0);
    table.shardingKinds = kTableColumnKinds;
    problem.tables.push_back(std::move(table));
    problem.units.push_back(units);
  }
  return problem;
}

struct Optimum {
  double costMs = std::numeric_limits<double>::infinity();
  ShardingPlan plan;
  uint64_t plans = 0;
};

/// Prices every plan of `problem` with `model` (prepared for it) as
/// evaluatePlan does: every distinct device set once, then the plans'
/// exchanges in batches.
Optimum solveExhaustively(const SmallProblem &problem, const Topology &topology,
                          CostModel &model) {
  ArrayRef<TableSpec> tables = problem.tables;
  std::vector<std::vector<std::array<unsigned, kDevices>>> ways;
  for (unsigned units : problem.units)
    ways.push_back(deals(units));

  // A device's set is named by the units it holds of each table.
  std::map<std::vector<unsigned>, size_t> setIndex;
  std::vector<std::vector<ColumnSlice>> sets;
  auto sliceOf = [&](unsigned t, unsigned begin, unsigned count) {
    int64_t unit = tables[t].dim / problem.units[t];
    return ColumnSlice{t, begin * unit, (begin + count) * unit};
  };

  std::vector<unsigned> choice(tables.size(), 0);
  std::vector<std::array<size_t, kDevices>> planSets;
  std::vector<std::vector<unsigned>> planChoices;
  while (true) {
    std::array<size_t, kDevices> ids{};
    for (unsigned d = 0; d < kDevices; ++d) {
      std::vector<unsigned> key;
      std::vector<ColumnSlice> set;
      for (unsigned t = 0; t < tables.size(); ++t) {
        const auto &deal = ways[t][choice[t]];
        unsigned begin = 0;
        for (unsigned e = 0; e < d; ++e)
          begin += deal[e];
        key.push_back(deal[d]);
        if (deal[d])
          set.push_back(sliceOf(t, begin, deal[d]));
      }
      auto [it, inserted] = setIndex.try_emplace(key, sets.size());
      if (inserted)
        sets.push_back(std::move(set));
      ids[d] = it->second;
    }
    planSets.push_back(ids);
    planChoices.push_back(choice);
    unsigned t = 0;
    while (t < tables.size() && ++choice[t] == ways[t].size())
      choice[t++] = 0;
    if (t == tables.size())
      break;
  }

  std::vector<double> setCost(sets.size(), 0.0);
  std::vector<ArrayRef<ColumnSlice>> nonEmpty;
  std::vector<size_t> nonEmptyIndex;
  for (auto [i, set] : enumerate(sets))
    if (!set.empty()) {
      nonEmpty.push_back(set);
      nonEmptyIndex.push_back(i);
    }
  std::vector<double> nonEmptyCost(nonEmpty.size());
  EXPECT_EQ(errorMessage(model.predictCompute(nonEmpty, nonEmptyCost)), "");
  for (auto [i, cost] : zip_equal(nonEmptyIndex, nonEmptyCost))
    setCost[i] = cost;

  Optimum best;
  best.plans = planSets.size();
  auto planOf = [&](const std::vector<unsigned> &chosen) {
    ShardingPlan plan;
    for (unsigned t = 0; t < tables.size(); ++t) {
      const auto &deal = ways[t][chosen[t]];
      unsigned begin = 0;
      for (unsigned d = 0; d < kDevices; ++d) {
        if (deal[d])
          plan.shards.push_back(Shard::of(sliceOf(t, begin, deal[d]), d));
        begin += deal[d];
      }
    }
    return plan;
  };
  constexpr size_t kBatch = 4096;
  for (size_t first = 0; first < planSets.size(); first += kBatch) {
    size_t last = std::min(planSets.size(), first + kBatch);
    std::vector<double> computeMs;
    std::vector<DeviceTraffic> traffic;
    for (size_t p = first; p < last; ++p) {
      for (size_t id : planSets[p])
        computeMs.push_back(setCost[id]);
      append_range(traffic,
                   computeTraffic(tables, topology, planOf(planChoices[p])));
    }
    Expected<std::vector<PlanCost>> costs =
        completePlanCosts(kDevices, computeMs, traffic, model);
    EXPECT_EQ(errorMessage(costs), "");
    if (!costs)
      return best;
    for (auto [offset, cost] : enumerate(*costs))
      if (cost.maxMs < best.costMs) {
        best.costMs = cost.maxMs;
        best.plan = planOf(planChoices[first + offset]);
      }
  }
  return best;
}

/// Solves kProblems problems with `model` and checks the bound and the
/// search against each optimum.
void checkAgainstOptimum(CostModel &model, uint64_t seed) {
  Topology topology = Topology::uniform(kDevices, 80.0);
  std::mt19937_64 rng(seed);
  unsigned exact = 0;
  double worstGap = 0.0, meanBoundRatio = 0.0;
  uint64_t plans = 0;
  for (unsigned i = 0; i < kProblems; ++i) {
    SmallProblem problem = drawProblem(rng);
    SCOPED_TRACE("problem " + std::to_string(i) + " of seed " +
                 std::to_string(seed));
    ASSERT_EQ(errorMessage(model.prepare(problem.tables, topology)), "");
    Optimum optimum = solveExhaustively(problem, topology, model);
    plans += optimum.plans;
    ASSERT_TRUE(std::isfinite(optimum.costMs));

    // The solver prices as the planner does.
    Expected<PlanCost> check =
        evaluatePlan(problem.tables, topology, optimum.plan, model);
    ASSERT_EQ(errorMessage(check), "");
    EXPECT_NEAR(check->maxMs, optimum.costMs, 1e-9 * optimum.costMs);

    Expected<PlanLowerBound> bound =
        computeLowerBound(problem.tables, topology, model);
    ASSERT_EQ(errorMessage(bound), "");
    EXPECT_LE(bound->ms, optimum.costMs * (1.0 + 1e-9))
        << "the bound " << bound->ms << " ms is above the optimum "
        << optimum.costMs << " ms (piece " << bound->pieceMs << ", work "
        << bound->workMs << ")";
    meanBoundRatio += bound->ms / optimum.costMs / kProblems;

    SearchOptions options;
    options.shardingKinds = kTableColumnKinds;
    PlanResult searched = plan(problem.tables, topology, options, model);
    double gap = searched.cost.maxMs / optimum.costMs - 1.0;
    EXPECT_LE(gap, 0.01) << "the search's plan costs " << searched.cost.maxMs
                         << " ms, the optimum " << optimum.costMs << " ms";
    worstGap = std::max(worstGap, gap);
    if (gap <= 1e-9)
      ++exact;
  }
  outs() << formatv("{0}: {1} problems ({2} plans priced): the search found "
                    "the optimum on {3}, worst gap {4}%; the bound is {5} of "
                    "the optimum on average\n",
                    model.name(), kProblems, plans, exact,
                    format("%.3f", 100.0 * worstGap),
                    format("%.3f", meanBoundRatio));
}

TEST(OptimalityTest, AnalyticalModel) {
  AnalyticalCostModel model;
  checkAgainstOptimum(model, 1);
}

TEST(OptimalityTest, DefaultModel) {
  registerAvailableCostModels();
  addDefaultModelSearchDir(NEUROSHARD_TEST_MODELS_DIR);
  if (!neuralCostModelsBuilt())
    GTEST_SKIP() << "this build has no neural cost model";
  Topology topology = Topology::uniform(kDevices, 80.0);
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel(kDefaultCostModel, topology);
  ASSERT_EQ(errorMessage(model), "");
  checkAgainstOptimum(**model, 2);
}

} // namespace
