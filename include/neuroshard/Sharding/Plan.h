//===- Plan.h - Sharding plans and their validation -------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A plan assigns every column of every table to exactly one device. Its cost
// (docs/design.md §3) is the maximum over devices of compute + backward comm +
// forward comm, where forward comm includes the wait for the slowest device.
// This header holds what a plan is and the checks that need no cost model;
// Planner/PlanEvaluation.h prices plans.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SHARDING_PLAN_H
#define NEUROSHARD_SHARDING_PLAN_H

#include "neuroshard/Sharding/Problem.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace neuroshard {

struct ShardingPlan {
  /// Sorted by (table, colBegin) in plans the planner returns.
  std::vector<Shard> shards;
};

/// Sorts shards into the order of the plans the planner returns: by their
/// slices (table, then first row, then first column).
void sortShards(llvm::MutableArrayRef<Shard> shards);

/// The predicted cost terms of one device, in ms.
struct DeviceCost {
  double computeMs = 0.0;
  double bwCommMs = 0.0;
  double fwCommMs = 0.0;
  double totalMs() const { return computeMs + bwCommMs + fwCommMs; }
  /// Compute and the backward exchange: how long the device works before
  /// the forward exchange, which waits for the busiest device.
  double busyMs() const { return computeMs + bwCommMs; }
};

/// The cost of a plan: one entry per device and their maximum.
struct PlanCost {
  std::vector<DeviceCost> devices;
  double maxMs = 0.0;
};

/// The kind of every table in `plan` (TorchRec's names, Problem.h): a
/// table with replicas is data-parallel; one split into row ranges is
/// table-row-wise when the topology has several nodes, all its pieces are
/// on one of them and its constraints allow table-row-wise, row-wise
/// otherwise; one split into column ranges
/// alone is column-wise; a table in one piece is table-wise.
std::vector<ShardingKind> tableKinds(llvm::ArrayRef<TableSpec> tables,
                                     const Topology &topology,
                                     const ShardingPlan &plan);
/// Whether `table`'s constraints allow `kind` on `topology`: a row-wise
/// table on one node is also table-row-wise, and table-row-wise pieces
/// are row-wise pieces that happen to share a node.
bool allowsKind(const TableSpec &table, ShardingKind kind,
                const Topology &topology);

/// Checks that `shards`, the pieces of `table`, tile its rows x columns
/// exactly once, or that they are one whole replica on each of the
/// `numDevices` devices (with no count, each replica is checked whole and
/// on a device of its own). The error names the table and the rows and
/// columns that are on no device or on several, or the device.
llvm::Error checkTableTiling(const TableSpec &table,
                             std::optional<unsigned> numDevices,
                             std::vector<const Shard *> shards);

/// Checks that the plan is a valid placement: every shard names an existing
/// table and device, a non-empty, 4-aligned column range inside the table
/// and a non-empty row range inside it; the pieces of every table tile its
/// rows x columns exactly once, or the table is replicated whole on every
/// device; pinned, no-split and sharding-type constraints hold; no device holds
/// more than its usable memory (Topology::usableBytes), weights and optimizer
/// state counted. The error names the table or device and the numbers.
llvm::Error validatePlan(llvm::ArrayRef<TableSpec> tables,
                         const Topology &topology, const ShardingPlan &plan);

/// Bytes the shards placed on each device take: weights and optimizer
/// state (Topology::shardBytes).
/// Bytes each node keeps in host memory: the shards of host-memory tables
/// on its devices (Topology::hostShardBytes).
std::vector<uint64_t> nodeHostMemoryBytes(llvm::ArrayRef<TableSpec> tables,
                                          const Topology &topology,
                                          const ShardingPlan &plan);
std::vector<uint64_t> deviceMemoryBytes(llvm::ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const ShardingPlan &plan);

/// Bytes each table's shards take over all devices, replicas counted once
/// per device: weights and optimizer state.
std::vector<uint64_t> tableMemoryBytes(llvm::ArrayRef<TableSpec> tables,
                                       const Topology &topology,
                                       const ShardingPlan &plan);

/// Bytes of the weights alone placed on each device (of a shard in host
/// memory, its cache's rows).
std::vector<uint64_t> deviceWeightBytes(llvm::ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const ShardingPlan &plan);

/// For messages about memory: " (weights and adam state)", or "" for SGD.
std::string describeStorage(const Topology &topology);
/// For messages about capacity: " (15% of each device kept free)", or "".
std::string describeUsable(const Topology &topology);

} // namespace neuroshard

#endif // NEUROSHARD_SHARDING_PLAN_H
