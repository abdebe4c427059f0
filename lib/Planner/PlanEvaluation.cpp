//===- PlanEvaluation.cpp - The predicted cost of plans -------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/CostModel/CostModel.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>

using namespace llvm;

namespace neuroshard {

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
  Expected<std::vector<PlanCost>> costs = completePlanCosts(
      n, computeMs, computeTraffic(tables, topology, plan), model);
  if (!costs)
    return costs.takeError();
  return std::move(costs->front());
}

Expected<std::vector<PlanCost>>
completePlanCosts(unsigned numDevices, ArrayRef<double> computeMs,
                  ArrayRef<DeviceTraffic> traffic, CostModel &model) {
  std::vector<PlanCost> plans;
  size_t size = computeMs.size();
  if (size == 0)
    return std::move(plans);
  std::vector<double> bwComm(size), stragglers(size), fwComm(size);
  if (Error err = model.predictBackwardComm(traffic, bwComm))
    return std::move(err);
  for (size_t begin = 0; begin < size; begin += numDevices) {
    double earliest = std::numeric_limits<double>::infinity();
    for (size_t at = begin; at < begin + numDevices; ++at)
      earliest = std::min(earliest, computeMs[at] + bwComm[at]);
    for (size_t at = begin; at < begin + numDevices; ++at)
      stragglers[at] = computeMs[at] + bwComm[at] - earliest;
  }
  if (Error err = model.predictForwardComm(traffic, stragglers, fwComm))
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
