//===- PlanIO.h - Task JSON in, plan JSON and tables out --------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The file formats of neuroshard-plan, shared with the sharding pass so that
// both report plans identically (docs/planner.md documents the schemas).
//
// Task input:
//   {"batch_size": 65536,                       (optional)
//    "topology": {"devices": 16, "nodes": 2,    (optional, every field too)
//                 "devices_per_node": 8, "memory_gb": 80 or [80, ...],
//                 "hbm_gbps": 897, "intra_node_gbps": 600,
//                 "inter_node_gbps": 50},
//    "tables": [{"name": "t0", "rows": 100000, "dim": 64,
//                "dtype": "f32",                 (optional: f32 f16 bf16 f64
//                                                 i8)
//                "pooling_factor": 12.5, "access_hist": [17 numbers],
//                "pinned_device": 0,             (optional constraint)
//                "no_split": true}, ...]}        (optional constraint)
//
// Plan output: see writePlanJSON.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_PLANIO_H
#define NEUROSHARD_PLANNER_PLANIO_H

#include "neuroshard/Planner/Search.h"
#include "neuroshard/Planner/TopologyOptions.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <vector>

namespace neuroshard {

/// A task as read from JSON: the tables and, if given, the batch size and
/// what it says of the devices (makeTopology resolves it with a front end's
/// options).
struct PlanningTask {
  std::vector<TableSpec> tables;
  std::optional<int64_t> batchSize;
  TopologyDescription topology;
};

/// Parses a task. Errors name the field, the table (by index and name) and
/// the offending value; unknown fields are errors so that typos surface.
llvm::Expected<PlanningTask> parseTaskJSON(llvm::StringRef text);
/// Reads and parses a task file ("-" reads stdin).
llvm::Expected<PlanningTask> readTaskFile(llvm::StringRef path);

/// A plan as a file gives it: where every shard lives, the device count it
/// was made for and, if the file names it, the algorithm that made it.
struct PlanFile {
  /// Where it was read from, for messages ("-" for stdin).
  std::string source;
  ShardingPlan plan;
  unsigned devices = 0;
  std::optional<Algorithm> algorithm;
};

/// Parses a plan in either of the formats this library writes: the plan
/// JSON of writePlanJSON (only "devices" and "shards" are needed; the other
/// fields it writes are read past) or the TorchRec format of
/// writeTorchRecPlan (told apart by its "format"). Shards name their tables
/// by the names of `tables`. Errors name the field, the table and the
/// value; whether the shards form a valid plan is validatePlan's to say.
llvm::Expected<PlanFile> parsePlanJSON(llvm::StringRef text,
                                       llvm::ArrayRef<TableSpec> tables);
/// Reads and parses a plan file ("-" reads stdin).
llvm::Expected<PlanFile> readPlanFile(llvm::StringRef path,
                                      llvm::ArrayRef<TableSpec> tables);

/// Checks that `plan` is a valid plan of `tables` over `topology`: made for
/// its device count, and accepted by validatePlan. Errors start with the
/// plan's source ("plan.json: table 'user': columns [64, 128) are on no
/// device").
llvm::Error validatePlanFile(llvm::ArrayRef<TableSpec> tables,
                             const Topology &topology, const PlanFile &plan);

/// Parses device memory capacities in GB written as one number or a comma
/// list ("16" or "16,16,8,8"), as the `memory-gb` option of the tools and the
/// pass takes them. Fails, naming the entry, for the first one that is not a
/// number or breaks checkCapacityGB (TableRules.h).
llvm::Expected<std::vector<double>> parseMemoryGBList(llvm::StringRef list);

/// Writes the plan as
///   {"algorithm", "cost_model", "warnings", "devices", "nodes",
///    "devices_per_node", "optimizer",
///    "reserved_fraction", "cost_ms",
///    "per_device": [{"device", "memory_used_gb", "weights_gb",
///                    "capacity_gb", "usable_gb", "compute_ms",
///                    "bw_comm_ms", "fw_comm_ms", "total_ms",
///                    "shards": [indices]}],
///    "shards": [{"table", "col_begin", "col_end", "device"}],
///    "search": {"time_ms", "cost_queries", "cache_hits",
///               "states_explored"}}
/// where "memory_used_gb" is the memory the device's shards take (weights
/// and optimizer state), "weights_gb" their weights alone, "capacity_gb"
/// the device's memory and "usable_gb" what plans may fill of it (the names
/// the IR's plan attribute uses too, but for usable_gb), "table" is the
/// table name and "cost_ms" the maximum "total_ms". Real numbers are written
/// with 6 significant digits.
void writePlanJSON(llvm::raw_ostream &os, llvm::ArrayRef<TableSpec> tables,
                   const Topology &topology, const PlanResult &result);

/// Writes the plan in the terms of TorchRec's ParameterSharding, keyed by
/// table name:
///   {"format": "neuroshard-torchrec-1", "world_size", "compute_device",
///    "tables": {"<name>": {"sharding_type": "table_wise" | "column_wise",
///                          "compute_kernel": "fused", "ranks": [...],
///                          "shards": [{"shard_offsets": [row, col],
///                                      "shard_sizes": [rows, cols],
///                                      "placement": "rank:R/cuda:R"}]}}}
/// A table that stays whole is table-wise; a table split into column pieces
/// is column-wise, with one rank and one shard per piece in column order
/// (a rank appears once per piece it holds). Devices are ranks, and rank R
/// uses cuda:R, as DistributedModelParallel does with one GPU per process.
void writeTorchRecPlan(llvm::raw_ostream &os, llvm::ArrayRef<TableSpec> tables,
                       const Topology &topology, const PlanResult &result);

/// Prints the same plan as a readable per-device table (one row per device:
/// memory used / capacity and its percentage, the cost terms, the shards
/// placed there), the imbalance (slowest over mean device time) and total
/// memory use, with `perTable` one row per table (size, pooling factor,
/// where its columns are), then the search statistics.
void printPlanTable(llvm::raw_ostream &os, llvm::ArrayRef<TableSpec> tables,
                    const Topology &topology, const PlanResult &result,
                    bool perTable = false);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_PLANIO_H
