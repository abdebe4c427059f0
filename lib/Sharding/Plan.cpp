//===- Plan.cpp - Sharding plans and their validation ---------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/Plan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <set>

using namespace llvm;

namespace neuroshard {

static Error planError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

std::vector<ShardingKind> tableKinds(ArrayRef<TableSpec> tables,
                                     const Topology &topology,
                                     const ShardingPlan &plan) {
  struct Seen {
    unsigned pieces = 0;
    bool replica = false, rows = false, manyNodes = false;
    int node = -1;
  };
  std::vector<Seen> seen(tables.size());
  for (const Shard &shard : plan.shards) {
    if (shard.table >= tables.size())
      continue;
    Seen &table = seen[shard.table];
    ++table.pieces;
    table.replica |= shard.replica;
    table.rows |= !shard.allRows();
    int node = shard.device < topology.numDevices()
                   ? static_cast<int>(topology.nodeOf(shard.device))
                   : -1;
    table.manyNodes |= table.node >= 0 && node != table.node;
    table.node = node;
  }
  std::vector<ShardingKind> kinds;
  for (auto [spec, table] : zip_equal(tables, seen)) {
    if (table.replica)
      kinds.push_back(ShardingKind::DataParallel);
    else if (table.rows)
      kinds.push_back(topology.numNodes() > 1 && !table.manyNodes &&
                              spec.allows(ShardingKind::TableRowWise)
                          ? ShardingKind::TableRowWise
                          : ShardingKind::RowWise);
    else if (table.pieces > 1)
      kinds.push_back(ShardingKind::ColumnWise);
    else
      kinds.push_back(ShardingKind::TableWise);
  }
  return kinds;
}

bool allowsKind(const TableSpec &table, ShardingKind kind,
                const Topology &topology) {
  if (table.allows(kind))
    return true;
  if (kind == ShardingKind::TableRowWise)
    return table.allows(ShardingKind::RowWise);
  if (kind == ShardingKind::RowWise && topology.numNodes() <= 1)
    return table.allows(ShardingKind::TableRowWise);
  return false;
}

/// "[r0, r1) x [c0, c1)": a piece's rows and columns, for messages.
static std::string describeRect(int64_t rowBegin, int64_t rowEnd,
                                int64_t colBegin, int64_t colEnd) {
  return formatv("rows [{0}, {1}) of columns [{2}, {3})", rowBegin, rowEnd,
                 colBegin, colEnd)
      .str();
}

/// The pieces of a table that holds every row in each: its columns must be
/// covered once.
static Error checkColumnTiling(const TableSpec &table,
                               std::vector<const Shard *> &shards) {
  llvm::sort(shards, [](const Shard *a, const Shard *b) {
    return a->colBegin < b->colBegin;
  });
  int64_t covered = 0;
  for (const Shard *shard : shards) {
    if (shard->colBegin > covered)
      return planError(formatv("table '{0}': columns [{1}, {2}) are on no "
                               "device",
                               table.name, covered, shard->colBegin));
    if (shard->colBegin < covered)
      return planError(formatv("table '{0}': columns [{1}, {2}) are on more "
                               "than one device",
                               table.name, shard->colBegin,
                               std::min(covered, shard->colEnd)));
    covered = shard->colEnd;
  }
  if (covered < table.dim)
    return planError(formatv("table '{0}': columns [{1}, {2}) are on no "
                             "device",
                             table.name, covered, table.dim));
  return Error::success();
}

/// The pieces of a table split by rows: every cell of the grid their
/// boundaries draw must be covered once.
static Error checkGridTiling(const TableSpec &table,
                             ArrayRef<const Shard *> shards) {
  std::vector<int64_t> rowCuts = {0, table.rows}, colCuts = {0, table.dim};
  for (const Shard *shard : shards) {
    rowCuts.push_back(shard->rowBegin);
    rowCuts.push_back(shard->slice().rowEndIn(table));
    colCuts.push_back(shard->colBegin);
    colCuts.push_back(shard->colEnd);
  }
  for (std::vector<int64_t> *cuts : {&rowCuts, &colCuts}) {
    llvm::sort(*cuts);
    cuts->erase(std::unique(cuts->begin(), cuts->end()), cuts->end());
  }
  size_t numCols = colCuts.size() - 1;
  std::vector<unsigned> covers((rowCuts.size() - 1) * numCols, 0);
  for (const Shard *shard : shards) {
    auto firstRow = llvm::lower_bound(rowCuts, shard->rowBegin);
    auto lastRow = llvm::lower_bound(rowCuts, shard->slice().rowEndIn(table));
    auto firstCol = llvm::lower_bound(colCuts, shard->colBegin);
    auto lastCol = llvm::lower_bound(colCuts, shard->colEnd);
    for (auto r = firstRow; r != lastRow; ++r)
      for (auto c = firstCol; c != lastCol; ++c) {
        size_t cell = (r - rowCuts.begin()) * numCols + (c - colCuts.begin());
        if (++covers[cell] > 1)
          return planError(
              formatv("table '{0}': {1} are on more than one device",
                      table.name, describeRect(*r, *(r + 1), *c, *(c + 1))));
      }
  }
  for (auto [cell, count] : enumerate(covers))
    if (count == 0) {
      size_t r = cell / numCols, c = cell % numCols;
      return planError(formatv("table '{0}': {1} are on no device", table.name,
                               describeRect(rowCuts[r], rowCuts[r + 1],
                                            colCuts[c], colCuts[c + 1])));
    }
  return Error::success();
}

/// The pieces of a data-parallel table: one whole replica on every device.
static Error checkReplicas(const TableSpec &table,
                           std::optional<unsigned> numDevices,
                           ArrayRef<const Shard *> shards) {
  std::set<unsigned> holds;
  for (const Shard *shard : shards) {
    if (!shard->replica)
      return planError(
          formatv("table '{0}' is replicated but also has the "
                  "piece {1} on device {2}",
                  table.name,
                  describeRect(shard->rowBegin, shard->slice().rowEndIn(table),
                               shard->colBegin, shard->colEnd),
                  shard->device));
    if (!shard->allRows() || shard->colBegin != 0 || shard->colEnd != table.dim)
      return planError(formatv(
          "table '{0}': the replica on device {1} holds {2}, not the whole "
          "table ({3} rows, {4} columns)",
          table.name, shard->device,
          describeRect(shard->rowBegin, shard->slice().rowEndIn(table),
                       shard->colBegin, shard->colEnd),
          table.rows, table.dim));
    if (!holds.insert(shard->device).second)
      return planError(formatv("table '{0}' has two replicas on device {1}",
                               table.name, shard->device));
  }
  for (unsigned d = 0; d < numDevices.value_or(0); ++d)
    if (!holds.count(d))
      return planError(formatv("table '{0}' is replicated but device {1} "
                               "holds no replica (a data-parallel table is "
                               "on every device)",
                               table.name, d));
  return Error::success();
}

Error checkTableTiling(const TableSpec &table,
                       std::optional<unsigned> numDevices,
                       std::vector<const Shard *> shards) {
  bool replicated =
      llvm::any_of(shards, [](const Shard *shard) { return shard->replica; });
  bool rowSplit = llvm::any_of(
      shards, [](const Shard *shard) { return !shard->allRows(); });
  if (replicated)
    return checkReplicas(table, numDevices, shards);
  return rowSplit ? checkGridTiling(table, shards)
                  : checkColumnTiling(table, shards);
}

Error validatePlan(ArrayRef<TableSpec> tables, const Topology &topology,
                   const ShardingPlan &plan) {
  unsigned n = topology.numDevices();
  std::vector<std::vector<const Shard *>> shardsOfTable(tables.size());
  for (auto [i, shard] : enumerate(plan.shards)) {
    if (shard.table >= tables.size())
      return planError(formatv("shard {0} names table {1} but there are {2} "
                               "tables",
                               i, shard.table, tables.size()));
    const TableSpec &table = tables[shard.table];
    if (shard.device >= n)
      return planError(formatv("table '{0}': shard [{1}, {2}) is on device "
                               "{3} but there are {4} devices",
                               table.name, shard.colBegin, shard.colEnd,
                               shard.device, n));
    if (shard.colBegin < 0 || shard.colBegin >= shard.colEnd ||
        shard.colEnd > table.dim)
      return planError(formatv("table '{0}': shard [{1}, {2}) is not a "
                               "non-empty range of its {3} columns",
                               table.name, shard.colBegin, shard.colEnd,
                               table.dim));
    if (shard.colBegin % kColumnAlignment || shard.colEnd % kColumnAlignment)
      return planError(formatv("table '{0}': shard [{1}, {2}) is not aligned "
                               "to {3} columns",
                               table.name, shard.colBegin, shard.colEnd,
                               kColumnAlignment));
    if (!shard.allRows() &&
        (shard.rowBegin < 0 || shard.rowBegin >= shard.rowEnd ||
         (shard.rowEnd != kAllRows && shard.rowEnd > table.rows)))
      return planError(formatv(
          "table '{0}': the shard on device {1} has rows [{2}, {3}), not a "
          "non-empty range of its {4} rows",
          table.name, shard.device, shard.rowBegin,
          shard.rowEnd == kAllRows ? table.rows : shard.rowEnd, table.rows));
    if (table.pinnedDevice && shard.device != *table.pinnedDevice)
      return planError(formatv("table '{0}' is pinned to device {1} but shard "
                               "[{2}, {3}) is on device {4}",
                               table.name, *table.pinnedDevice, shard.colBegin,
                               shard.colEnd, shard.device));
    shardsOfTable[shard.table].push_back(&shard);
  }

  for (auto [table, shards] : zip_equal(tables, shardsOfTable)) {
    if (table.noSplit && shards.size() > 1)
      return planError(formatv("table '{0}' may not be split but has {1} "
                               "shards",
                               table.name, shards.size()));
    if (Error err = checkTableTiling(table, n, std::move(shards)))
      return err;
  }
  for (auto [table, kind] :
       zip_equal(tables, tableKinds(tables, topology, plan))) {
    if (table.inHostMemory() && kind == ShardingKind::DataParallel)
      return planError(formatv("table '{0}' is kept in host memory and so "
                               "cannot be {1}: a replica on every device "
                               "would keep it once per device",
                               table.name, shardingKindName(kind)));
    if (!allowsKind(table, kind, topology))
      return planError(formatv("table '{0}' is {1} but its constraints allow "
                               "only {2}",
                               table.name, shardingKindName(kind),
                               shardingKindList(table.shardingKinds)));
  }

  std::vector<uint64_t> used = deviceMemoryBytes(tables, topology, plan);
  for (unsigned d = 0; d < n; ++d)
    if (used[d] > topology.usableBytes(d)) {
      auto [holds, has] = formatGBPair(used[d], topology.usableBytes(d));
      bool caches = llvm::any_of(plan.shards, [&](const Shard &shard) {
        return shard.device == d && tables[shard.table].inHostMemory();
      });
      return planError(formatv("device {0} holds {1}{2}{3} but has {4}{5}", d,
                               holds, describeStorage(topology),
                               caches ? " (caches of host-memory tables "
                                        "included)"
                                      : "",
                               has, describeUsable(topology)));
    }
  std::vector<uint64_t> host = nodeHostMemoryBytes(tables, topology, plan);
  for (auto [node, bytes] : enumerate(host))
    if (bytes > topology.hostMemoryBytes()) {
      auto [holds, has] = formatGBPair(bytes, topology.hostMemoryBytes());
      return planError(formatv("node {0} keeps {1} of tables in host memory "
                               "but has {2}",
                               node, holds, has));
    }
  return Error::success();
}

/// Bytes `shard` takes on its device: weights and optimizer state.
static uint64_t shardMemoryBytes(ArrayRef<TableSpec> tables,
                                 const Topology &topology, const Shard &shard) {
  const TableSpec &table = tables[shard.table];
  return topology.shardBytes(table, shard.width(), shard.numRows(table));
}

std::vector<uint64_t> deviceMemoryBytes(ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const ShardingPlan &plan) {
  std::vector<uint64_t> used(topology.numDevices(), 0);
  for (const Shard &shard : plan.shards)
    used[shard.device] += shardMemoryBytes(tables, topology, shard);
  return used;
}

std::vector<uint64_t> nodeHostMemoryBytes(ArrayRef<TableSpec> tables,
                                          const Topology &topology,
                                          const ShardingPlan &plan) {
  std::vector<uint64_t> used(topology.numNodes(), 0);
  for (const Shard &shard : plan.shards) {
    const TableSpec &table = tables[shard.table];
    used[topology.nodeOf(shard.device)] +=
        topology.hostShardBytes(table, shard.width(), shard.numRows(table));
  }
  return used;
}

std::vector<uint64_t> tableMemoryBytes(ArrayRef<TableSpec> tables,
                                       const Topology &topology,
                                       const ShardingPlan &plan) {
  std::vector<uint64_t> used(tables.size(), 0);
  for (const Shard &shard : plan.shards)
    used[shard.table] += shardMemoryBytes(tables, topology, shard);
  return used;
}

std::vector<uint64_t> deviceWeightBytes(ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const ShardingPlan &plan) {
  std::vector<uint64_t> used(topology.numDevices(), 0);
  for (const Shard &shard : plan.shards) {
    const TableSpec &table = tables[shard.table];
    int64_t rows = shard.numRows(table);
    // A shard in host memory has only its cache's rows on the device.
    if (table.inHostMemory())
      rows = table.cacheRows(rows);
    used[shard.device] += static_cast<uint64_t>(rows) *
                          static_cast<uint64_t>(shard.width()) *
                          table.elementBytes;
  }
  return used;
}

std::string describeStorage(const Topology &topology) {
  if (topology.optimizer == Optimizer::SGD)
    return "";
  return formatv(" (weights and {0} state)", optimizerName(topology.optimizer))
      .str();
}

std::string describeUsable(const Topology &topology) {
  if (topology.reservedFraction == 0.0)
    return "";
  return formatv(" ({0}% of each device kept free)",
                 format("%g", 100.0 * topology.reservedFraction))
      .str();
}

void sortShards(MutableArrayRef<Shard> shards) {
  llvm::sort(shards, [](const Shard &a, const Shard &b) {
    return a.slice() < b.slice();
  });
}

} // namespace neuroshard
