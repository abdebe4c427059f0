//===- NeuroShardDialect.cpp - NeuroShard dialect -------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

#include <tuple>

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
    auto record = dyn_cast<DictionaryAttr>(attribute.getValue());
    if (!record)
      return op->emitError()
             << "'" << name << "' must be a dictionary attribute, got "
             << attribute.getValue();
    // Measured selection's record is typed; its verifier checks the rest.
    if (Attribute verification = record.get("verification");
        verification && !isa<VerificationAttr>(verification))
      return op->emitError() << "'" << name
                             << "' has a 'verification' that is not a "
                                "#neuroshard.verification attribute: "
                             << verification;
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
  if (name == getRankAttrName()) {
    auto rank = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!isa<ModuleOp>(op) || !rank || rank.getValue().isNegative())
      return op->emitError() << "'" << name
                             << "' must be a non-negative integer on a "
                                "builtin.module";
    auto topology = op->getAttrOfType<TopologyAttr>(getTopologyAttrName());
    if (!topology)
      return op->emitError()
             << "'" << name << "' needs a #neuroshard.topology on the module";
    if (rank.getValue().getSExtValue() >= topology.getDevices())
      return op->emitError()
             << "'" << name << "' is " << rank.getValue().getSExtValue()
             << " but the topology has " << topology.getDevices() << " devices";
    return success();
  }
  if (name == getBackwardOfAttrName()) {
    // Kept through the lowering, so any function-like op may carry it.
    auto forward = dyn_cast<FlatSymbolRefAttr>(attribute.getValue());
    if (!isa<FunctionOpInterface>(op) || !forward)
      return op->emitError()
             << "'" << name << "' must be a symbol reference on a function";
    Operation *target = SymbolTable::lookupNearestSymbolFrom(op, forward);
    if (!target || !isa<FunctionOpInterface>(target))
      return op->emitError() << "'" << name << "' names " << forward
                             << ", which is not a function of the module";
    return success();
  }
  return op->emitError() << "unknown NeuroShard attribute '" << name << "'";
}

SmallVector<DeviceShard> mlir::neuroshard::getDeviceShards(ModuleOp module,
                                                           int64_t device) {
  SmallVector<DeviceShard> shards;
  for (TableOp table : module.getOps<TableOp>()) {
    ArrayAttr attrs = table.getShardsAttr();
    if (!attrs)
      continue;
    size_t first = shards.size();
    for (Attribute attr : attrs) {
      auto shard = cast<ShardAttr>(attr);
      if (shard.getDevice() == device)
        shards.push_back({table, shard.getColBegin(), shard.getColEnd(),
                          shard.getRowBegin(),
                          shard.getRowEndIn(table.getNumRows())});
    }
    std::sort(shards.begin() + first, shards.end(),
              [](const DeviceShard &a, const DeviceShard &b) {
                return std::tie(a.colBegin, a.rowBegin) <
                       std::tie(b.colBegin, b.rowBegin);
              });
  }
  return shards;
}

std::optional<int64_t> mlir::neuroshard::getProgramRank(ModuleOp module) {
  if (auto rank = module->getAttrOfType<IntegerAttr>(
          NeuroShardDialect::getRankAttrName()))
    return rank.getValue().getSExtValue();
  return std::nullopt;
}

std::optional<std::pair<BucketizeOp, unsigned>>
mlir::neuroshard::getBucketizeBlock(Value indices) {
  auto bucketize = indices.getDefiningOp<BucketizeOp>();
  if (!bucketize)
    return std::nullopt;
  unsigned result = cast<OpResult>(indices).getResultNumber();
  if (result >= bucketize.getBlockIndices().size())
    return std::nullopt;
  return std::make_pair(bucketize, result);
}

TopologyAttr mlir::neuroshard::getEnclosingTopology(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp())
    if (auto module = dyn_cast<ModuleOp>(parent))
      if (auto topology = module->getAttrOfType<TopologyAttr>(
              NeuroShardDialect::getTopologyAttrName()))
        return topology;
  return {};
}
