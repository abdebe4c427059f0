//===- PlanPlot.h - A picture of a plan as SVG ------------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Draws the plan that printPlanTable and writePlanJSON report, from the same
// numbers, as one self-contained SVG file (no script, no external font or
// style), so that `neuroshard-plan --plot` and `--neuroshard-export-plan`
// need nothing beyond the planner to make it.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_PLANPLOT_H
#define NEUROSHARD_PLANNER_PLANPLOT_H

#include "neuroshard/Planner/Search.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

namespace neuroshard {

/// The most entries the legend names tables with; a plan of more tables
/// names the kMaxPlotTables - 1 most visible ones (the largest share of the
/// compute or the memory of the plan) and draws the rest as "other".
constexpr unsigned kMaxPlotTables = 20;

/// Writes the plan as an SVG picture of two panels with one row per device:
///
/// * time (ms): the device's compute, backward comm, the wait at the
///   forward exchange for the last device to reach it (stragglerWaitMs, a
///   part of its forward comm), the rest of its forward comm, and the wait
///   from its total to the plan's cost, so that every bar ends at the
///   plan's cost. The terms are the PlanResult's, as printPlanTable and
///   writePlanJSON report them. Models price a device's set of shards, not
///   each shard, so the compute is shared among the device's tables in
///   proportion to the embedding bytes their lookups read and write per bag
///   ((pooling factor + features) x width x element bytes);
/// * memory (GB): what each table's shards take on the device (weights and
///   optimizer state, as memory_used_gb counts them) against the device's
///   usable capacity (usable_gb), with the reserved part beyond it.
///
/// Segments are coloured per table (a fixed palette in table order), with a
/// legend of the table names and a title naming the algorithm, the cost
/// model, the device count and the cost. Elements carry their device, table
/// and value (data-device, data-table, data-ms, data-gb) for tools and
/// tests.
void writePlanSVG(llvm::raw_ostream &os, llvm::ArrayRef<TableSpec> tables,
                  const Topology &topology, const PlanResult &result);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_PLANPLOT_H
