//===- SearchTest.cpp - Hand-checked cases of every search algorithm ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Most cases use SliceCostModel (a set costs the sum of width x pooling over
// its slices, plus an optional overhead per slice; no communication), so the
// expected placements can be worked out by hand; each test says how.
//
//===----------------------------------------------------------------------===//

#include "PlannerTestSupport.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/Search.h"

#include "gtest/gtest.h"

#include <set>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

/// The device of each table, for plans that keep tables whole.
std::vector<unsigned> devicesOfTables(const ShardingPlan &plan) {
  std::vector<unsigned> devices;
  for (const Shard &shard : plan.shards) {
    EXPECT_EQ(shard.table, devices.size()) << "a table was split";
    devices.push_back(shard.device);
  }
  return devices;
}

/// The cases here are worked out for whole tables and column pieces; row
/// pieces and replicas have tests of their own (RowWiseSearchTest.cpp).
SearchOptions withAlgorithm(Algorithm algorithm) {
  SearchOptions options;
  options.algorithm = algorithm;
  options.shardingKinds = kTableColumnKinds;
  return options;
}

std::string planError(ArrayRef<TableSpec> tables, const Topology &topology,
                      const SearchOptions &options, CostModel &model) {
  Expected<PlanResult> result = planSharding(tables, topology, options, model);
  return errorMessage(result);
}

TEST(AlgorithmNamesTest, RoundTrip) {
  for (Algorithm algorithm : allAlgorithms())
    EXPECT_EQ(parseAlgorithm(algorithmName(algorithm)), algorithm);
  EXPECT_EQ(parseAlgorithm("greedy"), std::nullopt);
  EXPECT_EQ(allAlgorithms().size(), 8u);
  EXPECT_EQ(algorithmNameList(),
            "neuroshard, table-greedy-grid, random, size-greedy, dim-greedy, "
            "lookup-greedy, size-lookup-greedy, uniform-split-greedy");
}

TEST(SearchOptionsTest, RejectsBadValues) {
  SearchOptions options;
  EXPECT_EQ(errorMessage(validateSearchOptions(options)), "");
  options.beamWidth = 0;
  EXPECT_EQ(errorMessage(validateSearchOptions(options)),
            "beam-width must be between 1 and 256, got 0");
  options = SearchOptions();
  options.thresholdMax = 0.9;
  EXPECT_EQ(errorMessage(validateSearchOptions(options)),
            "threshold-max must be at least threshold-min (1) and at most "
            "1000, got 0.9");
  options = SearchOptions();
  options.gridSteps = 10000000;
  EXPECT_EQ(errorMessage(validateSearchOptions(options)),
            "grid-steps must be between 1 and 1000, got 1e+07");
  options = SearchOptions();
  options.maxSteps = kMaxSteps + 1;
  EXPECT_EQ(errorMessage(validateSearchOptions(options)),
            "max-steps must be between 0 and 4096, got 4097");
}

// Every front end builds its options here: the algorithm by name, the
// numbers validated, with the same messages.
TEST(SearchOptionsTest, FrontEndsBuildThemFromNames) {
  SearchOptions values;
  values.beamWidth = 5;
  values.thresholdMax = 1.2;
  Expected<SearchOptions> options =
      makeSearchOptions("table-greedy-grid", values, /*progress=*/false);
  ASSERT_EQ(errorMessage(options), "");
  EXPECT_EQ(options->algorithm, Algorithm::TableGreedyGrid);
  EXPECT_EQ(options->beamWidth, 5u);
  EXPECT_EQ(options->thresholdMax, 1.2);
  EXPECT_FALSE(options->progress);
  options = makeSearchOptions("neuroshard", values, /*progress=*/true);
  ASSERT_EQ(errorMessage(options), "");
  EXPECT_TRUE(options->progress);
  options = makeSearchOptions("best", values, /*progress=*/false);
  EXPECT_EQ(errorMessage(options),
            "algorithm: unknown algorithm 'best' (expected one of: "
            "neuroshard, table-greedy-grid, random, size-greedy, dim-greedy, "
            "lookup-greedy, size-lookup-greedy, uniform-split-greedy)");
  values.candidates = 0;
  options = makeSearchOptions("neuroshard", values, /*progress=*/false);
  EXPECT_EQ(errorMessage(options),
            "candidates must be between 1 and 1024, got 0");
}

