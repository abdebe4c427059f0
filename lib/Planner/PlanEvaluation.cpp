//===- PlanEvaluation.cpp - The predicted cost of plans -------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/Support/Statistics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace llvm;

namespace neuroshard {

/// Each device's predicted compute for `plan` (0 for an idle device), with
/// the model prepared for the problem.
static Expected<std::vector<double>>
predictDeviceCompute(ArrayRef<TableSpec> tables, const Topology &topology,
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
  return computeMs;
}

Expected<PlanCost> evaluatePlan(ArrayRef<TableSpec> tables,
                                const Topology &topology,
                                const ShardingPlan &plan, CostModel &model) {
  Expected<std::vector<double>> computeMs =
      predictDeviceCompute(tables, topology, plan, model);
  if (!computeMs)
    return computeMs.takeError();
  Expected<std::vector<PlanCost>> costs =
      completePlanCosts(topology.numDevices(), *computeMs,
                        computeTraffic(tables, topology, plan), model);
  if (!costs)
    return costs.takeError();
  return std::move(costs->front());
}

double expectedSlowestMs(ArrayRef<double> computeMs, ComputeError error) {
  SmallVector<double> logs;
  for (double cost : computeMs)
    if (cost > 0.0)
      logs.push_back(std::log(cost));
  if (logs.empty())
    return 0.0;
  double highest = *llvm::max_element(logs) + error.logMean;
  if (error.logSd <= 0.0)
    return std::exp(highest);
  // E[M] = integral over t > 0 of P(M > t) dt, with t = e^u. Ten deviations
  // below the highest prediction's median, the device of that prediction
  // alone exceeds t all but surely (P(M > t) = 1 to 1e-23), which
  // contributes e^u0; ten above, no device does. Simpson's rule between, in
  // steps of 1/200 deviation.
  constexpr double kReach = 10.0;
  constexpr unsigned kSteps = 4096;
  double u0 = highest - kReach * error.logSd;
  double u1 = highest + kReach * error.logSd;
  double h = (u1 - u0) / kSteps;
  auto integrand = [&](double u) {
    double below = 1.0;
    for (double log : logs)
      below *= normalTail((log + error.logMean - u) / error.logSd);
    return (1.0 - below) * std::exp(u);
  };
  double sum = integrand(u0) + integrand(u1);
  for (unsigned i = 1; i < kSteps; ++i)
    sum += (i % 2 ? 4.0 : 2.0) * integrand(u0 + i * h);
  return std::exp(u0) + sum * h / 3.0;
}

Expected<std::optional<ExpectedSlowest>>
expectedSlowestDevice(ArrayRef<TableSpec> tables, const Topology &topology,
                      const ShardingPlan &plan, CostModel &model) {
  std::optional<ComputeError> error = model.computeError();
  if (!error)
    return std::nullopt;
  double margin = model.riskMargin();
  model.setRiskMargin(0.0);
  Expected<std::vector<double>> computeMs =
      predictDeviceCompute(tables, topology, plan, model);
  model.setRiskMargin(margin);
  if (!computeMs)
    return computeMs.takeError();
  ExpectedSlowest expected;
  expected.computeMs = expectedSlowestMs(*computeMs, *error);
  expected.predictedMs = *llvm::max_element(*computeMs);
  expected.error = *error;
  return expected;
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
