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
  EXPECT_EQ(buffers.arenaSize, 1100);
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
  EXPECT_EQ(buffers.arenaSize, 1100);
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

} // namespace