// Costs are all zero, so ties decide: x goes to device 0 (lower index), y
// to device 1 (less memory used), z to device 1 (less memory) unless the
// dim limit forbids it. Total dim 16 over 2 devices: at s = 1.0 a device may
// hold 8 columns, so z (4) cannot join y (8) and goes to device 0.
TEST(TableGreedyGridTest, BreaksTiesByMemoryThenIndexWithinDimLimit) {
  std::vector<TableSpec> tables = {makeTable("x", 100, 4, 0),
                                   makeTable("y", 10, 8, 0),
                                   makeTable("z", 10, 4, 0)};
  Topology topology = Topology::uniform(2, 1);
  SliceCostModel model;
  SearchOptions options = withAlgorithm(Algorithm::TableGreedyGrid);
  options.gridSteps = 1;
  options.thresholdMin = options.thresholdMax = 1.5;
  EXPECT_EQ(devicesOfTables(plan(tables, topology, options, model).plan),
            (std::vector<unsigned>{0, 1, 1}));
  options.thresholdMin = options.thresholdMax = 1.0;
  EXPECT_EQ(devicesOfTables(plan(tables, topology, options, model).plan),
            (std::vector<unsigned>{0, 1, 0}));
  // On equal cost the grid keeps its first (lowest) threshold.
  options = withAlgorithm(Algorithm::TableGreedyGrid);
  EXPECT_EQ(devicesOfTables(plan(tables, topology, options, model).plan),
            (std::vector<unsigned>{0, 1, 0}));
}

// Order by cost: a (400), b (200), w1 (8), w2 (8); a -> 0, b -> 1, w1 -> 1.
// Total dim 24: at s = 1.0 and 1.5 device 1 may hold 12 and 18 columns, so
// w2 must join a (cost 408); at s = 2.0, or without a limit, it joins b and
// the plan costs 400.
TEST(TableGreedyGridTest, KeepsTheCheapestThreshold) {
  std::vector<TableSpec> tables = {
      makeTable("a", 10, 4, 100), makeTable("w1", 10, 8, 1),
      makeTable("w2", 10, 8, 1), makeTable("b", 10, 4, 50)};
  Topology topology = Topology::uniform(2, 1);
  SliceCostModel model;
  SearchOptions options = withAlgorithm(Algorithm::TableGreedyGrid);
  options.gridSteps = 3;
  options.thresholdMax = 2.0;
  PlanResult result = plan(tables, topology, options, model);
  EXPECT_EQ(devicesOfTables(result.plan), (std::vector<unsigned>{0, 1, 1, 1}));
  EXPECT_EQ(result.cost.maxMs, 400);
  // Three thresholds and the run without a limit.
  EXPECT_EQ(result.stats.greedyRuns, 4u);
  options.gridSteps = 2;
  options.thresholdMax = 1.5;
  result = plan(tables, topology, options, model);
  EXPECT_EQ(result.cost.maxMs, 400);
  EXPECT_EQ(result.stats.greedyRuns, 3u);
}

// Table a (32 columns) exceeds every dim limit (40 / 2 * 1.5 = 30), so all
// thresholds fail; the run without a limit places it instead of failing:
// b (400) -> 0, a (320) -> 1, c (4) -> 1.
TEST(TableGreedyGridTest, FallsBackWhenEveryThresholdFails) {
  std::vector<TableSpec> tables = {makeTable("a", 10, 32, 10),
                                   makeTable("b", 10, 4, 100),
                                   makeTable("c", 10, 4, 1)};
  SliceCostModel model;
  PlanResult result = plan(tables, Topology::uniform(2, 1),
                           withAlgorithm(Algorithm::TableGreedyGrid), model);
  EXPECT_EQ(devicesOfTables(result.plan), (std::vector<unsigned>{1, 0, 1}));
  EXPECT_EQ(result.stats.greedyRuns, 12u);
}

// Slices are placed by predicted cost, not size: s (400) -> 0, m (200) -> 1,
// then the big but cheap table joins the cheaper device 1.
TEST(TableGreedyGridTest, PlacesMostExpensiveFirst) {
  std::vector<TableSpec> tables = {makeTable("big", 1000, 4, 1),
                                   makeTable("s", 10, 4, 100),
                                   makeTable("m", 100, 4, 50)};
  SliceCostModel model;
  EXPECT_EQ(
      devicesOfTables(plan(tables, Topology::uniform(2, 1),
                           withAlgorithm(Algorithm::TableGreedyGrid), model)
                          .plan),
      (std::vector<unsigned>{1, 0, 1}));
}

