//===- Traffic.cpp - What each device of a plan exchanges -----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/Traffic.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <numeric>

using namespace llvm;

namespace neuroshard {

/// Adds the pooled exchange of every device, from the dim sums.
static void addPooledTraffic(const Topology &topology,
                             MutableArrayRef<DeviceTraffic> traffic) {
  double n = topology.numDevices();
  double nodeSize = topology.nodeSize();
  double bags = static_cast<double>(topology.batchSize);
  std::vector<double> nodeDims(topology.numNodes(), 0.0);
  double total = 0.0;
  for (auto [d, device] : enumerate(traffic)) {
    nodeDims[topology.nodeOf(d)] += device.dimSum;
    total += device.dimSum;
  }
  for (auto [d, device] : enumerate(traffic)) {
    // Device d keeps its own slice of its columns and sends every other
    // device its B / N bags of them: nodeSize - 1 slices inside its node,
    // N - nodeSize to other nodes. It receives its slice of every other
    // device's columns.
    double own = device.dimSum, node = nodeDims[topology.nodeOf(d)];
    device.pooled.intraSent = bags * own * (nodeSize - 1) / n;
    device.pooled.intraReceived = bags * (node - own) / n;
    device.pooled.interSent = bags * own * (n - nodeSize) / n;
    device.pooled.interReceived = bags * (total - node) / n;
  }
}

std::vector<DeviceTraffic> computeTraffic(ArrayRef<TableSpec> tables,
                                          const Topology &topology,
                                          ArrayRef<ColumnSlice> slices,
                                          ArrayRef<unsigned> deviceOf) {
  unsigned numDevices = topology.numDevices();
  std::vector<DeviceTraffic> traffic(numDevices);
  if (numDevices == 0)
    return traffic;
  for (auto [slice, device] : zip_equal(slices, deviceOf))
    traffic[device].dimSum +=
        static_cast<double>(slice.width() * tables[slice.table].numFeatures());
  addPooledTraffic(topology, traffic);

  double n = numDevices;
  double nodeSize = topology.nodeSize();
  double bags = static_cast<double>(topology.batchSize);
  // Each table's pieces, by a counting sort (slices are usually sorted by
  // table already, but need not be).
  std::vector<uint32_t> firstOfTable(tables.size() + 1, 0);
  for (const ColumnSlice &slice : slices)
    ++firstOfTable[slice.table + 1];
  std::partial_sum(firstOfTable.begin(), firstOfTable.end(),
                   firstOfTable.begin());
  std::vector<uint32_t> byTable(slices.size());
  {
    std::vector<uint32_t> next(firstOfTable.begin(), firstOfTable.end() - 1);
    for (auto [i, slice] : enumerate(slices))
      byTable[next[slice.table]++] = i;
  }

  // Per node: the lookups of the pieces it holds (H), and of the tables it
  // holds a piece of, once each (A); over all tables, the lookups times the
  // nodes that hold the table (S); per device, its pieces' lookups (I).
  std::vector<double> nodePieceLookups(topology.numNodes(), 0.0);
  std::vector<double> nodeTableLookups(topology.numNodes(), 0.0);
  std::vector<double> devicePieceLookups(numDevices, 0.0);
  double lookupsTimesNodes = 0.0;
  SmallVector<std::pair<unsigned, unsigned>, 8> holders; // (node, pieces)
  for (unsigned table = 0; table < tables.size(); ++table) {
    ArrayRef<uint32_t> pieces = ArrayRef(byTable).slice(
        firstOfTable[table], firstOfTable[table + 1] - firstOfTable[table]);
    if (pieces.empty())
      continue;
    double lookups = bags * tables[table].totalPoolingFactor();
    holders.clear();
    for (uint32_t piece : pieces) {
      unsigned node = topology.nodeOf(deviceOf[piece]);
      auto it = find_if(holders, [&](auto &h) { return h.first == node; });
      if (it == holders.end())
        holders.emplace_back(node, 1);
      else
        ++it->second;
    }
    lookupsTimesNodes += lookups * holders.size();
    for (auto [node, count] : holders) {
      nodeTableLookups[node] += lookups;
      nodePieceLookups[node] += lookups * count;
    }
    for (uint32_t piece : pieces) {
      unsigned device = deviceOf[piece];
      unsigned node = topology.nodeOf(device);
      double k =
          find_if(holders, [&](auto &h) { return h.first == node; })->second;
      LinkVolume &indices = traffic[device].indices;
      devicePieceLookups[device] += lookups;
      // The node's other devices' bags come over its own links; the other
      // nodes' bags cross once into the node, 1/k to each holder, which
      // passes them on to the other k - 1.
      double fromOtherNodes = lookups * (n - nodeSize) / n;
      indices.intraReceived +=
          lookups * (nodeSize - 1) / n + fromOtherNodes * (1.0 - 1.0 / k);
      indices.interReceived += fromOtherNodes / k;
      indices.intraSent += fromOtherNodes / k * (k - 1.0);
    }
  }
  for (auto [d, device] : enumerate(traffic)) {
    unsigned node = topology.nodeOf(d);
    // Its own bags' lookups go to every piece in its node but its own, and
    // once to every other node that holds a piece of the table.
    device.indices.intraSent +=
        (nodePieceLookups[node] - devicePieceLookups[d]) / n;
    device.indices.interSent +=
        (lookupsTimesNodes - nodeTableLookups[node]) / n;
  }
  return traffic;
}

std::vector<DeviceTraffic> computeTraffic(ArrayRef<TableSpec> tables,
                                          const Topology &topology,
                                          const ShardingPlan &plan) {
  std::vector<ColumnSlice> slices;
  std::vector<unsigned> deviceOf;
  for (const Shard &shard : plan.shards) {
    slices.push_back(shard.slice());
    deviceOf.push_back(shard.device);
  }
  return computeTraffic(tables, topology, slices, deviceOf);
}

} // namespace neuroshard
