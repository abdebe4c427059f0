//===- LaunchManifestTest.cpp - Kernel launches from a manifest -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA runner and the warp emulator both turn a manifest's launches
// into the kernel ABI's buffers with buildLaunch: shard slots or whole
// tables, rows capped for the emulator, inputs given or generated.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/LaunchManifest.h"

#include "gtest/gtest.h"

#include <algorithm>

using namespace neuroshard;
using namespace neuroshard::launch_manifest;

namespace {

/// Table `a` (100 x 8) split into two column shards over one lookup, and
/// table `b` (50 x 6) whole, on one i64 device; a second, i32 device holds
/// `b` alone.
const char *const kManifest = R"(neuroshard-cuda-manifest 2
module kernels.ptx ptx sm_90
kernels f32 f64 b32 b64
run 64 4 7 0.5
table a 100 8 3 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
table b 50 6 2 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
lookup 0 0
lookup 1 3
device 0 i64
shard 0 0 4 sum
shard 0 4 8 sum
shard 1 0 6 mean
device 1 i32
shard 1 0 6 sum
)";

Manifest parsed() {
  Manifest manifest;
  std::string error;
  EXPECT_TRUE(parseManifest(kManifest, "dir", manifest, error)) << error;
  return manifest;
}

const int64_t *shardFields(const LaunchBuffers &buffers, size_t shard) {
  return &buffers.packed.layout.meta[shard * kernel_abi::kShardFields];
}

TEST(LaunchManifestTest, ShardLayoutGivesEveryShardItsOwnSlot) {
  Manifest manifest = parsed();
  LaunchBuffers buffers;
  std::string error;
  ASSERT_TRUE(buildLaunch(manifest, 0, LaunchOptions(), buffers, error))
      << error;
  ASSERT_EQ(buffers.packed.layout.numShards(), 3);
  EXPECT_EQ(buffers.packed.layout.width, 14);
  EXPECT_EQ(buffers.layout, (std::vector<int64_t>{0, 400, 800}));
  EXPECT_EQ(buffers.slotRows, (std::vector<int64_t>{100, 100, 50}));
  // 50 x 6 after 800, rounded up to the arena alignment.
  EXPECT_EQ(buffers.arenaSize, kernel_abi::alignArenaOffset(1100));
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(shardFields(buffers, s)[kernel_abi::kTable], int64_t(s));
    EXPECT_EQ(shardFields(buffers, s)[kernel_abi::kColBegin], 0);
  }
  EXPECT_EQ(shardFields(buffers, 1)[kernel_abi::kRowStride], 4);
  EXPECT_EQ(shardFields(buffers, 2)[kernel_abi::kMode], kernel_abi::kMean);
  EXPECT_EQ(buffers.shardNames,
            (std::vector<std::string>{"a[0..4)", "a[4..8)", "b[0..6)"}));
  // The two shards of `a` read one lookup: its inputs are packed once.
  EXPECT_EQ(buffers.packed.layout.inputs, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(buffers.packed.offsets.size(), 2u * (4 + 1));
}

TEST(LaunchManifestTest, TableLayoutSharesASplitTable) {
  Manifest manifest = parsed();
  LaunchOptions options;
  options.layout = WeightLayout::Tables;
  LaunchBuffers buffers;
  std::string error;
  ASSERT_TRUE(buildLaunch(manifest, 0, options, buffers, error)) << error;
  EXPECT_EQ(buffers.layout, (std::vector<int64_t>{0, 800}));
  EXPECT_EQ(buffers.arenaSize, kernel_abi::alignArenaOffset(1100));
  EXPECT_EQ(shardFields(buffers, 1)[kernel_abi::kTable], 0);
  EXPECT_EQ(shardFields(buffers, 1)[kernel_abi::kRowStride], 8);
  EXPECT_EQ(shardFields(buffers, 1)[kernel_abi::kColBegin], 4);
  EXPECT_EQ(shardFields(buffers, 2)[kernel_abi::kTable], 1);
}

