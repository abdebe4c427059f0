//===- InitCostModels.h - Register the cost models of a build ---*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Tools call registerAvailableCostModels() once at start-up so that
// createCostModel() knows every cost model the build has. The neural model is
// there when the tool links the LibTorch library through CMake's
// neuroshard_link_neural_cost_model(), which defines NEUROSHARD_HAS_TORCH.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_COSTMODEL_INITCOSTMODELS_H
#define NEUROSHARD_COSTMODEL_INITCOSTMODELS_H

#ifdef NEUROSHARD_HAS_TORCH
#include "neuroshard/CostModel/NeuralCostModel.h"
#endif

namespace neuroshard {

inline void registerAvailableCostModels() {
#ifdef NEUROSHARD_HAS_TORCH
  registerNeuralCostModelSupport();
#endif
}

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_INITCOSTMODELS_H
