//===- CostModel.cpp - The cost model interface ---------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/CostModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace neuroshard {

// Anchors the vtable in this library.
CostModel::~CostModel() = default;

static Error noIncrementalPricing(const CostModel &model) {
  return createStringError(inconvertibleErrorCode(),
                           formatv("cost model '{0}' prices whole shard sets "
                                   "only (it has no per-slice terms)",
                                   model.name()));
}

Error CostModel::computeTerms(ArrayRef<ColumnSlice>, MutableArrayRef<double>) {
  return noIncrementalPricing(*this);
}

void CostModel::addComputeTerm(ArrayRef<double> term,
                               MutableArrayRef<double> sum) const {
  for (auto [total, value] : zip_equal(sum, term))
    total += value;
}

Error CostModel::predictComputeFromSums(ArrayRef<double>,
                                        MutableArrayRef<double>) {
  return noIncrementalPricing(*this);
}

Error checkCostModelSupports(const CostModel &model, const Topology &topology) {
  std::optional<unsigned> required = model.requiredDevices();
  if (!required || *required == topology.numDevices())
    return Error::success();
  return createStringError(
      inconvertibleErrorCode(),
      formatv("cost model '{0}' was trained for {1} devices but the task has "
              "{2}",
              model.name(), *required, topology.numDevices()));
}

} // namespace neuroshard