TEST(LaunchManifestTest, CappedRowsBoundTheArenaAndTheIndices) {
  Manifest manifest = parsed();
  LaunchOptions options;
  options.layout = WeightLayout::Tables;
  options.maxRows = 10;
  LaunchBuffers buffers;
  std::string error;
  ASSERT_TRUE(buildLaunch(manifest, 0, options, buffers, error)) << error;
  EXPECT_EQ(buffers.slotRows, (std::vector<int64_t>{10, 10}));
  // 10 x 8, then 10 x 6 rounded up to the arena alignment.
  EXPECT_EQ(buffers.layout, (std::vector<int64_t>{0, 80}));
  EXPECT_EQ(buffers.arenaSize, kernel_abi::alignArenaOffset(140));
  ASSERT_FALSE(buffers.packed.indices.empty());
  for (int64_t index : buffers.packed.indices)
    EXPECT_LT(index, 10);
  // The same generator as an uncapped launch, over the first rows only.
  EXPECT_EQ(lookupInputs(manifest, 0, {}, 10).offsets,
            inputs::generateLookup(manifest.tables[0], 4, 7, 0, 10).offsets);
}

TEST(LaunchManifestTest, GivenInputsReplaceGeneratedOnes) {
  Manifest manifest = parsed();
  InputOverrides given;
  given[1].offsets = {0, 1, 1, 2, 3};
  given[1].indices = {49, 0, 7};
  LaunchOptions options;
  options.given = &given;
  LaunchBuffers buffers;
  std::string error;
  ASSERT_TRUE(buildLaunch(manifest, 1, options, buffers, error)) << error;
  EXPECT_EQ(buffers.packed.indices, given[1].indices);
  EXPECT_EQ(buffers.packed.offsets, given[1].offsets);
  EXPECT_TRUE(checkLaunchInputs(manifest, given, 1, error)) << error;
  given[1].indices[0] = 50;
  EXPECT_FALSE(checkLaunchInputs(manifest, given, 1, error));
  EXPECT_NE(error.find("launch 1, lookup 1 (table b)"), std::string::npos)
      << error;
}

/// Version 3: table `a` (100 x 8) cut into rows [0, 30) and [30, 100) on
/// device 0 (the second of them also split by columns) and rows [30, 100)
/// again on device 1, beside `b` whole.
const char *const kRowManifest = R"(neuroshard-cuda-manifest 3
module kernels.ptx ptx sm_90
kernels f32 f64 b32 b64
run 64 16 7 0.5
table a 100 8 6 0.5 0.5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
table b 50 6 2 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
lookup 0 0
lookup 1 3
device 0 i64
shard 0 0 8 0 30 sum
shard 0 0 4 30 100 sum
shard 0 4 8 30 100 sum
device 1 i32
shard 1 0 6 0 50 mean
shard 0 0 8 30 100 sum
)";

Manifest parsedRows() {
  Manifest manifest;
  std::string error;
  EXPECT_TRUE(parseManifest(kRowManifest, "dir", manifest, error)) << error;
  return manifest;
}

/// The indices of bag `bag` in input pair `pair` of a launch, in order.
std::vector<int64_t> bagIndices(const LaunchBuffers &buffers, size_t pair,
                                int64_t bag) {
  const kernel_abi::PackedShardSet<int64_t> &set = buffers.packed;
  const kernel_abi::InputBase &base = set.layout.bases[pair];
  std::vector<int64_t> bagRows;
  for (int64_t i = set.offsets[size_t(base.offsets + bag)];
       i < set.offsets[size_t(base.offsets + bag + 1)]; ++i)
    bagRows.push_back(set.indices[size_t(base.indices + i)]);
  return bagRows;
}

TEST(LaunchManifestTest, VersionTwoShardsHoldEveryRow) {
  Manifest manifest = parsed();
  const ShardSpec &shard = manifest.launches[0].shards[0];
  EXPECT_EQ(shard.rowBegin, 0);
  EXPECT_EQ(shard.rowEnd, 100);
  EXPECT_FALSE(shard.isRowPiece(manifest.tables[0]));
}

