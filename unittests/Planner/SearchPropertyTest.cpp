//===- SearchPropertyTest.cpp - Properties over many random tasks ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Hundreds of random tasks (1..24 tables, 1..6 devices, mixed capacities,
// some pinned and unsplittable tables) planned with every algorithm:
//  - every returned plan is valid and its reported cost is what
//    evaluatePlan computes;
//  - NeuroShard succeeds wherever the grid search does and is never worse
//    than the grid plan it starts from;
//  - the same inputs and seed give the same plan.
//
//===----------------------------------------------------------------------===//

#include "TestProblems.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/Search.h"

#include "gtest/gtest.h"

#include <cmath>
#include <map>
#include <random>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

struct RandomTask {
  std::vector<TableSpec> tables;
  Topology topology;
};

RandomTask randomTask(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto unit = [&] { return (rng() >> 11) * 0x1.0p-53; };
  RandomTask task;
  unsigned numTables = 1 + rng() % 24;
  unsigned numDevices = 1 + rng() % 6;
  double totalBytes = 0, largestBytes = 0;
  for (unsigned t = 0; t < numTables; ++t) {
    TableSpec table =
        makeTable("t" + std::to_string(t),
                  static_cast<int64_t>(std::exp(unit() * std::log(1e6))) + 1,
                  int64_t(4) << (rng() % 6), 1 + 40 * unit());
    table.noSplit = rng() % 10 == 0;
    if (rng() % 10 == 0)
      table.pinnedDevice = rng() % numDevices;
    totalBytes += table.bytes();
    largestBytes = std::max(largestBytes, double(table.bytes()));
    task.tables.push_back(std::move(table));
  }
  // Between a little and plenty of headroom, with capacities that differ;
  // in most tasks every table fits on every device whole.
  double perDevice = totalBytes / numDevices * (1.05 + unit());
  if (rng() % 5 != 0)
    perDevice = std::max(perDevice, largestBytes * 1.5);
  perDevice /= kBytesPerGB;
  for (unsigned d = 0; d < numDevices; ++d)
    task.topology.memoryGB.push_back(perDevice * (0.7 + 0.6 * unit()));
  return task;
}

TEST(SearchPropertyTest, PlansAreValidDeterministicAndBeamBeatsGrid) {
  AnalyticalCostModel model;
  unsigned planned = 0, beamImproved = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    RandomTask task = randomTask(seed);
    SCOPED_TRACE("task seed " + std::to_string(seed));
    std::map<Algorithm, double> costs;
    for (Algorithm algorithm : allAlgorithms()) {
      SCOPED_TRACE(algorithmName(algorithm).str());
      SearchOptions options;
      options.algorithm = algorithm;
      options.seed = seed;
      Expected<PlanResult> result =
          planSharding(task.tables, task.topology, options, model);
      if (!result) {
        std::string message = errorMessage(result);
        EXPECT_NE(message, "");
        continue;
      }
      ++planned;
      ASSERT_EQ(
          errorMessage(validatePlan(task.tables, task.topology, result->plan)),
          "");
      Expected<PlanCost> cost =
          evaluatePlan(task.tables, task.topology, result->plan, model);
      ASSERT_EQ(errorMessage(cost), "");
      EXPECT_NEAR(cost->maxMs, result->cost.maxMs, 1e-9 * cost->maxMs);
      costs[algorithm] = result->cost.maxMs;

      Expected<PlanResult> again =
          planSharding(task.tables, task.topology, options, model);
      ASSERT_EQ(errorMessage(again), "");
      EXPECT_EQ(again->plan.shards, result->plan.shards);
    }
    if (costs.count(Algorithm::TableGreedyGrid)) {
      ASSERT_TRUE(costs.count(Algorithm::NeuroShard));
      double grid = costs[Algorithm::TableGreedyGrid];
      EXPECT_LE(costs[Algorithm::NeuroShard], grid);
      beamImproved += costs[Algorithm::NeuroShard] < grid;
    }
  }
  // Guard against a generator whose tasks all fail or never need splits.
  EXPECT_GT(planned, 1500u);
  EXPECT_GT(beamImproved, 50u);
}

} // namespace
