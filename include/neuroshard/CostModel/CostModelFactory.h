//===- CostModelFactory.h - Cost models by name or path ---------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The one place that turns a user's `cost-model` option into a model, shared
// by the sharding pass and the tools: "analytical" is the analytical model,
// anything else is a path to a neural model bundle. Neural models live in a
// separate library that needs LibTorch; that library registers its loader
// here, so builds without LibTorch still link and report a clear error.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_COSTMODEL_COSTMODELFACTORY_H
#define NEUROSHARD_COSTMODEL_COSTMODELFACTORY_H

#include "neuroshard/CostModel/CostModel.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace neuroshard {

/// Loads the neural cost model bundle at an existing path.
using NeuralCostModelLoader =
    llvm::Expected<std::unique_ptr<CostModel>> (*)(llvm::StringRef path);

/// Installs the loader createCostModel uses for paths (nullptr removes it).
/// The neural cost-model library calls this once at start-up.
void registerNeuralCostModelLoader(NeuralCostModelLoader loader);

/// The spec that names the shipped model: the trained bundle under models/
/// that the build was configured with (NEUROSHARD_DEFAULT_MODEL) when this
/// build can load neural models, else the analytical model.
constexpr const char *kDefaultCostModel = "default";

/// The spec `spec` stands for: "default" resolved as above, anything else
/// unchanged.
std::string resolveCostModelSpec(llvm::StringRef spec);

/// Creates the model named by `spec` ("default", "analytical" or a neural
/// bundle path)
/// and checks that it supports the topology's device count. Fails naming
/// `spec` if the path does not exist or no neural loader is registered.
llvm::Expected<std::unique_ptr<CostModel>>
createCostModel(llvm::StringRef spec, const Topology &topology);

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_COSTMODELFACTORY_H
