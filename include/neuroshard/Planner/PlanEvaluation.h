//===- PlanEvaluation.h - The predicted cost of plans -----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Prices plans with a cost model (DESIGN §3): per-device compute, backward
// comm, and forward comm including the wait for the slowest device.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_PLANEVALUATION_H
#define NEUROSHARD_PLANNER_PLANEVALUATION_H

#include "neuroshard/Sharding/Plan.h"
#include "neuroshard/Sharding/Traffic.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace neuroshard {

class CostModel;

/// Predicts the plan's cost with `model` (which this prepares for the
/// problem). The plan must be valid.
llvm::Expected<PlanCost> evaluatePlan(llvm::ArrayRef<TableSpec> tables,
                                      const Topology &topology,
                                      const ShardingPlan &plan,
                                      CostModel &model);

/// Completes the cost of a batch of K plans on N devices from their
/// per-device compute costs and traffic (K * N values each, plan-major):
/// asks the model for backward comm, derives straggler times, asks for
/// forward comm. Shared by evaluatePlan and the search so both price plans
/// identically.
llvm::Expected<std::vector<PlanCost>>
completePlanCosts(unsigned numDevices, llvm::ArrayRef<double> computeMs,
                  llvm::ArrayRef<DeviceTraffic> traffic, CostModel &model);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_PLANEVALUATION_H
