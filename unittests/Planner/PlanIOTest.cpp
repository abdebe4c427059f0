//===- PlanIOTest.cpp - Task parsing and plan output ----------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "PlannerTestSupport.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/PlanReport.h"
#include "neuroshard/Planner/TaskIO.h"

#include "llvm/Support/JSON.h"
#include "gtest/gtest.h"

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

constexpr const char *kHist = "[0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
                              "0, 0, 0]";

std::string taskWithTable(StringRef fields) {
  return formatv(R"({{"tables": [{{"name": "t0", "rows": 100, "dim": 8,
                   "pooling_factor": 2.5, "access_hist": {0}{1}}]})",
                 kHist, fields)
      .str();
}

std::string parseError(StringRef text) {
  Expected<PlanningTask> task = parseTaskJSON(text);
  return errorMessage(task);
}

// Integer fields take any whole number, in exponent form too, but no
// fraction.
TEST(ParseTaskTest, ReadsWholeNumbersAsIntegers) {
  Expected<PlanningTask> task = parseTaskJSON(
      R"({"batch_size": 1.024e3, "tables": [{"name": "t", "rows": 5e6,
      "dim": 8.0, "pooling_factor": 1}]})");
  ASSERT_EQ(errorMessage(task), "");
  EXPECT_EQ(task->tables[0].rows, 5000000);
  EXPECT_EQ(task->tables[0].dim, 8);
  EXPECT_EQ(task->batchSize, 1024);
  EXPECT_EQ(parseError(R"({"tables": [{"name": "t", "rows": 1.5e0, "dim": 8,
      "pooling_factor": 1}]})"),
            "tables[0] ('t'): 'rows' must be an integer, got 1.5");
}

// Numbers beyond int64_t's range, written with a fraction or an exponent,
// are refused rather than converted (which C++ leaves undefined).
TEST(ParseTaskTest, RefusesIntegersOutOfRange) {
  for (const char *rows : {"9223372036854775808.", "-1e300", "1e300"}) {
    std::string message = parseError(
        formatv(R"({{"tables": [{{"name": "t0", "rows": {0}}]})", rows).str());
    EXPECT_EQ(StringRef(message).starts_with(
                  "tables[0] ('t0'): 'rows' must be an integer, got "),
              true)
        << message;
  }
}

TEST(ParseTaskTest, ReadsTablesAndDefaults) {
  std::string text = formatv(R"({{"batch_size": 1024, "tables": [
      {{"name": "a", "rows": 100000, "dim": 64, "pooling_factor": 12.5,
       "access_hist": {0}},
      {{"name": "b", "rows": 7, "dim": 4, "dtype": "f16", "pooling_factor": 1,
       "access_hist": {0}, "pinned_device": 1, "no_split": true}]})",
                             kHist);
  Expected<PlanningTask> task = parseTaskJSON(text);
  ASSERT_EQ(errorMessage(task), "");
  EXPECT_EQ(task->batchSize, 1024);
  ASSERT_EQ(task->tables.size(), 2u);
  const TableSpec &a = task->tables[0], &b = task->tables[1];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.rows, 100000);
  EXPECT_EQ(a.dim, 64);
  EXPECT_EQ(a.elementBytes, 4u);
  EXPECT_EQ(a.poolingFactor, 12.5);
  EXPECT_EQ(a.accessHist[1], 0.5);
  EXPECT_EQ(a.pinnedDevice, std::nullopt);
  EXPECT_FALSE(a.noSplit);
  EXPECT_EQ(b.elementBytes, 2u);
  EXPECT_EQ(b.pinnedDevice, 1u);
  EXPECT_TRUE(b.noSplit);

  task = parseTaskJSON(taskWithTable(""));
  ASSERT_EQ(errorMessage(task), "");
  EXPECT_EQ(task->batchSize, std::nullopt);
}

TEST(ParseMemoryGBListTest, ReadsOneValueOrACommaList) {
  Expected<std::vector<double>> one = parseMemoryGBList("16");
  ASSERT_EQ(errorMessage(one), "");
  EXPECT_EQ(*one, std::vector<double>({16.0}));
  Expected<std::vector<double>> list = parseMemoryGBList("16, 8,0.5");
  ASSERT_EQ(errorMessage(list), "");
  EXPECT_EQ(*list, std::vector<double>({16.0, 8.0, 0.5}));
}

