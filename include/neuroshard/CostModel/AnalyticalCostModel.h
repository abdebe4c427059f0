//===- AnalyticalCostModel.h - Bandwidth (roofline) cost model --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A deterministic bandwidth model in the style of TorchRec's planner: the
// fused kernel's bytes over HBM bandwidth with a penalty for narrow slices,
// backward = 2 x forward, and all-to-all bytes over interconnect bandwidth.
// It needs no files and is always available. docs/cost-model.md gives the
// formulas.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_COSTMODEL_ANALYTICALCOSTMODEL_H
#define NEUROSHARD_COSTMODEL_ANALYTICALCOSTMODEL_H

#include "neuroshard/CostModel/CostModel.h"

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
  unsigned computeTermWidth() const override { return 1; }
  llvm::Error computeTerms(llvm::ArrayRef<ColumnSlice> slices,
                           llvm::MutableArrayRef<double> terms) override;
  llvm::Error
  predictComputeFromSums(llvm::ArrayRef<double> sums,
                         llvm::MutableArrayRef<double> costsMs) override;
  llvm::Error
  predictBackwardComm(llvm::ArrayRef<double> dimSums,
                      llvm::MutableArrayRef<double> costsMs) override;
  llvm::Error
  predictForwardComm(llvm::ArrayRef<double> dimSums,
                     llvm::ArrayRef<double> stragglersMs,
                     llvm::MutableArrayRef<double> costsMs) override;

  /// Forward + backward cost of one slice in ms; a set costs the sum of its
  /// slices. Requires prepare().
  double sliceComputeMs(const ColumnSlice &slice) const;

private:
  /// Fails if `slice` names a table prepare() was not given.
  llvm::Error checkPrepared(const ColumnSlice &slice) const;
  /// Time for each device of each plan to send and receive its pooled
  /// outputs in one all-to-all (no waiting).
  llvm::Error transferMs(llvm::ArrayRef<double> dimSums,
                         llvm::MutableArrayRef<double> costsMs) const;

  AnalyticalCostParams params;
  std::vector<TableSpec> tables;
  Topology topology;
};

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_ANALYTICALCOSTMODEL_H
