//===- LowerBoundTest.cpp - The bound on any plan's cost ------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The bound is tight where the best plan is plain, skips shares no device
// can hold, and counts total work only for a model whose set costs are
// sums. OptimalityTest checks it against exhaustively solved problems.
//
//===----------------------------------------------------------------------===//

#include "PlannerTestSupport.h"
#include "TestProblems.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/LowerBound.h"
#include "neuroshard/Planner/Search.h"

#include "gtest/gtest.h"

#include <algorithm>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

double priceAlone(CostModel &model, const ColumnSlice &slice) {
  double cost = 0.0;
  ArrayRef<ColumnSlice> set(slice);
  EXPECT_EQ(
      errorMessage(model.predictCompute(ArrayRef(set), MutableArrayRef(cost))),
      "");
  return cost;
}

// Four equal tables kept whole on four devices: one per device is the best
// plan, and the bound is its compute exactly (the work over four devices
// and the share of one table agree).
TEST(LowerBoundTest, IsTightForEqualWholeTables) {
  std::vector<TableSpec> tables;
  for (int i = 0; i < 4; ++i) {
    tables.push_back(makeTable("t" + std::to_string(i), 100000, 64, 8.0));
    tables.back().noSplit = true;
  }
  Topology topology = Topology::uniform(4, 80.0);
  AnalyticalCostModel model;
  ASSERT_EQ(errorMessage(model.prepare(tables, topology)), "");
  double one = priceAlone(model, ColumnSlice{0, 0, 64});
  Expected<PlanLowerBound> bound = computeLowerBound(tables, topology, model);
  ASSERT_EQ(errorMessage(bound), "");
  EXPECT_NEAR(bound->ms, one, 1e-12 * one);
  EXPECT_NEAR(bound->workMs, one, 1e-12 * one);
  EXPECT_NEAR(bound->pieceMs, one, 1e-12 * one);

  PlanResult searched = plan(tables, topology, SearchOptions(), model);
  double slowestCompute = 0.0;
  for (const DeviceCost &device : searched.cost.devices)
    slowestCompute = std::max(slowestCompute, device.computeMs);
  EXPECT_NEAR(slowestCompute, bound->ms, 1e-9 * one);
}

// A replica of a table larger than any device is held by no plan: the
// table's cheapest share is then a part of it that fits, not the replica
// (which is its cheapest share on devices that can hold it).
TEST(LowerBoundTest, SkipsSharesNoDeviceHolds) {
  std::vector<TableSpec> tables = {makeTable("big", 200000000, 128, 20.0)};
  AnalyticalCostModel model;
  ColumnSlice replica{0, 0, 128};
  replica.replica = true;
  Topology roomy = Topology::uniform(8, 2000.0);
  ASSERT_EQ(errorMessage(model.prepare(tables, roomy)), "");
  double replicaMs = priceAlone(model, replica);
  Expected<PlanLowerBound> wide = computeLowerBound(tables, roomy, model);
  ASSERT_EQ(errorMessage(wide), "");
  EXPECT_DOUBLE_EQ(wide->pieceMs, replicaMs);

  Topology small = Topology::uniform(8, 80.0);
  ASSERT_EQ(errorMessage(model.prepare(tables, small)), "");
  Expected<PlanLowerBound> bound = computeLowerBound(tables, small, model);
  ASSERT_EQ(errorMessage(bound), "");
  EXPECT_GT(bound->pieceMs, 1.2 * replicaMs);
  PlanResult searched = plan(tables, small, SearchOptions(), model);
  EXPECT_LE(bound->ms, searched.cost.maxMs);
}

// A model whose set costs are not sums (the test model adds a margin per
// set) gets the share alone: no total work is counted.
TEST(LowerBoundTest, CountsWorkOnlyForAdditiveModels) {
  std::vector<TableSpec> tables = {makeTable("a", 1000, 64, 4.0),
                                   makeTable("b", 1000, 32, 2.0)};
  Topology topology = Topology::uniform(2, 1.0);
  SliceCostModel model;
  ASSERT_FALSE(model.additiveCompute());
  ASSERT_EQ(errorMessage(model.prepare(tables, topology)), "");
  Expected<PlanLowerBound> bound = computeLowerBound(tables, topology, model);
  ASSERT_EQ(errorMessage(bound), "");
  EXPECT_EQ(bound->workMs, 0.0);
  EXPECT_EQ(bound->ms, bound->pieceMs);
  EXPECT_EQ(bound->hardestTable, 0u);
  // Table a (64 wide, pooling 4) split in two halves costs 32 x 4 per
  // piece; b whole costs 32 x 2 (the test model: width x pooling).
  EXPECT_DOUBLE_EQ(bound->pieceMs, 128.0);
}

// Hundreds of tables on 256 devices hold more forms than one model call
// prices (each table's rows cut in up to 256 blocks, its copies on every
// device): the forms are priced a few tables at a time, and the bound is
// the same whichever batch the hardest table falls in.
TEST(LowerBoundTest, IsTheSameWhereverTheHardestTableIsPriced) {
  std::vector<TableSpec> tables;
  for (int i = 0; i < 300; ++i)
    tables.push_back(makeTable("t" + std::to_string(i), 100000, 64, 4.0));
  tables.push_back(makeTable("hot", 4000000, 128, 40.0));
  Topology topology = Topology::uniform(256, 80.0);
  AnalyticalCostModel model;
  ASSERT_EQ(errorMessage(model.prepare(tables, topology)), "");
  Expected<PlanLowerBound> last = computeLowerBound(tables, topology, model);
  ASSERT_EQ(errorMessage(last), "");
  EXPECT_EQ(last->hardestTable, 300u);

  std::rotate(tables.begin(), tables.end() - 1, tables.end());
  ASSERT_EQ(errorMessage(model.prepare(tables, topology)), "");
  Expected<PlanLowerBound> first = computeLowerBound(tables, topology, model);
  ASSERT_EQ(errorMessage(first), "");
  EXPECT_EQ(first->hardestTable, 0u);
  EXPECT_DOUBLE_EQ(first->pieceMs, last->pieceMs);
  EXPECT_NEAR(first->workMs, last->workMs, 1e-12 * last->workMs);
  EXPECT_NEAR(first->ms, last->ms, 1e-12 * last->ms);
  // The work part bounds: 301 tables' least work over 256 devices.
  EXPECT_GT(last->workMs, last->pieceMs);
}

} // namespace