TEST(LaunchManifestTest, RowPiecesReadTheirBlockOfTheLookup) {
  Manifest manifest = parsedRows();
  const ShardSpec &piece = manifest.launches[0].shards[1];
  EXPECT_EQ(piece.rowBegin, 30);
  EXPECT_EQ(piece.rowEnd, 100);
  EXPECT_TRUE(piece.isRowPiece(manifest.tables[0]));

  LaunchBuffers buffers;
  std::string error;
  ASSERT_TRUE(buildLaunch(manifest, 0, LaunchOptions(), buffers, error))
      << error;
  // Each piece is stored as its own rows; the two column shards of rows
  // [30, 100) read one block of the lookup.
  EXPECT_EQ(buffers.slotRows, (std::vector<int64_t>{30, 70, 70}));
  EXPECT_EQ(buffers.slotRowBegin, (std::vector<int64_t>{0, 30, 30}));
  EXPECT_EQ(buffers.packed.layout.inputs, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(shardFields(buffers, 1)[kernel_abi::kIndicesBase],
            shardFields(buffers, 2)[kernel_abi::kIndicesBase]);
  EXPECT_EQ(
      buffers.shardNames,
      (std::vector<std::string>{"a[0..8) rows 0..30", "a[0..4) rows 30..100",
                                "a[4..8) rows 30..100"}));

  // Bag by bag, the two blocks hold the lookup's indices inside their rows,
  // in order and shifted to local rows: neuroshard.bucketize's blocks.
  inputs::LookupInputs whole = lookupInputs(manifest, 0, {});
  size_t total = 0;
  for (int64_t bag = 0; bag < 16; ++bag) {
    std::vector<int64_t> low, high;
    for (int64_t i = whole.offsets[size_t(bag)];
         i < whole.offsets[size_t(bag + 1)]; ++i) {
      int64_t row = whole.indices[size_t(i)];
      (row < 30 ? low : high).push_back(row < 30 ? row : row - 30);
    }
    EXPECT_EQ(bagIndices(buffers, 0, bag), low) << "bag " << bag;
    EXPECT_EQ(bagIndices(buffers, 1, bag), high) << "bag " << bag;
    total += low.size() + high.size();
  }
  EXPECT_EQ(total, whole.indices.size());
  EXPECT_EQ(buffers.packed.indices.size(), whole.indices.size());
}

TEST(LaunchManifestTest, RowPiecesHaveTheirOwnTableSlot) {
  Manifest manifest = parsedRows();
  LaunchOptions options;
  options.layout = WeightLayout::Tables;
  LaunchBuffers buffers;
  std::string error;
  ASSERT_TRUE(buildLaunch(manifest, 0, options, buffers, error)) << error;
  EXPECT_EQ(buffers.slotRows, (std::vector<int64_t>{30, 70}));
  EXPECT_EQ(buffers.layout, (std::vector<int64_t>{0, 240}));
  EXPECT_EQ(shardFields(buffers, 2)[kernel_abi::kTable], 1);
  EXPECT_EQ(shardFields(buffers, 2)[kernel_abi::kColBegin], 4);
}

TEST(LaunchManifestTest, CappedRowsKeepThePiecesShare) {
  Manifest manifest = parsedRows();
  LaunchOptions options;
  options.maxRows = 10;
  LaunchBuffers buffers;
  std::string error;
  ASSERT_TRUE(buildLaunch(manifest, 0, options, buffers, error)) << error;
  // Rows [0, 30) and [30, 100) of 100 are rows [0, 3) and [3, 10) of the
  // 10 kept: the pieces still divide the lookup's indices.
  EXPECT_EQ(buffers.slotRows, (std::vector<int64_t>{3, 7, 7}));
  EXPECT_EQ(buffers.slotRowBegin, (std::vector<int64_t>{0, 3, 3}));
  EXPECT_EQ(buffers.packed.indices.size(),
            lookupInputs(manifest, 0, {}, 10).indices.size());
  for (int64_t bag = 0; bag < 16; ++bag) {
    for (int64_t row : bagIndices(buffers, 0, bag))
      EXPECT_LT(row, 3);
    for (int64_t row : bagIndices(buffers, 1, bag))
      EXPECT_LT(row, 7);
  }
}

/// The error of `manifest` with its first `from` replaced by `to`, which
/// must not parse.
std::string refusal(const std::string &manifest, const std::string &from,
                    const std::string &to) {
  std::string text = manifest;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  Manifest parsed;
  std::string error;
  EXPECT_FALSE(parseManifest(text, "", parsed, error)) << to;
  return error;
}

TEST(LaunchManifestTest, RowRangesAreChecked) {
  auto refuse = [](const std::string &from, const std::string &to) {
    return refusal(kRowManifest, from, to);
  };
  EXPECT_EQ(refuse("shard 0 0 8 0 30 sum", "shard 0 0 8 30 30 sum"),
            "line 10: shard covers rows 30 to 30 but table 'a' has 100 rows");
  EXPECT_EQ(refuse("shard 0 0 8 0 30 sum", "shard 0 0 8 0 101 sum"),
            "line 10: shard covers rows 0 to 101 but table 'a' has 100 rows");
  EXPECT_EQ(refuse("shard 0 0 8 0 30 sum", "shard 0 0 8 0 30 mean"),
            "line 10: shard of rows 0 to 30 of table 'a' pools with mean; a "
            "row piece pools with sum (the mean divides by the whole bag "
            "after the pieces' reduction)");
  EXPECT_EQ(refuse("shard 0 0 8 0 30 sum", "shard 0 0 8 sum"),
            "line 10: shard.row_begin is sum; expected an integer in 0 .. "
            "9007199254740992");
  EXPECT_EQ(refuse("shard 0 0 8 0 30 sum", "shard 0 0 8 0 30"),
            "line 10: shard has 5 field(s); expected 6 (lookup col_begin "
            "col_end row_begin row_end mode)");
  EXPECT_EQ(refuse("neuroshard-cuda-manifest 3", "neuroshard-cuda-manifest 6"),
            "line 1: version 6; this runner reads versions 2 to 5");
  // Version 4 gives every launch its bags.
  EXPECT_EQ(refuse("neuroshard-cuda-manifest 3", "neuroshard-cuda-manifest 4"),
            "line 9: device has 2 field(s); expected 4 (device index_type "
            "bag_begin bag_end)");
}

/// Table `a`'s lookup read whole by one launch and, as a replica, in two
/// slices of the batch's 16 bags by two others (version 4).
const char *const kReplicaManifest = R"(neuroshard-cuda-manifest 4
module kernels.ptx ptx sm_90
kernels f32 f64 b32 b64
run 64 16 7 0.5
table a 100 8 6 0.5 0.5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
lookup 0 0
device 0 i64 0 16
shard 0 0 8 0 100 sum
device 0 i64 0 6
shard 0 0 8 0 100 mean
device 1 i32 6 16
shard 0 0 8 0 100 mean
)";

