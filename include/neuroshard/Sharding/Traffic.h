//===- Traffic.h - What each device of a plan exchanges ---------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The volumes a training step moves between devices, per device and per
// kind of link (inside its node, to other nodes), counted in values (the
// cost models multiply by their element sizes). docs/cost-model.md works an
// example through.
//
//  - Pooled values: after the lookups every device sends each device its
//    slice of the batch (B / N bags) of the columns it computed, and
//    receives its slice of every other device's columns; the backward sends
//    their gradients the other way, the same volumes.
//  - Indices: each device starts with the lookups of its own B / N bags,
//    and every piece of a table needs the lookups of all B bags. A node
//    takes the lookups it lacks for a table across its links once, however
//    many pieces of that table it holds: the k holders of the node each
//    receive 1/k of it and pass it to the others, so a table split inside
//    one node costs the network no more than the table whole. A row piece
//    needs only the lookups of its rows: the pieces of one row range share
//    them as the pieces of a table do above.
//  - Row pieces: a row piece pools its rows' part of every bag, and the
//    partial sums are reduce-scattered: each device receives its slice of
//    the batch from every piece, the same volumes as the pooled exchange
//    of a column piece as wide, so row pieces count in the dim sums.
//  - Replicas: a data-parallel table looks up each device's own bags in
//    its replica and exchanges neither indices nor pooled values; the
//    backward all-reduces its gradients, hierarchically: reduce-scatter
//    inside the node, all-reduce of the node's share across nodes, then
//    all-gather inside the node.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SHARDING_TRAFFIC_H
#define NEUROSHARD_SHARDING_TRAFFIC_H

#include "neuroshard/Sharding/Plan.h"

#include "llvm/ADT/ArrayRef.h"

#include <vector>

namespace neuroshard {

/// Values one device sends and receives over each kind of link.
struct LinkVolume {
  double intraSent = 0.0;
  double intraReceived = 0.0;
  double interSent = 0.0;
  double interReceived = 0.0;
};

/// What one device of a plan exchanges with the others in a training step.
struct DeviceTraffic {
  /// Pooled columns the device computes: its slices' widths, each times
  /// its table's feature count.
  double dimSum = 0.0;
  /// Pooled values of the forward exchange (its backward moves as many).
  LinkVolume pooled;
  /// Lookup indices of the input distribution.
  LinkVolume indices;
  /// Gradient values of the replicas' all-reduce (backward).
  LinkVolume gradients;
};

/// The traffic of every device when slices[i] is on device deviceOf[i],
/// N values for N devices. Slices of one table need not be adjacent.
std::vector<DeviceTraffic> computeTraffic(llvm::ArrayRef<TableSpec> tables,
                                          const Topology &topology,
                                          llvm::ArrayRef<ColumnSlice> slices,
                                          llvm::ArrayRef<unsigned> deviceOf);

/// The traffic of every device of `plan`.
std::vector<DeviceTraffic> computeTraffic(llvm::ArrayRef<TableSpec> tables,
                                          const Topology &topology,
                                          const ShardingPlan &plan);

} // namespace neuroshard

#endif // NEUROSHARD_SHARDING_TRAFFIC_H
