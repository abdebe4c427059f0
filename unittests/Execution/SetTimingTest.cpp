//===- SetTimingTest.cpp - Timing device sets with the CPU kernels --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The kernel set timer that measured selection uses: every set is prepared
// on each draw of its inputs and timed on the draw asked for, and sets whose
// data does not fit are refused with the sizes, draws counted.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/SetTiming.h"

#include "TestProblems.h"

#include "gtest/gtest.h"

#include <string>
#include <utility>
#include <vector>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::execution;
using namespace neuroshard::testing;

namespace {

std::string errorMessage(Error err) {
  return err ? toString(std::move(err)) : std::string();
}

std::vector<TableSpec> tables() {
  return {makeTable("hot", 5000, 32, 8.0), makeTable("cold", 2000, 16, 1.0)};
}

/// A whole table, the hot table's left half and its right half.
std::vector<std::vector<ColumnSlice>> sets() {
  return {{ColumnSlice{0, 0, 32}, ColumnSlice{1, 0, 16}},
          {ColumnSlice{0, 0, 16}},
          {ColumnSlice{0, 16, 32}, ColumnSlice{1, 0, 16}}};
}

KernelSetTimerOptions quick(unsigned draws) {
  KernelSetTimerOptions options;
  options.flushMB = 1;
  options.warmupRuns = 1;
  options.runsPerTiming = 1;
  options.draws = draws;
  return options;
}

TEST(SetTimingTest, TimesEverySetOnEveryDraw) {
  // With the untimed runs flushed (as neuroshard-collect flushes them) or
  // not (the default).
  for (bool flushUntimed : {false, true})
    for (unsigned draws : {1u, 3u}) {
      KernelSetTimerOptions options = quick(draws);
      options.flushUntimedRuns = flushUntimed;
      Expected<std::unique_ptr<SetTimer>> timer = createKernelSetTimer(options);
      ASSERT_TRUE(bool(timer)) << toString(timer.takeError());
      ASSERT_EQ(errorMessage((*timer)->prepare(tables(), 256, sets())), "");
      EXPECT_EQ((*timer)->draws(), draws);
      EXPECT_EQ((*timer)->device(), "cpu");
      for (size_t s = 0; s < sets().size(); ++s)
        for (unsigned draw = 0; draw < draws; ++draw)
          EXPECT_GT((*timer)->time(s, draw), 0.0)
              << s << " " << draw << (flushUntimed ? " flushed" : "");
    }
  // No draw is a draw of its own: at least one.
  Expected<std::unique_ptr<SetTimer>> none = createKernelSetTimer(quick(0));
  ASSERT_TRUE(bool(none)) << toString(none.takeError());
  ASSERT_EQ(errorMessage((*none)->prepare(tables(), 256, sets())), "");
  EXPECT_EQ((*none)->draws(), 1u);
}

// The sets are packed in parallel: each draw's time is its own set's. A set
// of a wide, much looked-up table takes far longer than one of a narrow
// table looked up once per sample, on every draw and in either order.
TEST(SetTimingTest, TimesEachSetWithItsOwnTables) {
  std::vector<TableSpec> tables = {makeTable("heavy", 200000, 128, 40.0, 512),
                                   makeTable("light", 1000, 4, 1.0, 512)};
  std::vector<std::vector<ColumnSlice>> heavyFirst = {{ColumnSlice{0, 0, 128}},
                                                      {ColumnSlice{1, 0, 4}}};
  for (bool reversed : {false, true}) {
    std::vector<std::vector<ColumnSlice>> sets = heavyFirst;
    if (reversed)
      std::swap(sets[0], sets[1]);
    size_t heavy = reversed ? 1 : 0;
    // The median of 5 runs, so that one run the system interrupts does not
    // decide.
    KernelSetTimerOptions options = quick(3);
    options.runsPerTiming = 5;
    Expected<std::unique_ptr<SetTimer>> timer = createKernelSetTimer(options);
    ASSERT_TRUE(bool(timer)) << toString(timer.takeError());
    ASSERT_EQ(errorMessage((*timer)->prepare(tables, 512, sets)), "");
    for (unsigned draw = 0; draw < 3; ++draw)
      EXPECT_GT((*timer)->time(heavy, draw),
                10.0 * (*timer)->time(1 - heavy, draw))
          << "draw " << draw << (reversed ? ", light set first" : "");
  }
}

TEST(SetTimingTest, RefusesSetsThatDoNotFitNamingTheDraws) {
  KernelSetTimerOptions options = quick(3);
  options.memoryLimitBytes = 1 << 20;
  Expected<std::unique_ptr<SetTimer>> timer = createKernelSetTimer(options);
  ASSERT_TRUE(bool(timer)) << toString(timer.takeError());
  std::string message = errorMessage((*timer)->prepare(tables(), 4096, sets()));
  EXPECT_EQ(message.find("timing the candidates' device sets needs "), 0u)
      << message;
  EXPECT_NE(message.find("indices and offsets of 3 draws "), std::string::npos)
      << message;
  EXPECT_NE(message.find("of --memory-limit-gb"), std::string::npos) << message;
  // Each draw after the first lays the sets out 17 huge pages further on.
  EXPECT_NE(message.find("the other placements of 3 draws 0.0664 GB"),
            std::string::npos)
      << message;
  options.drawShiftPages = 0;
  Expected<std::unique_ptr<SetTimer>> unshifted = createKernelSetTimer(options);
  ASSERT_TRUE(bool(unshifted)) << toString(unshifted.takeError());
  message = errorMessage((*unshifted)->prepare(tables(), 4096, sets()));
  EXPECT_EQ(message.find("placements"), std::string::npos) << message;
}

} // namespace
