//===- AnalyticalCostModel.h - Bandwidth (roofline) cost model --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A deterministic bandwidth model in the style of TorchRec's planner: the
// fused kernel's bytes over HBM bandwidth with a penalty for narrow slices,
// backward = 2 x forward, and all-to-all bytes over the topology's links
// (intra-node and inter-node bandwidth).
// It needs no files and is always available. docs/cost-model.md gives the
// formulas.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_COSTMODEL_ANALYTICALCOSTMODEL_H
#define NEUROSHARD_COSTMODEL_ANALYTICALCOSTMODEL_H

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/Sharding/HostTier.h"

#include <vector>

namespace neuroshard {

/// The constants of the analytical model. Bandwidths come from the Topology.
struct AnalyticalCostParams {
  /// Bytes per index read by the lookup (int32 indices).
  double indexBytes = 4.0;
  /// Bytes per element of the pooled outputs sent by all-to-all (f32).
  double commElementBytes = 4.0;
  /// Backward (+ update) cost as a multiple of the forward cost.
  double backwardFactor = 2.0;
  /// Slices narrower than narrowDim cost narrowPenalty times more, slices
  /// narrower than veryNarrowDim veryNarrowPenalty times more: narrow rows
  /// use memory transactions poorly (TorchRec's constants).
  int64_t narrowDim = 128;
  double narrowPenalty = 1.15;
  int64_t veryNarrowDim = 64;
  double veryNarrowPenalty = 1.75;
};

class AnalyticalCostModel final : public CostModel {
public:
  explicit AnalyticalCostModel(AnalyticalCostParams params = {})
      : params(params) {}

  llvm::StringRef name() const override { return "analytical"; }
  std::string description() const override;

  llvm::Error prepare(llvm::ArrayRef<TableSpec> tables,
                      const Topology &topology) override;
  llvm::Error predictCompute(llvm::ArrayRef<llvm::ArrayRef<ColumnSlice>> sets,
                             llvm::MutableArrayRef<double> costsMs) override;
  /// A set costs the sum of its slices' costs: the term of a slice is its
  /// cost (one value).
  bool additiveCompute() const override { return true; }
  unsigned computeTermWidth() const override { return 1; }
  llvm::Error computeTerms(llvm::ArrayRef<ColumnSlice> slices,
                           llvm::MutableArrayRef<double> terms) override;
  llvm::Error
  predictComputeFromSums(llvm::ArrayRef<double> sums,
                         llvm::MutableArrayRef<double> costsMs) override;
  llvm::Error
  predictBackwardComm(llvm::ArrayRef<DeviceTraffic> traffic,
                      llvm::MutableArrayRef<double> costsMs) override;
  llvm::Error
  predictForwardComm(llvm::ArrayRef<DeviceTraffic> traffic,
                     llvm::ArrayRef<double> stragglersMs,
                     llvm::MutableArrayRef<double> costsMs) override;

  /// Milliseconds a device takes to exchange `pooled` values of the pooled
  /// outputs (or their gradients), and to receive and send `indices`
  /// lookups, over the prepared topology's links. Requires prepare().
  double pooledExchangeMs(const LinkVolume &pooled) const;
  double indexDistributionMs(const LinkVolume &indices) const;
  /// Milliseconds of the replicas' gradient all-reduce (`gradients`
  /// values).
  double gradientAllReduceMs(const LinkVolume &gradients) const;

  /// Forward + backward cost of one slice in ms; a set costs the sum of its
  /// slices. Requires prepare().
  double sliceComputeMs(const ColumnSlice &slice) const;

private:
  /// Fails if `slice` names a table prepare() was not given.
  llvm::Error checkPrepared(const ColumnSlice &slice) const;
  /// Milliseconds to move `volume` values of `bytesPerValue` bytes: each
  /// kind of link carries the larger of its two directions, and the
  /// inter-node part and the intra-node part take their turns.
  double linkMs(const LinkVolume &volume, double bytesPerValue) const;
  /// Fails unless `traffic` is whole plans of the prepared device count
  /// and `costsMs` as long.
  llvm::Error checkLayout(llvm::ArrayRef<DeviceTraffic> traffic,
                          llvm::MutableArrayRef<double> costsMs) const;

  AnalyticalCostParams params;
  std::vector<TableSpec> tables;
  Topology topology;
  /// Per table, the hit moments its row pieces are priced from.
  std::vector<RowHitMoments> rowMoments;
  /// The host traffic of host-memory tables' shards, memoized.
  mutable HostTierPricer host;
};

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_ANALYTICALCOSTMODEL_H
