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

std::string formatGB(double bytes, unsigned extraDigits) {
  double gb = bytes / kBytesPerGB;
  int digits = static_cast<int>(extraDigits);
  if (gb >= 10.0)
    return formatv("{0} GB", format("%.*f", 1 + digits, gb)).str();
  if (gb >= 1.0)
    return formatv("{0} GB", format("%.*f", 2 + digits, gb)).str();
  return formatv("{0} GB", format("%#.*g", 3 + digits, gb)).str();
}

std::pair<std::string, std::string> formatGBPair(double a, double b) {
  // A few extra digits separate any sizes that differ by a byte or more
  // at the scales of tables and devices.
  unsigned extra = 0;
  while (extra < 9 && a != b && formatGB(a, extra) == formatGB(b, extra))
    ++extra;
  return {formatGB(a, extra), formatGB(b, extra)};
}

// Bounds that keep byte counts, and their sums over many tables and
// devices, far from overflowing 64 bits (2^46 and 2^50 bytes).
static constexpr int64_t kMaxTableGB = int64_t(1) << 16;
static constexpr int64_t kMaxDeviceGB = int64_t(1) << 20;

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
    if (!(topology.memoryGB[d] > 0.0) ||
        !(topology.memoryGB[d] <= kMaxDeviceGB))
      return createStringError(
          inconvertibleErrorCode(),
          formatv("device {0}: memory capacity must be a positive number of "
                  "GB up to {1}, got {2}",
                  d, kMaxDeviceGB, format("%g", topology.memoryGB[d])));
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
    double bytes = double(table.rows) * table.dim * table.elementBytes;
    if (bytes > kMaxTableGB * kBytesPerGB)
      return tableError(i, table,
                        formatv("needs {0}, more than the {1} GB a table may "
                                "have",
                                formatGB(bytes), kMaxTableGB));
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
