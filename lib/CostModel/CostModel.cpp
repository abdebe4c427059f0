//===- CostModel.cpp - The cost model interface ---------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/CostModel.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace neuroshard {

// Anchors the vtable in this library.
CostModel::~CostModel() = default;

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