TEST(ParseMemoryGBListTest, NamesTheFirstBadEntry) {
  for (auto [list, entry] :
       {std::pair{"8,x", "x"}, {"8,,8", ""}, {"", ""}, {"8, 1GB", "1GB"}}) {
    Expected<std::vector<double>> parsed = parseMemoryGBList(list);
    EXPECT_EQ(errorMessage(parsed),
              "'" + std::string(entry) + "' is not a number of GB")
        << list;
  }
  for (auto [list, entry] : {std::pair{"0", "0"},
                             {"8,-1", "-1"},
                             {"inf", "inf"},
                             {"nan", "nan"},
                             {"16,2e6", "2e6"}}) {
    Expected<std::vector<double>> parsed = parseMemoryGBList(list);
    double gb = 0;
    StringRef(entry).getAsDouble(gb);
    EXPECT_EQ(errorMessage(parsed),
              "'" + std::string(entry) + "': " + *checkCapacityGB(gb))
        << list;
  }
}

TEST(ParseTaskTest, NamesTheFieldTableAndValue) {
  EXPECT_EQ(parseError(R"({"tables": [{"name": "t0", "rows": 1, "dim": 6}]})"),
            "tables[0] ('t0'): 'dim' must be a positive multiple of 4, got 6");
  EXPECT_EQ(parseError(R"({"tables": [{"name": "t0", "rows": 1.5}]})"),
            "tables[0] ('t0'): 'rows' must be an integer, got 1.5");
  EXPECT_EQ(parseError(R"({"tables": [{"name": "t0", "rows": 1, "dim": 4}]})"),
            "tables[0] ('t0'): missing field 'pooling_factor'");
  EXPECT_EQ(parseError(taskWithTable(R"(, "pooling": 3)")),
            "tables[0] ('t0'): unknown field 'pooling' (expected one of: "
            "name, rows, dim, dtype, pooling_factor, access_hist, "
            "hist_batch_size, zipf_alpha, features, pinned_device, "
            "no_split, sharding_types, cache_load_factor)");
  EXPECT_EQ(parseError(taskWithTable(R"(, "dtype": "f8")")),
            "tables[0] ('t0'): 'dtype' must be one of f32, f16, bf16, got "
            "'f8'");
  EXPECT_EQ(parseError(taskWithTable(R"(, "dtype": 4)")),
            "tables[0] ('t0'): 'dtype' must be a string, got 4");
  EXPECT_EQ(parseError(R"({"tables": [{"name": "t0", "rows": 1, "dim": 4,
                           "pooling_factor": 1, "access_hist": [1]}]})"),
            "tables[0] ('t0'): 'access_hist' must have 17 bins, got 1");
  EXPECT_EQ(parseError(R"({"tables": []})"),
            "task: 'tables' must be a non-empty array");
  EXPECT_EQ(parseError(R"({"batch_size": 0, "tables": []})"),
            "task: 'batch_size' must be positive, got 0");
  EXPECT_EQ(parseError(R"({"devices": 4})"),
            "task: unknown field 'devices' (expected one of: batch_size, "
            "topology, tables)");
  EXPECT_EQ(parseError("[1]"), "task: expected a JSON object at the top level");
  EXPECT_EQ(parseError("{").substr(0, 20), "task: invalid JSON: ");
  EXPECT_EQ(parseError(R"({"tables": [3]})"), "tables[0]: expected an object");
}

class PlanOutputTest : public ::testing::Test {
protected:
  void SetUp() override {
    tables = {makeTable("user", 1000, 64, 10), makeTable("item", 100, 8, 2),
              makeTable("geo", 10, 4, 1)};
    topology = Topology::uniform(2, 1);
    SearchOptions options;
    options.algorithm = Algorithm::TableGreedyGrid;
    Expected<PlanResult> planned =
        planSharding(tables, topology, options, model);
    ASSERT_EQ(errorMessage(planned), "");
    result = std::move(*planned);
  }

  std::vector<TableSpec> tables;
  Topology topology;
  AnalyticalCostModel model;
  PlanResult result;
};

