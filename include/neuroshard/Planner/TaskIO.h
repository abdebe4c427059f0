//===- TaskIO.h - Planning tasks read from JSON -----------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The task format neuroshard-plan reads and the Python bindings share
// (docs/getting-started.md documents every field):
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
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_TASKIO_H
#define NEUROSHARD_PLANNER_TASKIO_H

#include "neuroshard/Planner/TopologyOptions.h"
#include "neuroshard/Sharding/AccessEstimate.h"
#include "neuroshard/Sharding/Problem.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

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

/// Parses device memory capacities in GB written as one number or a comma
/// list ("16" or "16,16,8,8"), as the `memory-gb` option of the tools and the
/// pass takes them. Fails, naming the entry, for the first one that is not a
/// number or breaks checkCapacityGB (TableRules.h).
llvm::Expected<std::vector<double>> parseMemoryGBList(llvm::StringRef list);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_TASKIO_H
