//===- StatisticsTest.cpp - Timed runs and their summaries ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/Statistics.h"

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
