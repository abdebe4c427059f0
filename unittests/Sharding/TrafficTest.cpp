//===- TrafficTest.cpp - What each device of a plan exchanges -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/Traffic.h"

#include "gtest/gtest.h"

using namespace neuroshard;

namespace {

/// 4 devices in 2 nodes of 2, a batch of 8 bags, and one table of 8
/// columns looked up once per bag: 8 lookups in all, 2 per device's bags.
class TrafficTest : public ::testing::Test {
protected:
  void SetUp() override {
    TableSpec table;
    table.name = "t";
    table.rows = 100;
    table.dim = 8;
    table.poolingFactor = 1.0;
    tables = {table};
    topology = Topology::uniform(4, 16);
    topology.devicesPerNode = 2;
    topology.batchSize = 8;
  }

  std::vector<DeviceTraffic> halvesOn(unsigned first, unsigned second) {
    return computeTraffic(tables, topology, {{0, 0, 4}, {0, 4, 8}},
                          {first, second});
  }

  std::vector<TableSpec> tables;
  Topology topology;
};

void expectVolume(const LinkVolume &volume, double intraSent,
                  double intraReceived, double interSent,
                  double interReceived) {
  EXPECT_DOUBLE_EQ(volume.intraSent, intraSent);
  EXPECT_DOUBLE_EQ(volume.intraReceived, intraReceived);
  EXPECT_DOUBLE_EQ(volume.interSent, interSent);
  EXPECT_DOUBLE_EQ(volume.interReceived, interReceived);
}

// Both halves in node 0: the other node's 4 lookups cross into it once,
// half to each holder, which passes its half to the other.
TEST_F(TrafficTest, PiecesInOneNodeTakeTheIndicesAcrossOnce) {
  std::vector<DeviceTraffic> traffic = halvesOn(0, 1);
  expectVolume(traffic[0].indices, 4, 4, 0, 2);
  expectVolume(traffic[1].indices, 4, 4, 0, 2);
  expectVolume(traffic[2].indices, 0, 0, 2, 0);
  expectVolume(traffic[3].indices, 0, 0, 2, 0);

  // Pooled: devices 0 and 1 compute 4 columns each for all 8 bags and keep
  // their own 2 bags' worth.
  EXPECT_EQ(traffic[0].dimSum, 4.0);
  expectVolume(traffic[0].pooled, 8, 8, 16, 0);
  expectVolume(traffic[2].pooled, 0, 0, 0, 16);
}

// One half in each node: each node takes the other's lookups across.
TEST_F(TrafficTest, PiecesInTwoNodesTakeTheIndicesAcrossTwice) {
  std::vector<DeviceTraffic> traffic = halvesOn(0, 2);
  expectVolume(traffic[0].indices, 0, 2, 2, 4);
  expectVolume(traffic[1].indices, 2, 0, 2, 0);
  expectVolume(traffic[2].indices, 0, 2, 2, 4);
  expectVolume(traffic[3].indices, 2, 0, 2, 0);
}

// What is sent is received, on each kind of link, whatever the placement.
TEST_F(TrafficTest, VolumesAreConserved) {
  tables.push_back(tables.front());
  tables.back().name = "u";
  tables.back().poolingFactor = 3.0;
  topology = Topology::uniform(8, 16);
  topology.devicesPerNode = 4;
  std::vector<ColumnSlice> slices = {
      {0, 0, 4}, {0, 4, 8}, {1, 0, 4}, {1, 4, 8}};
  for (std::vector<unsigned> deviceOf :
       {std::vector<unsigned>{0, 1, 2, 3}, {0, 5, 5, 7}, {3, 3, 4, 0}}) {
    std::vector<DeviceTraffic> traffic =
        computeTraffic(tables, topology, slices, deviceOf);
    for (auto part : {&DeviceTraffic::pooled, &DeviceTraffic::indices}) {
      LinkVolume total;
      for (const DeviceTraffic &device : traffic) {
        const LinkVolume &volume = device.*part;
        total.intraSent += volume.intraSent;
        total.intraReceived += volume.intraReceived;
        total.interSent += volume.interSent;
        total.interReceived += volume.interReceived;
      }
      EXPECT_NEAR(total.intraSent, total.intraReceived, 1e-9);
      EXPECT_NEAR(total.interSent, total.interReceived, 1e-9);
    }
  }
}

// One node: nothing crosses nodes, and a table alone on a device receives
// every other device's lookups of it.
TEST_F(TrafficTest, OneNodeHasNoInterNodeTraffic) {
  topology.devicesPerNode = 0;
  std::vector<DeviceTraffic> traffic =
      computeTraffic(tables, topology, {{0, 0, 8}}, {1});
  expectVolume(traffic[1].indices, 0, 6, 0, 0);
  expectVolume(traffic[0].indices, 2, 0, 0, 0);
  expectVolume(traffic[1].pooled, 48, 0, 0, 0);
  expectVolume(traffic[0].pooled, 0, 16, 0, 0);
}

} // namespace
