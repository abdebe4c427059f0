//===- CleanPlansTest.cpp - Pieces joined per device, obvious plans kept --===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// joinPiecesPerDevice leaves no device with two pieces of one table and
// keeps each device's width (or rows) of it; the search returns no such
// plan; and a plan a person writes at a glance (a hot table cut evenly over
// every device) is never beaten by the search's own.
//
//===----------------------------------------------------------------------===//

#include "Placement.h"
#include "PlannerTestSupport.h"
#include "TestProblems.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Planner/TaskIO.h"

#include "gtest/gtest.h"

#include <map>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace placement = neuroshard::detail;

namespace {

Shard columns(unsigned table, int64_t begin, int64_t end, unsigned device) {
  return Shard::of(ColumnSlice{table, begin, end}, device);
}

Shard rows(const TableSpec &spec, unsigned table, int64_t begin, int64_t end,
           unsigned device) {
  Shard shard = Shard::of(ColumnSlice{table, 0, spec.dim}, device);
  shard.setRows(begin, end, spec.rows);
  return shard;
}

/// Each (table, device)'s pieces and total width or rows.
std::map<std::pair<unsigned, unsigned>, std::pair<unsigned, int64_t>>
perDevice(ArrayRef<TableSpec> tables, const ShardingPlan &plan) {
  std::map<std::pair<unsigned, unsigned>, std::pair<unsigned, int64_t>> out;
  for (const Shard &shard : plan.shards) {
    if (shard.replica)
      continue;
    auto &entry = out[{shard.table, shard.device}];
    ++entry.first;
    entry.second +=
        shard.allRows() ? shard.width() : shard.numRows(tables[shard.table]);
  }
  return out;
}

unsigned mostPiecesOnADevice(ArrayRef<TableSpec> tables,
                             const ShardingPlan &plan) {
  unsigned most = 0;
  for (const auto &[key, entry] : perDevice(tables, plan))
    most = std::max(most, entry.first);
  return most;
}

TEST(JoinPiecesTest, JoinsColumnPiecesAndKeepsEachDevicesWidth) {
  std::vector<TableSpec> tables = {makeTable("t", 1000, 128)};
  Topology topology = twoDevices();
  ShardingPlan plan;
  plan.shards = {columns(0, 0, 32, 0), columns(0, 32, 64, 1),
                 columns(0, 64, 96, 0), columns(0, 96, 128, 0)};
  auto before = perDevice(tables, plan);
  ASSERT_TRUE(placement::joinPiecesPerDevice(tables, plan));
  EXPECT_EQ(plan.shards.size(), 2u);
  EXPECT_EQ(mostPiecesOnADevice(tables, plan), 1u);
  for (const auto &[key, entry] : perDevice(tables, plan))
    EXPECT_EQ(entry.second, before[key].second);
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)), "");
  // Device 0 held the first piece: it takes the first 96 columns.
  EXPECT_EQ(plan.shards[0].device, 0u);
  EXPECT_EQ(plan.shards[0].colBegin, 0);
  EXPECT_EQ(plan.shards[0].colEnd, 96);
}

TEST(JoinPiecesTest, RowBlocksOnOneDeviceBecomeTheWholeTable) {
  std::vector<TableSpec> tables = {makeTable("t", 2000, 64),
                                   makeTable("u", 900, 32)};
  Topology topology = twoDevices();
  ShardingPlan plan;
  plan.shards = {rows(tables[0], 0, 0, 1000, 1),
                 rows(tables[0], 0, 1000, 2000, 1), columns(1, 0, 32, 0)};
  ASSERT_TRUE(placement::joinPiecesPerDevice(tables, plan));
  ASSERT_EQ(plan.shards.size(), 2u);
  EXPECT_TRUE(plan.shards[0].allRows());
  EXPECT_EQ(plan.shards[0].device, 1u);
  EXPECT_EQ(plan.shards[0].width(), 64);
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)), "");
}

TEST(JoinPiecesTest, InterleavedRowBlocksGetContiguousRanges) {
  std::vector<TableSpec> tables = {makeTable("t", 3000, 16)};
  Topology topology = twoDevices();
  ShardingPlan plan;
  plan.shards = {rows(tables[0], 0, 0, 1000, 0),
                 rows(tables[0], 0, 1000, 2000, 1),
                 rows(tables[0], 0, 2000, 3000, 0)};
  ASSERT_TRUE(placement::joinPiecesPerDevice(tables, plan));
  auto after = perDevice(tables, plan);
  EXPECT_EQ((after[{0u, 0u}]), (std::pair<unsigned, int64_t>(1, 2000)));
  EXPECT_EQ((after[{0u, 1u}]), (std::pair<unsigned, int64_t>(1, 1000)));
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, plan)), "");
}