TEST_F(PlanOutputTest, WritesTheDocumentedJSONSchema) {
  std::string text;
  raw_string_ostream os(text);
  writePlanJSON(os, tables, topology, result);
  Expected<json::Value> parsed = json::parse(text);
  ASSERT_EQ(errorMessage(parsed), "");
  const json::Object &plan = *parsed->getAsObject();
  std::vector<std::string> keys;
  for (const auto &entry : plan)
    keys.push_back(entry.first.str());
  llvm::sort(keys);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "algorithm", "cost_model", "cost_ms", "device_kind",
                      "devices", "devices_per_node", "host_memory", "imbalance",
                      "nodes", "optimizer", "per_device", "per_table",
                      "reserved_fraction", "search", "sharding_types", "shards",
                      "slowest_device", "warnings"}));
  EXPECT_EQ(plan.getInteger("slowest_device"),
            int64_t(slowestDevice(result.cost)));
  const json::Array &perTable = *plan.getArray("per_table");
  ASSERT_EQ(perTable.size(), tables.size());
  EXPECT_EQ(perTable[0].getAsObject()->getString("name"), tables[0].name);
  EXPECT_EQ(plan.getString("algorithm"), "table-greedy-grid");
  EXPECT_EQ(plan.getString("cost_model"), "analytical");
  EXPECT_EQ(plan.getInteger("devices"), 2);

  const json::Array &shards = *plan.getArray("shards");
  ASSERT_EQ(shards.size(), 3u);
  const json::Object &first = *shards[0].getAsObject();
  EXPECT_EQ(first.getString("table"), "user");
  EXPECT_EQ(first.getInteger("col_begin"), 0);
  EXPECT_EQ(first.getInteger("col_end"), 64);

  double maxTotal = 0;
  size_t listed = 0;
  for (const json::Value &device : *plan.getArray("per_device")) {
    const json::Object &entry = *device.getAsObject();
    int64_t index = *entry.getInteger("device");
    for (const char *key : {"memory_used_gb", "weights_gb", "capacity_gb",
                            "usable_gb", "compute_ms", "bw_comm_ms",
                            "fw_comm_ms", "wait_ms", "busy_ms", "total_ms"})
      EXPECT_TRUE(entry.getNumber(key)) << key;
    // The wait is part of the forward exchange; busy is the rest.
    EXPECT_LE(*entry.getNumber("wait_ms"), *entry.getNumber("fw_comm_ms"));
    EXPECT_NEAR(*entry.getNumber("busy_ms") + *entry.getNumber("wait_ms"),
                *entry.getNumber("total_ms"), 1e-4);
    maxTotal = std::max(maxTotal, *entry.getNumber("total_ms"));
    for (const json::Value &shard : *entry.getArray("shards")) {
      ++listed;
      EXPECT_EQ(
          shards[*shard.getAsInteger()].getAsObject()->getInteger("device"),
          index);
    }
  }
  EXPECT_EQ(listed, 3u);
  EXPECT_EQ(*plan.getNumber("cost_ms"), maxTotal);

  const json::Object &search = *plan.getObject("search");
  EXPECT_EQ(search.size(), 6u);
  EXPECT_EQ(search.getInteger("states_explored"), 1);
  EXPECT_EQ(search.getInteger("moves_tried"), int64_t(result.stats.movesTried));
  EXPECT_EQ(search.getInteger("moves_taken"), int64_t(result.stats.movesTaken));
  EXPECT_TRUE(search.getNumber("time_ms"));
  EXPECT_EQ(search.getInteger("cost_queries"),
            int64_t(result.stats.costQueries));
  EXPECT_EQ(search.getInteger("cache_hits"), int64_t(result.stats.cacheHits));
}

