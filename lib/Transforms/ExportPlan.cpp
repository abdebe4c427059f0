//===- ExportPlan.cpp - The --neuroshard-export-plan pass -----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Writes the plan a module records, in one of the planner's formats, with
// the planner's own writers; the module itself is not changed.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/PlanPlot.h"
#include "neuroshard/Planner/PlanReport.h"
#include "neuroshard/Support/FileIO.h"
#include "neuroshard/Transforms/Passes.h"
#include "neuroshard/Transforms/PlanAnnotation.h"

#include "llvm/ADT/StringSwitch.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_EXPORTPLAN
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

enum class PlanFormat { JSON, Table, TorchRec, SVG };

struct ExportPlanPass
    : public mlir::neuroshard::impl::ExportPlanBase<ExportPlanPass> {
  using ExportPlanBase::ExportPlanBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<PlanFormat> parsed =
        llvm::StringSwitch<std::optional<PlanFormat>>(format)
            .Case("json", PlanFormat::JSON)
            .Case("table", PlanFormat::Table)
            .Case("torchrec", PlanFormat::TorchRec)
            .Case("svg", PlanFormat::SVG)
            .Default(std::nullopt);
    if (!parsed) {
      module.emitError() << "--neuroshard-export-plan: unknown format '"
                         << format
                         << "'; expected json, table, torchrec or svg";
      return signalPassFailure();
    }
    FailureOr<RecordedPlan> plan = readRecordedPlan(
        module, /*requireCosts=*/*parsed != PlanFormat::TorchRec);
    if (failed(plan))
      return signalPassFailure();
    llvm::Error written =
        ::neuroshard::writeOutputFile(output, [&](llvm::raw_ostream &os) {
          switch (*parsed) {
          case PlanFormat::JSON:
            return ::neuroshard::writePlanJSON(os, plan->tables, plan->topology,
                                               plan->result);
          case PlanFormat::Table:
            return ::neuroshard::printPlanTable(os, plan->tables,
                                                plan->topology, plan->result);
          case PlanFormat::TorchRec:
            return ::neuroshard::writeTorchRecPlan(
                os, plan->tables, plan->topology, plan->result);
          case PlanFormat::SVG:
            return ::neuroshard::writePlanSVG(os, plan->tables, plan->topology,
                                              plan->result);
          }
        });
    if (written) {
      module.emitError() << "--neuroshard-export-plan: "
                         << llvm::toString(std::move(written));
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
