//===- Plan.cpp - Sharding plans and their validation ---------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/Plan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;

namespace neuroshard {

static Error planError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
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
  }

  std::vector<uint64_t> used = deviceMemoryBytes(tables, topology, plan);
  for (unsigned d = 0; d < n; ++d)
    if (used[d] > topology.usableBytes(d)) {
      auto [holds, has] = formatGBPair(used[d], topology.usableBytes(d));
      return planError(formatv("device {0} holds {1}{2} but has {3}{4}", d,
                               holds, describeStorage(topology), has,
                               describeUsable(topology)));
    }
  return Error::success();
}

std::vector<uint64_t> deviceMemoryBytes(ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const ShardingPlan &plan) {
  std::vector<uint64_t> used(topology.numDevices(), 0);
  for (const Shard &shard : plan.shards)
    used[shard.device] +=
        topology.shardBytes(tables[shard.table], shard.width());
  return used;
}

std::vector<uint64_t> deviceWeightBytes(ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const ShardingPlan &plan) {
  std::vector<uint64_t> used(topology.numDevices(), 0);
  for (const Shard &shard : plan.shards)
    used[shard.device] += tables[shard.table].sliceBytes(shard.width());
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

} // namespace neuroshard