TEST(JoinPiecesTest, LeavesCleanPlansAndReplicasAlone) {
  std::vector<TableSpec> tables = {makeTable("t", 1000, 64),
                                   makeTable("r", 100, 16)};
  ShardingPlan plan;
  plan.shards = {columns(0, 0, 32, 0), columns(0, 32, 64, 1)};
  for (unsigned d = 0; d < 2; ++d) {
    Shard replica = columns(1, 0, 16, d);
    replica.replica = true;
    plan.shards.push_back(replica);
  }
  ShardingPlan copy = plan;
  EXPECT_FALSE(placement::joinPiecesPerDevice(tables, plan));
  EXPECT_EQ(plan.shards.size(), copy.shards.size());
}

/// A split that the model prices no better than the whole is undone: with
/// a price per piece, the wide table's halves cost more than the table
/// whole on the device that held the smaller load.
/// What unsplitWherePaysNothing needs: the test model, charging
/// `overheadMs` per piece, prepared for `tables`, its memo and the search
/// context.
struct UnsplitSetup {
  UnsplitSetup(ArrayRef<TableSpec> tables, const Topology &topology,
               double overheadMs)
      : model(overheadMs), cache(model, stats),
        ctx(tables, topology, model, cache, stats) {
    EXPECT_EQ(errorMessage(model.prepare(tables, topology)), "");
  }
  /// `plan`'s cost as the search prices it.
  PlanCost price(const ShardingPlan &plan) {
    Expected<std::vector<PlanCost>> priced =
        placement::pricePlans(ctx, ArrayRef(plan));
    EXPECT_EQ(errorMessage(priced.takeError()), "");
    return priced ? priced->front() : PlanCost();
  }

  SliceCostModel model;
  SearchStats stats;
  placement::ComputeCostCache cache;
  placement::SearchContext ctx;
};

TEST(UnsplitTest, PutsBackASplitThatBuysNothing) {
  std::vector<TableSpec> tables = {makeTable("wide", 1000, 64),
                                   makeTable("other", 1000, 40)};
  Topology topology = twoDevices();
  UnsplitSetup setup(tables, topology, /*overheadMs=*/8.0);
  ShardingPlan plan;
  plan.shards = {columns(0, 0, 32, 0), columns(0, 32, 64, 1),
                 columns(1, 0, 40, 0)};
  PlanCost cost = setup.price(plan);
  // 32 + 8 + 40 + 8 on device 0 against 64 + 8 with the table whole.
  EXPECT_DOUBLE_EQ(cost.maxMs, 88.0);
  ASSERT_EQ(
      errorMessage(placement::unsplitWherePaysNothing(setup.ctx, plan, cost)),
      "");
  EXPECT_DOUBLE_EQ(cost.maxMs, 72.0);
  ASSERT_EQ(plan.shards.size(), 2u);
  EXPECT_EQ(plan.shards[0].width(), 64);
  EXPECT_EQ(plan.shards[0].device, 1u);

  // Where the split pays, it stays.
  std::vector<TableSpec> one = {tables[0]};
  ShardingPlan paying;
  paying.shards = {columns(0, 0, 32, 0), columns(0, 32, 64, 1)};
  UnsplitSetup cheap(one, topology, /*overheadMs=*/0.0);
  PlanCost splitCost = cheap.price(paying);
  EXPECT_DOUBLE_EQ(splitCost.maxMs, 32.0);
  ASSERT_EQ(errorMessage(placement::unsplitWherePaysNothing(cheap.ctx, paying,
                                                            splitCost)),
            "");
  EXPECT_DOUBLE_EQ(splitCost.maxMs, 32.0);
  EXPECT_EQ(paying.shards.size(), 2u);
}

// Six tables split over devices 1 and 2, none of which pays (every piece
// costs an overhead), beside one table whole on device 0, the slowest: they
// come back whole in two rounds, not one a round. Alone, each goes to the
// first of its holders, where four of them fit under the slowest device;
// the last two then go to the other holder.
TEST(UnsplitTest, ManySplitsComeBackTogether) {
  std::vector<TableSpec> tables = {makeTable("anchor", 1000, 80)};
  for (int i = 1; i <= 6; ++i)
    tables.push_back(makeTable("t" + std::to_string(i), 1000, 8));
  Topology topology = Topology::uniform(3, 1.0);
  topology.batchSize = 1024;
  UnsplitSetup setup(tables, topology, /*overheadMs=*/8.0);
  ShardingPlan plan;
  plan.shards = {columns(0, 0, 80, 0)};
  for (unsigned t = 1; t <= 6; ++t) {
    plan.shards.push_back(columns(t, 0, 4, 1));
    plan.shards.push_back(columns(t, 4, 8, 2));
  }
  sortShards(plan.shards);
  PlanCost cost = setup.price(plan);
  // 80 + 8 on device 0; six halves of 4 + 8 on each of the others.
  EXPECT_DOUBLE_EQ(cost.maxMs, 88.0);
  EXPECT_DOUBLE_EQ(cost.devices[1].computeMs, 72.0);
  unsigned callsBefore = setup.model.computeCalls;
  ASSERT_EQ(
      errorMessage(placement::unsplitWherePaysNothing(setup.ctx, plan, cost)),
      "");
  EXPECT_DOUBLE_EQ(cost.maxMs, 88.0);
  ASSERT_EQ(plan.shards.size(), 7u);
  std::map<unsigned, int> wholeOn;
  for (const Shard &shard : plan.shards) {
    EXPECT_EQ(shard.width(), tables[shard.table].dim) << shard.table;
    ++wholeOn[shard.device];
  }
  // Four tables of 8 + 8 beside nothing else on device 1 (64 ms), two on
  // device 2; the anchor alone on device 0.
  EXPECT_EQ(wholeOn[0], 1);
  EXPECT_EQ(wholeOn[1], 4);
  EXPECT_EQ(wholeOn[2], 2);
  // Two rounds, each one model call for the six (then two) returns alone
  // and one for them together.
  EXPECT_LE(setup.model.computeCalls - callsBefore, 4u);
}

