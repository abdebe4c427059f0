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
    topology.intraNodeBandwidthGBps = 4;
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

TEST_F(AnalyticalCostModelTest, PricesARowPieceAsItsTablesHeaviestBlock) {
  // Table 'a': 2,000 lookups of a batch spread evenly over its 1,000 rows,
  // twice each. Half its rows receive about half its lookups, and every
  // bag's partial sum.
  tables[0].accessHist.fill(0.0);
  tables[0].accessHist[1] = 1.0;
  ASSERT_EQ(errorMessage(model.prepare(tables, topology)), "");
  ColumnSlice half{0, 0, 256, 0, 500};
  auto priced = [&](double share) {
    double lookups = 1000 * 2 * share;
    return 3 * ms(lookups * 4 + lookups * 256 * 4 + 1000 * 256 * 4, 2);
  };
  double share = rowBlockShare(tables[0], half, 1000, RowBlockLoad::Heaviest);
  EXPECT_DOUBLE_EQ(rowBlockShare(tables[0], half, 1000, RowBlockLoad::Mean),
                   0.5);
  EXPECT_GT(share, 0.5);
  EXPECT_LT(share, 0.52);
  EXPECT_DOUBLE_EQ(model.sliceComputeMs(half), priced(share));
  // The same lookups on a few rows hit 513-1,024 times each: the block
  // that holds one of them takes far more than its rows' share.
  tables[0].accessHist.fill(0.0);
  tables[0].accessHist[10] = 1.0;
  ASSERT_EQ(errorMessage(model.prepare(tables, topology)), "");
  double lumpy = rowBlockShare(tables[0], half, 1000, RowBlockLoad::Heaviest);
  EXPECT_GT(lumpy, 0.7);
  EXPECT_DOUBLE_EQ(model.sliceComputeMs(half), priced(lumpy));
  // A piece of every row, and a replica, are not row blocks.
  EXPECT_EQ(rowBlockShare(tables[0], {0, 0, 256}, 1000, RowBlockLoad::Heaviest),
            1.0);
  ColumnSlice replica{0, 0, 256, 0, kAllRows, true};
  EXPECT_EQ(rowBlockShare(tables[0], replica, 1000, RowBlockLoad::Heaviest),
            1.0);
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
  // Plan 0: table a on device 0, b on device 1; plan 1: both on device 0.
  // A device sends and receives half of the other's pooled values, and the
  // indices of the other's bags.
  std::vector<DeviceTraffic> traffic =
      computeTraffic(tables, topology, {{0, 0, 256}, {1, 0, 64}}, {0, 1});
  std::vector<DeviceTraffic> together =
      computeTraffic(tables, topology, {{0, 0, 256}, {1, 0, 64}}, {0, 0});
  traffic.insert(traffic.end(), together.begin(), together.end());
  std::vector<double> bw(4);
  ASSERT_EQ(errorMessage(model.predictBackwardComm(traffic, bw)), "");
  double big = ms(1000 * 256 * 4 / 2.0, 4), whole = ms(1000 * 320 * 4 / 2.0, 4);
  EXPECT_DOUBLE_EQ(bw[0], big);
  EXPECT_DOUBLE_EQ(bw[1], big);
  EXPECT_DOUBLE_EQ(bw[2], whole);
  EXPECT_DOUBLE_EQ(bw[3], whole);

  // Forward adds the index distribution (device 0 receives the 1000 x 2 / 2
  // lookups of a from device 1's bags and sends it half of b's 1000 x 4)
  // and the wait for the latest device.
  std::vector<double> late = {0, 0.5, 0.25, 0};
  std::vector<double> fw(4);
  ASSERT_EQ(errorMessage(model.predictForwardComm(traffic, late, fw)), "");
  double indices = ms(1000 * 4 / 2.0 * 4, 4);
  EXPECT_DOUBLE_EQ(fw[0], big + indices + 0.5);
  EXPECT_DOUBLE_EQ(fw[1], big + indices);
  EXPECT_DOUBLE_EQ(fw[2], whole + ms(1000 * 6 / 2.0 * 4, 4));
  EXPECT_DOUBLE_EQ(fw[3], whole + ms(1000 * 6 / 2.0 * 4, 4) + 0.25);

  std::vector<DeviceTraffic> odd(3);
  std::vector<double> out(3);
  EXPECT_EQ(errorMessage(model.predictBackwardComm(odd, out)),
            "analytical cost model: the traffic of 3 devices is not a whole "
            "number of plans on 2 devices");
}

TEST_F(AnalyticalCostModelTest, LinksTakeTheirTurns) {
  // Each kind of link carries the larger direction at its own bandwidth;
  // the intra-node and inter-node parts add up.
  Topology cluster = Topology::uniform(4, 16);
  cluster.devicesPerNode = 2;
  cluster.intraNodeBandwidthGBps = 8;
  cluster.interNodeBandwidthGBps = 2;
  ASSERT_EQ(errorMessage(model.prepare(tables, cluster)), "");
  LinkVolume volume{1000, 3000, 700, 500};
  EXPECT_DOUBLE_EQ(model.pooledExchangeMs(volume),
                   ms(3000 * 4, 8) + ms(700 * 4, 2));
  EXPECT_DOUBLE_EQ(model.indexDistributionMs(volume),
                   ms(3000 * 4, 8) + ms(700 * 4, 2));
}

TEST_F(AnalyticalCostModelTest, OneDeviceCommunicatesNothing) {
  Topology one = Topology::uniform(1, 16);
  ASSERT_EQ(errorMessage(model.prepare(tables, one)), "");
  std::vector<DeviceTraffic> traffic =
      computeTraffic(tables, one, {{0, 0, 256}, {1, 0, 64}}, {0, 0});
  std::vector<double> bw(1), fw(1), late = {0};
  ASSERT_EQ(errorMessage(model.predictBackwardComm(traffic, bw)), "");
  ASSERT_EQ(errorMessage(model.predictForwardComm(traffic, late, fw)), "");
  EXPECT_EQ(bw[0], 0.0);
  EXPECT_EQ(fw[0], 0.0);
}

TEST_F(AnalyticalCostModelTest, DescribesItself) {
  EXPECT_EQ(model.name(), "analytical");
  EXPECT_EQ(model.requiredDevices(), std::nullopt);
  EXPECT_EQ(model.description(),
            "analytical bandwidth model (HBM 2 GB/s, intra-node 4 GB/s, "
            "batch 1000, backward = 2 x forward)");
  Topology broken = topology;
  broken.batchSize = 0;
  EXPECT_EQ(errorMessage(model.prepare(tables, broken)),
            "analytical cost model: needs at least one device in whole "
            "nodes, bandwidths in [0.001, 1e+09] GB/s and a positive batch "
            "size, got 2 devices in nodes of 2, HBM 2 GB/s, intra-node 4 "
            "GB/s, inter-node 50 GB/s, batch 0");
  broken = topology;
  broken.interNodeBandwidthGBps = 0;
  EXPECT_NE(errorMessage(model.prepare(tables, broken)), "");

  Topology cluster = Topology::uniform(16, 80);
  cluster.devicesPerNode = 8;
  ASSERT_EQ(errorMessage(model.prepare(tables, cluster)), "");
  EXPECT_EQ(model.description(),
            "analytical bandwidth model (HBM 897 GB/s, 2 nodes of 8 devices, "
            "intra-node 600 GB/s, inter-node 50 GB/s, batch 65536, backward "
            "= 2 x forward)");
  cluster.devicesPerNode = 3;
  EXPECT_NE(errorMessage(model.prepare(tables, cluster)), "");
}

} // namespace
