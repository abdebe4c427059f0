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
  std::optional<unsigned> devices = model.requiredDevices();
  if (devices && *devices != topology.numDevices())
    return createStringError(
        inconvertibleErrorCode(),
        formatv("cost model '{0}' was trained for {1} devices but the task "
                "has {2}",
                model.name(), *devices, topology.numDevices()));
  std::optional<unsigned> nodes = model.requiredNodes();
  if (nodes && *nodes != topology.numNodes())
    return createStringError(
        inconvertibleErrorCode(),
        formatv("cost model '{0}' measured its communication on {1} node{2} "
                "but the task's {3} devices are on {4}; plan with "
                "cost-model=analytical or a bundle measured on this topology",
                model.name(), *nodes, *nodes == 1 ? "" : "s",
                topology.numDevices(), topology.numNodes()));
  return Error::success();
}

} // namespace neuroshard
