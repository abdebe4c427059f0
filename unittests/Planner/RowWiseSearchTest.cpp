//===- RowWiseSearchTest.cpp - Row pieces and replicas in plans -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Row-wise, table-row-wise and data-parallel tables: what a plan of them
// must satisfy (validatePlan), what they cost (pieceSpec, computeTraffic,
// the analytical model), how the search uses them, and how plans of them
// are written and read back (plan JSON and the TorchRec format).
//
//===----------------------------------------------------------------------===//

#include "PlannerTestSupport.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Planner/TaskIO.h"
#include "neuroshard/Sharding/Traffic.h"

#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <random>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

Shard rowPiece(unsigned table, int64_t rowBegin, int64_t rowEnd,
               unsigned device, int64_t colBegin, int64_t colEnd) {
  Shard shard{table, colBegin, colEnd, device};
  shard.rowBegin = rowBegin;
  shard.rowEnd = rowEnd;
  return shard;
}

Shard replicaOn(unsigned table, int64_t dim, unsigned device) {
  Shard shard{table, 0, dim, device};
  shard.replica = true;
  return shard;
}

std::string validate(ArrayRef<TableSpec> tables, const Topology &topology,
                     std::vector<Shard> shards) {
  ShardingPlan plan;
  plan.shards = std::move(shards);
  return errorMessage(validatePlan(tables, topology, plan));
}

SearchOptions withKinds(ShardingKindSet kinds) {
  SearchOptions options;
  options.shardingKinds = kinds;
  return options;
}

TEST(ShardingKindTest, NamesAndLists) {
  auto asWritten = [](StringRef name) { return name.str(); };
  EXPECT_EQ(shardingKindName(ShardingKind::TableRowWise), "table_row_wise");
  EXPECT_EQ(parseShardingKind("data_parallel"), ShardingKind::DataParallel);
  EXPECT_EQ(parseShardingKind("grid"), std::nullopt);
  Expected<ShardingKindSet> kinds =
      parseShardingKindList("table_wise, row_wise");
  ASSERT_TRUE(bool(kinds));
  EXPECT_EQ(*kinds,
            kindBit(ShardingKind::TableWise) | kindBit(ShardingKind::RowWise));
  Expected<ShardingKindSet> bad = parseShardingKindList("table_wise,rows");
  EXPECT_EQ(errorMessage(bad),
            "unknown sharding type 'rows' (expected one of: table_wise, "
            "column_wise, row_wise, table_row_wise, data_parallel)");
  Expected<ShardingKindSet> option =
      resolveShardingKinds("default", "cpu", asWritten);
  ASSERT_TRUE(bool(option));
  EXPECT_EQ(*option, kTableColumnKinds);
  option = resolveShardingKinds("default", "h100", asWritten);
  ASSERT_TRUE(bool(option));
  EXPECT_EQ(*option, kAllShardingKinds);
  option = resolveShardingKinds("row", "h100", asWritten);
  EXPECT_EQ(errorMessage(option),
            "sharding-types: unknown sharding type 'row' (expected one of: "
            "table_wise, column_wise, row_wise, table_row_wise, "
            "data_parallel), 'all' or 'default'");
}

TEST(RowPieceValidationTest, AcceptsPiecesThatTileRowsAndColumns) {
  std::vector<TableSpec> tables = {makeTable("t", 10, 8)};
  Topology topology = Topology::uniform(4, 1);
  // Rows [0, 3) and [3, 10) of every column, then a grid: the rows not
  // divisible by the piece count are fine.
  EXPECT_EQ(validate(tables, topology,
                     {rowPiece(0, 0, 3, 0, 0, 8), rowPiece(0, 3, 10, 1, 0, 8)}),
            "");
  EXPECT_EQ(
      validate(tables, topology,
               {rowPiece(0, 0, 5, 0, 0, 4), rowPiece(0, 0, 5, 1, 4, 8),
                rowPiece(0, 5, 10, 2, 0, 4), rowPiece(0, 5, 10, 3, 4, 8)}),
      "");
}

