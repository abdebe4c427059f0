//===- LookupLowering.cpp - Lookups to generic kernel invocations ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/LookupLowering.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::neuroshard;
namespace abi = ::neuroshard::kernel_abi;

namespace {

/// One shard of a lookup: its static metadata and the tensors of its input
/// pair.
struct Entry {
  abi::ShardDescriptor shard;
  Value indices;
  Value offsets;
};

MemRefType dynamic1D(Type element) {
  return MemRefType::get({ShapedType::kDynamic}, element);
}

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value i64Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
}

/// The tensor as a read-only buffer with a dynamic size.
Value toDynamicBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
  Value buffer = bufferization::ToBufferOp::create(b, loc, bufferType, tensor,
                                                   /*read_only=*/true);
  if (!bufferType.isDynamicDim(0))
    buffer = memref::CastOp::create(b, loc, dynamic1D(type.getElementType()),
                                    buffer);
  return buffer;
}

/// Copies `source` into `dest` at `base`, sign-extending when the element
/// types differ.
void copyInto(OpBuilder &b, Location loc, Value source, Value dest,
              Value base) {
  Value size = memref::DimOp::create(b, loc, source, 0);
  Type destElement = cast<MemRefType>(dest.getType()).getElementType();
  auto loop = scf::ForOp::create(b, loc, indexConstant(b, loc, 0), size,
                                 indexConstant(b, loc, 1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value i = loop.getInductionVar();
  Value v = memref::LoadOp::create(b, loc, source, ValueRange{i});
  if (v.getType() != destElement)
    v = arith::ExtSIOp::create(b, loc, destElement, v);
  Value at = arith::AddIOp::create(b, loc, base, i);
  memref::StoreOp::create(b, loc, v, dest, ValueRange{at});
}

class Lowering {
public:
  Lowering(ModuleOp module, KernelEmitter emit) : module(module), emit(emit) {}

  LogicalResult run();

private:
  LogicalResult check();
  void lowerFunction(func::FuncOp func);
  void lowerLookup(Operation *op, ArrayRef<Entry> entries, Value weights,
                   Value layout);
  void lowerExchange(AllToAllOp op);
  SmallVector<Entry> entriesOf(Operation *op);

  ModuleOp module;
  KernelEmitter emit;
  SmallVector<TableOp> tables;
  llvm::DenseMap<StringAttr, int64_t> ordinals;
  llvm::MapVector<func::FuncOp, SmallVector<Operation *>> lookupsByFunc;
};

LogicalResult Lowering::check() {
  for (TableOp table : module.getOps<TableOp>()) {
    ordinals[table.getSymNameAttr()] = static_cast<int64_t>(tables.size());
    tables.push_back(table);
    if (!table.getElementType().isF32())
      return table.emitOpError()
             << "has element type " << table.getElementType()
             << "; the lowering executes f32 tables only";
  }

  bool failed = false;
  module.walk([&](Operation *op) {
    if (!isa<EmbeddingBagOp, FusedEmbeddingBagOp, AllToAllOp>(op))
      return;
    for (Type type :
         llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes())) {
      auto shaped = dyn_cast<RankedTensorType>(type);
      if (shaped && shaped.getRank() == 2 && !shaped.hasStaticShape()) {
        op->emitOpError() << "has the dynamically shaped pooled tensor " << type
                          << "; the lowering needs static shapes";
        failed = true;
        return;
      }
    }
    if (isa<AllToAllOp>(op))
      return;
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func) {
      op->emitOpError() << "must be inside a func.func to be lowered";
      failed = true;
      return;
    }
    lookupsByFunc[func].push_back(op);
  });
  if (failed)
    return failure();

  for (auto &[func, lookups] : lookupsByFunc) {
    if (!SymbolTable::symbolKnownUseEmpty(func, module))
      return func.emitOpError()
             << "holds embedding lookups and is called by other functions; "
                "the lowering adds weight arguments to it, so it must be an "
                "entry point";
    if (func.isExternal())
      return func.emitOpError() << "is external but holds lookups";
  }
  return success();
}

