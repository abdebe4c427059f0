//===- Problem.cpp - Tables and devices of a sharding problem -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/Problem.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;

namespace neuroshard {

std::string formatGB(double bytes) {
  // At least three significant digits, so that numbers a message compares
  // ("needs 2.03 GB ... has 2.00 GB") do not round to the same text.
  double gb = bytes / kBytesPerGB;
  if (gb >= 10.0)
    return formatv("{0} GB", format("%.1f", gb)).str();
  if (gb >= 1.0)
    return formatv("{0} GB", format("%.2f", gb)).str();
  return formatv("{0} GB", format("%#.3g", gb)).str();
}

static Error tableError(size_t index, const TableSpec &table,
                        const Twine &message) {
  return createStringError(inconvertibleErrorCode(), "tables[" + Twine(index) +
                                                         "] ('" + table.name +
                                                         "'): " + message);
}

Error validateProblem(ArrayRef<TableSpec> tables, const Topology &topology) {
  unsigned n = topology.numDevices();
  if (n == 0)
    return createStringError(inconvertibleErrorCode(),
                             "the topology has no devices");
  for (unsigned d = 0; d < n; ++d)
    if (!(topology.memoryGB[d] > 0.0) || !std::isfinite(topology.memoryGB[d]))
      return createStringError(
          inconvertibleErrorCode(),
          formatv("device {0}: memory capacity must be a positive number of "
                  "GB, got {1}",
                  d, format("%g", topology.memoryGB[d])));
  if (!(topology.hbmBandwidthGBps > 0.0) ||
      !(topology.interconnectBandwidthGBps > 0.0))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("bandwidths must be positive, got HBM {0} GB/s and "
                "interconnect {1} GB/s",
                format("%g", topology.hbmBandwidthGBps),
                format("%g", topology.interconnectBandwidthGBps)));
  if (topology.batchSize <= 0)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("batch size must be positive, got {0}", topology.batchSize));
  if (tables.empty())
    return createStringError(inconvertibleErrorCode(),
                             "there are no tables to place");

  StringMap<size_t> firstUse;
  for (auto [i, table] : enumerate(tables)) {
    if (table.name.empty())
      return tableError(i, table, "the name is empty");
    auto [it, inserted] = firstUse.try_emplace(table.name, i);
    if (!inserted)
      return tableError(
          i, table,
          formatv("the name is already used by tables[{0}]", it->second));
    if (table.rows <= 0)
      return tableError(
          i, table, formatv("'rows' must be positive, got {0}", table.rows));
    if (table.dim <= 0 || table.dim % kColumnAlignment != 0)
      return tableError(
          i, table,
          formatv("'dim' must be a positive multiple of {0}, got {1}",
                  kColumnAlignment, table.dim));
    if (table.elementBytes == 0)
      return tableError(i, table, "element size must be positive");
    if (!(table.poolingFactor >= 0.0) || !std::isfinite(table.poolingFactor))
      return tableError(i, table,
                        formatv("'pooling_factor' must be a non-negative "
                                "number, got {0}",
                                format("%g", table.poolingFactor)));
    double histSum = 0.0;
    for (auto [bin, value] : enumerate(table.accessHist)) {
      if (!(value >= 0.0) || !std::isfinite(value))
        return tableError(i, table,
                          formatv("'access_hist' bin {0} must be a "
                                  "non-negative number, got {1}",
                                  bin, format("%g", value)));
      histSum += value;
    }
    // Histograms written with a few decimals do not sum to 1 exactly.
    if (histSum != 0.0 && std::abs(histSum - 1.0) > 0.01)
      return tableError(i, table,
                        formatv("'access_hist' must sum to 1 (or be all "
                                "zero), got {0}",
                                format("%g", histSum)));
    if (table.pinnedDevice && *table.pinnedDevice >= n)
      return tableError(i, table,
                        formatv("pinned to device {0} but there are only {1} "
                                "devices",
                                *table.pinnedDevice, n));
  }
  return Error::success();
}

} // namespace neuroshard
