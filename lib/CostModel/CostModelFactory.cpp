//===- CostModelFactory.cpp - Cost models by name or path -----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/CostModel/AnalyticalCostModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdlib>

using namespace llvm;

namespace neuroshard {

// Set once by the neural cost-model library; a plain pointer because the
// loader is a free function and registration happens before any planning.
static NeuralCostModelLoader neuralLoader = nullptr;

void registerNeuralCostModelLoader(NeuralCostModelLoader loader) {
  neuralLoader = loader;
}

// Directories a program added (InitCostModels.h adds the installed
// package's), searched after the one next to the program.
static std::vector<std::string> &addedModelDirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

void addDefaultModelSearchDir(StringRef dir) {
  std::vector<std::string> &dirs = addedModelDirs();
  if (!dir.empty() && llvm::find(dirs, dir) == dirs.end())
    dirs.push_back(dir.str());
}

bool neuralCostModelsBuilt() {
#ifdef NEUROSHARD_BUILT_WITH_TORCH
  return true;
#else
  return false;
#endif
}

std::vector<std::string> defaultModelSearchPath() {
  if (const char *dir = std::getenv(kModelsDirVariable); dir && *dir)
    return {dir};
  std::vector<std::string> places;
  std::string executable = sys::fs::getMainExecutable(nullptr, nullptr);
  if (!executable.empty()) {
    SmallString<256> dir(sys::path::parent_path(executable));
    sys::path::append(dir, "..", "share", "neuroshard", "models");
    sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
    places.push_back(std::string(dir));
  }
  for (const std::string &dir : addedModelDirs())
    places.push_back(dir);
  places.push_back(NEUROSHARD_INSTALL_MODELS_DIR);
  // Each place once, in order.
  std::vector<std::string> unique;
  for (const std::string &dir : places)
    if (llvm::find(unique, dir) == unique.end())
      unique.push_back(dir);
  return unique;
}

bool isShippedBundle(StringRef dir) {
  SmallString<256> parent;
  if (sys::fs::real_path(sys::path::parent_path(dir), parent))
    return false;
  std::vector<std::string> places = defaultModelSearchPath();
  places.push_back(NEUROSHARD_SOURCE_MODELS_DIR);
  for (const std::string &place : places) {
    SmallString<256> real;
    if (!sys::fs::real_path(place, real) && real == parent)
      return true;
  }
  return false;
}

/// The directory of the bundle called `name` in the first place of the
/// model search path that has one, or "".
static std::string findShippedModel(StringRef name) {
  for (const std::string &dir : defaultModelSearchPath()) {
    SmallString<256> bundle(dir);
    sys::path::append(bundle, name);
    if (sys::fs::is_directory(bundle))
      return std::string(bundle);
  }
  return "";
}

/// The bundles shipped under the model search path, by name: directories
/// that hold a meta.json, each name once.
static std::vector<std::string> shippedModelNames() {
  std::vector<std::string> names;
  for (const std::string &dir : defaultModelSearchPath()) {
    std::error_code ec;
    for (sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      SmallString<256> meta(it->path());
      sys::path::append(meta, "meta.json");
      std::string name = sys::path::filename(it->path()).str();
      if (sys::fs::exists(meta) && llvm::find(names, name) == names.end())
        names.push_back(name);
    }
  }
  llvm::sort(names);
  return names;
}

std::string defaultModelName(StringRef kind) {
  if (kind == "gpu")
    return NEUROSHARD_DEFAULT_GPU_MODEL_NAME;
  if (kind == "cpu")
    return NEUROSHARD_DEFAULT_CPU_MODEL_NAME;
  std::string prefix = (kind + "-").str();
  for (const std::string &name : shippedModelNames())
    if (StringRef(name).starts_with(prefix))
      return name;
  return isCPUDeviceKind(kind) ? NEUROSHARD_DEFAULT_CPU_MODEL_NAME
                               : NEUROSHARD_DEFAULT_GPU_MODEL_NAME;
}

std::string findDefaultModel(StringRef kind) {
  return findShippedModel(defaultModelName(kind));
}

std::string resolveCostModelSpec(StringRef spec, StringRef kind) {
  // A shipped bundle may be named rather than given by its path.
  if (spec != kDefaultCostModel && spec != "analytical" &&
      !sys::fs::exists(spec) && !spec.contains('/'))
    if (std::string bundle = findShippedModel(spec); !bundle.empty())
      return bundle;
  if (spec != kDefaultCostModel)
    return spec.str();
  if (!neuralLoader)
    return neuralCostModelsBuilt() ? spec.str() : "analytical";
  std::string found = findDefaultModel(kind);
  return found.empty() ? spec.str() : found;
}

/// Why "default" names no model: the neural library is built but not
/// registered, or the shipped bundle is nowhere it is looked for.
static Error defaultModelError(StringRef kind) {
  if (!neuralLoader)
    return createStringError(
        inconvertibleErrorCode(),
        "cost model 'default': this build has the neural cost model, but "
        "the program did not register it; call "
        "neuroshard::registerAvailableCostModels() "
        "(neuroshard/CostModel/InitCostModels.h) and link "
        "NeuroShard::CostModel, or choose 'analytical'");
  std::string places;
  for (const std::string &dir : defaultModelSearchPath())
    places += (places.empty() ? "" : ", ") + dir;
  return createStringError(
      inconvertibleErrorCode(),
      formatv("cost model 'default': the shipped bundle '{0}' is in none "
              "of: {1}; set {2} to the directory that holds it, or choose "
              "'analytical' or a bundle path ('{0}' is the default for "
              "device kind '{3}')",
              defaultModelName(kind), places, kModelsDirVariable, kind));
}

std::optional<std::string> checkRiskMargin(double sigmas) {
  if (std::isfinite(sigmas) && sigmas >= 0.0 && sigmas <= kMaxRiskMargin)
    return std::nullopt;
  return formatv("the risk margin must be between 0 and {0} standard "
                 "deviations, got {1}",
                 format("%g", kMaxRiskMargin), format("%g", sigmas))
      .str();
}

Expected<std::unique_ptr<CostModel>>
createCostModel(StringRef requested, const Topology &topology,
                const CostModelOptions &options) {
  if (std::optional<std::string> problem = checkRiskMargin(options.riskMargin))
    return createStringError(inconvertibleErrorCode(), *problem);
  std::string resolved = resolveCostModelSpec(requested, topology.deviceKind);
  if (resolved == kDefaultCostModel)
    return defaultModelError(topology.deviceKind);
  StringRef spec = resolved;
  std::unique_ptr<CostModel> model;
  if (spec == "analytical") {
    model = std::make_unique<AnalyticalCostModel>();
  } else {
    if (!sys::fs::exists(spec)) {
      std::vector<std::string> shipped = shippedModelNames();
      return createStringError(
          inconvertibleErrorCode(),
          formatv("cost model '{0}' does not exist (expected 'default', "
                  "'analytical', the name of a shipped bundle{1} or the "
                  "path of a neural cost model bundle)",
                  spec,
                  shipped.empty() ? std::string()
                                  : " (" + join(shipped, ", ") + ")"));
    }
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
  model->setRiskMargin(options.riskMargin);
  return std::move(model);
}

} // namespace neuroshard
