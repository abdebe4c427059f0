//===- Shard.cpp - The --neuroshard-shard pipeline ------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The one-flag form of sharding: --neuroshard-plan with the same options,
// then --neuroshard-materialize, as one pass so that the options are
// declared (and documented) once with the planning pass's.
//
//===----------------------------------------------------------------------===//

#include "PassOptionErrors.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_SHARD
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

struct ShardPass : public mlir::neuroshard::impl::ShardBase<ShardPass> {
  using ShardBase::ShardBase;

  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    return initializeWithHelp(
        *this, options, errorHandler, [&](StringRef part, auto handler) {
          return ShardBase::initializeOptions(part, handler);
        });
  }

  /// The planning pass's options: all of this pass's but the aliases.
  PlanOptions planOptions() const {
    PlanOptions options;
    options.devices = devices;
    options.memoryGb = memoryGb;
    options.nodes = nodes;
    options.devicesPerNode = devicesPerNode;
    options.hbmGbps = hbmGbps;
    options.intraNodeGbps = intraNodeGbps;
    options.interNodeGbps = interNodeGbps;
    options.hostMemoryGb = hostMemoryGb;
    options.hostGbps = hostGbps;
    options.deviceKind = deviceKind;
    options.batchSize = batchSize;
    options.optimizer = optimizer;
    options.reservedMemory = reservedMemory;
    options.algorithm = algorithm;
    options.costModel = costModel;
    options.costRisk = costRisk;
    options.beamWidth = beamWidth;
    options.candidates = candidates;
    options.maxSteps = maxSteps;
    options.gridSteps = gridSteps;
    options.thresholdMin = thresholdMin;
    options.thresholdMax = thresholdMax;
    options.seed = seed;
    options.verifyTop = verifyTop;
    options.verifySeconds = verifySeconds;
    options.verifyMinGain = verifyMinGain;
    options.verifySpreadFactor = verifySpreadFactor;
    options.experience = experience;
    options.verifyExport = verifyExport;
    options.verifyTimings = verifyTimings;
    options.shardingTypes = shardingTypes;
    options.progress = progress;
    options.modelWarnings = modelWarnings;
    return options;
  }

  void runOnOperation() override {
    OpPassManager pipeline(ModuleOp::getOperationName());
    pipeline.addPass(createPlan(planOptions()));
    for (auto [format, output] :
         {std::pair{"json", &planOut}, std::pair{"table", &planTable},
          std::pair{"torchrec", &torchrecOut}, std::pair{"svg", &plot}})
      if (!output->empty())
        pipeline.addPass(createExportPlan({format, *output}));
    pipeline.addPass(createMaterialize());
    if (failed(runPipeline(pipeline, getOperation())))
      signalPassFailure();
  }
};

} // namespace
