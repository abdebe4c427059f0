//===- ShardingPlanTest.cpp - Problem and plan validation, plan cost ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "TestProblems.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/PlanEvaluation.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

class ValidatePlanTest : public ::testing::Test {
protected:
  // a: 1 GB, dim 64 (0.5 GB per half); b: dim 8, pinned to device 1; c: may not
  // be split.
  std::vector<TableSpec> tables = [] {
    std::vector<TableSpec> t = {makeTable("a", kBytesPerGB / 256, 64),
                                makeTable("b", 100, 8), makeTable("c", 10, 16)};
    t[1].pinnedDevice = 1;
    t[2].noSplit = true;
    return t;
  }();
  Topology topology = Topology::uniform(2, 0.75);
  ShardingPlan valid() const {
    return {{{0, 0, 32, 0}, {0, 32, 64, 1}, {1, 0, 8, 1}, {2, 0, 16, 0}}};
  }
};

TEST_F(ValidatePlanTest, AcceptsValidPlan) {
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, valid())), "");
}

TEST_F(ValidatePlanTest, RejectsMissingColumns) {
  ShardingPlan plan = valid();
  plan.shards.erase(plan.shards.begin() + 1);
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "table 'a': columns [32, 64) are on no device");
  plan.shards.erase(plan.shards.begin());
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "table 'a': columns [0, 64) are on no device");
}

TEST_F(ValidatePlanTest, RejectsOverlaps) {
  ShardingPlan plan = valid();
  plan.shards[1].colBegin = 16;
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "table 'a': columns [16, 32) are on more than one device");
}

TEST_F(ValidatePlanTest, RejectsBadRanges) {
  ShardingPlan plan = valid();
  plan.shards[1].colEnd = 72;
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "table 'a': shard [32, 72) is not a non-empty range of its 64 "
            "columns");
  plan = valid();
  plan.shards[0].colEnd = 30;
  plan.shards[1].colBegin = 30;
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "table 'a': shard [0, 30) is not aligned to 4 columns");
  plan = valid();
  plan.shards[0].device = 2;
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "table 'a': shard [0, 32) is on device 2 but there are 2 "
            "devices");
  plan = valid();
  plan.shards[0].table = 3;
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "shard 0 names table 3 but there are 3 tables");
}

TEST_F(ValidatePlanTest, RejectsBrokenConstraints) {
  ShardingPlan plan = valid();
  plan.shards[2].device = 0;
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "table 'b' is pinned to device 1 but shard [0, 8) is on device "
            "0");
  plan = valid();
  plan.shards[3].colEnd = 8;
  plan.shards.push_back({2, 8, 16, 0});
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "table 'c' may not be split but has 2 shards");
}

TEST_F(ValidatePlanTest, RejectsOverfullDevice) {
  ShardingPlan plan = valid();
  plan.shards[1].device = 0;
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)),
            "device 0 holds 1.00 GB but has 0.750 GB");
  topology.memoryGB = {0.4, 0.75};
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, valid())),
            "device 0 holds 0.500 GB but has 0.400 GB");
}

TEST(ValidateProblemTest, RejectsMalformedTables) {
  Topology topology = Topology::uniform(2, 16);
  std::vector<TableSpec> tables = {makeTable("a", 10, 8)};
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)), "");

  tables[0].dim = 6;
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)),
            "tables[0] ('a'): 'dim' must be a positive multiple of 4, got 6");
  tables = {makeTable("a", 10, 8), makeTable("a", 10, 8)};
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)),
            "tables[1] ('a'): the name is already used by tables[0]");
  tables = {makeTable("a", 0, 8)};
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)),
            "tables[0] ('a'): 'rows' must be positive, got 0");
  tables = {makeTable("a", 10, 8)};
  tables[0].pinnedDevice = 2;
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)),
            "tables[0] ('a'): 'pinned_device' is 2 but there are only 2 "
            "devices");
  tables = {makeTable("a", 10, 8)};
  tables[0].accessHist = {0.9, 0.5};
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)),
            "tables[0] ('a'): 'access_hist' must sum to 1 (or be all "
            "zero for a table never hit), got 1.4");
  // All zero is a table never hit: no lookups.
  tables[0].accessHist = {};
  tables[0].poolingFactor = 0.0;
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)), "");
  tables = {makeTable("a", int64_t(1) << 40, 128)};
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)),
            "tables[0] ('a'): needs 524288.0 GB, more than the 65536 GB a "
            "table may have");
  EXPECT_EQ(errorMessage(validateProblem({}, topology)),
            "there are no tables to place");
}