TEST(RowPieceValidationTest, NamesMissingAndOverlappingRows) {
  std::vector<TableSpec> tables = {makeTable("t", 10, 8)};
  Topology topology = Topology::uniform(2, 1);
  EXPECT_EQ(validate(tables, topology,
                     {rowPiece(0, 0, 3, 0, 0, 8), rowPiece(0, 4, 10, 1, 0, 8)}),
            "table 't': rows [3, 4) of columns [0, 8) are on no device");
  EXPECT_EQ(validate(tables, topology,
                     {rowPiece(0, 0, 5, 0, 0, 8), rowPiece(0, 4, 10, 1, 0, 8)}),
            "table 't': rows [4, 5) of columns [0, 8) are on more than one "
            "device");
  EXPECT_EQ(validate(tables, topology,
                     {rowPiece(0, 0, 5, 0, 0, 8), rowPiece(0, 5, 12, 1, 0, 8)}),
            "table 't': the shard on device 1 has rows [5, 12), not a "
            "non-empty range of its 10 rows");
  EXPECT_EQ(validate(tables, topology,
                     {rowPiece(0, 0, 5, 0, 0, 8), rowPiece(0, 5, 5, 1, 0, 8)}),
            "table 't': the shard on device 1 has rows [5, 5), not a "
            "non-empty range of its 10 rows");
}

TEST(RowPieceValidationTest, ReplicasAreWholeAndOnEveryDevice) {
  std::vector<TableSpec> tables = {makeTable("t", 10, 8)};
  Topology topology = Topology::uniform(3, 1);
  EXPECT_EQ(
      validate(tables, topology,
               {replicaOn(0, 8, 0), replicaOn(0, 8, 1), replicaOn(0, 8, 2)}),
      "");
  EXPECT_EQ(
      validate(tables, topology, {replicaOn(0, 8, 0), replicaOn(0, 8, 2)}),
      "table 't' is replicated but device 1 holds no replica (a "
      "data-parallel table is on every device)");
  EXPECT_EQ(
      validate(tables, topology,
               {replicaOn(0, 8, 0), replicaOn(0, 8, 1), replicaOn(0, 8, 1)}),
      "table 't' has two replicas on device 1");
  Shard half = replicaOn(0, 8, 2);
  half.colEnd = 4;
  EXPECT_EQ(validate(tables, topology,
                     {replicaOn(0, 8, 0), replicaOn(0, 8, 1), half}),
            "table 't': the replica on device 2 holds rows [0, 10) of columns "
            "[0, 4), not the whole table (10 rows, 8 columns)");
  // A replica of 2 GB on devices of 1 GB.
  std::vector<TableSpec> big = {tableOfGB("big", 2)};
  EXPECT_EQ(validate(big, Topology::uniform(2, 1),
                     {replicaOn(0, 4, 0), replicaOn(0, 4, 1)}),
            "device 0 holds 2.00 GB but has 1.00 GB");
}

TEST(RowPieceValidationTest, RefusesKindsTheConstraintsForbid) {
  std::vector<TableSpec> tables = {makeTable("t", 10, 8)};
  tables[0].shardingKinds =
      kindBit(ShardingKind::TableWise) | kindBit(ShardingKind::ColumnWise);
  Topology topology = Topology::uniform(2, 1);
  EXPECT_EQ(validate(tables, topology,
                     {rowPiece(0, 0, 5, 0, 0, 8), rowPiece(0, 5, 10, 1, 0, 8)}),
            "table 't' is row_wise but its constraints allow only table_wise, "
            "column_wise");
  // On one node, row-wise pieces are table-row-wise.
  tables[0].shardingKinds = kindBit(ShardingKind::TableRowWise);
  EXPECT_EQ(validate(tables, topology,
                     {rowPiece(0, 0, 5, 0, 0, 8), rowPiece(0, 5, 10, 1, 0, 8)}),
            "");
  // On two nodes, pieces on both are not.
  topology.devicesPerNode = 1;
  EXPECT_EQ(validate(tables, topology,
                     {rowPiece(0, 0, 5, 0, 0, 8), rowPiece(0, 5, 10, 1, 0, 8)}),
            "table 't' is row_wise but its constraints allow only "
            "table_row_wise");
}