// h costs 640 alone; halves of 320 on each device, plus l (4) on one of
// them, give 324, the best any 4-column split can do.
TEST(ColumnBeamSearchTest, SplitsADominantTable) {
  std::vector<TableSpec> tables = {makeTable("h", 10, 64, 10),
                                   makeTable("l", 10, 4, 1)};
  Topology topology = Topology::uniform(2, 1);
  SliceCostModel model;
  EXPECT_EQ(
      plan(tables, topology, withAlgorithm(Algorithm::TableGreedyGrid), model)
          .cost.maxMs,
      640);
  PlanResult result =
      plan(tables, topology, withAlgorithm(Algorithm::NeuroShard), model);
  EXPECT_EQ(result.cost.maxMs, 324);
  EXPECT_GT(result.plan.shards.size(), 2u);

  // A table that may not be split stays whole.
  tables[0].noSplit = true;
  result = plan(tables, topology, withAlgorithm(Algorithm::NeuroShard), model);
  EXPECT_EQ(result.cost.maxMs, 640);
  EXPECT_EQ(result.plan.shards.size(), 2u);
}

// Balancing A (64 columns) against B (32) on two devices takes A's pieces
// 32 + 16 + 16, two of which end on one device. With this model a merged
// piece never costs more, so the plan keeps one piece of a table per
// device, laid out contiguously, and its cost is what evaluatePlan gives.
TEST(ColumnBeamSearchTest, MergesPiecesThatShareADevice) {
  std::vector<TableSpec> tables = {makeTable("A", 10, 64, 1),
                                   makeTable("B", 10, 32, 1)};
  Topology topology = Topology::uniform(2, 1);
  for (double overhead : {0.0, 1.0}) {
    SliceCostModel model(overhead);
    PlanResult result =
        plan(tables, topology, withAlgorithm(Algorithm::NeuroShard), model);
    std::set<std::pair<unsigned, unsigned>> seen;
    for (const Shard &shard : result.plan.shards)
      EXPECT_TRUE(seen.insert({shard.table, shard.device}).second)
          << "table " << shard.table << " has two pieces on device "
          << shard.device;
    EXPECT_EQ(errorMessage(validatePlan(tables, topology, result.plan)), "");
    Expected<PlanCost> cost =
        evaluatePlan(tables, topology, result.plan, model);
    ASSERT_EQ(errorMessage(cost), "");
    EXPECT_EQ(cost->maxMs, result.cost.maxMs);
    EXPECT_EQ(result.cost.maxMs, 48 + (overhead > 0 ? 2 : 0));
  }
}

// With 10 ms per slice, one split of h (64 + 10 -> 2 x (32 + 10)) pays off
// and every further split costs more (three slices: 42 vs 26 + 26 = 52).
// The search explores deeper levels but returns the level-1 plan.
TEST(ColumnBeamSearchTest, KeepsTheBestPlanSeen) {
  std::vector<TableSpec> tables = {makeTable("h", 10, 64, 1)};
  Topology topology = Topology::uniform(2, 1);
  SliceCostModel model(/*overheadPerSliceMs=*/10);
  PlanResult result =
      plan(tables, topology, withAlgorithm(Algorithm::NeuroShard), model);
  EXPECT_EQ(result.cost.maxMs, 42);
  ASSERT_EQ(result.plan.shards.size(), 2u);
  EXPECT_NE(result.plan.shards[0].device, result.plan.shards[1].device);
  EXPECT_GT(result.stats.statesExplored, 3u);

  EXPECT_EQ(
      plan(tables, topology, withAlgorithm(Algorithm::TableGreedyGrid), model)
          .cost.maxMs,
      74);
}

// Splits of a 16-column table: {16}, {8 8}, then {4 4 8} and {8 4 4},
// which hold the same widths of the same table and so are one state, then
// {4 4 4 4}. Equivalent states are explored once.
TEST(ColumnBeamSearchTest, ExploresSplitSetsOnce) {
  std::vector<TableSpec> tables = {makeTable("t", 10, 16, 1)};
  SliceCostModel model;
  PlanResult result = plan(tables, Topology::uniform(2, 1),
                           withAlgorithm(Algorithm::NeuroShard), model);
  EXPECT_EQ(result.stats.statesExplored, 4u);
}

