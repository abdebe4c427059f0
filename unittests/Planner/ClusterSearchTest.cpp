//===- ClusterSearchTest.cpp - The search at cluster scale ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// K identical hot tables beside small ones on D devices, priced by the
// analytical model. Splitting one of K tables tied at the maximum cannot
// lower the maximum, which stalled a beam ranked by the maximum alone. The
// search must reach the plan that splits every hot table into equal pieces
// dealt out round robin (the obvious optimum, built here independently of
// the search), and its cost must not rise when devices are added.
//
//===----------------------------------------------------------------------===//

#include "TestProblems.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/Planner/Search.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

constexpr int64_t kHotDim = 256;

/// K hot tables (4M rows, dim 256, 50 lookups per bag) and 16 small ones.
std::vector<TableSpec> hotTables(unsigned k) {
  std::vector<TableSpec> tables;
  for (unsigned i = 0; i < k; ++i)
    tables.push_back(
        makeTable("hot" + std::to_string(i), 4000000, kHotDim, 50));
  for (unsigned i = 0; i < 16; ++i)
    tables.push_back(makeTable("small" + std::to_string(i), 100000, 64, 5));
  return tables;
}

/// The cheapest plan that cuts every hot table into P equal pieces (P a
/// power of two), deals the K * P pieces out round robin, and puts every
/// small table on the device that then costs least.
double obviousOptimum(ArrayRef<TableSpec> tables, unsigned k,
                      const Topology &topology, CostModel &model) {
  unsigned n = topology.numDevices();
  double best = std::numeric_limits<double>::infinity();
  for (int64_t pieces = 1; pieces <= n && kHotDim / pieces >= 4; pieces *= 2) {
    ShardingPlan plan;
    int64_t width = kHotDim / pieces;
    unsigned next = 0;
    for (unsigned t = 0; t < k; ++t)
      for (int64_t p = 0; p < pieces; ++p)
        plan.shards.push_back({t, p * width, (p + 1) * width, next++ % n});
    for (unsigned t = k; t < tables.size(); ++t) {
      // Fill the devices the hot pieces left lightest first.
      std::vector<double> load(n, 0.0);
      for (const Shard &shard : plan.shards)
        load[shard.device] += shard.width();
      unsigned device =
          std::min_element(load.begin(), load.end()) - load.begin();
      plan.shards.push_back({t, 0, tables[t].dim, device});
    }
    Expected<PlanCost> cost = evaluatePlan(tables, topology, plan, model);
    EXPECT_EQ(errorMessage(cost), "");
    if (cost)
      best = std::min(best, cost->maxMs);
  }
  return best;
}

double neuroShardCost(ArrayRef<TableSpec> tables, const Topology &topology,
                      CostModel &model) {
  Expected<PlanResult> result =
      planSharding(tables, topology, SearchOptions(), model);
  EXPECT_EQ(errorMessage(result), "");
  return result ? result->cost.maxMs : 0.0;
}

TEST(ClusterSearchTest, TiedHotTablesReachTheEvenSplit) {
  for (unsigned k : {2u, 3u, 5u, 8u, 16u}) {
    std::vector<TableSpec> tables = hotTables(k);
    double previous = std::numeric_limits<double>::infinity();
    for (unsigned devices : {2u, 4u, 8u, 16u, 32u, 64u}) {
      Topology topology = Topology::uniform(devices, 80);
      AnalyticalCostModel model;
      double cost = neuroShardCost(tables, topology, model);
      double optimum = obviousOptimum(tables, k, topology, model);
      EXPECT_LE(cost, optimum * 1.02)
          << k << " hot tables on " << devices << " devices";
      // More devices for the same tables never cost more.
      EXPECT_LE(cost, previous * 1.01)
          << k << " hot tables on " << devices << " devices";
      previous = cost;
    }
  }
}

// The case the search used to stall on: five hot tables on 16 devices
// cost more than on 8, 1.9x the plan that halves all five.
TEST(ClusterSearchTest, FiveHotTablesOnSixteenDevices) {
  std::vector<TableSpec> tables = hotTables(5);
  AnalyticalCostModel model;
  Topology eight = Topology::uniform(8, 80),
           sixteen = Topology::uniform(16, 80);
  double onEight = neuroShardCost(tables, eight, model);
  double onSixteen = neuroShardCost(tables, sixteen, model);
  EXPECT_LT(onSixteen, onEight * 0.75);
  EXPECT_LE(onSixteen, obviousOptimum(tables, 5, sixteen, model) * 1.02);
}

} // namespace