TEST(RowPieceCostTest, PieceSpecScalesLookupsByRowsAndReplicasByBatch) {
  TableSpec table = makeTable("t", 1000, 16, 8.0, 4096);
  ColumnSlice piece{0, 0, 16, 0, 250};
  TableSpec spec = pieceSpec(table, piece, 4, 4096, RowBlockLoad::Mean);
  EXPECT_EQ(spec.rows, 250);
  EXPECT_DOUBLE_EQ(spec.poolingFactor, 2.0);
  EXPECT_EQ(spec.accessHist, table.accessHist);
  // Priced as the most loaded of the four blocks: a little more than a
  // quarter of the lookups of rows hit 33-64 times each.
  TableSpec heaviest = pieceSpec(table, piece, 4, 4096);
  EXPECT_EQ(heaviest.rows, 250);
  EXPECT_DOUBLE_EQ(
      heaviest.poolingFactor,
      8.0 * rowBlockShare(table, piece, 4096, RowBlockLoad::Heaviest));
  EXPECT_GT(heaviest.poolingFactor, 2.0);
  EXPECT_LT(heaviest.poolingFactor, 2.2);
  EXPECT_EQ(heaviest.accessHist, table.accessHist);
  ColumnSlice replica{0, 0, 16};
  replica.replica = true;
  spec = pieceSpec(table, replica, 4, 4096);
  EXPECT_EQ(spec.rows, 1000);
  EXPECT_DOUBLE_EQ(spec.poolingFactor, 2.0);
  // A quarter of the bags hits each row about a quarter as often: the
  // histogram moves to lower bins.
  double before = 0, after = 0;
  for (unsigned bin = 0; bin < kNumAccessBins; ++bin) {
    before += bin * table.accessHist[bin];
    after += bin * spec.accessHist[bin];
  }
  EXPECT_LT(after, before);
}

TEST(RowPieceCostTest, TrafficOfRowPiecesAndReplicas) {
  std::vector<TableSpec> tables = {makeTable("t", 1000, 16, 10.0, 64),
                                   makeTable("r", 100, 8, 1.0, 64)};
  Topology topology = Topology::uniform(4, 1);
  topology.batchSize = 64;
  ShardingPlan plan;
  plan.shards = {rowPiece(0, 0, 250, 0, 0, 16),
                 rowPiece(0, 250, 1000, 1, 0, 16)};
  for (unsigned d = 0; d < 4; ++d)
    plan.shards.push_back(replicaOn(1, 8, d));
  std::vector<DeviceTraffic> traffic = computeTraffic(tables, topology, plan);
  // Partial sums of every bag: row pieces count their full width.
  EXPECT_EQ(traffic[0].dimSum, 16);
  EXPECT_EQ(traffic[1].dimSum, 16);
  EXPECT_EQ(traffic[2].dimSum, 0);
  // Device 0 receives the lookups of its quarter of the rows from the
  // other three devices' bags: 64 x 10 x 1/4 x 3/4.
  EXPECT_DOUBLE_EQ(traffic[0].indices.intraReceived, 64 * 10 * 0.25 * 0.75);
  EXPECT_DOUBLE_EQ(traffic[1].indices.intraReceived, 64 * 10 * 0.75 * 0.75);
  // Every device all-reduces the replica's 100 x 8 gradients: 2 x 3/4.
  for (const DeviceTraffic &device : traffic) {
    EXPECT_DOUBLE_EQ(device.gradients.intraSent, 2 * 0.75 * 800);
    EXPECT_DOUBLE_EQ(device.gradients.interSent, 0);
  }
  // On two nodes of two, a quarter of the replica's values cross nodes
  // each way: the node's half of them, all-reduced over 2 nodes.
  topology.devicesPerNode = 2;
  traffic = computeTraffic(tables, topology, plan);
  EXPECT_DOUBLE_EQ(traffic[3].gradients.intraSent, 2 * 0.5 * 800);
  EXPECT_DOUBLE_EQ(traffic[3].gradients.interSent, 2 * 0.5 * 400);
}

TEST(RowPieceCostTest, AnalyticalComputeOfPieces) {
  std::vector<TableSpec> tables = {makeTable("t", 1000, 128, 10.0)};
  Topology topology = Topology::uniform(4, 16);
  AnalyticalCostModel model;
  ASSERT_EQ(errorMessage(model.prepare(tables, topology)), "");
  double whole = model.sliceComputeMs({0, 0, 128});
  double quarter = model.sliceComputeMs({0, 0, 128, 0, 250});
  ColumnSlice replica{0, 0, 128};
  replica.replica = true;
  // A quarter of the rows reads a quarter of the indices and rows, but
  // still writes a partial sum for every bag.
  EXPECT_LT(quarter, whole / 2);
  EXPECT_GT(quarter, whole / 4);
  // A replica does a quarter of everything.
  EXPECT_DOUBLE_EQ(model.sliceComputeMs(replica), whole / 4);
}