TEST_F(PlanOutputTest, PrintsOneRowPerDevice) {
  result.plan.shards = {
      {0, 0, 32, 0}, {0, 32, 64, 1}, {1, 0, 8, 1}, {2, 0, 4, 0}};
  std::string text;
  raw_string_ostream os(text);
  printPlanTable(os, tables, topology, result);
  EXPECT_NE(text.find("table-greedy-grid on 2 devices"), std::string::npos);
  EXPECT_NE(text.find("user[0:32], geo\n"), std::string::npos) << text;
  EXPECT_NE(text.find("user[32:64], item\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" / 1.00"), std::string::npos) << text;
}

// The star marks the device whose total is the plan's cost, which need not
// be the busiest: device 1 computes less but waits for device 0 at the
// forward exchange and then has the longer exchange of its own.
TEST_F(PlanOutputTest, MarksTheDeviceWhoseTotalIsTheCost) {
  result.cost.devices = {{1.2, 0.0, 0.01}, {0.5, 0.0, 1.3}};
  result.cost.maxMs = 1.8;
  EXPECT_EQ(slowestDevice(result.cost), 1u);
  EXPECT_EQ(planImbalance(result.cost).busiestDevice, 0u);
  std::string text;
  raw_string_ostream os(text);
  printPlanTable(os, tables, topology, result);
  EXPECT_NE(text.find("1.8000*"), std::string::npos) << text;
  EXPECT_EQ(text.find("1.2100*"), std::string::npos) << text;
  EXPECT_NE(text.find("the busiest device (0)"), std::string::npos) << text;
}

// Both formats the planner writes read back as the plan they describe.
TEST_F(PlanOutputTest, ReadsBackThePlansItWrites) {
  result.plan.shards = {
      {0, 0, 32, 0}, {0, 32, 64, 1}, {1, 0, 8, 1}, {2, 0, 4, 0}};
  for (bool torchrec : {false, true}) {
    Expected<PlanFile> plan = parsePlanJSON(
        writePlanText(tables, topology, result, torchrec), tables);
    ASSERT_EQ(errorMessage(plan), "") << torchrec;
    EXPECT_EQ(plan->devices, 2u);
    EXPECT_EQ(plan->plan.shards, result.plan.shards) << torchrec;
    EXPECT_EQ(plan->algorithm, torchrec
                                   ? std::nullopt
                                   : std::optional(Algorithm::TableGreedyGrid));
  }
}

std::string planFileError(StringRef text, ArrayRef<TableSpec> tables) {
  Expected<PlanFile> plan = parsePlanJSON(text, tables);
  return errorMessage(plan);
}

TEST_F(PlanOutputTest, NamesWhatIsWrongWithAPlanFile) {
  EXPECT_EQ(planFileError(R"({"shards": []})", tables),
            "plan: missing field 'devices'");
  EXPECT_EQ(planFileError(R"({"devices": 0, "shards": []})", tables),
            "plan: 'devices': the device count must be between 1 and 65536, "
            "got 0");
  EXPECT_EQ(planFileError(R"({"devices": 2, "shards": [], "plan": 1})", tables)
                .substr(0, 33),
            "plan: unknown field 'plan' (expec");
  EXPECT_EQ(planFileError(R"({"devices": 2, "shards": [{"table": "user",
      "col_begin": 0, "col_end": 64, "device": 2}]})",
                          tables),
            "plan: shards[0]: 'device' is 2 but the plan has 2 devices");
  EXPECT_EQ(planFileError(R"({"devices": 2, "shards": [{"table": "user",
      "col_begin": 0, "col_end": 64}]})",
                          tables),
            "plan: shards[0]: missing field 'device'");
  EXPECT_EQ(planFileError(R"({"devices": 2, "shards": [{"table": "zip",
      "col_begin": 0, "col_end": 64, "device": 0}]})",
                          tables),
            "plan: shards[0]: names table 'zip', which the task does not have");
  EXPECT_EQ(
      planFileError(R"({"format": "torchrec-2"})", tables),
      "plan: 'format' is \"torchrec-2\"; the plan formats are "
      "NeuroShard's plan JSON (no 'format') and \"neuroshard-torchrec-1\"");
  EXPECT_EQ(
      planFileError(R"({"format": "neuroshard-torchrec-1", "world_size": 2,
      "tables": {"user": {"sharding_type": "column_wise", "shards": [
        {"shard_offsets": [10, 0], "shard_sizes": [990, 64],
         "placement": "rank:0/cuda:0"}]}}})",
                    tables),
      "TorchRec plan: table 'user': shards[0]: covers rows [10, 1000) of the "
      "table's 1000; the shards of a column_wise table hold every row of "
      "their columns");
  EXPECT_EQ(
      planFileError(R"({"format": "neuroshard-torchrec-1", "world_size": 2,
      "tables": {"user": {"sharding_type": "table_wise", "ranks": [1],
        "shards": [{"shard_offsets": [0, 0], "shard_sizes": [1000, 64],
         "placement": "rank:0/cuda:0"}]}}})",
                    tables),
      "TorchRec plan: table 'user': shards[0]: is placed on rank 0 but "
      "'ranks' lists 1 for it");
}

