//===- Passes.h - NeuroShard transformation passes --------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TRANSFORMS_PASSES_H
#define NEUROSHARD_TRANSFORMS_PASSES_H

// The defaults of the planning options are the planner's.
#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Selection/PlanVerification.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::neuroshard {

#define GEN_PASS_DECL
#include "neuroshard/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "neuroshard/Transforms/Passes.h.inc"

} // namespace mlir::neuroshard

#endif // NEUROSHARD_TRANSFORMS_PASSES_H
