//===- KernelReferenceTest.cpp - CPU kernels against LibTorch -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The generic CPU kernels (forward and backward-SGD) on random shard sets
// against LibTorch: `embedding_bag` for the forward pass and `index_add_` of
// the per-index gradients for the update. Cases cover widths 1..256, 1..20
// shards, empty bags, repeated indices, i32 and i64 indices, sum and mean.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "llvm/ADT/STLExtras.h"

#include "gtest/gtest.h"
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

using namespace neuroshard;
using namespace neuroshard::execution;

namespace {

struct RandomShard {
  std::vector<float> weights;
  int64_t rows = 0, width = 0, mode = 0;
  inputs::LookupInputs in;
};

double relativeError(const torch::Tensor &actual, const torch::Tensor &ref) {
  double scale = ref.abs().max().item<double>();
  double diff = (actual - ref).abs().max().item<double>();
  return scale == 0.0 ? diff : diff / scale;
}

torch::Tensor asTensor(const std::vector<float> &v, int64_t rows,
                       int64_t cols) {
  return torch::from_blob(const_cast<float *>(v.data()), {rows, cols},
                          torch::kFloat32)
      .clone();
}

torch::Tensor asTensor(const std::vector<int64_t> &v) {
  return torch::from_blob(const_cast<int64_t *>(v.data()),
                          {static_cast<int64_t>(v.size())}, torch::kInt64)
      .clone();
}

class KernelReference : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    auto compiled = CPUKernels::compile();
    ASSERT_TRUE(static_cast<bool>(compiled))
        << llvm::toString(compiled.takeError());
    kernels = std::move(*compiled);
  }
  static void TearDownTestSuite() { kernels.reset(); }
  static std::unique_ptr<CPUKernels> kernels;
};

std::unique_ptr<CPUKernels> KernelReference::kernels;

/// Draws case `c`: a shard set with its inputs.
std::vector<RandomShard> randomCase(uint64_t c, int64_t &batch, bool &useI32) {
  inputs::Random random(inputs::mixSeed(2023, c));
  batch = 1 + static_cast<int64_t>(random.below(48));
  useI32 = random.below(2) == 0;
  int64_t numShards = 1 + static_cast<int64_t>(random.below(20));
  std::vector<RandomShard> shards(static_cast<size_t>(numShards));
  for (RandomShard &shard : shards) {
    // Mostly multiples of 4 (split tables), sometimes any width.
    shard.width = random.below(3) == 0
                      ? 1 + static_cast<int64_t>(random.below(256))
                      : 4 * (1 + static_cast<int64_t>(random.below(64)));
    // Few rows: repeated indices in and across bags are common.
    shard.rows = 1 + static_cast<int64_t>(random.below(300));
    shard.mode = static_cast<int64_t>(random.below(2));
    shard.weights.resize(static_cast<size_t>(shard.rows * shard.width));
    inputs::fillWeights(random.next(), shard.rows, 0, shard.width,
                        shard.weights.data(), shard.width);
    shard.in.offsets.push_back(0);
    for (int64_t b = 0; b < batch; ++b) {
      // A quarter of the bags are empty.
      int64_t length =
          random.below(4) == 0 ? 0 : static_cast<int64_t>(random.below(12));
      for (int64_t k = 0; k < length; ++k)
        shard.in.indices.push_back(static_cast<int64_t>(
            random.below(static_cast<uint64_t>(shard.rows))));
      shard.in.offsets.push_back(static_cast<int64_t>(shard.in.indices.size()));
    }
  }
  return shards;
}