TEST(ValidateProblemTest, RejectsMalformedTopology) {
  std::vector<TableSpec> tables = {makeTable("a", 10, 8)};
  EXPECT_EQ(errorMessage(validateProblem(tables, Topology())),
            "the device count must be between 1 and 65536, got 0");
  Topology topology = Topology::uniform(2, 16);
  topology.memoryGB[1] = 0;
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)),
            "device 1: memory capacity must be a positive number of GB up "
            "to 1048576, got 0");
  topology = Topology::uniform(2, 16);
  topology.batchSize = 0;
  EXPECT_EQ(errorMessage(validateProblem(tables, topology)),
            "batch size must be positive, got 0");
}

TEST(EvaluatePlanTest, MatchesAnalyticalFormulas) {
  // Two devices; a slow table alone on device 0, two narrow ones on 1.
  std::vector<TableSpec> tables = {makeTable("big", 1000, 128, 10),
                                   makeTable("x", 1000, 32, 2),
                                   makeTable("y", 1000, 64, 1)};
  Topology topology = Topology::uniform(2, 1);
  topology.batchSize = 1000;
  topology.hbmBandwidthGBps = 1;
  topology.intraNodeBandwidthGBps = 2;
  ShardingPlan plan = {{{0, 0, 128, 0}, {1, 0, 32, 1}, {2, 0, 64, 1}}};
  AnalyticalCostModel model;
  Expected<PlanCost> cost = evaluatePlan(tables, topology, plan, model);
  ASSERT_EQ(errorMessage(cost), "");

  // Forward bytes: B*P*4 (indices) + B*P*w*4 (rows) + B*w*4 (outputs);
  // compute = 3 x forward x penalty; ms = bytes / 2^30 * 1e3 at 1 GB/s.
  auto ms = [](double bytes, double gbps) {
    return bytes / kBytesPerGB * 1e3 / gbps;
  };
  double big = 3 * ms(1000 * 10 * 4 + 1000 * 10 * 128 * 4 + 1000 * 128 * 4, 1);
  double x = 3 * 1.75 * ms(1000 * 2 * 4 + 1000 * 2 * 32 * 4 + 1000 * 32 * 4, 1);
  double y = 3 * 1.15 * ms(1000 * 1 * 4 + 1000 * 1 * 64 * 4 + 1000 * 64 * 4, 1);
  const DeviceCost &d0 = cost->devices[0], &d1 = cost->devices[1];
  EXPECT_DOUBLE_EQ(d0.computeMs, big);
  EXPECT_DOUBLE_EQ(d1.computeMs, x + y);
  // All-to-all: device 0 sends half of its 128 columns and receives half of
  // device 1's 96; device 1 the other way round. Both take the larger.
  double bw0 = ms(std::max(1000 * 128 * 4 / 2.0, 1000 / 2.0 * 4 * 96), 2);
  double bw1 = ms(std::max(1000 * 96 * 4 / 2.0, 1000 / 2.0 * 4 * 128), 2);
  EXPECT_DOUBLE_EQ(d0.bwCommMs, bw0);
  EXPECT_DOUBLE_EQ(d1.bwCommMs, bw1);
  // The forward adds the index distribution: device 0 receives device 1's
  // half of big's 10 lookups per bag and sends it half of x's and y's 3;
  // device 1 the other way round. And the earlier device waits for the
  // later one.
  double indices0 = ms(std::max(1000 / 2.0 * 10, 1000 / 2.0 * 3) * 4, 2);
  double indices1 = indices0;
  double arrive0 = big + bw0, arrive1 = x + y + bw1;
  double latest = std::max(arrive0, arrive1);
  EXPECT_DOUBLE_EQ(d0.fwCommMs, indices0 + bw0 + latest - arrive0);
  EXPECT_DOUBLE_EQ(d1.fwCommMs, indices1 + bw1 + latest - arrive1);
  EXPECT_DOUBLE_EQ(cost->maxMs, std::max(d0.totalMs(), d1.totalMs()));
}

