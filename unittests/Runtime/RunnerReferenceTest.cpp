//===- RunnerReferenceTest.cpp - The CUDA runner's CPU reference ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The runner checks backward + SGD, which the GPU applies with float atomics
// in any order, against a reference that applies the updates in index order.
// Any order of the same float additions must pass; a lost or repeated update
// must not.
//
//===----------------------------------------------------------------------===//

#include "../../tools/neuroshard-cuda-runner/Workload.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <random>

using namespace neuroshard::runner;
using ::neuroshard::kernel_abi::kOffsetsBase;
using ::neuroshard::kernel_abi::kRowStride;
using ::neuroshard::kernel_abi::kWidth;

namespace {

struct Update {
  size_t element;
  float term;
};

/// Every update of the SGD step, in index order (the reference's order).
std::vector<Update> updates(const Workload &w) {
  std::vector<Update> all;
  const int64_t *f = w.meta.data(); // one shard, table 0
  for (int64_t b = 0; b < w.batch; ++b) {
    int64_t begin = w.offsets32[size_t(f[kOffsetsBase] + b)];
    int64_t end = w.offsets32[size_t(f[kOffsetsBase] + b + 1)];
    float factor = -w.lr;
    for (int64_t i = begin; i < end; ++i)
      for (int64_t c = 0; c < f[kWidth]; ++c)
        all.push_back({size_t(w.indices32[size_t(i)] * f[kRowStride] + c),
                       w.grad[size_t(b * w.width + c)] * factor});
  }
  return all;
}

std::vector<float> applyUpdates(const Workload &w,
                                const std::vector<Update> &order) {
  std::vector<float> weights = w.weights;
  for (const Update &u : order)
    weights[u.element] += u.term;
  return weights;
}

TEST(RunnerReference, AnyOrderOfHotRowUpdatesPasses) {
  // 4 rows, 64 bags of 200 indices: every element takes ~3200 updates, far
  // more than a 1e-4 relative tolerance alone absorbs when reordered.
  Workload w = bandwidthWorkload(64, 8, 200, 4, /*index64=*/false, 3, 0.5f);
  std::vector<double> bound;
  std::vector<float> want = referenceBackward(w, &bound);
  std::vector<Update> order = updates(w);
  EXPECT_EQ(applyUpdates(w, order), want);
  std::mt19937 random(11);
  size_t withoutBound = 0;
  for (int trial = 0; trial < 20; ++trial) {
    std::shuffle(order.begin(), order.end(), random);
    std::vector<float> got = applyUpdates(w, order);
    EXPECT_EQ(compare(got, want, 1e-4, &bound).mismatches, 0u);
    withoutBound += compare(got, want, 1e-4).mismatches;
  }
  // The tolerance alone, without the bound, rejects some of these orders.
  EXPECT_GT(withoutBound, 0u);
  for (size_t i = 0; i < bound.size(); ++i)
    EXPECT_GT(bound[i], 0.0) << i;
}

TEST(RunnerReference, LostOrRepeatedUpdateFails) {
  // 10000 rows, 4 indices per bag: few updates per element, a tight bound.
  Workload w = bandwidthWorkload(256, 16, 4, 10000, /*index64=*/false, 5, 0.5f);
  std::vector<double> bound;
  std::vector<float> want = referenceBackward(w, &bound);
  std::vector<Update> order = updates(w);
  std::vector<Update> lost(order.begin() + 1, order.end());
  Comparison c = compare(applyUpdates(w, lost), want, 1e-4, &bound);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.worst, order.front().element);
  std::vector<Update> repeated = order;
  repeated.push_back(order[order.size() / 2]);
  EXPECT_EQ(compare(applyUpdates(w, repeated), want, 1e-4, &bound).mismatches,
            1u);
  // Elements no update touches have no slack.
  size_t untouched = size_t(std::count(bound.begin(), bound.end(), 0.0));
  EXPECT_GT(untouched, 0u);
}

} // namespace
