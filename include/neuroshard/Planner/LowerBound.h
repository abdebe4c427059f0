//===- LowerBound.h - How cheap any plan of a problem can be ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A lower bound on the cost of every plan the planner can form for a
// problem, under the model that prices the plans, so that a report can say
// how far a plan may be from the best one (docs/planner.md "Lower bound").
//
// Each table may be held whole, cut into 2 to N column parts or row
// blocks, or replicated (as its sharding kinds allow); a form's share is
// what its costliest piece costs alone, its work what its pieces cost
// together. No plan's slowest device costs less than s when
//  - s is below some table's cheapest share: the device holding the most
//    of that table costs at least its part alone, for any model that
//    prices no set below one of its members; or,
//  - for a model whose set costs are the sums of their pieces' costs
//    (CostModel::additiveCompute, the analytical model), the devices
//    cannot do the tables' work with no piece above s: every table in its
//    form of least work among those whose share is at most s, summed and
//    divided over the N devices, exceeds s.
// The bound is the least s that passes both. For a neural model only the
// first applies: it may price a union of sets above their sum (a larger
// set misses the cache more), so no total work bounds a device's share.
// The forms cover every piece count: even splits into 2 to 16 pieces, and
// beyond, powers of two with brackets between them (a bracket has the
// pieces of the lower count and the share of the higher).
//
// Communication is counted as zero: the bound is below every plan's
// slowest compute, which the plan's cost includes.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_LOWERBOUND_H
#define NEUROSHARD_PLANNER_LOWERBOUND_H

#include "neuroshard/Sharding/Problem.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace neuroshard {

class CostModel;

struct PlanLowerBound {
  /// The bound, ms: at least pieceMs.
  double ms = 0.0;
  /// The tables' least work with no piece above the bound, over N devices;
  /// 0 when the model's set costs are not sums (not counted).
  double workMs = 0.0;
  /// The hardest table's cheapest share, priced alone.
  double pieceMs = 0.0;
  /// The index of that table.
  unsigned hardestTable = 0;

  /// How far a plan costing `costMs` is above the bound, as a fraction
  /// (0.05: 5% above); 0 when the bound is 0.
  double gap(double costMs) const { return ms > 0.0 ? costMs / ms - 1.0 : 0.0; }
};

/// The lower bound of the problem under `model`, which must be prepared
/// for `tables` and `topology` (the search and pricePlan leave it so). A
/// table's shares are those its own sharding kinds allow (a pinned or
/// kept-whole table is whole).
llvm::Expected<PlanLowerBound>
computeLowerBound(llvm::ArrayRef<TableSpec> tables, const Topology &topology,
                  CostModel &model);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_LOWERBOUND_H