TEST(LaunchManifestTest, ReplicasLookUpTheirSliceOfTheBags) {
  Manifest manifest;
  std::string error;
  ASSERT_TRUE(parseManifest(kReplicaManifest, "", manifest, error)) << error;
  ASSERT_EQ(manifest.launches.size(), 3u);
  EXPECT_FALSE(manifest.launches[0].isBatchSlice(16));
  EXPECT_TRUE(manifest.launches[2].isBatchSlice(16));
  inputs::LookupInputs whole = lookupInputs(manifest, 0, {});
  LaunchBuffers all, first, second;
  ASSERT_TRUE(buildLaunch(manifest, 0, LaunchOptions(), all, error)) << error;
  ASSERT_TRUE(buildLaunch(manifest, 1, LaunchOptions(), first, error)) << error;
  ASSERT_TRUE(buildLaunch(manifest, 2, LaunchOptions(), second, error))
      << error;
  EXPECT_EQ(all.batch, 16);
  EXPECT_EQ(all.bagBegin, 0);
  EXPECT_EQ(first.batch, 6);
  EXPECT_EQ(first.bagBegin, 0);
  EXPECT_EQ(second.batch, 10);
  EXPECT_EQ(second.bagBegin, 6);
  // Each slice's bags are the lookup's bags, with offsets from 0.
  EXPECT_EQ(first.packed.offsets.front(), 0);
  EXPECT_EQ(second.packed.offsets.front(), 0);
  for (int64_t bag = 0; bag < 16; ++bag) {
    std::vector<int64_t> expected(
        whole.indices.begin() + whole.offsets[size_t(bag)],
        whole.indices.begin() + whole.offsets[size_t(bag + 1)]);
    EXPECT_EQ(bagIndices(all, 0, bag), expected) << "bag " << bag;
    EXPECT_EQ(bag < 6 ? bagIndices(first, 0, bag)
                      : bagIndices(second, 0, bag - 6),
              expected)
        << "bag " << bag;
  }
  // At another batch a slice keeps its share of the bags.
  manifest.batchSize = 160;
  ASSERT_TRUE(buildLaunch(manifest, 2, LaunchOptions(), second, error))
      << error;
  EXPECT_EQ(second.bagBegin, 60);
  EXPECT_EQ(second.batch, 100);
  manifest.batchSize = 2;
  EXPECT_FALSE(buildLaunch(manifest, 1, LaunchOptions(), first, error));
  EXPECT_EQ(error, "launch 1 looks up bags 0 to 6 of 16, none of them at a "
                   "batch of 2");
}