// The cache answers repeated sets, the model sees each missing set once,
// and many sets share one call.
TEST(ColumnBeamSearchTest, MemoisesAndBatchesCostQueries) {
  std::vector<TableSpec> tables;
  for (int i = 0; i < 20; ++i)
    tables.push_back(makeTable("t" + std::to_string(i), 100 + i,
                               8 * (1 + i % 4), 1 + i % 7));
  SliceCostModel model;
  PlanResult result = plan(tables, Topology::uniform(4, 1),
                           withAlgorithm(Algorithm::NeuroShard), model);
  const SearchStats &stats = result.stats;
  EXPECT_GT(stats.cacheHits, 0u);
  EXPECT_EQ(model.setsPriced, stats.costQueries - stats.cacheHits);
  EXPECT_LT(model.computeCalls * 10, model.setsPriced);
  EXPECT_LE(model.computeCalls, stats.modelCalls);
}

TEST(ColumnBeamSearchTest, ReportsTheCostEvaluatePlanGives) {
  std::vector<TableSpec> tables;
  for (int i = 0; i < 12; ++i)
    tables.push_back(makeTable("t" + std::to_string(i), 1000 * (i + 1),
                               4 << (i % 6), 2 + i));
  Topology topology = Topology::uniform(3, 1);
  AnalyticalCostModel model;
  PlanResult result =
      plan(tables, topology, withAlgorithm(Algorithm::NeuroShard), model);
  Expected<PlanCost> cost = evaluatePlan(tables, topology, result.plan, model);
  ASSERT_EQ(errorMessage(cost), "");
  EXPECT_DOUBLE_EQ(cost->maxMs, result.cost.maxMs);
  for (unsigned d = 0; d < 3; ++d)
    EXPECT_DOUBLE_EQ(cost->devices[d].totalMs(),
                     result.cost.devices[d].totalMs());
  EXPECT_EQ(result.costModelName, "analytical");
}

/// The analytical model without its per-slice terms: the search must price
/// every set from its slices.
class WholeSetAnalyticalModel final : public CostModel {
public:
  StringRef name() const override { return model.name(); }
  std::string description() const override { return model.description(); }
  Error prepare(ArrayRef<TableSpec> tables, const Topology &topology) override {
    return model.prepare(tables, topology);
  }
  Error predictCompute(ArrayRef<ArrayRef<ColumnSlice>> sets,
                       MutableArrayRef<double> costsMs) override {
    return model.predictCompute(sets, costsMs);
  }
  Error predictBackwardComm(ArrayRef<DeviceTraffic> traffic,
                            MutableArrayRef<double> costsMs) override {
    return model.predictBackwardComm(traffic, costsMs);
  }
  Error predictForwardComm(ArrayRef<DeviceTraffic> traffic,
                           ArrayRef<double> stragglersMs,
                           MutableArrayRef<double> costsMs) override {
    return model.predictForwardComm(traffic, stragglersMs, costsMs);
  }

private:
  AnalyticalCostModel model;
};

// Re-pricing a device by adding one slice's term to its running sum gives
// bit for bit the costs, and so the plans, of pricing its whole set.
TEST(ColumnBeamSearchTest, IncrementalPricingGivesTheSamePlans) {
  std::vector<TableSpec> tables;
  for (int i = 0; i < 40; ++i) {
    tables.push_back(makeTable("t" + std::to_string(i), 1000 + 997 * i,
                               4 << (i % 6), 0.5 + (i * 7) % 13));
    if (i % 9 == 4)
      tables.back().pinnedDevice = i % 3;
  }
  Topology topology = Topology::uniform(3, 1);
  for (Algorithm algorithm : {Algorithm::NeuroShard, Algorithm::TableGreedyGrid,
                              Algorithm::SizeGreedy}) {
    AnalyticalCostModel incremental;
    WholeSetAnalyticalModel wholeSets;
    ASSERT_EQ(incremental.computeTermWidth(), 1u);
    ASSERT_EQ(wholeSets.computeTermWidth(), 0u);
    PlanResult fast =
        plan(tables, topology, withAlgorithm(algorithm), incremental);
    PlanResult slow =
        plan(tables, topology, withAlgorithm(algorithm), wholeSets);
    ASSERT_EQ(fast.plan.shards.size(), slow.plan.shards.size());
    for (auto [a, b] : zip_equal(fast.plan.shards, slow.plan.shards)) {
      EXPECT_EQ(a.table, b.table);
      EXPECT_EQ(a.colBegin, b.colBegin);
      EXPECT_EQ(a.colEnd, b.colEnd);
      EXPECT_EQ(a.device, b.device);
    }
    EXPECT_EQ(fast.cost.maxMs, slow.cost.maxMs);
    EXPECT_EQ(fast.stats.costQueries, slow.stats.costQueries);
    EXPECT_EQ(fast.stats.cacheHits, slow.stats.cacheHits);
  }
}