TEST_F(KernelReference, ForwardAndBackwardMatchLibTorch) {
  const float lr = 0.05f;
  int sawI32 = 0, sawI64 = 0, sawEmpty = 0, sawMean = 0, sawOddWidth = 0;
  for (uint64_t c = 0; c < 60; ++c) {
    int64_t batch;
    bool useI32;
    std::vector<RandomShard> shards = randomCase(c, batch, useI32);
    std::vector<KernelShard> views;
    for (const RandomShard &shard : shards)
      views.push_back({shard.weights.data(), shard.rows, shard.width,
                       shard.mode, &shard.in});
    PreparedSet set =
        CPUKernels::prepare(views, batch, /*gradientSeed=*/c, useI32);
    kernels->forward(set);
    torch::Tensor output = asTensor(set.output, batch, set.width);
    torch::Tensor gradient = asTensor(set.gradient, batch, set.width);
    kernels->backward(set, lr);
    (useI32 ? sawI32 : sawI64)++;

    int64_t column = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
      const RandomShard &shard = shards[s];
      sawMean += shard.mode == kernel_abi::kMean;
      sawOddWidth += shard.width % 4 != 0;
      for (size_t b = 0; b + 1 < shard.in.offsets.size(); ++b)
        sawEmpty += shard.in.offsets[b] == shard.in.offsets[b + 1];
      torch::Tensor weight = asTensor(shard.weights, shard.rows, shard.width);
      torch::Tensor indices = asTensor(shard.in.indices);
      torch::Tensor offsets = asTensor(shard.in.offsets);
      if (useI32) {
        indices = indices.to(torch::kInt32);
        offsets = offsets.to(torch::kInt32);
      }
      torch::Tensor expected = std::get<0>(torch::embedding_bag(
          weight, indices, offsets, /*scale_grad_by_freq=*/false,
          /*mode=*/shard.mode, /*sparse=*/false, /*per_sample_weights=*/{},
          /*include_last_offset=*/true));
      torch::Tensor actual = output.narrow(1, column, shard.width).contiguous();
      EXPECT_LE(relativeError(actual, expected), 1e-5)
          << "case " << c << " shard " << s << " forward";

      // Reference update: every index moves its row by -lr * grad / scale.
      torch::Tensor lengths =
          (offsets.narrow(0, 1, batch) - offsets.narrow(0, 0, batch))
              .to(torch::kInt64);
      torch::Tensor bagOfIndex = torch::repeat_interleave(lengths);
      torch::Tensor scale = shard.mode == kernel_abi::kMean
                                ? lengths.clamp_min(1).to(torch::kFloat32)
                                : torch::ones({batch}, torch::kFloat32);
      torch::Tensor perIndex =
          gradient.narrow(1, column, shard.width).index_select(0, bagOfIndex) /
          scale.index_select(0, bagOfIndex).unsqueeze(1);
      torch::Tensor updated = weight.clone().index_add_(
          0, indices.to(torch::kInt64), perIndex * -lr);
      std::vector<float> ours(set.weights.begin() + set.layout[s],
                              set.weights.begin() + set.layout[s] +
                                  shard.rows * shard.width);
      EXPECT_LE(relativeError(asTensor(ours, shard.rows, shard.width), updated),
                1e-5)
          << "case " << c << " shard " << s << " backward";
      column += shard.width;
    }
  }
  // The random cases reach every feature the test is about.
  EXPECT_GT(sawI32, 0);
  EXPECT_GT(sawI64, 0);
  EXPECT_GT(sawEmpty, 0);
  EXPECT_GT(sawMean, 0);
  EXPECT_GT(sawOddWidth, 0);
}

TEST_F(KernelReference, RepeatedIndexInOneBagUpdatesTwice) {
  RandomShard shard;
  shard.rows = 3;
  shard.width = 4;
  shard.weights.assign(12, 0.0f);
  shard.in.indices = {1, 1};
  shard.in.offsets = {0, 2};
  std::vector<KernelShard> views = {{shard.weights.data(), shard.rows,
                                     shard.width, kernel_abi::kSum, &shard.in}};
  PreparedSet set = CPUKernels::prepare(views, 1, 7);
  set.gradient.assign(4, 1.0f);
  kernels->backward(set, 0.5f);
  for (int c = 0; c < 4; ++c) {
    EXPECT_FLOAT_EQ(set.weights[4 + c], -1.0f);
    EXPECT_FLOAT_EQ(set.weights[c], 0.0f);
  }
}

