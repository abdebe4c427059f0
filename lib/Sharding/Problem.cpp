//===- Problem.cpp - Tables and devices of a sharding problem -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/Problem.h"
#include "neuroshard/Sharding/AccessEstimate.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace neuroshard {

StringRef optimizerName(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::SGD:
    return "sgd";
  case Optimizer::Adagrad:
    return "adagrad";
  case Optimizer::RowwiseAdagrad:
    return "rowwise-adagrad";
  case Optimizer::Adam:
    return "adam";
  }
  return "sgd";
}

static constexpr Optimizer kOptimizers[] = {Optimizer::SGD, Optimizer::Adagrad,
                                            Optimizer::RowwiseAdagrad,
                                            Optimizer::Adam};

std::optional<Optimizer> parseOptimizer(StringRef name) {
  for (Optimizer optimizer : kOptimizers)
    if (name == optimizerName(optimizer))
      return optimizer;
  return std::nullopt;
}

std::string optimizerNameList() {
  std::string names;
  for (Optimizer optimizer : kOptimizers)
    names += (names.empty() ? "" : ", ") + optimizerName(optimizer).str();
  return names;
}

static constexpr std::pair<ShardingKind, StringLiteral> kKindNames[] = {
    {ShardingKind::TableWise, "table_wise"},
    {ShardingKind::ColumnWise, "column_wise"},
    {ShardingKind::RowWise, "row_wise"},
    {ShardingKind::TableRowWise, "table_row_wise"},
    {ShardingKind::DataParallel, "data_parallel"},
};

StringRef shardingKindName(ShardingKind kind) {
  return kKindNames[static_cast<unsigned>(kind)].second;
}

std::optional<ShardingKind> parseShardingKind(StringRef name) {
  for (auto [kind, kindName] : kKindNames)
    if (name == kindName)
      return kind;
  return std::nullopt;
}

std::string shardingKindList(ShardingKindSet kinds) {
  SmallVector<StringRef> names;
  for (auto [kind, name] : kKindNames)
    if (kinds & kindBit(kind))
      names.push_back(name);
  return join(names, ", ");
}

Expected<ShardingKindSet> parseShardingKindList(StringRef list) {
  SmallVector<StringRef> entries;
  list.split(entries, ',');
  ShardingKindSet kinds = 0;
  for (StringRef entry : entries) {
    std::optional<ShardingKind> kind = parseShardingKind(entry.trim());
    if (!kind)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("unknown sharding type '{0}' (expected one of: {1})",
                  entry.trim(), shardingKindList()));
    kinds |= kindBit(*kind);
  }
  return kinds;
}

double rowBlockShare(const TableSpec &table, const ColumnSlice &slice,
                     int64_t batchSize, RowBlockLoad load) {
  if (slice.replica || slice.allRows() || table.rows <= 0)
    return 1.0;
  if (load == RowBlockLoad::Mean)
    return slice.rowShare(table);
  return rowBlockShare(table, slice, tableRowHitMoments(table, batchSize));
}

double rowBlockShare(const TableSpec &table, const ColumnSlice &slice,
                     const RowHitMoments &moments) {
  if (slice.replica || slice.allRows() || table.rows <= 0)
    return 1.0;
  return heaviestRowBlockShare(moments, slice.rowShare(table));
}

RowHitMoments tableRowHitMoments(const TableSpec &table, int64_t batchSize) {
  RowHitMoments moments;
  for (unsigned f = 0; f < table.numFeatures(); ++f) {
    FeatureStats feature = table.feature(f);
    moments += rowHitMoments(feature.accessHist, table.rows,
                             double(batchSize) * feature.poolingFactor);
  }
  return moments;
}

TableSpec pieceSpec(const TableSpec &table, const ColumnSlice &slice,
                    unsigned replicas, int64_t batchSize, RowBlockLoad load) {
  TableSpec piece = table;
  if (slice.replica && replicas > 1) {
    // One device's share of the bags: every feature's lookups and hits
    // divided among the replicas.
    int64_t share = std::max<int64_t>(1, batchSize / replicas);
    auto carry = [&](double pooling, std::array<double, kNumAccessBins> &hist) {
      bool hit = llvm::any_of(hist, [](double bin) { return bin > 0.0; });
      if (hit)
        hist =
            rescaleAccessHistogram(hist, table.rows, pooling, batchSize, share);
      return pooling / replicas;
    };
    piece.poolingFactor = carry(piece.poolingFactor, piece.accessHist);
    for (FeatureStats &feature : piece.moreFeatures)
      feature.poolingFactor = carry(feature.poolingFactor, feature.accessHist);
    return piece;
  }
  if (slice.allRows() || table.rows <= 0)
    return piece;
  double fraction = rowBlockShare(table, slice, batchSize, load);
  piece.rows = std::max<int64_t>(1, slice.numRows(table));
  piece.poolingFactor *= fraction;
  for (FeatureStats &feature : piece.moreFeatures)
    feature.poolingFactor *= fraction;
  return piece;
}