// Three tables on three devices land in the order the proxy ranks them.
// Proxies (size, dim, dim x pooling, dim x pooling x log10 rows):
//   p: 16e6, 4, 4, 24;  q: 640, 16, 16, 16;  r: 3200, 8, 80, 160.
TEST(BaselineTest, ProxyGreediesRankByTheirProxy) {
  std::vector<TableSpec> tables = {makeTable("p", 1000000, 4, 1),
                                   makeTable("q", 10, 16, 1),
                                   makeTable("r", 100, 8, 10)};
  Topology topology = Topology::uniform(3, 1);
  AnalyticalCostModel model;
  auto devices = [&](Algorithm algorithm) {
    return devicesOfTables(
        plan(tables, topology, withAlgorithm(algorithm), model).plan);
  };
  EXPECT_EQ(devices(Algorithm::SizeGreedy), (std::vector<unsigned>{0, 2, 1}));
  EXPECT_EQ(devices(Algorithm::DimGreedy), (std::vector<unsigned>{2, 0, 1}));
  EXPECT_EQ(devices(Algorithm::LookupGreedy), (std::vector<unsigned>{2, 1, 0}));
  EXPECT_EQ(devices(Algorithm::SizeLookupGreedy),
            (std::vector<unsigned>{1, 2, 0}));
}

// Costs alone (width x pooling): a 96, b 8, c 8; the fair share of 2
// devices is 56, so a is cut into 2 pieces of 48 (96 / 56 rounds up to 2),
// which go to devices 0 and 1, then b -> 0 and c -> 1. A 12-column table
// that should be cut in 2 is not: 12 columns make no 2 pieces of whole
// groups of 4, and 3 pieces are more than the devices.
TEST(BaselineTest, UniformSplitGreedyCutsTablesAboveTheFairShare) {
  std::vector<TableSpec> tables = {makeTable("a", 10, 16, 6),
                                   makeTable("b", 10, 8, 1),
                                   makeTable("c", 10, 8, 1)};
  Topology topology = Topology::uniform(2, 1);
  SliceCostModel model;
  PlanResult result = plan(tables, topology,
                           withAlgorithm(Algorithm::UniformSplitGreedy), model);
  std::vector<Shard> expected = {
      {0, 0, 8, 0}, {0, 8, 16, 1}, {1, 0, 8, 0}, {2, 0, 8, 1}};
  EXPECT_EQ(result.plan.shards, expected);
  EXPECT_EQ(result.cost.maxMs, 56);

  tables[0].dim = 12;
  result = plan(tables, topology, withAlgorithm(Algorithm::UniformSplitGreedy),
                model);
  EXPECT_EQ(result.plan.shards.size(), 3u);
  // Three devices take three pieces of 4 columns.
  result = plan(tables, Topology::uniform(3, 1),
                withAlgorithm(Algorithm::UniformSplitGreedy), model);
  EXPECT_EQ(result.plan.shards.size(), 5u);
}

// Sizes 4, 3, 2, 1: a -> 0, b -> 1, c -> 1 (3 < 4), d -> 0 (4 < 5).
TEST(BaselineTest, SizeGreedyBalancesBytes) {
  std::vector<TableSpec> tables = {
      makeTable("a", 400, 4), makeTable("b", 300, 4), makeTable("c", 200, 4),
      makeTable("d", 100, 4)};
  AnalyticalCostModel model;
  EXPECT_EQ(devicesOfTables(plan(tables, Topology::uniform(2, 1),
                                 withAlgorithm(Algorithm::SizeGreedy), model)
                                .plan),
            (std::vector<unsigned>{0, 1, 1, 0}));
}

