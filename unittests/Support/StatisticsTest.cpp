//===- StatisticsTest.cpp - Timed runs and their summaries ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/Statistics.h"

#include "gtest/gtest.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace neuroshard;
using namespace neuroshard::runtime;

namespace {

TEST(StatisticsTest, MediansOfOddAndEvenCounts) {
  EXPECT_EQ(median({3.0}), 3.0);
  EXPECT_EQ(median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(sortedMedian({1.0, 2.0, 10.0, 20.0}), 6.0);
}

// The geometric mean of ratios: 2 and 1/2 cancel, as a ratio and its
// inverse should; none is 1.
TEST(StatisticsTest, GeometricMeansOfRatios) {
  EXPECT_DOUBLE_EQ(geometricMean({2.0, 8.0}), 4.0);
  EXPECT_DOUBLE_EQ(geometricMean({2.0, 0.5}), 1.0);
  EXPECT_DOUBLE_EQ(geometricMean({0.9}), 0.9);
  EXPECT_EQ(geometricMean({}), 1.0);
}

// Student's t against printed tables (two-sided 5% and one-sided 1%
// points) and its limits: one degree is the Cauchy law, many the normal.
TEST(StatisticsTest, StudentQuantilesMatchTheTables) {
  EXPECT_NEAR(studentQuantile(0.025, 1), 12.706, 1e-3);
  EXPECT_NEAR(studentQuantile(0.025, 2), 4.303, 1e-3);
  EXPECT_NEAR(studentQuantile(0.025, 3), 3.182, 1e-3);
  EXPECT_NEAR(studentQuantile(0.01, 6), 3.143, 1e-3);
  EXPECT_NEAR(studentQuantile(0.025, 10), 2.228, 1e-3);
  EXPECT_NEAR(studentQuantile(0.025, 30), 2.042, 1e-3);
  EXPECT_NEAR(studentTail(1.0, 1), 0.25, 1e-12);
  EXPECT_NEAR(studentTail(2.0, 400), normalTail(2.0), 5e-4);
  EXPECT_NEAR(normalTail(1.959964), 0.025, 1e-6);
  EXPECT_EQ(studentTail(0.0, 5), 0.5);
  EXPECT_EQ(studentQuantile(0.5, 5), 0.0);
  EXPECT_EQ(studentQuantile(0.0, 5), 0.0);
  // Fewer degrees of freedom, heavier tails.
  EXPECT_GT(studentQuantile(0.01, 4), studentQuantile(0.01, 8));
  // Far tails keep their digits: the Cauchy law's is 1 / (pi t), and at
  // the normal's 10-sigma tail many degrees of freedom give the normal
  // point plus the first term of the Cornish-Fisher expansion,
  // (z^3 + z) / (4 nu).
  EXPECT_NEAR(studentTail(1e6, 1) * M_PI * 1e6, 1.0, 1e-6);
  EXPECT_NEAR(studentQuantile(normalTail(10.0), 100000),
              10.0 + 1010.0 / 400000.0, 1e-5);
}

TEST(StatisticsTest, UntimedRunsComeFirstAndEveryRunFollowsItsFlush) {
  // Each run records itself after the flush that precedes it.
  std::string trace;
  unsigned step = 0;
  Timing timing = timeRuns(
      3, 2, [&] { trace += std::to_string(step++); }, [&] { trace += "f"; });
  EXPECT_EQ(trace, "f0f1f2f3f4");
  EXPECT_LE(timing.min, timing.median);
  EXPECT_LE(timing.median, timing.max);
}

TEST(StatisticsTest, UntimedRunsAreLeftOutOfTheTiming) {
  // The untimed runs sleep far longer than the timed ones take: the timing
  // is of the timed runs only.
  unsigned run = 0;
  Timing timing = timeRuns(2, 3, [&] {
    if (run++ < 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  EXPECT_EQ(run, 5u);
  EXPECT_LT(timing.max, 100.0);
  // Without untimed runs, the slow runs are timed: 2 of 5 are not enough
  // to move the median, but they are the slowest.
  run = 0;
  timing = timeRuns(0, 5, [&] {
    if (run++ < 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  EXPECT_GE(timing.max, 200.0);
  EXPECT_LT(timing.median, 100.0);
}

} // namespace
