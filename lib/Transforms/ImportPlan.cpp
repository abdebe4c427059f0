//===- ImportPlan.cpp - The --neuroshard-import-plan pass -----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Records a plan made elsewhere as the tables' `shards`, after the planner's
// own reader and validator have accepted it for the module's tables and
// topology. Tables the plan keeps in host memory (its shards' "cache_rows",
// or TorchRec's "fused_uvm_caching") get shards with device caches.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Transforms/Passes.h"
#include "neuroshard/Transforms/PlanAnnotation.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_IMPORTPLAN
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

struct ImportPlanPass
    : public mlir::neuroshard::impl::ImportPlanBase<ImportPlanPass> {
  using ImportPlanBase::ImportPlanBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      module.emitError() << "--neuroshard-import-plan needs file=PLAN (plan "
                            "JSON or a TorchRec plan)";
      return signalPassFailure();
    }
    FailureOr<SmallVector<ModuleTable>> tables = collectModuleTables(module);
    if (failed(tables))
      return signalPassFailure();
    if (tables->empty()) {
      module.emitError() << "has no neuroshard.table to import a plan for";
      return signalPassFailure();
    }
    for (ModuleTable &table : *tables)
      if (table.op.getShardsAttr()) {
        table.op.emitOpError()
            << "table '" << table.op.getSymName()
            << "' already has shards; import a plan into a module whose "
               "tables have none";
        return signalPassFailure();
      }
    FailureOr<::neuroshard::Topology> topology =
        readTopology(module, "importing a plan");
    if (failed(topology))
      return signalPassFailure();
    FailureOr<std::vector<::neuroshard::TableSpec>> built =
        buildTableSpecs(*tables, topology->numDevices());
    if (failed(built))
      return signalPassFailure();
    std::vector<::neuroshard::TableSpec> specs = std::move(*built);

    llvm::Expected<::neuroshard::PlanFile> plan =
        ::neuroshard::readPlanFile(file, specs);
    if (!plan) {
      module.emitError() << llvm::toString(plan.takeError());
      return signalPassFailure();
    }
    // The tables the plan keeps in host memory take its caches, which the
    // validation counts in the devices' memory and the tables in their
    // nodes' host memory.
    specs = ::neuroshard::tablesOfPlan(specs, *plan);
    if (llvm::Error err =
            ::neuroshard::validatePlanFile(specs, *topology, *plan)) {
      module.emitError() << llvm::toString(std::move(err));
      return signalPassFailure();
    }
    for (const std::string &note : plan->notes)
      module.emitRemark() << note;
    writeShards(*tables, specs, plan->plan);
  }
};

} // namespace