// One hot table and three cold ones on 4 devices: column pieces all read
// every index, row pieces divide the lookups; the full space plans at
// most as expensively as the table/column space.
TEST(RowWiseSearchTest, RowPiecesRelieveAHotTable) {
  std::vector<TableSpec> tables = {
      makeTable("hot", 4000000, 64, 80.0), makeTable("a", 100000, 64, 2.0),
      makeTable("b", 100000, 64, 2.0), makeTable("c", 100000, 64, 2.0)};
  Topology topology = Topology::uniform(4, 16);
  AnalyticalCostModel model;
  PlanResult columns =
      plan(tables, topology, withKinds(kTableColumnKinds), model);
  PlanResult all = plan(tables, topology, SearchOptions(), model);
  EXPECT_LT(all.cost.maxMs, columns.cost.maxMs);
  std::vector<ShardingKind> kinds = tableKinds(tables, topology, all.plan);
  EXPECT_EQ(kinds[0], ShardingKind::RowWise);
}

// A 596 GB table fits 64 devices of 80 GB with 15% reserved only in row
// pieces: its narrowest column pieces need 74.5 GB.
TEST(RowWiseSearchTest, PlacesATableLargerThanItsNarrowestColumns) {
  std::vector<TableSpec> tables = {makeTable("huge", 5000000000, 32, 20.0),
                                   makeTable("small", 100000, 64, 4.0)};
  Topology topology = Topology::uniform(64, 80);
  topology.devicesPerNode = 8;
  topology.reservedFraction = 0.15;
  AnalyticalCostModel model;
  Expected<PlanResult> columns =
      planSharding(tables, topology, withKinds(kTableColumnKinds), model);
  EXPECT_EQ(errorMessage(columns),
            "table 'huge' needs 596.0 GB but the largest device has 68.0 GB "
            "(15% of each device kept free) and its narrowest shards (4 of 32 "
            "columns) still need 74.5 GB; row pieces (row_wise) are not among "
            "the sharding types allowed");
  PlanResult rows = plan(tables, topology, SearchOptions(), model);
  EXPECT_EQ(tableKinds(tables, topology, rows.plan)[0], ShardingKind::RowWise);
  // Allowed only table-wise and column-wise, the table cannot be placed.
  tables[0].shardingKinds = kTableColumnKinds;
  Expected<PlanResult> constrained =
      planSharding(tables, topology, SearchOptions(), model);
  EXPECT_NE(errorMessage(constrained), "");
}

TEST(RowWiseSearchTest, HonoursEachTablesShardingTypes) {
  std::vector<TableSpec> tables = {
      makeTable("rows", 100000, 64, 4.0), makeTable("replicated", 100, 16, 8.0),
      makeTable("node", 100000, 64, 4.0), makeTable("whole", 100000, 64, 4.0)};
  tables[0].shardingKinds = kindBit(ShardingKind::RowWise);
  tables[1].shardingKinds = kindBit(ShardingKind::DataParallel);
  tables[2].shardingKinds = kindBit(ShardingKind::TableRowWise);
  tables[3].shardingKinds = kindBit(ShardingKind::TableWise);
  Topology topology = Topology::uniform(4, 16);
  topology.devicesPerNode = 2;
  AnalyticalCostModel model;
  PlanResult result = plan(tables, topology, SearchOptions(), model);
  std::vector<ShardingKind> kinds = tableKinds(tables, topology, result.plan);
  EXPECT_EQ(kinds[0], ShardingKind::RowWise);
  EXPECT_EQ(kinds[1], ShardingKind::DataParallel);
  EXPECT_EQ(kinds[2], ShardingKind::TableRowWise);
  EXPECT_EQ(kinds[3], ShardingKind::TableWise);
  // The global option narrows what the tables allow; nothing left is an
  // error that names the table.
  Expected<PlanResult> none = planSharding(
      tables, topology, withKinds(kindBit(ShardingKind::ColumnWise)), model);
  EXPECT_EQ(errorMessage(none),
            "table 'rows' may be row_wise but the plan may use only "
            "column_wise");
  // A replica that fits no device.
  std::vector<TableSpec> big = {tableOfGB("big", 2)};
  big[0].shardingKinds = kindBit(ShardingKind::DataParallel);
  Expected<PlanResult> tooBig =
      planSharding(big, Topology::uniform(2, 1), SearchOptions(), model);
  EXPECT_EQ(errorMessage(tooBig),
            "table 'big' may only be data_parallel and its replicas need 2.00 "
            "GB on every device, but the smallest device has 1.00 GB");
}

