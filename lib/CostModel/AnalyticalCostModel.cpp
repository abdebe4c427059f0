//===- AnalyticalCostModel.cpp - Bandwidth (roofline) cost model ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The formulas are written out in docs/cost-model.md; keep the two in sync.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/AnalyticalCostModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace neuroshard {

/// Milliseconds to move `bytes` at `gbPerSecond` (GB = 2^30 bytes).
static double transferTimeMs(double bytes, double gbPerSecond) {
  return bytes / (gbPerSecond * kBytesPerGB) * 1e3;
}

static Error batchSizeError(StringRef what, size_t size, size_t expected) {
  return createStringError(
      inconvertibleErrorCode(),
      formatv("analytical cost model: {0} has {1} values, expected {2}", what,
              size, expected));
}

std::string AnalyticalCostModel::description() const {
  std::string links =
      topology.numNodes() > 1
          ? formatv("{0} nodes of {1} devices, intra-node {2} GB/s, "
                    "inter-node {3} GB/s",
                    topology.numNodes(), topology.nodeSize(),
                    format("%g", topology.intraNodeBandwidthGBps),
                    format("%g", topology.interNodeBandwidthGBps))
                .str()
          : formatv("intra-node {0} GB/s",
                    format("%g", topology.intraNodeBandwidthGBps))
                .str();
  return formatv("analytical bandwidth model (HBM {0} GB/s, {1}, batch {2}, "
                 "backward = {3} x forward)",
                 format("%g", topology.hbmBandwidthGBps), links,
                 topology.batchSize, format("%g", params.backwardFactor))
      .str();
}

Error AnalyticalCostModel::prepare(ArrayRef<TableSpec> newTables,
                                   const Topology &newTopology) {
  bool bandwidthsValid =
      !checkBandwidthGBps(newTopology.hbmBandwidthGBps) &&
      !checkBandwidthGBps(newTopology.intraNodeBandwidthGBps) &&
      !checkBandwidthGBps(newTopology.interNodeBandwidthGBps) &&
      !checkBandwidthGBps(newTopology.hostBandwidthGBps);
  if (newTopology.numDevices() == 0 || !bandwidthsValid ||
      newTopology.batchSize <= 0 ||
      newTopology.numDevices() % newTopology.nodeSize() != 0)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("analytical cost model: needs at least one device in whole "
                "nodes, bandwidths in [{0}, {1}] GB/s and a positive batch "
                "size, got {2} devices in nodes of {3}, HBM {4} GB/s, "
                "intra-node {5} GB/s, inter-node {6} GB/s, batch {7}",
                format("%g", kMinBandwidthGBps),
                format("%g", kMaxBandwidthGBps), newTopology.numDevices(),
                newTopology.nodeSize(),
                format("%g", newTopology.hbmBandwidthGBps),
                format("%g", newTopology.intraNodeBandwidthGBps),
                format("%g", newTopology.interNodeBandwidthGBps),
                newTopology.batchSize));
  tables.assign(newTables.begin(), newTables.end());
  topology = newTopology;
  rowMoments.clear();
  for (const TableSpec &table : tables)
    rowMoments.push_back(tableRowHitMoments(table, topology.batchSize));
  host.prepare(tables, topology);
  return Error::success();
}

double AnalyticalCostModel::sliceComputeMs(const ColumnSlice &slice) const {
  const TableSpec &table = tables[slice.table];
  double bags = static_cast<double>(topology.batchSize);
  double lookups = bags * table.totalPoolingFactor();
  double width = static_cast<double>(slice.width());
  // A replica looks up its device's share of the bags; a row piece gets the
  // lookups of its rows, priced as its table's most loaded block
  // (Problem.h, rowBlockShare), and writes a partial sum for every bag.
  if (slice.replica) {
    bags /= topology.numDevices();
    lookups /= topology.numDevices();
  } else {
    lookups *= rowBlockShare(table, slice, rowMoments[slice.table]);
  }
  // Every column piece of a table reads all of the table's indices, then
  // one row segment per index, and writes one pooled output per bag and
  // feature.
  double bytes = lookups * params.indexBytes +
                 lookups * width * table.elementBytes +
                 bags * table.numFeatures() * width * table.elementBytes;
  double penalty = 1.0;
  if (slice.width() < params.veryNarrowDim)
    penalty = params.veryNarrowPenalty;
  else if (slice.width() < params.narrowDim)
    penalty = params.narrowPenalty;
  double forwardMs = transferTimeMs(bytes, topology.hbmBandwidthGBps) * penalty;
  // A shard of a host-memory table also fetches the rows its cache misses
  // and writes them back (HostTier.h).
  return forwardMs * (1.0 + params.backwardFactor) + host.ms(slice);
}

