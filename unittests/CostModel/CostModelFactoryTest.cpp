//===- CostModelFactoryTest.cpp - Cost models by name or path -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "TestProblems.h"

#include "neuroshard/CostModel/CostModelFactory.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <cstdlib>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

std::string factoryError(StringRef spec, unsigned devices) {
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel(spec, Topology::uniform(devices, 16));
  return errorMessage(model);
}

/// Stands in for the LibTorch loader: a model tied to 8 devices.
Expected<std::unique_ptr<CostModel>> loadEightDeviceModel(StringRef) {
  return std::make_unique<SliceCostModel>(0.0, 8);
}

class CostModelFactoryTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("neuroshard-bundle", bundle));
  }
  void TearDown() override {
    registerNeuralCostModelLoader(nullptr);
    sys::fs::remove(bundle);
  }
  SmallString<128> bundle;
};

TEST_F(CostModelFactoryTest, CreatesTheAnalyticalModel) {
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel("analytical", Topology::uniform(3, 16));
  ASSERT_EQ(errorMessage(model), "");
  EXPECT_EQ((*model)->name(), "analytical");
}

TEST_F(CostModelFactoryTest, ExplainsMissingPathsAndMissingLibTorch) {
  std::string missing = factoryError("/no/such/bundle", 4);
  EXPECT_TRUE(StringRef(missing).starts_with(
      "cost model '/no/such/bundle' does not exist (expected 'default', "
      "'analytical', the name of a shipped bundle"))
      << missing;
  EXPECT_TRUE(StringRef(missing).ends_with(
      "or the path of a neural cost model bundle)"))
      << missing;
  EXPECT_EQ(factoryError(bundle, 4),
            "cost model '" + bundle.str().str() +
                "': neural cost models need LibTorch support, which this "
                "build lacks (configure with LibTorch and "
                "-DNEUROSHARD_ENABLE_TORCH=ON, or use 'analytical')");
}

TEST_F(CostModelFactoryTest, DefaultIsTheShippedModelWhenLoadable) {
  EXPECT_EQ(resolveCostModelSpec("analytical"), "analytical");
  EXPECT_EQ(resolveCostModelSpec("/some/bundle"), "/some/bundle");
  registerNeuralCostModelLoader(nullptr);
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel(kDefaultCostModel, Topology::uniform(4, 16));
  if (neuralCostModelsBuilt()) {
    // A build with the neural model never falls back to the analytical one
    // silently: a program that did not register it is told so.
    EXPECT_EQ(resolveCostModelSpec(kDefaultCostModel), kDefaultCostModel);
    EXPECT_EQ(errorMessage(model),
              "cost model 'default': this build has the neural cost model, "
              "but the program did not register it; call "
              "neuroshard::registerAvailableCostModels() "
              "(neuroshard/CostModel/InitCostModels.h) and link "
              "NeuroShard::CostModel, or choose 'analytical'");
  } else {
    // Without LibTorch the default is the analytical model.
    EXPECT_EQ(resolveCostModelSpec(kDefaultCostModel), "analytical");
    ASSERT_EQ(errorMessage(model), "");
    EXPECT_EQ((*model)->name(), "analytical");
  }
  // With a loader, it is the trained bundle of the device kind shipped
  // under share/neuroshard/models next to the program's directory (the
  // build tree's copy of models/): a GPU's unless the plan is for CPU
  // execution, a chip's own where one is shipped.
  registerNeuralCostModelLoader(loadEightDeviceModel);
  for (auto [kind, bundle] :
       {std::make_pair("gpu", "h200-b65536"),
        std::make_pair("cpu", "cpu-zen5-b1024"),
        std::make_pair("h200", "h200-b65536"),
        std::make_pair("cpu-zen3", "cpu-zen3-b1024"),
        std::make_pair("h100", "h100-b65536"),
        // No bundle of this chip: the default of its kind.
        std::make_pair("a100", "h200-b65536"),
        std::make_pair("cpu-graviton4", "cpu-zen5-b1024")}) {
    EXPECT_EQ(defaultModelName(kind), bundle) << kind;
    std::string found = resolveCostModelSpec(kDefaultCostModel, kind);
    EXPECT_TRUE(StringRef(found).ends_with(
        (Twine("/share/neuroshard/models/") + bundle).str()))
        << kind << ": " << found;
  }
  EXPECT_EQ(resolveCostModelSpec(kDefaultCostModel),
            resolveCostModelSpec(kDefaultCostModel, "gpu"));
  registerNeuralCostModelLoader(nullptr);
}

