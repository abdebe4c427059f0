//===- NeuroShard.h - NeuroShard dialect ------------------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The `neuroshard` dialect: embedding tables, pooled lookups, fused per-device
// lookups and the exchange between devices.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARD_H
#define NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARD_H

#include "neuroshard/Sharding/TableRules.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardOpsDialect.h.inc"

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardAttrs.h.inc"

#define GET_OP_CLASSES
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardOps.h.inc"

namespace mlir::neuroshard {

/// The topology attached to the module that encloses `op`, or null.
TopologyAttr getEnclosingTopology(Operation *op);

/// Columns `colBegin .. colEnd` of `table`, held by one device.
struct DeviceShard {
  TableOp table;
  int64_t colBegin = 0;
  int64_t colEnd = 0;
  int64_t width() const { return colEnd - colBegin; }
};

/// The shards `device` holds: tables in module order, each table's shards
/// in column order. This is the order of the weight arena of the program
/// one rank runs (`--neuroshard-spmd`), which holds these shards only.
SmallVector<DeviceShard> getDeviceShards(ModuleOp module, int64_t device);

/// The rank of the program `module` is (its `neuroshard.rank`), if it is
/// one rank's program.
std::optional<int64_t> getProgramRank(ModuleOp module);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARD_H
