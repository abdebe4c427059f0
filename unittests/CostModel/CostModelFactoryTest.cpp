//===- CostModelFactoryTest.cpp - Cost models by name or path -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "TestProblems.h"

#include "neuroshard/CostModel/CostModelFactory.h"

#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

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
  EXPECT_EQ(
      factoryError("/no/such/bundle", 4),
      "cost model '/no/such/bundle' does not exist (expected "
      "'default', 'analytical' or the path of a neural cost model bundle)");
  EXPECT_EQ(factoryError(bundle, 4),
            "cost model '" + bundle.str().str() +
                "': neural cost models need LibTorch support, which this "
                "build lacks (configure with LibTorch and "
                "-DNEUROSHARD_ENABLE_TORCH=ON, or use 'analytical')");
}

TEST_F(CostModelFactoryTest, DefaultIsTheShippedModelWhenLoadable) {
  EXPECT_EQ(resolveCostModelSpec("analytical"), "analytical");
  EXPECT_EQ(resolveCostModelSpec("/some/bundle"), "/some/bundle");
  // Without a neural loader (a build without LibTorch) the default is the
  // analytical model.
  registerNeuralCostModelLoader(nullptr);
  EXPECT_EQ(resolveCostModelSpec(kDefaultCostModel), "analytical");
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel(kDefaultCostModel, Topology::uniform(4, 16));
  ASSERT_EQ(errorMessage(model), "");
  EXPECT_EQ((*model)->name(), "analytical");
  // With one, it is the trained bundle shipped under models/.
  registerNeuralCostModelLoader(loadEightDeviceModel);
  EXPECT_TRUE(StringRef(resolveCostModelSpec(kDefaultCostModel))
                  .ends_with("/models/cpu-zen5-b1024"));
  registerNeuralCostModelLoader(nullptr);
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

} // namespace