SmallVector<Entry> Lowering::entriesOf(Operation *op) {
  SmallVector<Entry> entries;
  auto entry = [&](int64_t table, int64_t colBegin, int64_t width,
                   PoolingMode mode, Value indices, Value offsets) {
    abi::ShardDescriptor shard;
    shard.table = table;
    shard.rowStride = tables[table].getNumCols();
    shard.colBegin = colBegin;
    shard.width = width;
    shard.mode = abi::poolingMode(mode == PoolingMode::Mean);
    entries.push_back({shard, indices, offsets});
  };
  if (auto bag = dyn_cast<EmbeddingBagOp>(op)) {
    int64_t t = ordinals.lookup(bag.getTableAttr().getAttr());
    entry(t, 0, tables[t].getNumCols(), bag.getMode(), bag.getIndices(),
          bag.getOffsets());
    return entries;
  }
  auto fused = cast<FusedEmbeddingBagOp>(op);
  for (unsigned i = 0, e = fused.getNumEntries(); i < e; ++i) {
    int64_t t = ordinals.lookup(
        StringAttr::get(op->getContext(), fused.getEntryTable(i)));
    entry(t, fused.getColBegins()[i], fused.getEntryWidth(i),
          cast<PoolingModeAttr>(fused.getModes()[i]).getValue(),
          fused.getIndices()[i], fused.getOffsets()[i]);
  }
  return entries;
}

void Lowering::lowerLookup(Operation *op, ArrayRef<Entry> entries,
                           Value weights, Value layout) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t batch = resultType.getDimSize(0);

  // Distinct (indices, offsets) pairs, numbered in order of first use as the
  // ABI concatenates them: the shards of a split table share theirs. The
  // metadata is static except for the indices bases, which depend on the
  // sizes of the index tensors; every pair has batch + 1 offsets.
  llvm::MapVector<std::pair<Value, Value>, size_t> pairs;
  std::vector<abi::ShardDescriptor> shards;
  for (const Entry &entry : entries) {
    shards.push_back(entry.shard);
    shards.back().input =
        pairs.insert({{entry.indices, entry.offsets}, pairs.size()})
            .first->second;
  }
  abi::ShardSetLayout set =
      abi::layoutShardSet(shards, std::vector<int64_t>(pairs.size(), 0),
                          std::vector<int64_t>(pairs.size(), batch + 1));
  IntegerType indexType;
  for (auto &[pair, number] : pairs) {
    auto element = cast<IntegerType>(
        cast<RankedTensorType>(pair.first.getType()).getElementType());
    indexType = !indexType || indexType == element ? element : b.getI64Type();
  }

  // Concatenated indices and offsets (the buffers themselves for one pair).
  SmallVector<Value> indicesBase;
  Value indices, offsets;
  if (pairs.size() == 1) {
    auto [pair, number] = *pairs.begin();
    indices = toDynamicBuffer(b, loc, pair.first);
    offsets = toDynamicBuffer(b, loc, pair.second);
    indicesBase.push_back(indexConstant(b, loc, 0));
  } else {
    SmallVector<Value> indexBuffers, offsetBuffers;
    Value total = indexConstant(b, loc, 0);
    for (auto &[pair, number] : pairs) {
      indexBuffers.push_back(toDynamicBuffer(b, loc, pair.first));
      offsetBuffers.push_back(toDynamicBuffer(b, loc, pair.second));
      indicesBase.push_back(total);
      total = arith::AddIOp::create(
          b, loc, total, memref::DimOp::create(b, loc, indexBuffers.back(), 0));
    }
    indices = memref::AllocOp::create(b, loc, dynamic1D(indexType),
                                      ValueRange{total});
    offsets = memref::AllocOp::create(
        b, loc, dynamic1D(indexType),
        ValueRange{indexConstant(b, loc, (batch + 1) * pairs.size())});
    for (unsigned k = 0; k < pairs.size(); ++k) {
      copyInto(b, loc, indexBuffers[k], indices, indicesBase[k]);
      copyInto(b, loc, offsetBuffers[k], offsets,
               indexConstant(b, loc, set.bases[k].offsets));
    }
  }

  // Metadata: the layout's rows, with the indices bases as computed above.
  Value meta = memref::AllocaOp::create(
      b, loc, MemRefType::get({int64_t(set.meta.size())}, b.getI64Type()));
  for (int64_t s = 0; s < set.numShards(); ++s) {
    Value fields[abi::kShardFields];
    for (int64_t f = 0; f < abi::kShardFields; ++f)
      fields[f] =
          f == abi::kIndicesBase
              ? arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                           indicesBase[shards[s].input])
                    .getResult()
              : i64Constant(b, loc, set.meta[s * abi::kShardFields + f]);
    for (int64_t f = 0; f < abi::kShardFields; ++f)
      memref::StoreOp::create(
          b, loc, fields[f], meta,
          ValueRange{indexConstant(b, loc, s * abi::kShardFields + f)});
  }
  meta = memref::CastOp::create(b, loc, dynamic1D(b.getI64Type()), meta);

  auto outType =
      MemRefType::get(resultType.getShape(), resultType.getElementType());
  Value out = memref::AllocOp::create(b, loc, outType);
  Value outDynamic = memref::CastOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                      resultType.getElementType()),
      out);
  KernelInvocation invocation;
  invocation.kernel =
      indexType.getWidth() == 32 ? abi::kForwardI32 : abi::kForwardI64;
  invocation.meta = meta;
  invocation.layout = layout;
  invocation.weights = weights;
  invocation.indices = indices;
  invocation.offsets = offsets;
  invocation.out = outDynamic;
  emit(b, loc, invocation);
  Value result = bufferization::ToTensorOp::create(
      b, loc, resultType, out, /*restrict=*/true, /*writable=*/true);
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
}