TEST_F(CostModelFactoryTest, ModelsDirVariableIsTheOnlyPlaceSearched) {
  SmallString<128> empty;
  ASSERT_FALSE(sys::fs::createUniqueDirectory("no-models", empty));
  ASSERT_EQ(setenv(kModelsDirVariable, empty.c_str(), 1), 0);
  EXPECT_EQ(defaultModelSearchPath(), std::vector<std::string>{empty.c_str()});
  registerNeuralCostModelLoader(loadEightDeviceModel);
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel(kDefaultCostModel, Topology::uniform(8, 16));
  EXPECT_EQ(errorMessage(model),
            "cost model 'default': the shipped bundle 'h200-b65536' is in "
            "none of: " +
                empty.str().str() +
                "; set NEUROSHARD_MODELS_DIR to the directory that holds it, "
                "or choose 'analytical' or a bundle path ('h200-b65536' is "
                "the default for device kind 'gpu')");
  registerNeuralCostModelLoader(nullptr);
  unsetenv(kModelsDirVariable);
  sys::fs::remove(empty);
  // Unset, the search starts next to the program and adds directories once.
  addDefaultModelSearchDir("/opt/models");
  addDefaultModelSearchDir("/opt/models");
  std::vector<std::string> places = defaultModelSearchPath();
  EXPECT_EQ(llvm::count(places, "/opt/models"), 1);
  EXPECT_TRUE(StringRef(places.front()).ends_with("/share/neuroshard/models"));
}

TEST_F(CostModelFactoryTest, UsesTheRegisteredLoaderAndChecksDevices) {
  registerNeuralCostModelLoader(loadEightDeviceModel);
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel(bundle, Topology::uniform(8, 16));
  ASSERT_EQ(errorMessage(model), "");
  EXPECT_EQ((*model)->name(), "slice-test");
  EXPECT_EQ(factoryError(bundle, 4),
            "cost model 'slice-test' was trained for 8 devices but the task "
            "has 4");
}

/// A shipped bundle is found by its name in the model search path, and a
/// name found nowhere lists the names there are.
TEST_F(CostModelFactoryTest, FindsShippedBundlesByName) {
  SmallString<128> named(bundle);
  sys::path::append(named, "tiny-b64");
  ASSERT_FALSE(sys::fs::create_directories(named));
  SmallString<128> meta(named);
  sys::path::append(meta, "meta.json");
  std::error_code ec;
  { raw_fd_ostream(meta, ec) << "{}"; }
  ASSERT_FALSE(ec);
  const char *saved = std::getenv(kModelsDirVariable);
  std::string previous = saved ? saved : "";
  ::setenv(kModelsDirVariable, bundle.c_str(), 1);
  EXPECT_EQ(resolveCostModelSpec("tiny-b64"), std::string(named));
  EXPECT_EQ(resolveCostModelSpec("analytical"), "analytical");
  EXPECT_EQ(factoryError("tiny-b65536", 4),
            "cost model 'tiny-b65536' does not exist (expected 'default', "
            "'analytical', the name of a shipped bundle (tiny-b64) or the "
            "path of a neural cost model bundle)");
  if (saved)
    ::setenv(kModelsDirVariable, previous.c_str(), 1);
  else
    ::unsetenv(kModelsDirVariable);
  sys::fs::remove_directories(bundle);
}

} // namespace
