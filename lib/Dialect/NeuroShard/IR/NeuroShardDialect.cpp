//===- NeuroShardDialect.cpp - NeuroShard dialect -------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::neuroshard;

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardOpsDialect.cpp.inc"

void NeuroShardDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardOps.cpp.inc"
      >();
}

LogicalResult
NeuroShardDialect::verifyOperationAttribute(Operation *op,
                                            NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == getTopologyAttrName()) {
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << name << "' may only be attached to a builtin.module";
    if (!isa<TopologyAttr>(attribute.getValue()))
      return op->emitError()
             << "'" << name
             << "' must be a #neuroshard.topology attribute, got "
             << attribute.getValue();
    return success();
  }
  if (name == getPlanAttrName()) {
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << name << "' may only be attached to a builtin.module";
    if (!isa<DictionaryAttr>(attribute.getValue()))
      return op->emitError()
             << "'" << name << "' must be a dictionary attribute, got "
             << attribute.getValue();
    return success();
  }
  if (name == getWeightTablesAttrName()) {
    auto names = dyn_cast<ArrayAttr>(attribute.getValue());
    if (!isa<ModuleOp>(op) || !names ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError() << "'" << name
                             << "' must be an array of table names on a "
                                "builtin.module";
    return success();
  }
  return op->emitError() << "unknown NeuroShard attribute '" << name << "'";
}

TopologyAttr mlir::neuroshard::getEnclosingTopology(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp())
    if (auto module = dyn_cast<ModuleOp>(parent))
      if (auto topology = module->getAttrOfType<TopologyAttr>(
              NeuroShardDialect::getTopologyAttrName()))
        return topology;
  return {};
}