TEST(BaselineTest, RandomIsSeededAndRespectsMemory) {
  // Any two of the three 0.4 GB tables fit on a 1 GB device, never three.
  std::vector<TableSpec> tables = {tableOfGB("a", 0.4), tableOfGB("b", 0.4),
                                   tableOfGB("c", 0.4), makeTable("d", 10, 4)};
  Topology topology = Topology::uniform(2, 1);
  AnalyticalCostModel model;
  SearchOptions options = withAlgorithm(Algorithm::Random);
  std::set<std::vector<unsigned>> distinct;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    options.seed = seed;
    std::vector<unsigned> devices =
        devicesOfTables(plan(tables, topology, options, model).plan);
    EXPECT_EQ(devicesOfTables(plan(tables, topology, options, model).plan),
              devices);
    distinct.insert(devices);
  }
  EXPECT_GT(distinct.size(), 2u);
}

TEST(ConstraintTest, EveryAlgorithmHonoursPinsAndCapacities) {
  // Device 0 is too small for "big"; "pin" must go to device 2.
  std::vector<TableSpec> tables = {
      tableOfGB("big", 0.8), makeTable("pin", 1000, 64, 20),
      makeTable("x", 1000, 32, 5), makeTable("y", 1000, 16, 5)};
  tables[1].pinnedDevice = 2;
  Topology topology;
  topology.memoryGB = {0.5, 1.0, 1.0};
  AnalyticalCostModel model;
  for (Algorithm algorithm : allAlgorithms()) {
    SCOPED_TRACE(algorithmName(algorithm).str());
    PlanResult result = plan(tables, topology, withAlgorithm(algorithm), model);
    for (const Shard &shard : result.plan.shards) {
      if (shard.table == 0) {
        EXPECT_NE(shard.device, 0u);
      }
      if (shard.table == 1) {
        EXPECT_EQ(shard.device, 2u);
      }
    }
  }
}

TEST(InfeasibleTest, TableLargerThanEveryDevice) {
  std::vector<TableSpec> tables = {tableOfGB("user", 20.3),
                                   makeTable("x", 10, 4)};
  Topology topology = Topology::uniform(4, 16);
  AnalyticalCostModel model;
  EXPECT_EQ(planError(tables, topology,
                      withAlgorithm(Algorithm::TableGreedyGrid), model),
            "table 'user' needs 20.3 GB but the largest device has 16.0 GB");
  EXPECT_EQ(
      planError(tables, topology, withAlgorithm(Algorithm::NeuroShard), model),
      "table 'user' needs 20.3 GB but the largest device has 16.0 GB "
      "and its narrowest shards (4 of 4 columns) still need 20.3 GB; row "
      "pieces (row_wise) are not among the sharding types allowed");
  tables[0].dim = 8;
  tables[0].rows /= 2;
  tables[0].noSplit = true;
  EXPECT_EQ(
      planError(tables, topology, withAlgorithm(Algorithm::NeuroShard), model),
      "table 'user' needs 20.3 GB but the largest device has 16.0 GB "
      "and it may not be split");
}

// NeuroShard splits a table that fits no device whole; the halves (10 GB
// each) must then sit on different 16 GB devices.
TEST(InfeasibleTest, NeuroShardSplitsOversizedTables) {
  std::vector<TableSpec> tables = {
      makeTable("user", static_cast<int64_t>(20 * kBytesPerGB / 512), 128, 8)};
  Topology topology = Topology::uniform(2, 16);
  AnalyticalCostModel model;
  PlanResult result =
      plan(tables, topology, withAlgorithm(Algorithm::NeuroShard), model);
  ASSERT_GE(result.plan.shards.size(), 2u);
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, result.plan)), "");
}

TEST(InfeasibleTest, NotEnoughMemoryInTotal) {
  std::vector<TableSpec> tables = {tableOfGB("a", 10), tableOfGB("b", 10),
                                   tableOfGB("c", 10)};
  AnalyticalCostModel model;
  EXPECT_EQ(planError(tables, Topology::uniform(2, 12),
                      withAlgorithm(Algorithm::NeuroShard), model),
            "the tables need 30.0 GB in total but the 2 devices have 24.0 GB");
}