// A plan is checked against the topology before it is priced, and the
// error names its source.
TEST_F(PlanOutputTest, ValidatesPlanFilesAgainstTheTopology) {
  PlanFile plan;
  plan.source = "p.json";
  plan.devices = 3;
  plan.plan = result.plan;
  EXPECT_EQ(errorMessage(validatePlanFile(tables, topology, plan)),
            "p.json: the plan is for 3 devices but the topology has 2");
  plan.devices = 2;
  EXPECT_EQ(errorMessage(validatePlanFile(tables, topology, plan)), "");
  plan.plan.shards.pop_back();
  EXPECT_EQ(errorMessage(validatePlanFile(tables, topology, plan)),
            "p.json: table 'geo': columns [0, 4) are on no device");
}

// Pricing the plan a search returned gives the search's costs exactly.
TEST_F(PlanOutputTest, PricingReproducesTheSearchCost) {
  PlanFile given;
  given.devices = topology.numDevices();
  given.plan = result.plan;
  given.algorithm = result.algorithm;
  Expected<PlanResult> priced = pricePlan(tables, topology, given, model);
  ASSERT_EQ(errorMessage(priced), "");
  EXPECT_FALSE(priced->searched);
  EXPECT_EQ(priced->cost.maxMs, result.cost.maxMs);
  ASSERT_EQ(priced->cost.devices.size(), result.cost.devices.size());
  for (auto [a, b] : zip_equal(priced->cost.devices, result.cost.devices)) {
    EXPECT_EQ(a.computeMs, b.computeMs);
    EXPECT_EQ(a.bwCommMs, b.bwCommMs);
    EXPECT_EQ(a.fwCommMs, b.fwCommMs);
  }
  EXPECT_EQ(planOriginName(*priced), "table-greedy-grid");
  given.algorithm = std::nullopt;
  priced = pricePlan(tables, topology, given, model);
  ASSERT_EQ(errorMessage(priced), "");
  EXPECT_EQ(planOriginName(*priced), "given");
}

} // namespace

// A table several features look up carries each feature's statistics.
TEST(ParseTaskTest, ReadsTheFeaturesOfASharedTable) {
  std::string task = formatv(R"({{"tables": [{{"name": "shared", "rows": 100,
      "dim": 8, "features": [
        {{"name": "clicks", "pooling_factor": 2.5, "access_hist": {0}},
        {{"pooling_factor": 1, "access_hist": {0}}]}]})",
                             kHist)
                         .str();
  Expected<PlanningTask> parsed = parseTaskJSON(task);
  ASSERT_EQ(errorMessage(parsed), "");
  const TableSpec &table = parsed->tables.front();
  EXPECT_EQ(table.numFeatures(), 2u);
  EXPECT_EQ(table.poolingFactor, 2.5);
  EXPECT_EQ(table.feature(1).poolingFactor, 1.0);
  EXPECT_EQ(table.feature(1).accessHist[0], 0.5);
  EXPECT_EQ(table.totalPoolingFactor(), 3.5);

  EXPECT_EQ(
      parseError(taskWithTable(
          formatv(
              R"(, "features": [{{"pooling_factor": 1, "access_hist": {0}}])",
              kHist)
              .str())),
      "tables[0] ('t0'): give 'pooling_factor' either for the table or "
      "per entry of 'features', not both");
  EXPECT_EQ(parseError(R"({"tables": [{"name": "t", "rows": 100, "dim": 8,
      "features": []}]})"),
            "tables[0] ('t'): 'features' must be a non-empty array of "
            "objects, got []");
  EXPECT_EQ(parseError(R"({"tables": [{"name": "t", "rows": 100, "dim": 8,
      "features": [{"pooling_factor": -1}]}]})"),
            "tables[0] ('t'): features[0]: " + *checkPoolingFactor(-1));
  EXPECT_EQ(parseError(R"({"tables": [{"name": "t", "rows": 100, "dim": 8,
      "features": [{"pooling_factor": 1, "weight": 2}]}]})"),
            "tables[0] ('t'): features[0]: unknown field 'weight' (expected "
            "one of: name, pooling_factor, access_hist, hist_batch_size, "
            "zipf_alpha)");
}