TEST(PackIndices, TableBasesSitOnCacheLinesAsInARun) {
  // 3 x 4, 5 x 16 and 2 x 8 floats: packed one after the other, the second
  // table would start 12 floats (48 bytes) into a line.
  std::vector<RandomShard> shards(3);
  int64_t shapes[3][2] = {{3, 4}, {5, 16}, {2, 8}};
  std::vector<KernelShard> views;
  for (auto [shard, shape] : llvm::zip_equal(shards, shapes)) {
    shard.rows = shape[0];
    shard.width = shape[1];
    shard.in.indices = {0};
    shard.in.offsets = {0, 1};
    views.push_back(
        {nullptr, shard.rows, shard.width, kernel_abi::kSum, &shard.in});
  }
  PreparedSet set;
  EXPECT_EQ(CPUKernels::packIndices(set, views, 1), 96 + 16);
  EXPECT_EQ(set.layout, (std::vector<int64_t>{0, 16, 96}));
  for (int64_t base : set.layout)
    EXPECT_EQ(base, kernel_abi::alignArenaOffset(base));
  // Packed, as sets were timed before table bases were aligned.
  EXPECT_EQ(CPUKernels::packIndices(set, views, 1, /*indicesAreI32=*/false,
                                    /*tableAlignment=*/1),
            92 + 16);
  EXPECT_EQ(set.layout, (std::vector<int64_t>{0, 12, 92}));
}

TEST_F(KernelReference, LentBuffersComputeWhatOwnBuffersDo) {
  for (uint64_t c = 0; c < 8; ++c) {
    int64_t batch = 0;
    bool useI32 = false;
    std::vector<RandomShard> shards = randomCase(c, batch, useI32);
    std::vector<KernelShard> views;
    for (RandomShard &shard : shards)
      views.push_back({shard.weights.data(), shard.rows, shard.width,
                       shard.mode, &shard.in});
    PreparedSet own = CPUKernels::prepare(views, batch, 11, useI32);

    // The same set with its weights, output and gradient lent, in buffers
    // larger than it needs, as a caller that serves many sets lends them.
    PreparedSet lent;
    int64_t arena = CPUKernels::packIndices(lent, views, batch, useI32);
    EXPECT_TRUE(lent.output.empty());
    EXPECT_TRUE(lent.gradient.empty());
    ASSERT_EQ(arena, int64_t(own.weights.size()));
    ASSERT_EQ(lent.width, own.width);
    std::vector<float> weights(own.weights.begin(), own.weights.end());
    weights.resize(weights.size() + 64, 0.0f);
    size_t used = size_t(batch * lent.width);
    std::vector<float> output(used + 64, 0.0f), gradient(used + 64, 0.0f);
    CPUKernels::fillGradient(gradient, batch, lent.width, 11);
    lent.sharedWeights = weights;
    lent.sharedOutput = llvm::MutableArrayRef<float>(output.data(), used);
    lent.sharedGradient = llvm::MutableArrayRef<float>(gradient.data(), used);
    EXPECT_TRUE(
        std::equal(own.gradient.begin(), own.gradient.end(), gradient.begin()))
        << "case " << c;

    kernels->forward(own);
    kernels->backward(own, 0.25f);
    kernels->forward(lent);
    kernels->backward(lent, 0.25f);
    EXPECT_TRUE(
        std::equal(own.output.begin(), own.output.end(), output.begin()))
        << "case " << c << " forward";
    EXPECT_TRUE(
        std::equal(own.weights.begin(), own.weights.end(), weights.begin()))
        << "case " << c << " update";
    // Nothing past the lent parts is written.
    EXPECT_TRUE(std::all_of(output.begin() + used, output.end(),
                            [](float x) { return x == 0.0f; }));
    EXPECT_TRUE(std::all_of(weights.end() - 64, weights.end(),
                            [](float x) { return x == 0.0f; }));
  }
}

} // namespace
