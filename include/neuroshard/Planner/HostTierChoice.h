//===- HostTierChoice.h - Which tables go to host memory --------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A task whose tables do not fit the devices' memory can still be planned
// when the nodes' host memory holds some of them behind a cache in device
// memory (Sharding/HostTier.h). chooseHostTiers decides which tables go
// there and how large their caches are, before the search places them:
//
//  - when the tables fit the devices' memory, nothing moves: a table in
//    host memory only costs; except that a table that must stay whole (not
//    split, pinned, or allowed no kind of piece) and is larger than every
//    device moves first, whatever the total;
//  - otherwise tables move, each at its smallest cache (the distinct rows
//    one batch uses), the least host traffic per byte freed first, until
//    the tables fill at most kHostTierFill of the devices' memory, and
//    never beyond the nodes' host memory;
//  - then the caches grow into the memory left (up to kHostTierFill), one
//    step at a time, the most host traffic saved per byte first. A cache
//    is 1 to 256 times the distinct rows a batch uses, or 1% to 40% of
//    the table, always under half of it.
//
// Tables the task already keeps in host memory ('cache_load_factor') stay
// as given. A plan for CPU execution has no tier to move tables to.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_HOSTTIERCHOICE_H
#define NEUROSHARD_PLANNER_HOSTTIERCHOICE_H

#include "neuroshard/Sharding/Problem.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace neuroshard {

/// The share of the devices' usable memory the tables may fill before some
/// go to host memory: the rest leaves the search room to place them.
constexpr double kHostTierFill = 0.9;

/// `tables`, with the tables that go to host memory given their cache
/// fraction (TableSpec::cacheFraction) and no data-parallel kind. Fails,
/// naming both totals, when even host memory cannot make them fit; when no
/// table can move at all (no host memory), returns them as they are, for
/// the search to say why the devices are too small.
llvm::Expected<std::vector<TableSpec>>
chooseHostTiers(llvm::ArrayRef<TableSpec> tables, const Topology &topology);

struct PlanFile;

/// The tables a front end plans or prices: with `given` (a plan to price),
/// where that plan keeps them (tablesOfPlan); else checked
/// (validateProblem) and with chooseHostTiers' choice.
llvm::Expected<std::vector<TableSpec>>
tablesForPlanning(llvm::ArrayRef<TableSpec> tables, const Topology &topology,
                  const PlanFile *given);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_HOSTTIERCHOICE_H
