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
  return formatv("analytical bandwidth model (HBM {0} GB/s, interconnect {1} "
                 "GB/s, batch {2}, backward = {3} x forward)",
                 format("%g", topology.hbmBandwidthGBps),
                 format("%g", topology.interconnectBandwidthGBps),
                 topology.batchSize, format("%g", params.backwardFactor))
      .str();
}

Error AnalyticalCostModel::prepare(ArrayRef<TableSpec> newTables,
                                   const Topology &newTopology) {
  if (newTopology.numDevices() == 0 || newTopology.hbmBandwidthGBps <= 0 ||
      newTopology.interconnectBandwidthGBps <= 0 || newTopology.batchSize <= 0)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("analytical cost model: needs at least one device and "
                "positive bandwidths and batch size, got {0} devices, HBM {1} "
                "GB/s, interconnect {2} GB/s, batch {3}",
                newTopology.numDevices(),
                format("%g", newTopology.hbmBandwidthGBps),
                format("%g", newTopology.interconnectBandwidthGBps),
                newTopology.batchSize));
  tables.assign(newTables.begin(), newTables.end());
  topology = newTopology;
  return Error::success();
}

double AnalyticalCostModel::sliceComputeMs(const ColumnSlice &slice) const {
  const TableSpec &table = tables[slice.table];
  double bags = static_cast<double>(topology.batchSize);
  double lookups = bags * table.totalPoolingFactor();
  double width = static_cast<double>(slice.width());
  // Every slice of a table reads all of the table's indices, then one row
  // segment per index, and writes one pooled output per bag and feature.
  double bytes = lookups * params.indexBytes +
                 lookups * width * table.elementBytes +
                 bags * table.numFeatures() * width * table.elementBytes;
  double penalty = 1.0;
  if (slice.width() < params.veryNarrowDim)
    penalty = params.veryNarrowPenalty;
  else if (slice.width() < params.narrowDim)
    penalty = params.narrowPenalty;
  double forwardMs = transferTimeMs(bytes, topology.hbmBandwidthGBps) * penalty;
  return forwardMs * (1.0 + params.backwardFactor);
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

Error AnalyticalCostModel::transferMs(ArrayRef<double> dimSums,
                                      MutableArrayRef<double> costsMs) const {
  unsigned n = topology.numDevices();
  if (dimSums.size() % n != 0)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("analytical cost model: {0} dim sums are not a whole number "
                "of plans on {1} devices",
                dimSums.size(), n));
  if (costsMs.size() != dimSums.size())
    return batchSizeError("the communication cost output", costsMs.size(),
                          dimSums.size());
  double bytesPerColumn =
      static_cast<double>(topology.batchSize) * params.commElementBytes;
  for (size_t plan = 0; plan < dimSums.size(); plan += n) {
    ArrayRef<double> dims = dimSums.slice(plan, n);
    double total = 0.0;
    for (double dim : dims)
      total += dim;
    for (unsigned d = 0; d < n; ++d) {
      // Device d keeps 1/N of its own pooled columns and sends the rest; it
      // receives its 1/N of the batch for every other device's columns.
      double sent = bytesPerColumn * dims[d] * (n - 1) / n;
      double received = bytesPerColumn * (total - dims[d]) / n;
      costsMs[plan + d] = transferTimeMs(std::max(sent, received),
                                         topology.interconnectBandwidthGBps);
    }
  }
  return Error::success();
}

Error AnalyticalCostModel::predictBackwardComm(
    ArrayRef<double> dimSums, MutableArrayRef<double> costsMs) {
  return transferMs(dimSums, costsMs);
}

Error AnalyticalCostModel::predictForwardComm(ArrayRef<double> dimSums,
                                              ArrayRef<double> stragglersMs,
                                              MutableArrayRef<double> costsMs) {
  if (stragglersMs.size() != dimSums.size())
    return batchSizeError("the straggler times", stragglersMs.size(),
                          dimSums.size());
  if (Error err = transferMs(dimSums, costsMs))
    return err;
  // The all-to-all is a barrier: a device waits until the latest one
  // arrives, i.e. for the largest straggler time minus its own.
  unsigned n = topology.numDevices();
  for (size_t plan = 0; plan < dimSums.size(); plan += n) {
    ArrayRef<double> late = stragglersMs.slice(plan, n);
    double latest = *std::max_element(late.begin(), late.end());
    for (unsigned d = 0; d < n; ++d)
      costsMs[plan + d] += latest - late[d];
  }
  return Error::success();
}

} // namespace neuroshard
