//===- KernelABITest.cpp - Packing and launching the fused kernels --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Checks the kernel ABI's packing against layouts computed by hand, its
// launch geometry at the edges, the parameter counts of its signatures, the
// block sizes its launch bounds allow and the checks of bag inputs.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/BagInputs.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <vector>

using namespace neuroshard::kernel_abi;

namespace {

struct Input {
  std::vector<int64_t> indices, offsets;
};

ShardDescriptor shard(int64_t table, int64_t rowStride, int64_t colBegin,
                      int64_t width, int64_t mode, size_t input) {
  ShardDescriptor s;
  s.table = table;
  s.rowStride = rowStride;
  s.colBegin = colBegin;
  s.width = width;
  s.mode = mode;
  s.input = input;
  return s;
}

// Two lookups of batch 2: three and two indices.
const Input kFirst = {{1, 2, 3}, {0, 1, 3}};
const Input kSecond = {{5, 6}, {0, 2, 2}};

TEST(KernelABI, AppendShardWritesTheFieldOrder) {
  std::vector<int64_t> meta = {42};
  appendShard(meta, shard(3, 16, 4, 8, kMean, 0), /*outColumn=*/12, {7, 9});
  std::vector<int64_t> expected = {42, 3, 16, 4, 8, 12, 7, 9, kMean};
  EXPECT_EQ(meta, expected);
  EXPECT_EQ(kShardFields, 8);
}

TEST(KernelABI, PoolingModes) {
  EXPECT_EQ(poolingMode(false), kSum);
  EXPECT_EQ(poolingMode(true), kMean);
}

TEST(KernelABI, PacksTwoInputPairs) {
  std::vector<ShardDescriptor> shards = {shard(0, 4, 0, 4, kSum, 0),
                                         shard(1, 8, 3, 2, kMean, 1)};
  PackedShardSet<int64_t> set = packShardSet<int64_t>(
      shards, std::vector<const Input *>{&kFirst, &kSecond});
  std::vector<int64_t> meta = {0, 4, 0, 4, 0, 0, 0, kSum, //
                               1, 8, 3, 2, 4, 3, 3, kMean};
  EXPECT_EQ(set.layout.meta, meta);
  EXPECT_EQ(set.layout.width, 6);
  EXPECT_EQ(set.layout.numShards(), 2);
  EXPECT_EQ(set.layout.inputs, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(set.indices, (std::vector<int64_t>{1, 2, 3, 5, 6}));
  EXPECT_EQ(set.offsets, (std::vector<int64_t>{0, 1, 3, 0, 2, 2}));
}

TEST(KernelABI, SplitTableSharesItsPairInOrderOfFirstUse) {
  // Table 0 (dim 8) split into two shards over pair 1, then table 1 over
  // pair 0: pair 1 is concatenated first, and once.
  std::vector<ShardDescriptor> shards = {shard(0, 8, 0, 4, kSum, 1),
                                         shard(0, 8, 4, 4, kSum, 1),
                                         shard(1, 2, 0, 2, kMean, 0)};
  PackedShardSet<int64_t> set = packShardSet<int64_t>(
      shards, std::vector<const Input *>{&kFirst, &kSecond});
  std::vector<int64_t> meta = {0, 8, 0, 4, 0, 0, 0, kSum, //
                               0, 8, 4, 4, 4, 0, 0, kSum, //
                               1, 2, 0, 2, 8, 2, 3, kMean};
  EXPECT_EQ(set.layout.meta, meta);
  EXPECT_EQ(set.layout.width, 10);
  EXPECT_EQ(set.layout.inputs, (std::vector<size_t>{1, 0}));
  ASSERT_EQ(set.layout.bases.size(), 2u);
  EXPECT_EQ(set.layout.bases[1].indices, 2);
  EXPECT_EQ(set.layout.bases[1].offsets, 3);
  EXPECT_EQ(set.indices, (std::vector<int64_t>{5, 6, 1, 2, 3}));
  EXPECT_EQ(set.offsets, (std::vector<int64_t>{0, 2, 2, 0, 1, 3}));
}

TEST(KernelABI, I32AndI64BuffersHoldTheSameLayout) {
  std::vector<ShardDescriptor> shards = {shard(0, 4, 0, 4, kSum, 1),
                                         shard(1, 4, 0, 4, kMean, 0)};
  std::vector<const Input *> inputs = {&kFirst, &kSecond};
  PackedShardSet<int64_t> wide = packShardSet<int64_t>(shards, inputs);
  PackedShardSet<int32_t> narrow = packShardSet<int32_t>(shards, inputs);
  EXPECT_EQ(narrow.layout.meta, wide.layout.meta);
  EXPECT_EQ(narrow.indices, (std::vector<int32_t>{5, 6, 1, 2, 3}));
  EXPECT_EQ(narrow.offsets, (std::vector<int32_t>{0, 2, 2, 0, 1, 3}));
}

TEST(KernelABI, LayoutFromSizesAlone) {
  // What the compiler does: sizes only, the indices' unknown (0 here).
  std::vector<ShardDescriptor> shards = {shard(2, 16, 0, 16, kSum, 0),
                                         shard(5, 4, 0, 4, kSum, 1)};
  ShardSetLayout layout = layoutShardSet(shards, {0, 0}, {65, 65});
  EXPECT_EQ(layout.meta[kShardFields + kOffsetsBase], 65);
  EXPECT_EQ(layout.meta[kShardFields + kOutColumn], 16);
  EXPECT_EQ(layout.meta[kShardFields + kIndicesBase], 0);
}

TEST(KernelABI, NoShardsPackNothing) {
  PackedShardSet<int64_t> set =
      packShardSet<int64_t>({}, std::vector<const Input *>{&kFirst});
  EXPECT_TRUE(set.layout.meta.empty());
  EXPECT_TRUE(set.indices.empty());
  EXPECT_EQ(set.layout.width, 0);
}

TEST(KernelABI, LaunchGeometryIsEmptyWithoutWork) {
  LaunchGeometry none = launchGeometry(0, 512);
  EXPECT_EQ(none.gridX, 0);
  EXPECT_EQ(none.gridY, 0);
  LaunchGeometry noBags = launchGeometry(3, 0);
  EXPECT_EQ(noBags.gridX, 0);
}

TEST(KernelABI, LaunchGeometryRoundsBagsUpToWholeBlocks) {
  int64_t warpsPerBlock = kThreadsPerBlock / kWarpSize; // 8
  LaunchGeometry exact = launchGeometry(2, 2 * warpsPerBlock);
  EXPECT_EQ(exact.gridX, 2);
  EXPECT_EQ(exact.gridY, 2);
  EXPECT_EQ(exact.blockX, kThreadsPerBlock);
  LaunchGeometry ragged = launchGeometry(2, 2 * warpsPerBlock + 1);
  EXPECT_EQ(ragged.gridX, 3);
  LaunchGeometry small = launchGeometry(1, 1);
  EXPECT_EQ(small.gridX, 1);
  // A runner may launch with another block size: 4 warps per block.
  LaunchGeometry narrow = launchGeometry(1, 9, /*threadsPerBlock=*/128);
  EXPECT_EQ(narrow.gridX, 3);
  EXPECT_EQ(narrow.blockX, 128);
}

TEST(KernelABI, LaunchGeometryCapsAtTheGridLimits) {
  int64_t warpsPerBlock = kThreadsPerBlock / kWarpSize;
  LaunchGeometry wide = launchGeometry(70000, kMaxGridX * warpsPerBlock + 1);
  EXPECT_EQ(wide.gridX, kMaxGridX);
  EXPECT_EQ(wide.gridY, kMaxGridY);
  LaunchGeometry atLimit = launchGeometry(kMaxGridY, kMaxGridX * warpsPerBlock);
  EXPECT_EQ(atLimit.gridX, kMaxGridX);
  EXPECT_EQ(atLimit.gridY, kMaxGridY);
}

TEST(KernelABI, SignaturesGiveTheLaunchParameters) {
  // Five 1-D memrefs (5 each) and one 2-D memref (7), then lr for backward.
  EXPECT_EQ(kForwardParams, 32);
  EXPECT_EQ(kBackwardParams, 33);
  EXPECT_EQ(numOperands(false), 6u);
  EXPECT_EQ(numOperands(true), 7u);
  EXPECT_EQ(kKernelOperands[kOutOperand].rank, 2);
  EXPECT_EQ(kKernelOperands[kLearningRateOperand].rank, 0);
  EXPECT_EQ(kKernelOperands[kIndicesOperand].element, ElementKind::Index);
}

TEST(KernelABI, BlockSizesAreWholeWarpsWithinTheLaunchBound) {
  EXPECT_EQ(blockSizeProblem(kThreadsPerBlock), "");
  EXPECT_EQ(blockSizeProblem(32), "");
  EXPECT_EQ(blockSizeProblem(48),
            "48 threads per block is not a positive multiple of the warp "
            "size 32 (each warp owns whole bags)");
  EXPECT_NE(blockSizeProblem(0), "");
  EXPECT_EQ(blockSizeProblem(kMaxThreadsPerBlock + 32),
            std::to_string(kMaxThreadsPerBlock + 32) +
                " threads per block exceeds the kernels' launch bound "
                "(.maxntid " +
                std::to_string(kMaxThreadsPerBlock) + ")");
  // The launch the compiler emits fits the register budget's assumption.
  EXPECT_LE(kThreadsPerBlock * kMinBlocksPerMultiprocessor * kRegisterBudget,
            kRegistersPerMultiprocessor);
}

std::string checkBags(const std::vector<int64_t> &offsets,
                      const std::vector<int64_t> &indices, int64_t rows = 10,
                      bool i32 = false) {
  return checkBagInputs("lookup x", offsets.data(), int64_t(offsets.size()),
                        indices.data(), int64_t(indices.size()),
                        int64_t(offsets.size()) - 1, rows, i32);
}

TEST(KernelABI, BagInputsAreChecked) {
  EXPECT_EQ(checkBags({0, 0, 2, 2}, {9, 9}), "");
  EXPECT_EQ(checkBags({0}, {}), "");
  EXPECT_EQ(checkBags({1, 2}, {0, 1}),
            "lookup x: offsets[0] is 1; offsets start at 0");
  EXPECT_EQ(checkBags({0, 5, 3, 5}, {0, 1, 2, 3, 4}),
            "lookup x: offsets[2] is 3, less than offsets[1] = 5; offsets "
            "must not decrease");
  EXPECT_EQ(checkBags({0, 1, 2}, {0, 1, 2}),
            "lookup x: offsets[2] is 2; the last offset must be the number "
            "of indices, 3");
  EXPECT_EQ(checkBags({0, 2}, {3, 10}),
            "lookup x: indices[1] is 10; the table has 10 rows");
  EXPECT_EQ(checkBags({0, 1}, {-4}),
            "lookup x: indices[0] is -4; the table has 10 rows");
  EXPECT_EQ(checkBags({0, 2147483648LL}, {}, 10, /*i32=*/true),
            "lookup x: offsets[1] is 2147483648, past what i32 offsets hold "
            "(2^31 - 1); use i64 indices");
  EXPECT_EQ(checkBags({0, 1}, {2147483648LL}, int64_t(1) << 40, true),
            "lookup x: indices[0] is 2147483648, past what i32 indices hold "
            "(2^31 - 1); use i64 indices");
  std::vector<int64_t> offsets = {0, 1}, indices = {0};
  EXPECT_EQ(checkBagInputs("lookup x", offsets.data(), 2, indices.data(), 1,
                           /*batch=*/3, 10, false),
            "lookup x: 2 offsets; expected the batch size + 1 = 4");
}

TEST(KernelABI, ArenaOffsetsAlignToACacheLine) {
  using neuroshard::kernel_abi::alignArenaOffset;
  EXPECT_EQ(alignArenaOffset(0), 0);
  EXPECT_EQ(alignArenaOffset(1), 16);
  EXPECT_EQ(alignArenaOffset(4), 16);
  EXPECT_EQ(alignArenaOffset(16), 16);
  EXPECT_EQ(alignArenaOffset(17), 32);
  EXPECT_EQ(alignArenaOffset(3006), 3008);
  static_assert(alignArenaOffset(5) * sizeof(float) % 64 == 0);
}

} // namespace
