//===- PlanIO.h - Plans read from and written to files ----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The plan formats of neuroshard-plan, shared with the sharding pass so that
// both write plans identically (docs/planner.md documents the schemas):
// NeuroShard's plan JSON and TorchRec's ParameterSharding terms, read back
// by the importers. Tasks are TaskIO.h's; the readable table PlanReport.h's.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_PLANIO_H
#define NEUROSHARD_PLANNER_PLANIO_H

#include "neuroshard/Planner/Search.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>

namespace neuroshard {

/// A plan as a file gives it: where every shard lives, the device count it
/// was made for and, if the file names it, the algorithm that made it.
struct PlanFile {
  /// Where it was read from, for messages ("-" for stdin).
  std::string source;
  ShardingPlan plan;
  unsigned devices = 0;
  std::optional<Algorithm> algorithm;
  /// What reading it changed, one sentence each, for the reader to pass on:
  /// the empty shards of a TorchRec plan, dropped.
  std::vector<std::string> notes;
  /// The tables the plan keeps in host memory, by index, and the share of
  /// each shard's rows their devices cache (TableSpec::cacheFraction): from
  /// the shards' "cache_rows", or TorchRec's "fused_uvm_caching" kernel and
  /// "cache_load_factor".
  std::map<unsigned, double> cacheFractions;
};

/// TorchRec's cache_load_factor when a plan gives none.
constexpr double kTorchRecDefaultCacheLoadFactor = 0.2;

/// `tables` as `plan` keeps them: those it names with a cache fraction in
/// host memory (without a data-parallel kind), the others as they are.
std::vector<TableSpec> tablesOfPlan(llvm::ArrayRef<TableSpec> tables,
                                    const PlanFile &plan);

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

/// Writes the plan as
///   {"algorithm", "cost_model", "warnings", "devices", "nodes",
///    "devices_per_node", "optimizer",
///    "reserved_fraction", "cost_ms",
///    "per_device": [{"device", "memory_used_gb", "weights_gb",
///                    "capacity_gb", "usable_gb", "compute_ms",
///                    "bw_comm_ms", "fw_comm_ms", "total_ms",
///                    "shards": [indices]}],
///    "shards": [{"table", "col_begin", "col_end", "device"}],
///    "sharding_types": {"<table>": "<type>"},
///    "slowest_device",
///    "per_table": [{"name", "sharding_type", "memory_gb", "compute_ms"}],
///    "tables_outside_ranges": ["'name' (rows N, dim D)", ...],
///    "search": {"time_ms", "cost_queries", "cache_hits",
///               "states_explored"}}
/// where "memory_used_gb" is the memory the device's shards take (weights
/// and optimizer state), "weights_gb" their weights alone, "capacity_gb"
/// the device's memory and "usable_gb" what plans may fill of it (the names
/// the IR's plan attribute uses too, but for usable_gb), "table" is the
/// table name, "cost_ms" the maximum "total_ms" and "slowest_device" the
/// first device whose total it is; a table's "compute_ms" (where the
/// result has it, PlanResult::tableComputeMs) is its pieces' kernels priced
/// alone; "tables_outside_ranges", where the model names any, lists every
/// table outside its training ranges, of which its warning names a few.
/// Real numbers are written with 6 significant digits.
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

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_PLANIO_H