void Lowering::lowerExchange(AllToAllOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t rowStart = 0;
  for (auto [d, result] : llvm::enumerate(op.getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    int64_t rows = type.getDimSize(0);
    SmallVector<Value> pieces;
    for (Value input : op.getInputs()) {
      auto inputType = cast<RankedTensorType>(input.getType());
      if (inputType.getDimSize(1) == 0)
        continue;
      SmallVector<OpFoldResult> offsets = {b.getIndexAttr(rowStart),
                                           b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {
          b.getIndexAttr(rows), b.getIndexAttr(inputType.getDimSize(1))};
      SmallVector<OpFoldResult> strides = {b.getIndexAttr(1),
                                           b.getIndexAttr(1)};
      pieces.push_back(tensor::ExtractSliceOp::create(b, loc, input, offsets,
                                                      sizes, strides));
    }
    Value replacement;
    if (pieces.empty())
      replacement = tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType());
    else if (pieces.size() == 1)
      replacement = pieces.front();
    else
      replacement = tensor::ConcatOp::create(b, loc, /*dim=*/1, pieces);
    result.replaceAllUsesWith(replacement);
    rowStart += rows;
  }
  op.erase();
}

void Lowering::lowerFunction(func::FuncOp func) {
  MLIRContext *ctx = module.getContext();
  Builder b(ctx);
  unsigned first = func.getNumArguments();
  Location loc = func.getLoc();
  auto attr = [&](StringRef name) {
    return b.getDictionaryAttr(b.getNamedAttr(name, b.getUnitAttr()));
  };
  (void)func.insertArguments(
      {first, first}, {dynamic1D(b.getF32Type()), dynamic1D(b.getI64Type())},
      {attr("neuroshard.weights"), attr("neuroshard.layout")}, {loc, loc});
  Value weights = func.getArgument(first);
  Value layout = func.getArgument(first + 1);
  for (Operation *op : lookupsByFunc[func]) {
    SmallVector<Entry> entries = entriesOf(op);
    lowerLookup(op, entries, weights, layout);
  }
}

LogicalResult Lowering::run() {
  if (failed(check()))
    return failure();
  for (auto &entry : lookupsByFunc)
    lowerFunction(entry.first);
  SmallVector<AllToAllOp> exchanges;
  module.walk([&](AllToAllOp op) { exchanges.push_back(op); });
  for (AllToAllOp op : exchanges)
    lowerExchange(op);

  SmallVector<Attribute> names;
  for (TableOp table : tables) {
    names.push_back(table.getSymNameAttr());
    table.erase();
  }
  module->setAttr(NeuroShardDialect::getWeightTablesAttrName(),
                  ArrayAttr::get(module.getContext(), names));
  return success();
}

} // namespace

SmallVector<Value> KernelInvocation::operands() const {
  SmallVector<Value> operands(abi::numOperands(/*isBackward=*/false));
  operands[abi::kMetaOperand] = meta;
  operands[abi::kLayoutOperand] = layout;
  operands[abi::kWeightsOperand] = weights;
  operands[abi::kIndicesOperand] = indices;
  operands[abi::kOffsetsOperand] = offsets;
  operands[abi::kOutOperand] = out;
  return operands;
}

LogicalResult mlir::neuroshard::lowerLookups(ModuleOp module,
                                             KernelEmitter emit) {
  return Lowering(module, emit).run();
}
