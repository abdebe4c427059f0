//===- PlanReport.h - The readable plan table and its metrics ---*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What a person reads of a plan: the per-device table the tools print, and
// the measures of balance that it and the plan JSON report.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_PLANREPORT_H
#define NEUROSHARD_PLANNER_PLANREPORT_H

#include "neuroshard/Planner/Search.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace neuroshard {

/// How long each device of a priced plan waits at the forward exchange for
/// the device that reaches it last (a part of its fwCommMs, by the cost
/// model contract): the latest compute + backward exchange minus its own.
std::vector<double> stragglerWaitMs(const PlanCost &cost);

/// How unevenly a plan loads its devices, without the waits that even out
/// their totals: busy time is a device's total minus its wait.
struct Imbalance {
  /// The busiest device's busy time over the mean busy time.
  double busy = 1.0;
  /// ... over the least busy device's (infinite when one is idle).
  double busyOverLeast = 1.0;
  /// The largest compute time over the mean.
  double compute = 1.0;
  unsigned busiestDevice = 0;
};
Imbalance planImbalance(const PlanCost &cost);

/// The device whose total is the plan's cost (the first of equals): the
/// one the report marks with `*`.
unsigned slowestDevice(const PlanCost &cost);

/// "chosen: table-greedy-grid, measured 3.02 ms against 3.41 ms for the
/// model's choice (neuroshard), which it predicted at 2.71 ms", or why the
/// model's choice stood.
std::string describeVerification(const PlanVerification &verification);

/// Prints the same plan as a readable per-device table (one row per device:
/// memory used / capacity and its percentage, the cost terms with the
/// straggler wait apart, the shards placed there; `*` on slowestDevice),
/// the imbalance (planImbalance) and total memory use, with `perTable` one
/// row per table (size, pooling factor, sharding type, memory, compute cost
/// where the result has it, where its pieces are), a legend of the columns,
/// then the search statistics. The cost model's warnings are printed above the
/// devices only `withWarnings`: the tools report them once, on stderr or as
/// diagnostics.
void printPlanTable(llvm::raw_ostream &os, llvm::ArrayRef<TableSpec> tables,
                    const Topology &topology, const PlanResult &result,
                    bool perTable = false, bool withWarnings = false);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_PLANREPORT_H
