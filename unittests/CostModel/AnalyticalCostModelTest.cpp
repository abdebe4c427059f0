//===- AnalyticalCostModelTest.cpp - The bandwidth model's formulas -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "TestProblems.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

/// Milliseconds to move `bytes` at `gbps` GB/s (GB = 2^30 bytes).
double ms(double bytes, double gbps) {
  return bytes / kBytesPerGB * 1e3 / gbps;
}

class AnalyticalCostModelTest : public ::testing::Test {
protected:
  void SetUp() override {
    tables = {makeTable("a", 1000, 256, 2), makeTable("b", 50, 64, 4)};
    topology = Topology::uniform(2, 16);
    topology.batchSize = 1000;
    topology.hbmBandwidthGBps = 2;
    topology.interconnectBandwidthGBps = 4;
    ASSERT_EQ(errorMessage(model.prepare(tables, topology)), "");
  }

  /// Forward bytes of `width` columns of a table with pooling `p`.
  static double forwardBytes(double p, double width) {
    return 1000 * p * 4 + 1000 * p * width * 4 + 1000 * width * 4;
  }

  std::vector<TableSpec> tables;
  Topology topology;
  AnalyticalCostModel model;
};

TEST_F(AnalyticalCostModelTest, PricesSlicesByBytesWithNarrowPenalties) {
  // Forward + backward = 3 x forward; penalties 1.15 below 128 columns and
  // 1.75 below 64.
  EXPECT_DOUBLE_EQ(model.sliceComputeMs({0, 0, 256}),
                   3 * ms(forwardBytes(2, 256), 2));
  EXPECT_DOUBLE_EQ(model.sliceComputeMs({0, 0, 128}),
                   3 * ms(forwardBytes(2, 128), 2));
  EXPECT_DOUBLE_EQ(model.sliceComputeMs({0, 128, 192}),
                   3 * 1.15 * ms(forwardBytes(2, 64), 2));
  EXPECT_DOUBLE_EQ(model.sliceComputeMs({1, 0, 32}),
                   3 * 1.75 * ms(forwardBytes(4, 32), 2));
}

TEST_F(AnalyticalCostModelTest, PricesManySetsInOneCall) {
  std::vector<ColumnSlice> both = {{0, 0, 128}, {1, 0, 64}};
  std::vector<ColumnSlice> one = {{1, 0, 64}};
  std::vector<ArrayRef<ColumnSlice>> sets = {both, one};
  std::vector<double> costs(2);
  ASSERT_EQ(errorMessage(model.predictCompute(sets, costs)), "");
  EXPECT_DOUBLE_EQ(costs[0], model.sliceComputeMs(both[0]) +
                                 model.sliceComputeMs(both[1]));
  EXPECT_DOUBLE_EQ(costs[1], model.sliceComputeMs(one[0]));

  std::vector<ColumnSlice> unknown = {{2, 0, 4}};
  sets = {unknown};
  costs.resize(1);
  EXPECT_EQ(errorMessage(model.predictCompute(sets, costs)),
            "analytical cost model: slice of table 2 but 2 tables were "
            "prepared");
  costs.resize(3);
  EXPECT_EQ(errorMessage(model.predictCompute(sets, costs)),
            "analytical cost model: the compute cost output has 3 values, "
            "expected 1");
}

TEST_F(AnalyticalCostModelTest, CommunicationOfABatchOfPlans) {
  // Plan 0: dim sums 64 and 32. Device 0 sends half of its 64 columns
  // (B * 64 * 4 / 2 bytes) and receives B/2 bags of device 1's 32; device 1
  // the reverse. Plan 1: everything on device 0.
  std::vector<double> dims = {64, 32, 96, 0};
  std::vector<double> bw(4);
  ASSERT_EQ(errorMessage(model.predictBackwardComm(dims, bw)), "");
  double big = ms(1000 * 64 * 4 / 2.0, 4);
  EXPECT_DOUBLE_EQ(bw[0], big);
  EXPECT_DOUBLE_EQ(bw[1], big);
  EXPECT_DOUBLE_EQ(bw[2], ms(1000 * 96 * 4 / 2.0, 4));
  EXPECT_DOUBLE_EQ(bw[3], ms(1000 * 96 * 4 / 2.0, 4));

  // Forward adds the wait for the latest device.
  std::vector<double> late = {0, 0.5, 0.25, 0};
  std::vector<double> fw(4);
  ASSERT_EQ(errorMessage(model.predictForwardComm(dims, late, fw)), "");
  EXPECT_DOUBLE_EQ(fw[0], big + 0.5);
  EXPECT_DOUBLE_EQ(fw[1], big);
  EXPECT_DOUBLE_EQ(fw[2], bw[2]);
  EXPECT_DOUBLE_EQ(fw[3], bw[3] + 0.25);

  std::vector<double> odd = {1, 2, 3};
  std::vector<double> out(3);
  EXPECT_EQ(errorMessage(model.predictBackwardComm(odd, out)),
            "analytical cost model: 3 dim sums are not a whole number of "
            "plans on 2 devices");
}

TEST_F(AnalyticalCostModelTest, OneDeviceCommunicatesNothing) {
  ASSERT_EQ(errorMessage(model.prepare(tables, Topology::uniform(1, 16))), "");
  std::vector<double> dims = {320}, bw(1), fw(1), late = {0};
  ASSERT_EQ(errorMessage(model.predictBackwardComm(dims, bw)), "");
  ASSERT_EQ(errorMessage(model.predictForwardComm(dims, late, fw)), "");
  EXPECT_EQ(bw[0], 0.0);
  EXPECT_EQ(fw[0], 0.0);
}

TEST_F(AnalyticalCostModelTest, DescribesItself) {
  EXPECT_EQ(model.name(), "analytical");
  EXPECT_EQ(model.requiredDevices(), std::nullopt);
  EXPECT_EQ(model.description(),
            "analytical bandwidth model (HBM 2 GB/s, interconnect 4 GB/s, "
            "batch 1000, backward = 2 x forward)");
  Topology broken = topology;
  broken.batchSize = 0;
  EXPECT_EQ(errorMessage(model.prepare(tables, broken)),
            "analytical cost model: needs at least one device and positive "
            "bandwidths and batch size, got 2 devices, HBM 2 GB/s, "
            "interconnect 4 GB/s, batch 0");
}

} // namespace