Error AnalyticalCostModel::predictCompute(ArrayRef<ArrayRef<ColumnSlice>> sets,
                                          MutableArrayRef<double> costsMs) {
  if (costsMs.size() != sets.size())
    return batchSizeError("the compute cost output", costsMs.size(),
                          sets.size());
  for (auto [set, cost] : llvm::zip_equal(sets, costsMs)) {
    cost = 0.0;
    for (const ColumnSlice &slice : set) {
      if (Error err = checkPrepared(slice))
        return err;
      cost += sliceComputeMs(slice);
    }
  }
  return Error::success();
}

Error AnalyticalCostModel::checkPrepared(const ColumnSlice &slice) const {
  if (slice.table < tables.size())
    return Error::success();
  return createStringError(
      inconvertibleErrorCode(),
      formatv("analytical cost model: slice of table {0} but {1} tables were "
              "prepared",
              slice.table, tables.size()));
}

Error AnalyticalCostModel::computeTerms(ArrayRef<ColumnSlice> slices,
                                        MutableArrayRef<double> terms) {
  if (terms.size() != slices.size())
    return batchSizeError("the slice terms", terms.size(), slices.size());
  for (auto [slice, term] : llvm::zip_equal(slices, terms)) {
    if (Error err = checkPrepared(slice))
      return err;
    term = sliceComputeMs(slice);
  }
  return Error::success();
}

Error AnalyticalCostModel::predictComputeFromSums(
    ArrayRef<double> sums, MutableArrayRef<double> costsMs) {
  if (costsMs.size() != sums.size())
    return batchSizeError("the compute cost output", costsMs.size(),
                          sums.size());
  llvm::copy(sums, costsMs.begin());
  return Error::success();
}

double AnalyticalCostModel::linkMs(const LinkVolume &volume,
                                   double bytesPerValue) const {
  return transferTimeMs(std::max(volume.intraSent, volume.intraReceived) *
                            bytesPerValue,
                        topology.intraNodeBandwidthGBps) +
         transferTimeMs(std::max(volume.interSent, volume.interReceived) *
                            bytesPerValue,
                        topology.interNodeBandwidthGBps);
}

double AnalyticalCostModel::pooledExchangeMs(const LinkVolume &pooled) const {
  return linkMs(pooled, params.commElementBytes);
}

double
AnalyticalCostModel::indexDistributionMs(const LinkVolume &indices) const {
  return linkMs(indices, params.indexBytes);
}

double
AnalyticalCostModel::gradientAllReduceMs(const LinkVolume &gradients) const {
  return linkMs(gradients, params.commElementBytes);
}

Error AnalyticalCostModel::checkLayout(ArrayRef<DeviceTraffic> traffic,
                                       MutableArrayRef<double> costsMs) const {
  unsigned n = topology.numDevices();
  if (n == 0 || traffic.size() % n != 0)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("analytical cost model: the traffic of {0} devices is not a "
                "whole number of plans on {1} devices",
                traffic.size(), n));
  if (costsMs.size() != traffic.size())
    return batchSizeError("the communication cost output", costsMs.size(),
                          traffic.size());
  return Error::success();
}

Error AnalyticalCostModel::predictBackwardComm(
    ArrayRef<DeviceTraffic> traffic, MutableArrayRef<double> costsMs) {
  if (Error err = checkLayout(traffic, costsMs))
    return err;
  // The gradients of the pooled outputs go back the way the outputs came;
  // the replicas' gradients are all-reduced.
  for (auto [device, cost] : zip_equal(traffic, costsMs))
    cost =
        pooledExchangeMs(device.pooled) + gradientAllReduceMs(device.gradients);
  return Error::success();
}

Error AnalyticalCostModel::predictForwardComm(ArrayRef<DeviceTraffic> traffic,
                                              ArrayRef<double> stragglersMs,
                                              MutableArrayRef<double> costsMs) {
  if (Error err = checkLayout(traffic, costsMs))
    return err;
  if (stragglersMs.size() != traffic.size())
    return batchSizeError("the straggler times", stragglersMs.size(),
                          traffic.size());
  for (auto [device, cost] : zip_equal(traffic, costsMs))
    cost =
        indexDistributionMs(device.indices) + pooledExchangeMs(device.pooled);
  // The exchange is a barrier: a device waits until the latest one
  // arrives, i.e. for the largest straggler time minus its own.
  unsigned n = topology.numDevices();
  for (size_t plan = 0; plan < traffic.size(); plan += n) {
    ArrayRef<double> late = stragglersMs.slice(plan, n);
    double latest = *std::max_element(late.begin(), late.end());
    for (unsigned d = 0; d < n; ++d)
      costsMs[plan + d] += latest - late[d];
  }
  return Error::success();
}

} // namespace neuroshard
