//===- TableRules.cpp - What makes a table and a topology valid -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/TableRules.h"
#include "neuroshard/Sharding/Problem.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace llvm;

namespace neuroshard {

/// Numbers in messages as the user would write them ("0.8", "nan", "1e+305").
static std::string number(double value) {
  return formatv("{0}", format("%g", value)).str();
}

std::optional<unsigned> elementTypeBytes(StringRef elementType) {
  return StringSwitch<std::optional<unsigned>>(elementType)
      .Case("f32", 4)
      .Case("f16", 2)
      .Case("bf16", 2)
      .Default(std::nullopt);
}

RuleViolation checkTableName(StringRef name) {
  const char *problem = "'name' must be valid UTF-8 without control characters";
  if (!json::isUTF8(name))
    return formatv("{0}, got invalid UTF-8", problem).str();
  for (auto [offset, c] : enumerate(name)) {
    unsigned char byte = c;
    if (byte < 0x20 || byte == 0x7f)
      return formatv("{0}, got byte {1} at offset {2}", problem,
                     format_hex(byte, 4), offset)
          .str();
  }
  if (name.contains("\xEF\xBF\xBD"))
    return formatv("{0}, got U+FFFD (a lone UTF-16 surrogate or invalid text "
                   "in the input) at offset {1}",
                   problem, name.find("\xEF\xBF\xBD"))
        .str();
  return std::nullopt;
}

RuleViolation checkElementType(StringRef elementType) {
  if (elementTypeBytes(elementType))
    return std::nullopt;
  return formatv("'dtype' must be one of f32, f16, bf16, got '{0}'",
                 elementType)
      .str();
}

RuleViolation checkRows(int64_t rows) {
  if (rows > 0)
    return std::nullopt;
  return formatv("'rows' must be positive, got {0}", rows).str();
}

RuleViolation checkDim(int64_t dim) {
  if (dim > 0 && dim % kColumnAlignment == 0)
    return std::nullopt;
  return formatv("'dim' must be a positive multiple of {0}, got {1}",
                 kColumnAlignment, dim)
      .str();
}

RuleViolation checkTableBytes(int64_t rows, int64_t dim,
                              unsigned elementBytes) {
  // In floating point, so that products past 2^64 compare correctly.
  double bytes = double(rows) * double(dim) * double(elementBytes);
  if (bytes <= double(kMaxTableGB) * kBytesPerGB)
    return std::nullopt;
  return formatv("needs {0}, more than the {1} GB a table may have",
                 formatGB(bytes), kMaxTableGB)
      .str();
}

RuleViolation checkPoolingFactor(double poolingFactor) {
  if (!std::isfinite(poolingFactor) || poolingFactor < 0.0)
    return formatv("'pooling_factor' must be a finite number >= 0, got {0}",
                   number(poolingFactor))
        .str();
  if (poolingFactor > kMaxPoolingFactor)
    return formatv("'pooling_factor' must be at most {0}, got {1}",
                   number(kMaxPoolingFactor), number(poolingFactor))
        .str();
  return std::nullopt;
}

RuleViolation checkAccessHistogram(ArrayRef<double> bins) {
  if (bins.size() != kNumAccessBins)
    return formatv("'access_hist' must have {0} bins, got {1}", kNumAccessBins,
                   bins.size())
        .str();
  double sum = 0.0;
  for (auto [bin, value] : enumerate(bins)) {
    if (!std::isfinite(value) || value < 0.0)
      return formatv("'access_hist' bin {0} must be a finite number >= 0, "
                     "got {1}",
                     bin, number(value))
          .str();
    sum += value;
  }
  if (sum == 0.0 || std::fabs(sum - 1.0) <= kAccessHistogramTolerance)
    return std::nullopt;
  return formatv("'access_hist' must sum to 1 (or be all zero for a table "
                 "never hit), got {0}",
                 number(sum))
      .str();
}

/// "rows hit once", "rows hit 3 to 4 times", "rows hit more than 32768
/// times".
static std::string binMeaning(unsigned bin) {
  if (bin == 0)
    return "rows hit once";
  if (bin + 1 == kNumAccessBins)
    return formatv("rows hit more than {0} times",
                   number(fewestHitsInBin(bin) - 1));
  if (bin == 1)
    return "rows hit twice";
  return formatv("rows hit {0} to {1} times", number(fewestHitsInBin(bin)),
                 number(mostHitsInBin(bin)));
}

RuleViolation checkAccessHistogramForBatch(ArrayRef<double> bins, int64_t rows,
                                           double poolingFactor,
                                           int64_t batchSize) {
  double lookups = double(batchSize) * poolingFactor;
  std::string batch =
      formatv("a batch of {0} bags with pooling factor {1} makes", batchSize,
              number(poolingFactor));
  std::string lookupText = formatv("{0}", format("%.0f", lookups));
  double slack = 1.0 + kAccessHistogramTolerance;
  std::optional<unsigned> highest;
  double mostLookupsPerRow = 0.0;
  for (auto [bin, fraction] : enumerate(bins)) {
    if (fraction <= 0.0)
      continue;
    highest = bin;
    mostLookupsPerRow += fraction * mostHitsInBin(bin);
  }
  if (!highest) {
    if (lookups < 1.0)
      return std::nullopt;
    return formatv("'access_hist' is all zero (a table never hit), but {0} "
                   "{1} lookups",
                   batch, lookupText)
        .str();
  }
  // B x pooling_factor is a mean and a batch makes a whole number of
  // lookups, so each bound allows the rounding that is looser for it: the
  // ceiling against a bin's fewest hits, the floor against the rows' most.
  if (fewestHitsInBin(*highest) > std::ceil(lookups) * slack)
    return formatv("'access_hist' bin {0} ({1}) is {2}, but {3} only {4} "
                   "lookups",
                   *highest, binMeaning(*highest), number(bins[*highest]),
                   batch, lookupText)
        .str();
  double mostLookups = double(rows) * mostLookupsPerRow;
  if (std::floor(lookups) > mostLookups * slack)
    return formatv("'access_hist' lets the table's {0} rows take at most {1} "
                   "lookups (at most {2} hits per distinct row), but {3} {4}; "
                   "a histogram describes one batch of the task's batch size",
                   rows, format("%.0f", mostLookups),
                   format("%.4g", mostLookupsPerRow), batch, lookupText)
        .str();
  return std::nullopt;
}

RuleViolation checkPinnedDevice(int64_t device, int64_t numDevices) {
  if (device >= 0 && device < numDevices)
    return std::nullopt;
  if (device < 0)
    return formatv("'pinned_device' must be non-negative, got {0}", device)
        .str();
  return formatv("'pinned_device' is {0} but there {1} only {2} device{3}",
                 device, numDevices == 1 ? "is" : "are", numDevices,
                 numDevices == 1 ? "" : "s")
      .str();
}

RuleViolation checkDeviceCount(int64_t numDevices) {
  if (numDevices >= 1 && numDevices <= kMaxDevices)
    return std::nullopt;
  return formatv("the device count must be between 1 and {0}, got {1}",
                 kMaxDevices, numDevices)
      .str();
}

RuleViolation checkCapacityGB(double gb) {
  if (gb > 0.0 && gb <= double(kMaxDeviceGB))
    return std::nullopt;
  return formatv("memory capacity must be a positive number of GB up to {0}, "
                 "got {1}",
                 kMaxDeviceGB, number(gb))
      .str();
}

RuleViolation checkStatistics(double poolingFactor, ArrayRef<double> bins) {
  if (RuleViolation v = checkPoolingFactor(poolingFactor))
    return v;
  return checkAccessHistogram(bins);
}

RuleViolation checkReservedFraction(double fraction) {
  if (fraction >= 0.0 && fraction < 1.0)
    return std::nullopt;
  return formatv("the reserved memory must be a fraction in [0, 1) of each "
                 "device, got {0}",
                 number(fraction))
      .str();
}

RuleViolation checkBandwidthGBps(double gbps) {
  if (gbps >= kMinBandwidthGBps && gbps <= kMaxBandwidthGBps)
    return std::nullopt;
  return formatv("must be between {0} and {1} GB/s, got {2}",
                 number(kMinBandwidthGBps), number(kMaxBandwidthGBps),
                 number(gbps))
      .str();
}

RuleViolation checkHostMemoryGB(double gb) {
  if (gb >= 0.0 && gb <= double(kMaxDeviceGB))
    return std::nullopt;
  return formatv("host memory must be a number of GB from 0 up to {0}, got "
                 "{1}",
                 kMaxDeviceGB, number(gb))
      .str();
}

RuleViolation checkCacheFraction(double fraction) {
  if (fraction > 0.0 && fraction <= 1.0)
    return std::nullopt;
  return formatv("'cache_load_factor' must be in (0, 1], the share of the "
                 "table's rows its devices cache, got {0}{1}",
                 number(fraction),
                 fraction > 1.0 ? ": a cache holds at most its shard's rows"
                                : "")
      .str();
}

RuleViolation checkDeviceKind(StringRef kind) {
  auto allowed = [](char c) {
    return isLower(c) || isDigit(c) || c == '-' || c == '_' || c == '.';
  };
  if (!kind.empty() && kind.size() <= 64 && isAlnum(kind.front()) &&
      llvm::all_of(kind, allowed))
    return std::nullopt;
  return formatv("'{0}' is not a device kind: expected 1 to 64 lower-case "
                 "letters, digits, '-', '_' or '.' (gpu, cpu, or a chip such "
                 "as h100 or cpu-zen3)",
                 kind)
      .str();
}

RuleViolation checkDevicesPerNode(int64_t devicesPerNode, int64_t numDevices) {
  if (devicesPerNode >= 1 && numDevices % devicesPerNode == 0)
    return std::nullopt;
  if (devicesPerNode < 1)
    return formatv("devices per node must be at least 1, got {0}",
                   devicesPerNode)
        .str();
  return formatv("{0} devices do not fill whole nodes of {1} devices",
                 numDevices, devicesPerNode)
      .str();
}

RuleViolation checkNodeCount(int64_t nodes, int64_t numDevices) {
  if (nodes >= 1 && numDevices % nodes == 0)
    return std::nullopt;
  if (nodes < 1)
    return formatv("the node count must be at least 1, got {0}", nodes).str();
  return formatv("{0} devices do not split into {1} nodes of equal size",
                 numDevices, nodes)
      .str();
}

RuleViolation checkTable(const TableSpec &table, int64_t numDevices) {
  if (table.elementBytes == 0)
    return std::string("the element size must be positive, got 0");
  if (RuleViolation v = checkRows(table.rows))
    return v;
  if (RuleViolation v = checkDim(table.dim))
    return v;
  if (RuleViolation v =
          checkTableBytes(table.rows, table.dim, table.elementBytes))
    return v;
  for (unsigned f = 0; f < table.numFeatures(); ++f) {
    FeatureStats stats = table.feature(f);
    if (RuleViolation v =
            checkStatistics(stats.poolingFactor, stats.accessHist))
      return table.numFeatures() == 1
                 ? v
                 : formatv("feature {0}: {1}", f, *v).str();
  }
  if (table.pinnedDevice)
    if (RuleViolation v = checkPinnedDevice(*table.pinnedDevice, numDevices))
      return v;
  return std::nullopt;
}

} // namespace neuroshard
