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
#include <optional>
#include <string>
#include <vector>

namespace neuroshard {

/// Loads the neural cost model bundle at an existing path.
using NeuralCostModelLoader =
    llvm::Expected<std::unique_ptr<CostModel>> (*)(llvm::StringRef path);

/// Installs the loader createCostModel uses for paths (nullptr removes it).
/// The neural cost-model library calls this once at start-up.
void registerNeuralCostModelLoader(NeuralCostModelLoader loader);

/// The spec that names the shipped model of the topology's device kind
/// (defaultModelName) when this build has the neural cost model, else the
/// analytical model.
constexpr const char *kDefaultCostModel = "default";

/// The environment variable naming the directory of the shipped bundles.
constexpr const char *kModelsDirVariable = "NEUROSHARD_MODELS_DIR";

/// True if this build has the LibTorch-backed neural cost model (whether or
/// not the program registered it).
bool neuralCostModelsBuilt();

/// Where "default" looks for the shipped bundle, in order: only
/// $NEUROSHARD_MODELS_DIR when it is set; else share/neuroshard/models next
/// to the running program's bin/ (the build tree and an installed prefix
/// alike), the directories added with addDefaultModelSearchDir, then the
/// configured install prefix's.
std::vector<std::string> defaultModelSearchPath();

/// Whether the bundle directory `dir` is one shipped with NeuroShard: in
/// one of the places above, or in the models/ of the source tree this build
/// was made from. Nothing is written into such a bundle (measured
/// selection's experience goes elsewhere).
bool isShippedBundle(llvm::StringRef dir);

/// Adds a directory to search for the shipped bundles. A program built
/// against an installed NeuroShard gets the package's through
/// registerAvailableCostModels (InitCostModels.h).
void addDefaultModelSearchDir(llvm::StringRef dir);

/// The name of the shipped bundle "default" means for plans of device kind
/// `kind` (Topology::deviceKind): for "gpu" the GPU bundle the build was
/// configured with (NEUROSHARD_DEFAULT_GPU_MODEL), for "cpu" the CPU one
/// (NEUROSHARD_DEFAULT_CPU_MODEL), for a chip the first shipped bundle
/// whose name starts with "<kind>-" ("h200" finds "h200-b65536"), else the
/// GPU or CPU default as the kind is a GPU's or a CPU's (isCPUDeviceKind).
std::string defaultModelName(llvm::StringRef kind = kDefaultDeviceKind);

/// The directory of the shipped default bundle for device kind `kind`, or
/// "" if it is in none of the places above.
std::string findDefaultModel(llvm::StringRef kind = kDefaultDeviceKind);

/// The spec `spec` stands for, for plans of device kind `kind`: "default"
/// resolved as above ("default" itself when the neural model is built but
/// its bundle or loader is missing), the name of a bundle in one of the
/// places above (`cpu-zen3-b1024`) as its directory, anything else
/// unchanged.
std::string resolveCostModelSpec(llvm::StringRef spec,
                                 llvm::StringRef kind = kDefaultDeviceKind);

/// The standard deviations a model with an uncertainty estimate adds to its
/// compute costs unless told otherwise (CostModel::setRiskMargin).
constexpr double kDefaultRiskMargin = 1.0;
/// The largest risk margin accepted.
constexpr double kMaxRiskMargin = 10.0;

/// How a created model prices.
struct CostModelOptions {
  /// CostModel::setRiskMargin's `sigmas`, in [0, kMaxRiskMargin].
  double riskMargin = kDefaultRiskMargin;
};

/// What is wrong with a risk margin, or nullopt when it is allowed.
std::optional<std::string> checkRiskMargin(double sigmas);

/// Creates the model named by `spec` ("default" for the topology's device
/// kind, "analytical", a shipped bundle's name or a neural bundle path),
/// applies `options` and checks that it supports the topology's device
/// count. Fails naming `spec` if the path does not exist,
/// no neural loader is registered, or "default" finds no bundle (the error
/// lists the places searched).
llvm::Expected<std::unique_ptr<CostModel>>
createCostModel(llvm::StringRef spec, const Topology &topology,
                const CostModelOptions &options = {});

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_COSTMODELFACTORY_H