TEST(LaunchManifestTest, BagRangesAreChecked) {
  auto refuse = [](const std::string &from, const std::string &to) {
    return refusal(kReplicaManifest, from, to);
  };
  EXPECT_EQ(refuse("device 1 i32 6 16", "device 1 i32 6 17"),
            "line 11: device.bag_end is 17; expected an integer in 7 .. 16");
  EXPECT_EQ(refuse("device 1 i32 6 16", "device 1 i32 6 6"),
            "line 11: device.bag_end is 6; expected an integer in 7 .. 16");
  EXPECT_EQ(refuse("device 1 i32 6 16", "device 1 i32 16 16"),
            "line 11: device.bag_begin is 16; expected an integer in 0 .. 15");
  EXPECT_EQ(refuse("device 1 i32 6 16", "device 1 i32 6"),
            "line 11: device has 3 field(s); expected 4 (device index_type "
            "bag_begin bag_end)");
  EXPECT_EQ(refuse("run 64 16 7 0.5\n", ""),
            "line 6: device before the run record, whose batch its bags are "
            "of");
}

/// Table `a` (100 x 8) in host memory: a column shard behind a cache of
/// 20 rows and a row piece behind one of 10, beside table `b` in device
/// memory (version 5).
const char *const kCacheManifest = R"(neuroshard-cuda-manifest 5
module kernels.ptx ptx sm_90
kernels f32 f64 b32 b64
run 64 16 7 0.5
table a 100 8 6 0.5 0.5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
table b 50 6 2 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
lookup 0 0
lookup 1 0
device 0 i64 0 16
shard 0 0 4 0 100 20 1.5 sum
shard 1 0 6 0 50 0 0 sum
shard 0 4 8 40 100 10 1.5 sum
)";

