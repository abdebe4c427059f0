//===- CachedKernelTest.cpp - The generic kernels through a row cache -----===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A shard in host memory runs the same generic kernels as any other
// (Runtime/RowCache.h): they read a virtual table whose first rows are the
// device cache and whose other rows are the shard in host memory, at the
// locations the cache gives. Steps of forward and backward-SGD through the
// cache must give the results and, once the cache is flushed, the weights
// that the same steps give on the shard itself, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/RowCache.h"

#include "gtest/gtest.h"

#include <set>

using namespace neuroshard;
using namespace neuroshard::execution;
using namespace neuroshard::runtime;

namespace {

/// Bags of 0 to 24 indices, drawn from one popularity for all steps so that
/// the steps share their hot rows.
std::vector<inputs::LookupInputs> drawSteps(int64_t rows, int64_t batch,
                                            int64_t steps) {
  std::vector<int64_t> stream =
      inputs::zipfIndexStream(rows, 1.1, steps * batch * 24, 5);
  std::vector<inputs::LookupInputs> all(static_cast<size_t>(steps));
  size_t next = 0;
  for (int64_t step = 0; step < steps; ++step) {
    inputs::LookupInputs &in = all[size_t(step)];
    in.offsets.push_back(0);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t length = (b * 7 + step * 3) % 25;
      for (int64_t k = 0; k < length; ++k)
        in.indices.push_back(stream[next++]);
      in.offsets.push_back(static_cast<int64_t>(in.indices.size()));
    }
  }
  return all;
}

class CachedKernelTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    auto compiled = CPUKernels::compile();
    ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
    kernels = std::move(*compiled);
  }
  static void TearDownTestSuite() { kernels.reset(); }
  static std::unique_ptr<CPUKernels> kernels;
};
std::unique_ptr<CPUKernels> CachedKernelTest::kernels;

TEST_F(CachedKernelTest, StepsThroughTheCacheEqualStepsOnTheShard) {
  const int64_t rows = 20000, width = 20, batch = 96, steps = 8;
  for (int64_t mode : {kernel_abi::kSum, kernel_abi::kMean})
    for (bool i32 : {false, true})
      for (int64_t slots : {int64_t(64), int64_t(1500)}) {
        SCOPED_TRACE(std::string(mode == kernel_abi::kSum ? "sum" : "mean") +
                     (i32 ? " i32" : " i64") + ", " + std::to_string(slots) +
                     " slots");
        // The shard alone, and the virtual table of the cache's slots then
        // the shard's rows, with the same weights.
        runtime::WeightVector direct(size_t(rows * width));
        for (size_t e = 0; e < direct.size(); ++e)
          direct[e] = 0.001f * float(e % 977) - 0.4f;
        runtime::WeightVector virtualTable(size_t((slots + rows) * width),
                                           0.0f);
        std::copy(direct.begin(), direct.end(),
                  virtualTable.begin() + slots * width);
        RowCacheStorage storage{virtualTable.data(),
                                width,
                                virtualTable.data() + slots * width,
                                width,
                                0,
                                width};
        RowCache cache(rows, slots);

        std::vector<inputs::LookupInputs> drawn = drawSteps(rows, batch, steps);
        std::set<int64_t> distinct;
        for (const inputs::LookupInputs &in : drawn)
          distinct.insert(in.indices.begin(), in.indices.end());
        ASSERT_GT(int64_t(distinct.size()), slots);

        for (int64_t step = 0; step < steps; ++step) {
          const inputs::LookupInputs &in = drawn[size_t(step)];
          inputs::LookupInputs located = in;
          cache.beginStep();
          ASSERT_FALSE(cache.fetch(in.indices.data(),
                                   int64_t(in.indices.size()),
                                   located.indices.data(), storage,
                                   /*write=*/true));
          PreparedSet onShard, throughCache;
          CPUKernels::packInputs(onShard, {{nullptr, rows, width, mode, &in}},
                                 batch, /*gradientSeed=*/step, i32);
          CPUKernels::packInputs(
              throughCache, {{nullptr, slots + rows, width, mode, &located}},
              batch,
              /*gradientSeed=*/step, i32);
          onShard.sharedWeights = direct;
          throughCache.sharedWeights = virtualTable;
          kernels->forward(onShard);
          kernels->forward(throughCache);
          ASSERT_EQ(throughCache.output, onShard.output) << "step " << step;
          kernels->backward(onShard, 0.3f);
          kernels->backward(throughCache, 0.3f);
        }
        cache.flush(storage);
        EXPECT_TRUE(std::equal(direct.begin(), direct.end(),
                               virtualTable.begin() + slots * width));
        const RowCacheStats &stats = cache.stats();
        EXPECT_GT(stats.evictions, 0);
        EXPECT_GT(stats.writeBacks, 0);
        EXPECT_GT(stats.hits, 0);
        // 64 slots are fewer than a step's distinct rows: some are read
        // where they are.
        if (slots == 64) {
          EXPECT_GT(stats.readThrough, 0);
        }
      }
}

} // namespace
