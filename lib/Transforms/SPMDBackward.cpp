//===- SPMDBackward.cpp - The backward step of a rank's program -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// `--neuroshard-spmd-backward`: in the program of one rank, the gradients of
// every entry's results go back through the reverse exchange to the rank's
// SGD update of the shards it holds.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/Passes.h"
#include "neuroshard/Transforms/SPMD.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_SPMDBACKWARD
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

/// Columns `column .. column + width` of `source`, every row, or `source`
/// itself when that is all of it.
Value columnSlice(OpBuilder &b, Location loc, Value source, int64_t column,
                  int64_t width) {
  auto type = cast<RankedTensorType>(source.getType());
  if (column == 0 && width == type.getDimSize(1))
    return source;
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                       b.getIndexAttr(column)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(type.getDimSize(0)),
                                     b.getIndexAttr(width)};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                        strides);
}

/// Adds `@<entry>_backward` after `func`, whose only exchange is `exchange`:
/// it takes the entry's arguments, the gradient of each of its results and
/// the learning rate; places the gradients in the columns of the exchanged
/// result they came from; sends them back with the reverse exchange; and
/// updates the rank's shards with the SGD form of its fused lookup.
LogicalResult addBackwardFunction(func::FuncOp func, ExchangeOp exchange) {
  Operation *terminator = func.getBody().back().getTerminator();
  auto ret = dyn_cast<func::ReturnOp>(terminator);
  if (!ret)
    return func.emitOpError() << "does not end in func.return; the backward "
                                 "form needs the gradients of its results";
  std::string name = (func.getSymName() + "_backward").str();
  auto module = func->getParentOfType<ModuleOp>();
  if (module.lookupSymbol(name))
    return func.emitOpError() << "needs the name '" << name
                              << "' for its backward function, but the module "
                                 "already has that symbol";

  // Which columns of the exchanged result every result holds; every column
  // may reach one result only, since the backward form places gradients
  // rather than summing them.
  struct Piece {
    unsigned result;
    ExchangedColumns columns;
  };
  SmallVector<Piece> pieces;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    std::string why;
    FailureOr<SmallVector<ExchangedColumns>> traced =
        traceExchangedColumns(value, exchange.getResult(), why);
    if (failed(traced))
      return ret.emitOpError() << "returns result " << i
                               << ", which the backward form cannot send "
                                  "back through the exchange: "
                               << why;
    for (const ExchangedColumns &columns : *traced)
      pieces.push_back({static_cast<unsigned>(i), columns});
  }
  llvm::sort(pieces, [](const Piece &a, const Piece &b) {
    return a.columns.source < b.columns.source;
  });
  int64_t covered = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (k > 0 && pieces[k].columns.source <
                     pieces[k - 1].columns.source + pieces[k - 1].columns.width)
      return ret.emitOpError()
             << "returns exchanged column " << pieces[k].columns.source
             << " in result " << pieces[k - 1].result << " and in result "
             << pieces[k].result
             << "; the backward form needs every exchanged column in one "
                "result at most";
    covered += pieces[k].columns.width;
  }

  MLIRContext *context = func.getContext();
  OpBuilder b(context);
  b.setInsertionPointAfter(func);
  Location loc = func.getLoc();
  SmallVector<Type> inputs(func.getArgumentTypes());
  llvm::append_range(inputs, func.getResultTypes());
  inputs.push_back(b.getF32Type());
  auto backward = func::FuncOp::create(b, loc, name,
                                       FunctionType::get(context, inputs, {}));
  backward.setVisibility(func.getVisibility());
  backward->setAttr(NeuroShardDialect::getBackwardOfAttrName(),
                    FlatSymbolRefAttr::get(func.getSymNameAttr()));
  Block *body = backward.addEntryBlock();
  b.setInsertionPointToStart(body);
  unsigned numArgs = func.getNumArguments();
  Value lr = body->getArguments().back();

  // The gradient of the exchanged result: zero where no result reads it.
  auto exchangedType = cast<RankedTensorType>(exchange.getResult().getType());
  Value gradient;
  if (covered == exchangedType.getDimSize(1))
    gradient = tensor::EmptyOp::create(b, loc, exchangedType.getShape(),
                                       exchangedType.getElementType());
  else
    gradient = arith::ConstantOp::create(
        b, loc, exchangedType,
        DenseElementsAttr::get(exchangedType,
                               b.getZeroAttr(exchangedType.getElementType())));
  for (const Piece &piece : pieces) {
    Value source =
        columnSlice(b, loc, body->getArgument(numArgs + piece.result),
                    piece.columns.column, piece.columns.width);
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                         b.getIndexAttr(piece.columns.source)};
    SmallVector<OpFoldResult> sizes = {
        b.getIndexAttr(exchangedType.getDimSize(0)),
        b.getIndexAttr(piece.columns.width)};
    SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
    gradient = tensor::InsertSliceOp::create(b, loc, source, gradient, offsets,
                                             sizes, strides);
  }
  auto lookupGradient = ExchangeGradientOp::create(
      b, loc, exchange.getInput().getType(), gradient, exchange.getRankAttr(),
      exchange.getWidthsAttr(), exchange.getBatchesAttr());

  // The rank's lookup, as an update: its inputs are the entry's arguments
  // (or are computed from them the same way).
  if (auto lookup = exchange.getInput().getDefiningOp<FusedEmbeddingBagOp>()) {
    IRMapping mapping;
    for (unsigned i = 0; i < numArgs; ++i)
      mapping.map(func.getArgument(i), body->getArgument(i));
    llvm::SetVector<Operation *> producers;
    BackwardSliceOptions options;
    options.inclusive = false;
    options.omitBlockArguments = true;
    for (Value operand : lookup->getOperands())
      if (Operation *producer = operand.getDefiningOp()) {
        (void)getBackwardSlice(producer, &producers, options);
        producers.insert(producer);
      }
    for (Operation *producer : producers) {
      if (!isPure(producer) || producer->getNumRegions() != 0)
        return lookup.emitOpError()
               << "reads a value computed by '" << producer->getName()
               << "', which the backward form cannot recompute";
      b.clone(*producer, mapping);
    }
    SmallVector<Value> indices, offsets;
    for (Value v : lookup.getIndices())
      indices.push_back(mapping.lookupOrDefault(v));
    for (Value v : lookup.getOffsets())
      offsets.push_back(mapping.lookupOrDefault(v));
    FusedEmbeddingBagSGDOp::create(
        b, lookup.getLoc(), lookup.getDeviceAttr(), lookup.getTablesAttr(),
        lookup.getColBeginsAttr(), lookup.getColEndsAttr(),
        lookup.getModesAttr(), indices, offsets, lookupGradient.getResult(), lr,
        lookup.getRowBeginsAttr(), lookup.getRowEndsAttr());
  }
  func::ReturnOp::create(b, loc);
  return success();
}

struct SPMDBackwardPass
    : public mlir::neuroshard::impl::SPMDBackwardBase<SPMDBackwardPass> {
  using SPMDBackwardBase::SPMDBackwardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!getProgramRank(module)) {
      module.emitError() << "is not one rank's program; build it with "
                            "--neuroshard-spmd=\"rank=R\" first";
      return signalPassFailure();
    }
    SmallVector<ExchangeOp> sides;
    module.walk([&](ExchangeOp op) { sides.push_back(op); });
    llvm::SetVector<func::FuncOp> funcs;
    for (ExchangeOp side : sides) {
      auto func = side->getParentOfType<func::FuncOp>();
      if (!funcs.insert(func)) {
        func.emitOpError() << "runs more than one exchange; the backward "
                              "form handles one per function";
        return signalPassFailure();
      }
    }
    for (auto [func, side] : llvm::zip(funcs, sides))
      if (failed(addBackwardFunction(func, side)))
        return signalPassFailure();
  }
};

} // namespace