// Over random tasks, the full space is never priced above the
// table/column space (the planner searches both and keeps the better).
TEST(RowWiseSearchTest, FullSpaceNeverAboveTableColumnSpace) {
  std::mt19937_64 rng(7);
  AnalyticalCostModel model;
  for (int task = 0; task < 12; ++task) {
    std::vector<TableSpec> tables;
    int count = 4 + rng() % 12;
    for (int t = 0; t < count; ++t)
      tables.push_back(
          makeTable("t" + std::to_string(t), int64_t(1000) << (rng() % 14),
                    int64_t(8) << (rng() % 5), 1.0 + double(rng() % 60)));
    Topology topology = Topology::uniform(4u << (task % 3), 16);
    topology.devicesPerNode = 4;
    PlanResult columns =
        plan(tables, topology, withKinds(kTableColumnKinds), model);
    PlanResult all = plan(tables, topology, SearchOptions(), model);
    EXPECT_LE(all.cost.maxMs, columns.cost.maxMs * (1 + 1e-9))
        << "task " << task;
  }
}

TEST(RowWisePlanIOTest, PlanJSONAndTorchRecRoundTrip) {
  std::vector<TableSpec> tables = {makeTable("t", 10, 8), makeTable("r", 4, 8)};
  Topology topology = Topology::uniform(2, 1);
  PlanResult result;
  result.plan.shards = {rowPiece(0, 0, 3, 0, 0, 8), rowPiece(0, 3, 10, 1, 0, 8),
                        replicaOn(1, 8, 0), replicaOn(1, 8, 1)};
  AnalyticalCostModel model;
  Expected<PlanCost> cost = evaluatePlan(tables, topology, result.plan, model);
  ASSERT_TRUE(bool(cost));
  result.cost = *cost;
  for (bool torchrec : {false, true}) {
    std::string text = writePlanText(tables, topology, result, torchrec);
    EXPECT_NE(text.find(torchrec ? "\"data_parallel\"" : "\"row_end\": 3"),
              std::string::npos)
        << text;
    Expected<PlanFile> read = parsePlanJSON(text, tables);
    ASSERT_EQ(errorMessage(read), "");
    std::vector<Shard> shards = read->plan.shards;
    llvm::sort(shards, [](const Shard &a, const Shard &b) {
      return std::make_tuple(a.table, a.rowBegin, a.device) <
             std::make_tuple(b.table, b.rowBegin, b.device);
    });
    EXPECT_EQ(shards, result.plan.shards) << text;
  }
}

TEST(RowWisePlanIOTest, ReadsTableShardingTypes) {
  Expected<PlanningTask> task = parseTaskJSON(
      R"({"tables": [{"name": "t", "rows": 10, "dim": 8,
          "pooling_factor": 1,
          "sharding_types": ["row_wise", "data_parallel"]}]})");
  ASSERT_EQ(errorMessage(task), "");
  EXPECT_EQ(task->tables[0].shardingKinds,
            kindBit(ShardingKind::RowWise) |
                kindBit(ShardingKind::DataParallel));
  task = parseTaskJSON(R"({"tables": [{"name": "t", "rows": 10, "dim": 8,
                           "pooling_factor": 1, "sharding_types": ["rows"]}]})");
  EXPECT_EQ(errorMessage(task),
            "tables[0] ('t'): 'sharding_types' has \"rows\", not one of: "
            "table_wise, column_wise, row_wise, table_row_wise, data_parallel");
  task = parseTaskJSON(R"({"tables": [{"name": "t", "rows": 10, "dim": 8,
                           "pooling_factor": 1, "sharding_types": []}]})");
  EXPECT_EQ(errorMessage(task),
            "tables[0] ('t'): 'sharding_types' must be a non-empty array of "
            "names (table_wise, column_wise, row_wise, table_row_wise, "
            "data_parallel), got []");
}

} // namespace
