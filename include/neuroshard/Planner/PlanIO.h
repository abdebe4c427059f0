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
//                "pooling_factor": 12.5,
//                "access_hist": [17 numbers],    (optional; or "zipf_alpha")
//                "hist_batch_size": 4096,        (optional: the batch the
//                                                 histogram describes)
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
#include "neuroshard/Sharding/AccessEstimate.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <vector>

namespace neuroshard {

/// Where a task takes one feature's access histogram from: the histogram it
/// gives and the batch size that histogram describes (nothing: the batch
/// the task is planned at), or, when it gives none, the skew of the power
/// law its index stream follows.
struct HistogramSource {
  std::optional<AccessBins> given;
  std::optional<int64_t> batchSize;
  double zipfAlpha = kDefaultZipfAlpha;
};

/// A task as read from JSON: the tables and, if given, the batch size and
/// what it says of the devices (makeTopology resolves it with a front end's
/// options). The tables' histograms describe one batch of the task's batch
/// size (of the default batch when the task gives none) until
/// setHistogramBatch carries them to another.
struct PlanningTask {
  std::vector<TableSpec> tables;
  std::optional<int64_t> batchSize;
  TopologyDescription topology;
  /// Per table, per feature (the table's own first).
  std::vector<std::vector<HistogramSource>> histograms;
  /// The batch size the tables' histograms describe now.
  int64_t histogramBatch = 0;
};

/// Sets every feature's access histogram to one of a batch of `batchSize`
/// bags: derived from its skew, carried from the batch it was given for
/// (rescaleAccessHistogram), or as given when it describes that batch or
/// names none. Front ends call it once they know the batch they plan for;
/// the batch the histograms already describe costs nothing.
llvm::Error setHistogramBatch(PlanningTask &task, int64_t batchSize);

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
/// memory used / capacity and its percentage, the cost terms with the
/// straggler wait apart, the shards placed there), the imbalance
/// (planImbalance) and total memory use, with `perTable` one row per table
/// (size, pooling factor, where its columns are), then the search
/// statistics. The cost model's warnings are printed above the devices only
/// `withWarnings`: the tools report them once, on stderr or as diagnostics.
void printPlanTable(llvm::raw_ostream &os, llvm::ArrayRef<TableSpec> tables,
                    const Topology &topology, const PlanResult &result,
                    bool perTable = false, bool withWarnings = false);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_PLANIO_H
