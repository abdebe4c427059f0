//===- PlanEvaluation.h - The predicted cost of plans -----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Prices plans with a cost model (docs/design.md §3): per-device compute,
// backward comm, and forward comm including the wait for the slowest device.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_PLANEVALUATION_H
#define NEUROSHARD_PLANNER_PLANEVALUATION_H

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/Sharding/Plan.h"
#include "neuroshard/Sharding/Traffic.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace neuroshard {

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

/// What a plan's slowest device is expected to measure when every device's
/// measured compute strays from its prediction as the model's does on
/// held-out sets (CostModel::computeError), independently per device: the
/// search balances predicted costs, so the device that measures slowest is
/// often one the model underestimated, and the largest of n predictions
/// understates the largest of n measurements the more, the more devices
/// are near the top.
struct ExpectedSlowest {
  /// E[max over devices of the measured compute], ms.
  double computeMs = 0.0;
  /// The largest of the point predictions it spreads (risk margin 0), ms.
  double predictedMs = 0.0;
  ComputeError error;
};

/// E[max_d c_d * exp(mu + sd * Z_d)] over the devices with c_d > 0, for
/// independent standard normal Z_d (`error` gives mu and sd); max_d c_d *
/// exp(mu) when sd is 0, and 0 when no c_d is positive. Integrates
/// P(max > t) over ln t numerically (relative error below 1e-6).
double expectedSlowestMs(llvm::ArrayRef<double> computeMs, ComputeError error);

/// The expected slowest device of `plan` (valid) under `model`'s held-out
/// error: prices each device's set at risk margin 0 (restoring the
/// model's margin after) and spreads the costs with expectedSlowestMs.
/// nullopt when the model has no error figure (computeError()).
llvm::Expected<std::optional<ExpectedSlowest>>
expectedSlowestDevice(llvm::ArrayRef<TableSpec> tables,
                      const Topology &topology, const ShardingPlan &plan,
                      CostModel &model);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_PLANEVALUATION_H