TEST(LaunchManifestTest, CachedShardsHoldTheirCacheOnTheDevice) {
  Manifest manifest;
  std::string error;
  ASSERT_TRUE(parseManifest(kCacheManifest, "", manifest, error)) << error;
  EXPECT_EQ(manifest.launches[0].shards[0].cacheRows, 20);
  EXPECT_EQ(manifest.launches[0].shards[0].skew, 1.5);
  EXPECT_FALSE(manifest.launches[0].shards[1].isCached());

  for (WeightLayout layout : {WeightLayout::Shards, WeightLayout::Tables}) {
    LaunchOptions options;
    options.layout = layout;
    LaunchBuffers buffers;
    ASSERT_TRUE(buildLaunch(manifest, 0, options, buffers, error)) << error;
    // Every shard its own slot (a cached one in either layout); the
    // reference's arena holds the cached shards' rows, the device's only
    // their caches.
    EXPECT_EQ(buffers.slotRows, (std::vector<int64_t>{100, 50, 60}));
    EXPECT_EQ(buffers.layout[1], kernel_abi::alignArenaOffset(400));
    EXPECT_EQ(buffers.deviceLayout,
              (std::vector<int64_t>{0, kernel_abi::alignArenaOffset(80),
                                    kernel_abi::alignArenaOffset(80) +
                                        kernel_abi::alignArenaOffset(300)}));
    EXPECT_EQ(buffers.deviceArenaSize,
              buffers.deviceLayout[2] + kernel_abi::alignArenaOffset(40));
    ASSERT_EQ(buffers.caches.size(), 2u);
    const CachedShard &column = buffers.caches[0], &piece = buffers.caches[1];
    EXPECT_EQ(column.shard, 0u);
    EXPECT_EQ(column.slot, 0);
    EXPECT_EQ(column.rows, 100);
    EXPECT_EQ(column.width, 4);
    EXPECT_EQ(column.cacheRows, 20);
    EXPECT_EQ(piece.shard, 2u);
    EXPECT_EQ(piece.rows, 60);
    EXPECT_EQ(piece.cacheRows, 10);
    EXPECT_EQ(shardFields(buffers, 2)[kernel_abi::kRowStride], 4);
    // Each cached shard reads its own pair: rows of its power law, as many
    // as its lookup (or its block of it) has, in the same bags.
    inputs::LookupInputs whole = lookupInputs(manifest, 0, {});
    EXPECT_EQ(column.count, int64_t(whole.indices.size()));
    EXPECT_EQ(shardFields(buffers, 0)[kernel_abi::kIndicesBase],
              column.indexBegin);
    std::vector<int64_t> rows(
        buffers.packed.indices.begin() + column.indexBegin,
        buffers.packed.indices.begin() + column.indexBegin + column.count);
    EXPECT_EQ(rows,
              inputs::zipfIndexStream(100, 1.5, column.count, column.seed));
    inputs::LookupInputs block = inputs::rowBlockInputs(whole, 40, 100);
    EXPECT_EQ(piece.count, int64_t(block.indices.size()));
    EXPECT_EQ(buffers.packed.layout.inputs.size(), 3u);
    EXPECT_NE(column.seed, piece.seed);
  }

  // Under a row cap a cache keeps its share of the rows.
  LaunchOptions capped;
  capped.maxRows = 10;
  LaunchBuffers buffers;
  ASSERT_TRUE(buildLaunch(manifest, 0, capped, buffers, error)) << error;
  EXPECT_EQ(buffers.caches[0].rows, 10);
  EXPECT_EQ(buffers.caches[0].cacheRows, 2);
  EXPECT_EQ(buffers.caches[1].rows, 6);
  EXPECT_EQ(buffers.caches[1].cacheRows, 1);
  for (int64_t row : buffers.packed.indices)
    EXPECT_LT(row, 10);

  // Given inputs are looked up as given.
  InputOverrides given;
  given[0].offsets.assign(17, 0);
  given[0].offsets.back() = 2;
  given[0].indices = {99, 3};
  LaunchOptions withInputs;
  withInputs.given = &given;
  ASSERT_TRUE(buildLaunch(manifest, 0, withInputs, buffers, error)) << error;
  EXPECT_FALSE(buffers.caches[0].drawn);
  EXPECT_EQ(buffers.packed.indices[size_t(buffers.caches[0].indexBegin)], 99);
}

TEST(LaunchManifestTest, CachesAreChecked) {
  auto refuse = [](const std::string &from, const std::string &to) {
    return refusal(kCacheManifest, from, to);
  };
  EXPECT_EQ(
      refuse("shard 0 4 8 40 100 10 1.5 sum", "shard 0 4 8 40 100 61 1.5 sum"),
      "line 12: shard of rows 40 to 100 of table 'a' has a cache of 61 "
      "rows but holds only 60");
  EXPECT_EQ(
      refuse("shard 0 0 4 0 100 20 1.5 sum", "shard 0 0 4 0 100 20 4.5 sum"),
      "line 10: shard.skew is 4.500000; expected a power law's exponent "
      "in [0, 4]");
  EXPECT_EQ(
      refuse("shard 0 0 4 0 100 20 1.5 sum", "shard 0 0 4 0 100 -1 1.5 sum"),
      "line 10: shard.cache_rows is -1; expected an integer in 0 .. "
      "9007199254740992");
  EXPECT_EQ(refuse("device 0 i64 0 16", "device 0 i32 0 16"),
            "line 10: device 0 uses i32 indices but its shard of table 'a' "
            "is cached: a fetch's locations reach host memory and need i64");
  EXPECT_EQ(refuse("shard 1 0 6 0 50 0 0 sum", "shard 1 0 6 0 50 0 0"),
            "line 11: shard has 7 field(s); expected 8 (lookup col_begin "
            "col_end row_begin row_end cache_rows skew mode)");
}

} // namespace
