//===- RecordedTimingsTest.cpp - Candidates timed on another machine ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Measured selection in two plannings around a timing elsewhere: the
// candidates' sets written for the runner, the runner's samples read back,
// and the choice made by them. The "runner" here is a formula written as
// samples: each slice costs width x pooling factor plus a price per slice
// the model does not know.
//
//===----------------------------------------------------------------------===//

#include "PlannerTestSupport.h"

#include "neuroshard/Runtime/LaunchManifest.h"
#include "neuroshard/Selection/RecordedTimings.h"
#include "neuroshard/Sharding/HostTier.h"
#include "neuroshard/Support/FileIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <fstream>
#include <map>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

std::string freshDirectory() {
  SmallString<128> dir;
  EXPECT_FALSE(sys::fs::createUniqueDirectory("neuroshard-recorded", dir));
  return std::string(dir);
}

std::string inDir(StringRef dir, StringRef name) {
  SmallString<128> path(dir);
  sys::path::append(path, name);
  return std::string(path);
}

std::string spell(StringRef name) { return "--" + name.str(); }

/// Plans hotAndCold on two GPUs (twoDevices: device kind "gpu") with
/// `request`.
Expected<PlanResult> planTwoGPUs(const VerifyRequest &request,
                                 SearchOptions search = SearchOptions()) {
  SliceCostModel model;
  return planWithVerification(hotAndCold(), twoDevices(), search, model,
                              request, spell);
}

/// The error of planTwoGPUs, "" for a plan.
std::string planError(const VerifyRequest &request,
                      SearchOptions search = SearchOptions()) {
  Expected<PlanResult> result = planTwoGPUs(request, search);
  return errorMessage(result);
}

/// Writes the runner's samples of every set of `dir`'s sets.json: each
/// slice costs width x pooling + `perSliceMs`, on `hardware`.
void writeSamples(StringRef dir, double perSliceMs,
                  StringRef hardware = "Test GPU", int64_t batch = 1024) {
  std::map<std::string, double> pooling;
  for (const TableSpec &table : hotAndCold())
    pooling[table.name] = table.poolingFactor;
  Expected<json::Value> sets = readJSONFile(inDir(dir, "sets.json"), "sets");
  ASSERT_TRUE(bool(sets)) << toString(sets.takeError());
  std::ofstream out(inDir(dir, "samples.jsonl"));
  for (const json::Value &set : *sets->getAsObject()->getArray("sets")) {
    const json::Object &object = *set.getAsObject();
    double ms = 0.0;
    for (const json::Value &slice : *object.getArray("slices")) {
      const json::Object &s = *slice.getAsObject();
      const json::Array &columns = *s.getArray("columns");
      ms += double(*columns[1].getAsInteger() - *columns[0].getAsInteger()) *
                pooling[s.getString("table")->str()] +
            perSliceMs;
    }
    for (const json::Value &launch : *object.getArray("launches"))
      out << formatv("{{\"id\": {0}, \"cost_ms\": {1}, \"min_ms\": {2}, "
                     "\"max_ms\": {3}, \"runs\": 12, \"device\": "
                     "\"cuda\", \"hardware\": \"{4}\", \"batch_size\": {5}, "
                     "\"tables\": {6}}\n",
                     *launch.getAsInteger(), ms, 0.9 * ms, 1.1 * ms, hardware,
                     batch, object.getArray("slices")->size())
                 .str();
  }
}

TEST(RecordedTimingsTest, DistinctSetsKeepRowBlocksOfOtherSizesApart) {
  // Two column halves of one table time alike; two row blocks of other
  // sizes do not.
  PlanCandidate columns, rows;
  columns.plan.shards = {{0, 0, 32, 0}, {0, 32, 64, 1}};
  rows.plan.shards = {{0, 0, 64, 0, 0, 600}, {0, 0, 64, 1, 600, 1000}};
  CandidateSets distinct = distinctDeviceSets({columns, rows}, 2);
  ASSERT_EQ(distinct.sets.size(), 3u);
  EXPECT_EQ(distinct.setOf[0][0], distinct.setOf[0][1]);
  EXPECT_NE(distinct.setOf[1][0], distinct.setOf[1][1]);
  EXPECT_EQ(distinct.sets[1].front().rowEnd, 600);
  EXPECT_EQ(distinct.sets[2].front().rowBegin, 600);
}

