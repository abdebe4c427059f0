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

#include "neuroshard/Sharding/Problem.h"
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

#include <algorithm>
#include <limits>

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardOpsDialect.h.inc"

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardAttrs.h.inc"

#define GET_OP_CLASSES
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardOps.h.inc"

namespace mlir::neuroshard {

/// The first row of the table that entry `i` of a fused lookup or update
/// reads (0 unless the entry is a row piece): its indices count from there.
template <typename FusedOp> int64_t getEntryRowBegin(FusedOp op, unsigned i) {
  return op.getRowBegins() ? (*op.getRowBegins())[i] : 0;
}

/// Whether entry `i` of a fused lookup or update reads a row piece.
template <typename FusedOp> bool isRowPieceEntry(FusedOp op, unsigned i) {
  return op.getRowEnds() && (*op.getRowEnds())[i] != ::neuroshard::kAllRows;
}

/// The `neuroshard.bucketize` and the number of the block whose indices
/// `indices` are, or nullopt when `indices` is no block's indices (another
/// value, or a block's offsets).
std::optional<std::pair<BucketizeOp, unsigned>>
getBucketizeBlock(Value indices);

/// The topology attached to the module that encloses `op`, or null.
TopologyAttr getEnclosingTopology(Operation *op);

/// `shard`, a piece of table number `table` of `rows` rows, as the planner
/// writes it: a row range of every row, spelled out or not, is every row.
::neuroshard::Shard toPlanShard(ShardAttr shard, unsigned table, int64_t rows);

/// The attribute of `shard`, a piece of a table of `rows` rows, with a
/// device cache of `cacheRows` rows when it lives in host memory.
ShardAttr toShardAttr(MLIRContext *context, const ::neuroshard::Shard &shard,
                      int64_t rows, int64_t cacheRows = 0);

/// Rows `rowBegin .. rowEnd` and columns `colBegin .. colEnd` of `table`,
/// held by one device (every row unless it is a row piece; a replica is the
/// whole table).
struct DeviceShard {
  TableOp table;
  int64_t colBegin = 0;
  int64_t colEnd = 0;
  int64_t rowBegin = 0;
  int64_t rowEnd = 0;
  int64_t width() const { return colEnd - colBegin; }
  int64_t rows() const { return rowEnd - rowBegin; }
};

/// The shards `device` holds: tables in module order, each table's shards
/// in column order, then row order. This is the order of the weight arena of
/// the program one rank runs (`--neuroshard-spmd`), which holds these shards
/// only.
SmallVector<DeviceShard> getDeviceShards(ModuleOp module, int64_t device);

/// The rank of the program `module` is (its `neuroshard.rank`), if it is
/// one rank's program.
std::optional<int64_t> getProgramRank(ModuleOp module);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARD_H