TEST(InfeasibleTest, PinnedTablesThatDoNotFit) {
  std::vector<TableSpec> tables = {tableOfGB("a", 2), tableOfGB("b", 0.6),
                                   tableOfGB("c", 0.6)};
  tables[0].pinnedDevice = 1;
  Topology topology;
  topology.memoryGB = {4, 1, 1};
  AnalyticalCostModel model;
  SearchOptions options = withAlgorithm(Algorithm::NeuroShard);
  EXPECT_EQ(planError(tables, topology, options, model),
            "table 'a' needs 2.00 GB but device 1, which it is pinned to, has "
            "1.00 GB");
  tables[0].pinnedDevice = 0;
  tables[1].pinnedDevice = tables[2].pinnedDevice = 2;
  EXPECT_EQ(planError(tables, topology, options, model),
            "the tables pinned to device 2 need 1.20 GB but it has 1.00 GB");
}

// 1.8 GB fit in 2 GB, but three 0.6 GB tables do not pack onto two 1 GB
// devices whole. NeuroShard splits the third across both devices.
TEST(InfeasibleTest, PackingFailureNamesTheTable) {
  int64_t rows = static_cast<int64_t>(0.6 * kBytesPerGB / 32);
  std::vector<TableSpec> tables = {makeTable("a", rows, 8),
                                   makeTable("b", rows, 8),
                                   makeTable("c", rows, 8)};
  Topology topology = Topology::uniform(2, 1);
  AnalyticalCostModel model;
  for (Algorithm algorithm :
       {Algorithm::TableGreedyGrid, Algorithm::SizeGreedy, Algorithm::Random})
    EXPECT_EQ(planError(tables, topology, withAlgorithm(algorithm), model),
              "could not place table 'c' (0.600 GB): the device with the "
              "most free memory has 0.400 GB left (the tables need 1.80 GB of "
              "the devices' 2.00 GB)");
  PlanResult result =
      plan(tables, topology, withAlgorithm(Algorithm::NeuroShard), model);
  EXPECT_EQ(result.plan.shards.size(), 4u);
}

// In the order of cost, the two hot tables take a device each and the
// large cold one (0.95 GB) then fits on neither 1 GB device. The grid
// search runs again with the large slices placed first and finds the plan
// that puts it alone on a device.
TEST(InfeasibleTest, LargeColdTablePlacedFirstWhereCostOrderFails) {
  int64_t hotRows = static_cast<int64_t>(0.3 * kBytesPerGB / (64 * 4));
  std::vector<TableSpec> tables = {makeTable("a", hotRows, 64, 8),
                                   makeTable("b", hotRows, 64, 8),
                                   tableOfGB("big", 0.95)};
  Topology topology = Topology::uniform(2, 1);
  SliceCostModel model;
  PlanResult result =
      plan(tables, topology, withAlgorithm(Algorithm::TableGreedyGrid), model);
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, result.plan)), "");
  ASSERT_EQ(result.plan.shards.size(), 3u);
  unsigned bigDevice = result.plan.shards[2].device;
  EXPECT_EQ(result.plan.shards[2].table, 2u);
  EXPECT_NE(result.plan.shards[0].device, bigDevice);
  EXPECT_NE(result.plan.shards[1].device, bigDevice);
  EXPECT_NEAR(result.cost.maxMs, 2 * 64 * 8, 1e-9);
  // The baselines keep docs/design.md §4's one order and fail with their
  // message.
  EXPECT_EQ(
      planError(tables, topology, withAlgorithm(Algorithm::DimGreedy), model),
      "could not place table 'big' (0.950 GB): the device with the "
      "most free memory has 0.700 GB left (the tables need 1.55 GB of "
      "the devices' 2.00 GB)");
}

TEST(InfeasibleTest, CostModelForAnotherDeviceCount) {
  std::vector<TableSpec> tables = {makeTable("a", 10, 4)};
  SliceCostModel model(0, /*devices=*/8);
  EXPECT_EQ(planError(tables, Topology::uniform(4, 1),
                      withAlgorithm(Algorithm::NeuroShard), model),
            "cost model 'slice-test' was trained for 8 devices but the task "
            "has 4");
}

TEST(InfeasibleTest, MalformedProblem) {
  std::vector<TableSpec> tables = {makeTable("a", 10, 6)};
  AnalyticalCostModel model;
  EXPECT_EQ(planError(tables, Topology::uniform(4, 1),
                      withAlgorithm(Algorithm::NeuroShard), model),
            "tables[0] ('a'): 'dim' must be a positive multiple of 4, got 6");
}

} // namespace
