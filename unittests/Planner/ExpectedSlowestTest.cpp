//===- ExpectedSlowestTest.cpp - A plan's expected slowest device ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// expectedSlowestMs against the closed forms of one and two log-normal
// devices, and expectedSlowestDevice against a test model with a held-out
// error and a risk margin.
//
//===----------------------------------------------------------------------===//

#include "TestProblems.h"

#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/Planner/Search.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

double normalCDF(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TEST(ExpectedSlowest, OneDeviceIsTheLogNormalMean) {
  // E[c e^(mu + sd Z)] = c e^(mu + sd^2 / 2).
  for (double sd : {0.01, 0.15, 0.5, 1.5}) {
    double expected = expectedSlowestMs({2.0}, {-0.05, sd});
    EXPECT_NEAR(expected / (2.0 * std::exp(-0.05 + sd * sd / 2)), 1.0, 1e-6)
        << "sd " << sd;
  }
}

TEST(ExpectedSlowest, TwoEqualDevicesMatchTheClosedForm) {
  // For two independent equal log-normals, E[max] = 2 c e^(sd^2 / 2)
  // Phi(sd / sqrt 2).
  for (double sd : {0.05, 0.15, 0.4}) {
    double closed =
        2.0 * 3.0 * std::exp(sd * sd / 2) * normalCDF(sd / std::sqrt(2.0));
    EXPECT_NEAR(expectedSlowestMs({3.0, 3.0}, {0.0, sd}) / closed, 1.0, 1e-6)
        << "sd " << sd;
  }
}

TEST(ExpectedSlowest, GrowsWithTheDevicesNearTheTop) {
  ComputeError error{0.0, 0.15};
  double one = expectedSlowestMs({1.0}, error);
  double four = expectedSlowestMs(SmallVector<double>(4, 1.0), error);
  double eight = expectedSlowestMs(SmallVector<double>(8, 1.0), error);
  // The expected largest of n standard normals: 1.029 for 4, 1.424 for 8;
  // the log-normal maximum lies a little above e^(sd * that).
  EXPECT_GT(four, std::exp(0.15 * 1.029));
  EXPECT_LT(four, std::exp(0.15 * 1.029 + 0.15 * 0.15));
  EXPECT_GT(eight, std::exp(0.15 * 1.424));
  EXPECT_LT(eight, std::exp(0.15 * 1.424 + 0.15 * 0.15));
  EXPECT_LT(one, four);
  // A device far below the top changes nothing; idle devices are skipped.
  EXPECT_NEAR(expectedSlowestMs({1.0, 0.2, 0.0}, error), one, 1e-9);
}

TEST(ExpectedSlowest, WithoutSpreadItIsTheLargestPrediction) {
  EXPECT_DOUBLE_EQ(expectedSlowestMs({1.0, 4.0, 2.0}, {0.0, 0.0}), 4.0);
  EXPECT_DOUBLE_EQ(expectedSlowestMs({1.0, 4.0}, {std::log(1.5), 0.0}), 6.0);
  EXPECT_EQ(expectedSlowestMs({}, {0.0, 0.2}), 0.0);
  EXPECT_EQ(expectedSlowestMs({0.0, 0.0}, {0.0, 0.2}), 0.0);
}

TEST(ExpectedSlowest, PricesThePlanWithoutTheRiskMargin) {
  std::vector<TableSpec> tables = {makeTable("a", 1000, 8, 2.0),
                                   makeTable("b", 1000, 8, 1.0)};
  Topology topology = Topology::uniform(2, 1);
  ShardingPlan plan;
  plan.shards = {Shard{0, 0, 8, 0}, Shard{1, 0, 8, 1}};
  SliceCostModel model;
  model.setRiskMargin(5.0);

  // Without a held-out error there is nothing to spread.
  Expected<std::optional<ExpectedSlowest>> none =
      expectedSlowestDevice(tables, topology, plan, model);
  ASSERT_TRUE(static_cast<bool>(none)) << errorMessage(none);
  EXPECT_FALSE(none->has_value());

  model.error = ComputeError{0.0, 0.2};
  Expected<std::optional<ExpectedSlowest>> expected =
      expectedSlowestDevice(tables, topology, plan, model);
  ASSERT_TRUE(static_cast<bool>(expected)) << errorMessage(expected);
  ASSERT_TRUE(expected->has_value());
  // Table a costs 8 x 2 = 16 ms, b 8 ms, each without the 5 ms margin.
  EXPECT_DOUBLE_EQ((*expected)->predictedMs, 16.0);
  EXPECT_DOUBLE_EQ((*expected)->computeMs,
                   expectedSlowestMs({16.0, 8.0}, {0.0, 0.2}));
  EXPECT_DOUBLE_EQ((*expected)->error.logSd, 0.2);
  EXPECT_EQ(model.riskMargin(), 5.0);
}

} // namespace