// A table two features look up costs its lookups for both and sends both
// features' pooled columns: like two tables of its width, but stored once.
TEST(EvaluatePlanTest, SharedTablesCountEveryFeature) {
  TableSpec shared = makeTable("shared", 1000, 64, 10);
  FeatureStats second = shared.feature(0);
  second.poolingFactor = 2;
  shared.moreFeatures.push_back(second);
  std::vector<TableSpec> one = {shared};
  std::vector<TableSpec> two = {makeTable("a", 1000, 64, 10),
                                makeTable("b", 1000, 64, 2)};
  Topology topology = Topology::uniform(2, 1);
  topology.batchSize = 1000;
  AnalyticalCostModel model;
  Expected<PlanCost> sharedCost =
      evaluatePlan(one, topology, {{{0, 0, 32, 0}, {0, 32, 64, 1}}}, model);
  Expected<PlanCost> separateCost = evaluatePlan(
      two, topology,
      {{{0, 0, 32, 0}, {1, 0, 32, 0}, {0, 32, 64, 1}, {1, 32, 64, 1}}}, model);
  ASSERT_EQ(errorMessage(sharedCost), "");
  ASSERT_EQ(errorMessage(separateCost), "");
  // The analytical model prices the shared table's slices like the two
  // separate tables' slices; only the weights are stored once.
  EXPECT_DOUBLE_EQ(sharedCost->devices[0].bwCommMs,
                   separateCost->devices[0].bwCommMs);
  EXPECT_NEAR(sharedCost->devices[0].computeMs,
              separateCost->devices[0].computeMs,
              1e-9 * separateCost->devices[0].computeMs);
  EXPECT_EQ(deviceMemoryBytes(one, topology, {{{0, 0, 32, 0}}})[0],
            1000u * 32 * 4);
  EXPECT_EQ(computeTraffic(one, topology, {{{0, 0, 32, 0}}})[0].dimSum, 64.0);
}

TEST(EvaluatePlanTest, RejectsInvalidPlans) {
  std::vector<TableSpec> tables = {makeTable("a", 10, 8)};
  AnalyticalCostModel model;
  Expected<PlanCost> cost =
      evaluatePlan(tables, Topology::uniform(1, 1), ShardingPlan(), model);
  EXPECT_EQ(errorMessage(cost), "table 'a': columns [0, 8) are on no device");
}

TEST(EvaluatePlanTest, IdleDevicesCostNothingToCompute) {
  std::vector<TableSpec> tables = {makeTable("a", 10, 8, 3)};
  SliceCostModel model(0.5);
  Expected<PlanCost> cost =
      evaluatePlan(tables, Topology::uniform(3, 1), {{{0, 0, 8, 1}}}, model);
  ASSERT_EQ(errorMessage(cost), "");
  EXPECT_EQ(cost->devices[0].computeMs, 0.0);
  EXPECT_EQ(cost->devices[1].computeMs, 8 * 3 + 0.5);
  EXPECT_EQ(cost->maxMs, 24.5);
  EXPECT_EQ(model.setsPriced, 1u);
}

} // namespace
