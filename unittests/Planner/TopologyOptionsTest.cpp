//===- TopologyOptionsTest.cpp - Front ends' topologies and the task's ----===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "TestProblems.h"

#include "neuroshard/Planner/TaskIO.h"
#include "neuroshard/Planner/TopologyOptions.h"

#include "llvm/Support/FormatVariadic.h"
#include "gtest/gtest.h"

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

/// The message of a failed result (errorMessage of a temporary).
template <typename T> std::string messageOf(Expected<T> value) {
  return errorMessage(value);
}

Expected<Topology> resolve(const TopologyOptions &options,
                           const TopologyDescription &input = {},
                           std::optional<unsigned> planDevices = {}) {
  return makeTopology(options, input, "the task", planDevices,
                      commandLineSpelling);
}

TEST(TopologyOptionsTest, OneNodeOfSixteenGigabyteDevicesByDefault) {
  TopologyOptions options;
  options.devices = 4;
  Expected<Topology> topology = resolve(options);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numDevices(), 4u);
  EXPECT_EQ(topology->numNodes(), 1u);
  EXPECT_EQ(topology->nodeSize(), 4u);
  EXPECT_EQ(topology->memoryGB, std::vector<double>(4, kDefaultMemoryGB));
  EXPECT_EQ(topology->intraNodeBandwidthGBps, 600.0);
  EXPECT_EQ(topology->interNodeBandwidthGBps, 50.0);
}

TEST(TopologyOptionsTest, NodesAloneAreNodesOfEightLargeDevices) {
  TopologyOptions options;
  options.nodes = 4;
  Expected<Topology> topology = resolve(options);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numDevices(), 32u);
  EXPECT_EQ(topology->nodeSize(), 8u);
  EXPECT_EQ(topology->nodeOf(17), 2u);
  EXPECT_EQ(topology->memoryGB.front(), kDefaultClusterMemoryGB);

  options.devicesPerNode = 4;
  topology = resolve(options);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numDevices(), 16u);
  EXPECT_EQ(topology->numNodes(), 4u);
}

TEST(TopologyOptionsTest, NodesMustDivideTheDevices) {
  TopologyOptions options;
  options.devices = 16;
  options.nodes = 3;
  EXPECT_EQ(messageOf(resolve(options)),
            "--nodes: 16 devices do not split into 3 nodes of equal size");
  options.nodes = 2;
  options.devicesPerNode = 4;
  EXPECT_EQ(messageOf(resolve(options)),
            "--nodes x --devices-per-node must equal the device count: 2 x 4 "
            "is not 16");
  options.nodes.reset();
  options.devicesPerNode = 5;
  EXPECT_EQ(messageOf(resolve(options)),
            "--devices-per-node: 16 devices do not fill whole nodes of 5 "
            "devices");
  options.devicesPerNode = 0;
  EXPECT_EQ(messageOf(resolve(options)),
            "--devices-per-node: devices per node must be at least 1, got 0");
}

TEST(TopologyOptionsTest, RefusesBadBandwidthsByName) {
  for (double gbps : {0.0, -5.0, 1e10}) {
    TopologyOptions options;
    options.devices = 2;
    options.interNodeGBps = gbps;
    std::string message = messageOf(resolve(options));
    EXPECT_EQ(StringRef(message).starts_with(
                  "--inter-node-gbps: must be between 0.001 and 1e+09 GB/s"),
              true)
        << message;
  }
  TopologyOptions options;
  options.devices = 2;
  options.intraNodeGBps = 0;
  EXPECT_EQ(messageOf(makeTopology(options, {}, "the task", std::nullopt,
                                   pythonSpelling)),
            "intra_node_gbps: must be between 0.001 and 1e+09 GB/s, got 0");
}

TEST(TopologyOptionsTest, OptionsOverrideTheTaskAndTheTaskFillsTheRest) {
  TopologyDescription task;
  task.devices = 16;
  task.devicesPerNode = 8;
  task.memoryGB = {40};
  task.interNodeGBps = 25;

  Expected<Topology> topology = resolve({}, task);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numDevices(), 16u);
  EXPECT_EQ(topology->numNodes(), 2u);
  EXPECT_EQ(topology->memoryGB.back(), 40.0);
  EXPECT_EQ(topology->interNodeBandwidthGBps, 25.0);

  // More devices keep the task's node size.
  TopologyOptions options;
  options.devices = 32;
  options.interNodeGBps = 100;
  topology = resolve(options, task);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numNodes(), 4u);
  EXPECT_EQ(topology->memoryGB.size(), 32u);
  EXPECT_EQ(topology->interNodeBandwidthGBps, 100.0);

  options.devices = 12;
  EXPECT_EQ(messageOf(resolve(options, task)),
            "12 devices do not fill whole nodes of 8 devices, the node size "
            "the task gives; give --nodes or --devices-per-node");

  // A task on one node stays on one node whatever the count.
  TopologyDescription single;
  single.devices = 4;
  single.memoryGB = {8, 8, 8, 16};
  options = {};
  options.devices = 6;
  EXPECT_EQ(messageOf(resolve(options, single)),
            "no memory capacity for 6 devices: the task has 4 capacities; "
            "give --memory-gb (one value or one per device)");
  options.memoryGB = "8";
  topology = resolve(options, single);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numNodes(), 1u);
}

