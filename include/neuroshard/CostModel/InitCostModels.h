//===- InitCostModels.h - Register the cost models of a build ---*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Programs call registerAvailableCostModels() once at start-up so that
// createCostModel() knows every cost model the build has. The neural model is
// there when the program links the cost-model target (NeuroShard::CostModel
// of an installed package, NeuroShardCostModels in the build), which defines
// NEUROSHARD_HAS_TORCH when the build has LibTorch.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_COSTMODEL_INITCOSTMODELS_H
#define NEUROSHARD_COSTMODEL_INITCOSTMODELS_H

#include "neuroshard/CostModel/CostModelFactory.h"
#ifdef NEUROSHARD_HAS_TORCH
#include "neuroshard/CostModel/NeuralCostModel.h"
#endif

namespace neuroshard {

inline void registerAvailableCostModels() {
#ifdef NEUROSHARD_HAS_TORCH
  registerNeuralCostModelSupport();
#endif
#ifdef NEUROSHARD_PACKAGE_MODELS_DIR
  // Set by find_package(NeuroShard): the installed package's bundles.
  addDefaultModelSearchDir(NEUROSHARD_PACKAGE_MODELS_DIR);
#endif
}

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_INITCOSTMODELS_H
