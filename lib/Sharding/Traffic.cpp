//===- Traffic.cpp - What each device of a plan exchanges -----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/Traffic.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <numeric>
#include <tuple>

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

/// Adds the all-reduce of the replicas' gradients. Every device holds a
/// replica of a data-parallel table, so every device moves the same volume.
static void addGradientTraffic(ArrayRef<TableSpec> tables,
                               const Topology &topology,
                               ArrayRef<ColumnSlice> slices,
                               ArrayRef<unsigned> deviceOf,
                               MutableArrayRef<DeviceTraffic> traffic) {
  std::vector<double> replicaValues(topology.numDevices(), 0.0);
  for (auto [slice, device] : zip_equal(slices, deviceOf))
    if (slice.replica)
      replicaValues[device] += static_cast<double>(tables[slice.table].rows) *
                               static_cast<double>(slice.width());
  double g = topology.nodeSize(), m = topology.numNodes();
  for (auto [values, device] : zip_equal(replicaValues, traffic)) {
    // Reduce-scatter and all-gather inside the node move 2 (g - 1) / g of
    // the values each way; the node's 1 / g share is all-reduced across
    // the m nodes, 2 (m - 1) / m of it each way.
    double intra = 2.0 * (g - 1.0) / g * values;
    double inter = m > 1 ? 2.0 * (m - 1.0) / m * values / g : 0.0;
    device.gradients = {intra, intra, inter, inter};
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
    if (!slice.replica)
      traffic[device].dimSum += static_cast<double>(
          slice.width() * tables[slice.table].numFeatures());
  addPooledTraffic(topology, traffic);
  addGradientTraffic(tables, topology, slices, deviceOf, traffic);

  double n = numDevices;
  double nodeSize = topology.nodeSize();
  double bags = static_cast<double>(topology.batchSize);
  // The pieces that share their lookups: those of one table and one row
  // range (replicas look up their own bags and share nothing), in groups
  // of consecutive indices of `order`.
  std::vector<uint32_t> order;
  for (auto [i, slice] : enumerate(slices))
    if (!slice.replica)
      order.push_back(i);
  auto sameLookups = [&](uint32_t a, uint32_t b) {
    const ColumnSlice &x = slices[a], &y = slices[b];
    return x.table == y.table && x.rowBegin == y.rowBegin &&
           x.rowEnd == y.rowEnd;
  };
  llvm::stable_sort(order, [&](uint32_t a, uint32_t b) {
    const ColumnSlice &x = slices[a], &y = slices[b];
    return std::make_tuple(x.table, x.rowBegin, x.rowEnd) <
           std::make_tuple(y.table, y.rowBegin, y.rowEnd);
  });
  // Per node: the lookups of the pieces it holds (H), and of the groups it
  // holds a piece of, once each (A); over all groups, the lookups times the
  // nodes that hold the group (S); per device, its pieces' lookups (I).
  std::vector<double> nodePieceLookups(topology.numNodes(), 0.0);
  std::vector<double> nodeTableLookups(topology.numNodes(), 0.0);
  std::vector<double> devicePieceLookups(numDevices, 0.0);
  double lookupsTimesNodes = 0.0;
  SmallVector<std::pair<unsigned, unsigned>, 8> holders; // (node, pieces)
  for (size_t first = 0; first < order.size();) {
    size_t last = first + 1;
    while (last < order.size() && sameLookups(order[first], order[last]))
      ++last;
    ArrayRef<uint32_t> pieces = ArrayRef(order).slice(first, last - first);
    first = last;
    const ColumnSlice &group = slices[pieces.front()];
    const TableSpec &table = tables[group.table];
    double lookups = bags * table.totalPoolingFactor() * group.rowShare(table);
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