/// The analytical model's plan of `tables` on `devices` devices of 80 GB,
/// every sharding type allowed.
PlanResult planOn(ArrayRef<TableSpec> tables, unsigned devices) {
  Topology topology;
  topology.memoryGB.assign(devices, 80.0);
  AnalyticalCostModel model;
  SearchOptions options;
  options.shardingKinds = kAllShardingKinds;
  return plan(tables, topology, options, model);
}

/// The tables of a task JSON as neuroshard-plan reads them, histograms
/// derived for a batch of 65536.
std::vector<TableSpec> taskTables(StringRef json) {
  Expected<PlanningTask> task = parseTaskJSON(json);
  EXPECT_EQ(errorMessage(task), "");
  if (!task)
    return {};
  EXPECT_EQ(errorMessage(setHistogramBatch(*task, Topology().batchSize)), "");
  return task->tables;
}

/// The search, on the analytical model, never returns two pieces of one
/// table on one device. On the first task, on 8 devices, the beam's own
/// plan put both row blocks of `mid` on one device; joined, that plan
/// costs 0.7668 ms instead of 0.8676.
TEST(CleanPlansTest, NoDeviceHoldsTwoPiecesOfATable) {
  std::vector<std::vector<TableSpec>> tasks = {
      taskTables(R"({"tables": [
        {"name": "big", "rows": 50000000, "dim": 128, "pooling_factor": 30},
        {"name": "small", "rows": 1000, "dim": 16, "pooling_factor": 1},
        {"name": "mid", "rows": 2000000, "dim": 64, "pooling_factor": 10}]})"),
      {makeTable("a", 4'000'000, 128, 20.0),
       makeTable("b", 3'000'000, 64, 40.0), makeTable("c", 500, 8, 2.0),
       makeTable("d", 1'000'000, 32, 5.0)},
  };
  for (const std::vector<TableSpec> &tables : tasks)
    for (unsigned devices : {2u, 4u, 8u}) {
      PlanResult result = planOn(tables, devices);
      EXPECT_EQ(mostPiecesOnADevice(tables, result.plan), 1u)
          << tables.front().name << " on " << devices << " devices";
      if (tables.front().name == "big" && devices == 8) {
        EXPECT_NEAR(result.cost.maxMs, 0.7668, 5e-5);
      }
    }
}

/// One hot table that fits no device (200M x 128, 102 GB) beside a small
/// one on 4 and 8 devices of 80 GB: the hand plan, the big table in equal
/// column pieces one per device and the small one copied to every device,
/// is matched or beaten. On 4 devices the beam alone returned 1.0507 ms
/// where this plan costs 0.8101.
TEST(CleanPlansTest, MatchesTheHandPlanOfOneBigTable) {
  std::vector<TableSpec> tables = {makeTable("big", 200'000'000, 128, 20.0),
                                   makeTable("small", 1000, 16, 5.0)};
  for (unsigned devices : {4u, 8u}) {
    PlanResult searched = planOn(tables, devices);
    Topology topology;
    topology.memoryGB.assign(devices, 80.0);
    AnalyticalCostModel model;

    PlanFile hand;
    hand.devices = devices;
    int64_t width = 128 / devices;
    for (unsigned d = 0; d < devices; ++d) {
      hand.plan.shards.push_back(columns(0, width * d, width * (d + 1), d));
      Shard copy = columns(1, 0, 16, d);
      copy.replica = true;
      hand.plan.shards.push_back(copy);
    }
    Expected<PlanResult> priced = pricePlan(tables, topology, hand, model);
    ASSERT_EQ(errorMessage(priced), "");
    EXPECT_LE(searched.cost.maxMs, priced->cost.maxMs * (1.0 + 1e-9))
        << devices << " devices";
  }
}

} // namespace
