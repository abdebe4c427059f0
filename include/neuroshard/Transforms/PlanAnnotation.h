//===- PlanAnnotation.h - Plans as the IR records them ----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The one translation between a module and the planner's vocabulary, which
// the planning, import, export and materialization passes share: a module's
// tables as TableSpecs, every table's `shards` as a ShardingPlan, the
// module's `neuroshard.topology` as a Topology, and its `neuroshard.plan` as
// the PlanResult it records.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TRANSFORMS_PLANANNOTATION_H
#define NEUROSHARD_TRANSFORMS_PLANANNOTATION_H

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Planner/Search.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <vector>

namespace mlir::neuroshard {

/// A table of a module and its lookups, in program order.
struct ModuleTable {
  TableOp op;
  SmallVector<EmbeddingBagOp> lookups;
};

/// The module's tables in program order, each with its lookups. Fails, at
/// the lookup, if a lookup's symbol is not a table of the module.
FailureOr<SmallVector<ModuleTable>> collectModuleTables(ModuleOp module);

/// The planner's view of `table`: its report name, size, element type and
/// constraints, the cache fraction its shards' caches amount to when it
/// lives in host memory (the largest share of a shard's rows one caches)
/// and, with `statistics`, the pooling factor and access
/// histogram of every feature that looks it up (the table's own, or every
/// lookup's when its lookups carry their own). Fails at the table or the
/// lookup if it is pinned outside `numDevices` devices, or if `statistics`
/// are asked for and missing.
FailureOr<::neuroshard::TableSpec>
buildTableSpec(const ModuleTable &table, unsigned numDevices, bool statistics);

/// buildTableSpec of every table of `tables`, without statistics.
FailureOr<std::vector<::neuroshard::TableSpec>>
buildTableSpecs(ArrayRef<ModuleTable> tables, unsigned numDevices);

/// The plan the tables' `shards` record: shard `table` fields index
/// `tables`, each table's shards in column order. Tables without shards
/// have none in it.
::neuroshard::ShardingPlan readShards(ArrayRef<ModuleTable> tables);

/// Records `plan` as the `shards` of every table of `tables`; the shards of
/// a table `specs` keeps in host memory get its caches
/// (TableSpec::cacheRows).
void writeShards(ArrayRef<ModuleTable> tables,
                 ArrayRef<::neuroshard::TableSpec> specs,
                 const ::neuroshard::ShardingPlan &plan);

/// The devices, their memory, nodes, host memory and bandwidths `attr`
/// describes (the
/// training step's optimizer, reserve and batch are the defaults).
::neuroshard::Topology topologyOf(TopologyAttr attr);

/// The topology of the module's `neuroshard.topology` (topologyOf); fails
/// at the module, saying what `purpose` needs it for, if it has none.
FailureOr<::neuroshard::Topology> readTopology(ModuleOp module,
                                               StringRef purpose);

/// Records the topology's devices, memory, nodes, host memory and
/// bandwidths as `neuroshard.topology`.
void writeTopology(ModuleOp module, const ::neuroshard::Topology &topology);

/// Records `result` (a plan of `tables` over `topology`) as the module's
/// `neuroshard.plan`: how it was made, its warnings, the optimizer and
/// memory reserve, every device's memory and cost terms, and the search's
/// statistics.
void writePlanRecord(ModuleOp module, ArrayRef<::neuroshard::TableSpec> tables,
                     const ::neuroshard::Topology &topology,
                     const ::neuroshard::PlanResult &result);

/// A module's plan as the writers of PlanIO.h take it.
struct RecordedPlan {
  std::vector<::neuroshard::TableSpec> tables;
  ::neuroshard::Topology topology;
  ::neuroshard::PlanResult result;
  /// Whether `result` carries the costs of a `neuroshard.plan`; without one
  /// it holds the shards alone.
  bool priced = false;
};

/// Reads the plan recorded on `module`: the tables, their `shards`, the
/// topology and, if the module has one, its `neuroshard.plan` (with the
/// optimizer and reserve the plan was made for). Fails at the module or the
/// table if a table has no shards, there is no topology, or `requireCosts`
/// and the module has no `neuroshard.plan`, or it is malformed.
FailureOr<RecordedPlan> readRecordedPlan(ModuleOp module, bool requireCosts);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_TRANSFORMS_PLANANNOTATION_H