bool isCPUDeviceKind(StringRef kind) {
  return kind == "cpu" || kind.starts_with("cpu-");
}

uint64_t Topology::optimizerStateBytes(const TableSpec &table, int64_t width,
                                       std::optional<int64_t> rowCount) const {
  constexpr uint64_t kStateBytes = 4; // fp32
  uint64_t rows = static_cast<uint64_t>(rowCount.value_or(table.rows));
  uint64_t cols = static_cast<uint64_t>(width);
  switch (optimizer) {
  case Optimizer::SGD:
    return 0;
  case Optimizer::Adagrad:
    return rows * cols * kStateBytes;
  case Optimizer::RowwiseAdagrad:
    return width > 0 ? rows * kStateBytes : 0;
  case Optimizer::Adam:
    return 2 * rows * cols * kStateBytes;
  }
  return 0;
}

static Error tableError(size_t index, const TableSpec &table,
                        const Twine &message) {
  return createStringError(inconvertibleErrorCode(), "tables[" + Twine(index) +
                                                         "] ('" + table.name +
                                                         "'): " + message);
}

double TableSpec::widenCacheFraction(double fraction, int64_t cacheRows,
                                     int64_t rows) {
  return std::max(fraction, double(cacheRows) / double(rows));
}

int64_t TableSpec::cacheRows(int64_t rows) const {
  if (!cacheFraction || rows <= 0)
    return 0;
  // A fraction read back from a count of rows (cache_rows / rows) gives
  // that count again, not one more where the product rounds up past it.
  double exact = *cacheFraction * double(rows);
  double nearest = std::round(exact);
  double cached = std::abs(exact - nearest) <= 1e-9 * double(rows)
                      ? nearest
                      : std::ceil(exact);
  return std::clamp<int64_t>(static_cast<int64_t>(cached), 1, rows);
}

Error validateProblem(ArrayRef<TableSpec> tables, const Topology &topology) {
  unsigned n = topology.numDevices();
  if (RuleViolation v = checkDeviceCount(n))
    return createStringError(inconvertibleErrorCode(), *v);
  for (unsigned d = 0; d < n; ++d)
    if (RuleViolation v = checkCapacityGB(topology.memoryGB[d]))
      return createStringError(inconvertibleErrorCode(),
                               formatv("device {0}: {1}", d, *v));
  if (RuleViolation v = checkReservedFraction(topology.reservedFraction))
    return createStringError(inconvertibleErrorCode(), *v);
  if (topology.devicesPerNode)
    if (RuleViolation v = checkDevicesPerNode(topology.devicesPerNode, n))
      return createStringError(inconvertibleErrorCode(), *v);
  for (auto [name, gbps] :
       {std::make_pair("HBM", topology.hbmBandwidthGBps),
        std::make_pair("intra-node", topology.intraNodeBandwidthGBps),
        std::make_pair("inter-node", topology.interNodeBandwidthGBps),
        std::make_pair("host", topology.hostBandwidthGBps)})
    if (RuleViolation v = checkBandwidthGBps(gbps))
      return createStringError(inconvertibleErrorCode(),
                               formatv("the {0} bandwidth {1}", name, *v));
  if (RuleViolation v = checkHostMemoryGB(topology.hostMemoryGB))
    return createStringError(inconvertibleErrorCode(), *v);
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
    if (RuleViolation v = checkTableName(table.name))
      return tableError(i, table, *v);
    auto [it, inserted] = firstUse.try_emplace(table.name, i);
    if (!inserted)
      return tableError(
          i, table,
          formatv("the name is already used by tables[{0}]", it->second));
    if (RuleViolation v = checkTable(table, n))
      return tableError(i, table, *v);
    if (table.shardingKinds == 0)
      return tableError(i, table, "its constraints allow no sharding type");
    if (table.cacheFraction)
      if (RuleViolation v = checkCacheFraction(*table.cacheFraction))
        return tableError(i, table, *v);
    if ((table.pinnedDevice || table.noSplit) &&
        !table.allows(ShardingKind::TableWise))
      return tableError(
          i, table,
          formatv("it is {0} but its sharding types ({1}) exclude table_wise",
                  table.pinnedDevice ? "pinned to a device" : "kept whole",
                  shardingKindList(table.shardingKinds)));
    // checkTable has checked every feature's statistics on their own.
    for (unsigned f = 0; f < table.numFeatures(); ++f) {
      FeatureStats stats = table.feature(f);
      if (RuleViolation v = checkAccessHistogramForBatch(
              stats.accessHist, table.rows, stats.poolingFactor,
              topology.batchSize))
        return tableError(i, table,
                          table.numFeatures() == 1
                              ? *v
                              : formatv("feature {0}: {1}", f, *v).str());
    }
  }
  return Error::success();
}

} // namespace neuroshard
