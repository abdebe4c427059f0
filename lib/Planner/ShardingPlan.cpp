//===- ShardingPlan.cpp - Plans, their validation and their cost ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/ShardingPlan.h"
#include "neuroshard/CostModel/CostModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>

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
    if (used[d] > topology.memoryBytes(d)) {
      auto [holds, has] = formatGBPair(used[d], topology.memoryBytes(d));
      return planError(
          formatv("device {0} holds {1} but has {2}", d, holds, has));
    }
  return Error::success();
}

std::vector<uint64_t> deviceMemoryBytes(ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const ShardingPlan &plan) {
  std::vector<uint64_t> used(topology.numDevices(), 0);
  for (const Shard &shard : plan.shards)
    used[shard.device] += tables[shard.table].sliceBytes(shard.width());
  return used;
}

std::vector<double> deviceDimSums(const Topology &topology,
                                  const ShardingPlan &plan) {
  std::vector<double> dims(topology.numDevices(), 0.0);
  for (const Shard &shard : plan.shards)
    dims[shard.device] += static_cast<double>(shard.width());
  return dims;
}

Expected<PlanCost> evaluatePlan(ArrayRef<TableSpec> tables,
                                const Topology &topology,
                                const ShardingPlan &plan, CostModel &model) {
  if (Error err = validatePlan(tables, topology, plan))
    return std::move(err);
  if (Error err = checkCostModelSupports(model, topology))
    return std::move(err);
  if (Error err = model.prepare(tables, topology))
    return std::move(err);
  unsigned n = topology.numDevices();
  std::vector<std::vector<ColumnSlice>> slicesOfDevice(n);
  for (const Shard &shard : plan.shards)
    slicesOfDevice[shard.device].push_back(shard.slice());
  // Only non-empty sets are priced; an idle device computes nothing.
  std::vector<ArrayRef<ColumnSlice>> sets;
  std::vector<unsigned> deviceOfSet;
  for (unsigned d = 0; d < n; ++d) {
    if (slicesOfDevice[d].empty())
      continue;
    sets.push_back(slicesOfDevice[d]);
    deviceOfSet.push_back(d);
  }
  std::vector<double> setCosts(sets.size());
  if (Error err = model.predictCompute(sets, setCosts))
    return std::move(err);
  std::vector<double> computeMs(n, 0.0);
  for (auto [d, cost] : zip_equal(deviceOfSet, setCosts))
    computeMs[d] = cost;
  Expected<std::vector<PlanCost>> costs =
      completePlanCosts(n, computeMs, deviceDimSums(topology, plan), model);
  if (!costs)
    return costs.takeError();
  return std::move(costs->front());
}

Expected<std::vector<PlanCost>> completePlanCosts(unsigned numDevices,
                                                  ArrayRef<double> computeMs,
                                                  ArrayRef<double> dimSums,
                                                  CostModel &model) {
  std::vector<PlanCost> plans;
  size_t size = computeMs.size();
  if (size == 0)
    return std::move(plans);
  std::vector<double> bwComm(size), stragglers(size), fwComm(size);
  if (Error err = model.predictBackwardComm(dimSums, bwComm))
    return std::move(err);
  for (size_t begin = 0; begin < size; begin += numDevices) {
    double earliest = std::numeric_limits<double>::infinity();
    for (size_t at = begin; at < begin + numDevices; ++at)
      earliest = std::min(earliest, computeMs[at] + bwComm[at]);
    for (size_t at = begin; at < begin + numDevices; ++at)
      stragglers[at] = computeMs[at] + bwComm[at] - earliest;
  }
  if (Error err = model.predictForwardComm(dimSums, stragglers, fwComm))
    return std::move(err);
  for (size_t begin = 0; begin < size; begin += numDevices) {
    PlanCost &plan = plans.emplace_back();
    for (size_t at = begin; at < begin + numDevices; ++at) {
      DeviceCost &device = plan.devices.emplace_back();
      device.computeMs = computeMs[at];
      device.bwCommMs = bwComm[at];
      device.fwCommMs = fwComm[at];
      plan.maxMs = std::max(plan.maxMs, device.totalMs());
    }
  }
  return std::move(plans);
}

} // namespace neuroshard
