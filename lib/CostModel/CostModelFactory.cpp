//===- CostModelFactory.cpp - Cost models by name or path -----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/CostModel/AnalyticalCostModel.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace neuroshard {

// Set once by the neural cost-model library; a plain pointer because the
// loader is a free function and registration happens before any planning.
static NeuralCostModelLoader neuralLoader = nullptr;

void registerNeuralCostModelLoader(NeuralCostModelLoader loader) {
  neuralLoader = loader;
}

std::string resolveCostModelSpec(StringRef spec) {
  if (spec != kDefaultCostModel)
    return spec.str();
  if (neuralLoader && sys::fs::is_directory(NEUROSHARD_DEFAULT_MODEL_DIR))
    return NEUROSHARD_DEFAULT_MODEL_DIR;
  return "analytical";
}

Expected<std::unique_ptr<CostModel>> createCostModel(StringRef requested,
                                                     const Topology &topology) {
  std::string resolved = resolveCostModelSpec(requested);
  StringRef spec = resolved;
  std::unique_ptr<CostModel> model;
  if (spec == "analytical") {
    model = std::make_unique<AnalyticalCostModel>();
  } else {
    if (!sys::fs::exists(spec))
      return createStringError(
          inconvertibleErrorCode(),
          formatv("cost model '{0}' does not exist (expected 'default', "
                  "'analytical' or the path of a neural cost model bundle)",
                  spec));
    if (!neuralLoader)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("cost model '{0}': neural cost models need LibTorch "
                  "support, which this build lacks (configure with LibTorch "
                  "and -DNEUROSHARD_ENABLE_TORCH=ON, or use 'analytical')",
                  spec));
    Expected<std::unique_ptr<CostModel>> loaded = neuralLoader(spec);
    if (!loaded)
      return loaded.takeError();
    model = std::move(*loaded);
  }
  if (Error err = checkCostModelSupports(*model, topology))
    return std::move(err);
  return std::move(model);
}

} // namespace neuroshard