TEST(RecordedTimingsTest, DistinctSetsRunInTheFusedLookupsOrder) {
  // The same device sets, their shards listed in other orders: each set is
  // timed once, as its device's fused lookup runs it (whole tables and
  // column pieces by table, then row pieces), whichever order the
  // candidate lists it in.
  PlanCandidate placed, sorted;
  // Per shard: table, columns, device[, rows].
  placed.plan.shards = {
      {2, 0, 64, 1, 0, 500},    {3, 0, 16, 1}, {1, 32, 64, 1},
      {2, 0, 64, 0, 500, 1000}, {0, 0, 32, 0}, {1, 0, 32, 0},
  };
  sorted.plan.shards = {
      {0, 0, 32, 0},         {1, 0, 32, 0},
      {1, 32, 64, 1},        {2, 0, 64, 0, 500, 1000},
      {2, 0, 64, 1, 0, 500}, {3, 0, 16, 1},
  };
  CandidateSets distinct = distinctDeviceSets({placed, sorted}, 2);
  ASSERT_EQ(distinct.sets.size(), 2u);
  EXPECT_EQ(distinct.setOf[0], distinct.setOf[1]);
  auto tablesOf = [](ArrayRef<ColumnSlice> set) {
    std::vector<unsigned> tables;
    for (const ColumnSlice &slice : set)
      tables.push_back(slice.table);
    return tables;
  };
  const std::vector<ColumnSlice> &device0 =
      distinct.sets[*distinct.setOf[0][0]];
  const std::vector<ColumnSlice> &device1 =
      distinct.sets[*distinct.setOf[0][1]];
  EXPECT_EQ(tablesOf(device0), (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(tablesOf(device1), (std::vector<unsigned>{1, 3, 2}));
  EXPECT_FALSE(device1.back().allRows());
  EXPECT_TRUE(fusedOrder(device1[1], device1[2]));
  EXPECT_FALSE(fusedOrder(device1[2], device1[1]));
}

TEST(RecordedTimingsTest, ManifestDescribesEverySet) {
  std::vector<TableSpec> tables = hotAndCold();
  tables[1].moreFeatures.push_back({3.0, tables[1].accessHist});
  // Set 0: the hot table's columns 0-32 and a table two features look up;
  // set 1: rows 0-400 of c; set 2: so many indices that i32 offsets cannot
  // address them.
  std::vector<std::vector<ColumnSlice>> sets = {
      {{0, 0, 32}, {1, 0, 64}}, {{2, 0, 32, 0, 400}}, {{3, 0, 32}}};
  std::string text = setsManifest(tables, 1024, sets, "sm_90", 1);
  std::vector<TableSpec> huge = tables;
  huge[3].poolingFactor = 4e6;
  std::string hugeText = setsManifest(huge, 1024, sets, "sm_90", 1);
  for (bool wide : {false, true}) {
    const std::string &manifestText = wide ? hugeText : text;
    launch_manifest::Manifest manifest;
    std::string error;
    ASSERT_TRUE(
        launch_manifest::parseManifest(manifestText, "/k", manifest, error))
        << error << "\n"
        << manifestText;
    EXPECT_EQ(manifest.modulePath, "/k/kernels.cubin");
    EXPECT_EQ(manifest.chip, "sm_90");
    EXPECT_EQ(manifest.batchSize, 1024);
    // hot, b (feature 0), b (feature 1), c, d.
    ASSERT_EQ(manifest.tables.size(), 5u);
    ASSERT_EQ(manifest.lookups.size(), 5u);
    EXPECT_EQ(manifest.tables[2].poolingFactor, 3.0);
    ASSERT_EQ(manifest.launches.size(), 3u);
    const launch_manifest::LaunchSpec &first = manifest.launches[0];
    EXPECT_EQ(first.device, 0);
    ASSERT_EQ(first.shards.size(), 3u);
    EXPECT_EQ(first.shards[0].colEnd, 32);
    EXPECT_EQ(first.shards[1].lookup, 1u);
    EXPECT_EQ(first.shards[2].lookup, 2u);
    const launch_manifest::ShardSpec &rows = manifest.launches[1].shards[0];
    EXPECT_EQ(rows.rowBegin, 0);
    EXPECT_EQ(rows.rowEnd, 400);
    EXPECT_FALSE(manifest.launches[0].index64);
    EXPECT_EQ(manifest.launches[2].index64, wide);
  }
  // On two draws: launch 3 + s is set s again, its lookups those of
  // stream 1.
  launch_manifest::Manifest twice;
  std::string error;
  ASSERT_TRUE(launch_manifest::parseManifest(
      setsManifest(tables, 1024, sets, "sm_90", 2), "", twice, error))
      << error;
  ASSERT_EQ(twice.lookups.size(), 10u);
  ASSERT_EQ(twice.launches.size(), 6u);
  EXPECT_EQ(twice.launches[3].device, 3);
  EXPECT_EQ(twice.launches[3].shards.size(), 3u);
  EXPECT_EQ(twice.launches[3].shards[0].lookup, 5u);
  EXPECT_EQ(twice.lookups[5].table, 0u);
  EXPECT_EQ(twice.lookups[5].stream, 1u);
  EXPECT_EQ(twice.lookups[0].stream, 0u);

  // A shard of a host-memory table is timed behind its cache, looked up
  // by the power law the planner priced the cache with, on i64 indices.
  std::vector<TableSpec> cached = tables;
  cached[2].cacheFraction = 0.25;
  launch_manifest::Manifest withCache;
  ASSERT_TRUE(launch_manifest::parseManifest(
      setsManifest(cached, 1024, sets, "sm_90", 1), "", withCache, error))
      << error;
  const launch_manifest::ShardSpec &piece = withCache.launches[1].shards[0];
  EXPECT_EQ(piece.cacheRows, cached[2].cacheRows(400));
  Topology topology;
  topology.batchSize = 1024;
  EXPECT_DOUBLE_EQ(piece.skew, tablePopularityLaw(cached[2], topology));
  EXPECT_TRUE(withCache.launches[1].index64);
  EXPECT_FALSE(withCache.launches[0].shards[0].isCached());
}

// The first planning writes the candidates' sets; the second, with the
// runner's samples of them, chooses by those: with a price per slice the
// model does not know, a baseline's placement of whole tables wins; with
// none, the model's split.
TEST(RecordedTimingsTest, ChoosesByTheRecordedTimes) {
  std::string dir = freshDirectory();
  VerifyRequest request;
  request.exportDir = dir;
  Expected<PlanResult> exported = planTwoGPUs(request);
  ASSERT_EQ(errorMessage(exported), "");
  ASSERT_TRUE(exported->exported);
  EXPECT_FALSE(exported->verification);
  EXPECT_EQ(exported->exported->dir, dir);
  EXPECT_GE(exported->candidates.size(), 4u);
  EXPECT_TRUE(sys::fs::exists(inDir(dir, "sets.txt")));
  launch_manifest::Manifest manifest;
  std::string error;
  ASSERT_TRUE(
      launch_manifest::loadManifest(inDir(dir, "sets.txt"), manifest, error))
      << error;
  EXPECT_EQ(manifest.launches.size(),
            kDefaultInputDraws * exported->exported->sets);

  VerifyRequest timed;
  timed.timingsDir = dir;
  timed.experience = "none";
  for (double perSliceMs : {1000.0, 0.0}) {
    writeSamples(dir, perSliceMs);
    Expected<PlanResult> result = planTwoGPUs(timed);
    ASSERT_EQ(errorMessage(result), "");
    ASSERT_TRUE(result->verification);
    const PlanVerification &verification = *result->verification;
    EXPECT_EQ(verification.host, "Test GPU");
    EXPECT_EQ(verification.device, "cuda");
    EXPECT_EQ(verification.rounds, 1u);
    EXPECT_EQ(verification.sets.size(), exported->exported->sets);
    // Every set timed on 3 draws of 12 runs each.
    for (const TimedSet &set : verification.sets) {
      EXPECT_EQ(set.runs, 36u);
      EXPECT_DOUBLE_EQ(set.minMs, 0.9 * set.medianMs);
    }
    // The same candidates as the first planning.
    ASSERT_EQ(result->candidates.size(), exported->candidates.size());
    for (auto [a, b] : zip_equal(result->candidates, exported->candidates))
      EXPECT_TRUE(a.plan.shards == b.plan.shards);
    const PlanCandidate &incumbent = result->candidates[verification.incumbent];
    EXPECT_EQ(incumbent.origin, "table-greedy-grid");
    // The chosen plan measured fastest, and splits a table only where
    // splits cost nothing beyond what the model knows.
    const CandidateMeasurement &chosen =
        verification.candidates[verification.chosen];
    for (const CandidateMeasurement &candidate : verification.candidates)
      EXPECT_LE(chosen.measured.maxMs, candidate.measured.maxMs);
    bool splits = false;
    for (const Shard &shard :
         result->candidates[verification.chosen].plan.shards)
      splits |= shard.width() != hotAndCold()[shard.table].dim;
    EXPECT_EQ(splits, perSliceMs == 0.0);
    EXPECT_NE(verification.chosen, verification.incumbent);
    EXPECT_LT(chosen.pairedRatio, 0.98);
    EXPECT_TRUE(result->plan.shards ==
                result->candidates[verification.chosen].plan.shards);
  }
  sys::fs::remove_directories(dir);
}

TEST(RecordedTimingsTest, RequestErrors) {
  VerifyRequest both;
  both.exportDir = both.timingsDir = "x";
  EXPECT_EQ(planError(both),
            "--verify-export and --verify-timings are two steps: write the "
            "candidates' sets with the first, time them, then plan again "
            "with the second");
  VerifyRequest none;
  none.exportDir = "x";
  none.top = 0;
  EXPECT_EQ(planError(none),
            "--verify-top: --verify-export needs candidates, but none are "
            "kept with 0");
  SearchOptions greedy;
  greedy.algorithm = Algorithm::SizeGreedy;
  none.top = std::nullopt;
  EXPECT_EQ(planError(none, greedy),
            "--verify-top: verifying candidates needs the neuroshard "
            "algorithm, which keeps them; size-greedy makes one plan");
}

TEST(RecordedTimingsTest, RecordedErrorsNameTheFileAndTheSet) {
  std::string dir = freshDirectory();
  VerifyRequest request;
  request.exportDir = dir;
  ASSERT_EQ(planError(request), "");
  std::string samples = inDir(dir, "samples.jsonl");
  auto loadError = [&] {
    return errorMessage(RecordedSetTimer::load(dir).takeError());
  };
  EXPECT_NE(loadError().find("cannot read the samples '" + samples + "'"),
            std::string::npos)
      << loadError();

  // A set left out: the run was cut.
  writeSamples(dir, 0.0);
  std::vector<std::string> lines;
  {
    std::ifstream in(samples);
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
  }
  ASSERT_GE(lines.size(), 2u);
  auto rewrite = [&](ArrayRef<std::string> kept) {
    std::ofstream out(samples);
    for (const std::string &line : kept)
      out << line << "\n";
  };
  // Three draws of each set: launch 3 x sets - 1 is the last set's third.
  size_t numSets = lines.size() / kDefaultInputDraws;
  ASSERT_EQ(lines.size(), kDefaultInputDraws * numSets);
  rewrite(ArrayRef(lines).drop_back());
  EXPECT_EQ(loadError(),
            formatv("set {0} of '{1}' has no timing of its launch {2} in "
                    "'{3}' ({2} of {4} launches timed): run the runner's "
                    "collection again, it resumes",
                    numSets - 1, inDir(dir, "sets.json"), lines.size() - 1,
                    samples, lines.size())
                .str());
  // A set twice, a set that was not written, another batch, another GPU.
  std::vector<std::string> twice = lines;
  twice.push_back(lines.front());
  rewrite(twice);
  EXPECT_EQ(loadError(), formatv("samples '{0}' line {1}: launch 0 was timed "
                                 "twice",
                                 samples, lines.size() + 1)
                             .str());
  rewrite({"{\"id\": 99, \"cost_ms\": 1}"});
  EXPECT_EQ(loadError(),
            formatv("samples '{0}' line 1: launch 99 is not among the {1} "
                    "launches of '{2}'",
                    samples, lines.size(), inDir(dir, "sets.json"))
                .str());
  writeSamples(dir, 0.0, "Test GPU", 4096);
  EXPECT_EQ(loadError(), formatv("samples '{0}' line 1: launch 0 was timed "
                                 "at batch 4096, but the sets are of batch "
                                 "1024",
                                 samples)
                             .str());
  writeSamples(dir, 0.0);
  {
    std::ifstream in(samples);
    lines.clear();
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
  }
  std::string other = lines[1];
  other.replace(other.find("Test GPU"), 8, "Other GPU");
  rewrite({lines[0], other});
  EXPECT_EQ(loadError(),
            formatv("samples '{0}' line 2: timed on 'Other GPU', but the "
                    "lines before on 'Test GPU': the sets of one planning "
                    "are timed on one kind of hardware",
                    samples)
                .str());
  // A field of the wrong kind names the line, the field and its value.
  std::string negative = lines[0];
  size_t cost = negative.find("\"cost_ms\": ") + 11;
  negative.replace(cost, negative.find(',', cost) - cost, "-1");
  rewrite({negative});
  EXPECT_EQ(loadError(), formatv("samples '{0}' line 1: 'cost_ms' must be a "
                                 "number of at least 0, got -1",
                                 samples)
                             .str());
  rewrite({"{\"id\": 0, \"batch_size\": 1024}"});
  EXPECT_EQ(
      loadError(),
      formatv("samples '{0}' line 1: missing field 'cost_ms'", samples).str());
  rewrite({"not json"});
  EXPECT_NE(loadError().find(formatv("samples '{0}' line 1: ", samples).str()),
            std::string::npos);

  // Timings of another planning (another batch; other tables) are refused
  // by name.
  writeSamples(dir, 0.0);
  Expected<std::unique_ptr<RecordedSetTimer>> timer =
      RecordedSetTimer::load(dir);
  ASSERT_EQ(errorMessage(timer), "");
  std::vector<TableSpec> tables = hotAndCold();
  std::vector<std::vector<ColumnSlice>> sets = {{{0, 0, 64}}};
  EXPECT_EQ(errorMessage((*timer)->prepare(tables, 4096, sets)),
            formatv("the sets in '{0}' were timed at batch 1024, but the plan "
                    "is for batch 4096",
                    dir)
                .str());
  tables[0].name = "other";
  EXPECT_EQ(errorMessage((*timer)->prepare(tables, 1024, sets)),
            formatv("device set 0 of the candidates (other[0:64, rows "
                    "0:1000]) is not among the {0} sets timed in '{1}': plan "
                    "with the task and options that wrote them",
                    numSets, dir)
                .str());

  // A sets file of something else.
  std::ofstream(inDir(dir, "sets.json")) << "{\"format\": \"plan\"}\n";
  EXPECT_EQ(loadError(), formatv("sets '{0}': 'format' is 'plan', expected "
                                 "'neuroshard-verify-sets'",
                                 inDir(dir, "sets.json"))
                             .str());
  sys::fs::remove_directories(dir);
}

} // namespace