TEST(TopologyOptionsTest, NamesWhatIsMissingOrInconsistent) {
  EXPECT_EQ(messageOf(resolve({})),
            "--devices is required unless --memory-gb lists one value per "
            "device or --nodes gives the cluster's nodes");
  TopologyOptions options;
  options.memoryGB = "16,16,8";
  Expected<Topology> topology = resolve(options);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numDevices(), 3u);
  options.devices = 4;
  EXPECT_EQ(messageOf(resolve(options)),
            "--memory-gb lists 3 values but there are 4 devices");
  options = {};
  options.memoryGB = "";
  EXPECT_EQ(messageOf(resolve(options)),
            "--memory-gb: expected a number or a comma list");
  options = {};
  options.devices = 2;
  options.optimizer = "lamb";
  EXPECT_EQ(messageOf(resolve(options)),
            "--optimizer: unknown optimizer 'lamb'; expected one of sgd, "
            "adagrad, rowwise-adagrad, adam");
  // A plan to price gives the count when nothing else does.
  topology = resolve({}, {}, 5);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numDevices(), 5u);
}

std::string topologyError(StringRef topology) {
  std::string text =
      formatv(R"({{"topology": {0}, "tables": [{{"name": "t", "rows": 10,
        "dim": 4, "pooling_factor": 1,
        "access_hist": [1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]})",
              topology)
          .str();
  return messageOf(parseTaskJSON(text));
}

TEST(TopologyOptionsTest, TasksDescribeTheirCluster) {
  Expected<PlanningTask> task = parseTaskJSON(
      R"({"topology": {"nodes": 2, "devices_per_node": 4, "memory_gb": 80,
                       "inter_node_gbps": 25},
          "tables": [{"name": "t", "rows": 10, "dim": 4, "pooling_factor": 1,
                      "access_hist": [1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]})");
  ASSERT_EQ(errorMessage(task), "");
  EXPECT_EQ(task->topology.devices, 8u);
  Expected<Topology> topology = resolve({}, task->topology);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->numNodes(), 2u);
  EXPECT_EQ(topology->memoryGB, std::vector<double>(8, 80.0));
  EXPECT_EQ(topology->interNodeBandwidthGBps, 25.0);

  EXPECT_EQ(topologyError(R"({"devices": 16, "nodes": 3})"),
            "topology: 'nodes': 16 devices do not split into 3 nodes of "
            "equal size");
  EXPECT_EQ(topologyError(R"({"devices": 16, "nodes": 2,
                              "devices_per_node": 4})"),
            "topology: 'nodes' x 'devices_per_node' must equal the device "
            "count: 2 x 4 is not 16");
  EXPECT_EQ(topologyError(R"({"inter_node_gbps": 0})"),
            "topology: 'inter_node_gbps' must be between 0.001 and 1e+09 "
            "GB/s, got 0");
  EXPECT_EQ(topologyError(R"({"devices": 2, "memory_gb": [8, 8, 8]})"),
            "topology: 'memory_gb' lists 3 values but 'devices' is 2");
  EXPECT_EQ(topologyError(R"({"devices": 0})"),
            "topology: 'devices' must be between 1 and 65536, got 0");
  EXPECT_EQ(topologyError(R"({"gpus": 8})"),
            "topology: unknown field 'gpus' (expected one of: devices, "
            "memory_gb, nodes, devices_per_node, hbm_gbps, intra_node_gbps, "
            "inter_node_gbps, host_memory_gb, host_gbps, device_kind)");
  EXPECT_EQ(topologyError("8"), "task: 'topology' must be an object, got 8");
}

TEST(TopologyOptionsTest, DeviceKindFromTheOptionsElseTheTaskElseGPU) {
  Expected<Topology> topology = resolve({}, {}, 2);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->deviceKind, "gpu");
  Expected<PlanningTask> task = parseTaskJSON(
      R"({"topology": {"devices": 2, "device_kind": "CPU"},
          "tables": [{"name": "t", "rows": 10, "dim": 4,
                      "pooling_factor": 1}]})");
  ASSERT_EQ(errorMessage(task), "");
  EXPECT_EQ(task->topology.deviceKind, std::optional<std::string>("cpu"));
  topology = resolve({}, task->topology);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->deviceKind, "cpu");
  TopologyOptions options;
  options.deviceKind = " H100 ";
  topology = resolve(options, task->topology);
  ASSERT_EQ(errorMessage(topology), "");
  EXPECT_EQ(topology->deviceKind, "h100");
  // A description of the topology keeps its kind.
  EXPECT_EQ(TopologyDescription::of(*topology).deviceKind,
            std::optional<std::string>("h100"));
  options.deviceKind = "h100/sxm";
  EXPECT_EQ(messageOf(resolve(options, task->topology)),
            "--device-kind: 'h100/sxm' is not a device kind: expected 1 to 64 "
            "lower-case letters, digits, '-', '_' or '.' (gpu, cpu, or a chip "
            "such as h100 or cpu-zen3)");
  EXPECT_EQ(topologyError(R"({"device_kind": 4})"),
            "topology: 'device_kind' must be a string, got 4");
  EXPECT_EQ(topologyError(R"({"device_kind": ""})"),
            "topology: 'device_kind': '' is not a device kind: expected 1 to "
            "64 lower-case letters, digits, '-', '_' or '.' (gpu, cpu, or a "
            "chip such as h100 or cpu-zen3)");
  EXPECT_TRUE(isCPUDeviceKind("cpu"));
  EXPECT_TRUE(isCPUDeviceKind("cpu-zen3"));
  EXPECT_FALSE(isCPUDeviceKind("cpuh"));
  EXPECT_FALSE(isCPUDeviceKind("gpu"));
}

} // namespace
