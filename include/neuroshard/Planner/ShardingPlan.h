//===- ShardingPlan.h - Plans, their validation and their cost --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A plan assigns every column of every table to exactly one device. Its cost
// (DESIGN §3) is the maximum over devices of compute + backward comm +
// forward comm, where forward comm includes the wait for the slowest device.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_SHARDINGPLAN_H
#define NEUROSHARD_PLANNER_SHARDINGPLAN_H

#include "neuroshard/Planner/Problem.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace neuroshard {

class CostModel;

struct ShardingPlan {
  /// Sorted by (table, colBegin) in plans the planner returns.
  std::vector<Shard> shards;
};

/// The predicted cost terms of one device, in ms.
struct DeviceCost {
  double computeMs = 0.0;
  double bwCommMs = 0.0;
  double fwCommMs = 0.0;

  double totalMs() const { return computeMs + bwCommMs + fwCommMs; }
};

/// The cost of a plan: one entry per device and their maximum.
struct PlanCost {
  std::vector<DeviceCost> devices;
  double maxMs = 0.0;
};

/// Checks that the plan is a valid placement: every shard names an existing
/// table and device and a non-empty, 4-aligned column range inside the
/// table; every column of every table is on exactly one device; pinned and
/// no-split constraints hold; no device holds more than its capacity. The
/// error names the table or device and the numbers.
llvm::Error validatePlan(llvm::ArrayRef<TableSpec> tables,
                         const Topology &topology, const ShardingPlan &plan);

/// Bytes of table columns placed on each device.
std::vector<uint64_t> deviceMemoryBytes(llvm::ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const ShardingPlan &plan);

/// Computes the total width of the slices on each device of `plan`.
std::vector<double> deviceDimSums(const Topology &topology,
                                  const ShardingPlan &plan);

/// Predicts the plan's cost with `model` (which this prepares for the
/// problem). The plan must be valid.
llvm::Expected<PlanCost> evaluatePlan(llvm::ArrayRef<TableSpec> tables,
                                      const Topology &topology,
                                      const ShardingPlan &plan,
                                      CostModel &model);

/// Completes the cost of a batch of K plans on N devices from their
/// per-device compute costs and dim sums (K * N values each, plan-major):
/// asks the model for backward comm, derives straggler times, asks for
/// forward comm. Shared by evaluatePlan and the search so both price plans
/// identically.
llvm::Expected<std::vector<PlanCost>>
completePlanCosts(unsigned numDevices, llvm::ArrayRef<double> computeMs,
                  llvm::ArrayRef<double> dimSums, CostModel &model);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_SHARDINGPLAN_H
