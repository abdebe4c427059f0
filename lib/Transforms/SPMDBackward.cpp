//===- SPMDBackward.cpp - The backward step of a rank's program -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// `--neuroshard-spmd-backward`: in the program of one rank, the gradients of
// every entry's results go back through the reverse of every collective to
// the rank's SGD update of the shards it holds.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_SPMDBACKWARD
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

/// A 2-D static slice `offsets`/`sizes` with unit strides.
struct Window {
  int64_t row, col, rows, cols;
  bool overlaps(const Window &o) const {
    return row < o.row + o.rows && o.row < row + rows && col < o.col + o.cols &&
           o.col < col + cols;
  }
};

/// Builds the backward function of one entry of a rank's program: the
/// gradient of every value, from the results back to the rank's lookups,
/// through the reverse of each collective, ending in the SGD updates.
class BackwardBuilder {
public:
  BackwardBuilder(func::FuncOp forward, func::FuncOp backward)
      : forward(forward), b(backward.getContext()) {
    Block *body = &backward.getBody().front();
    b.setInsertionPointToStart(body);
    for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
      mapping.map(forward.getArgument(i), body->getArgument(i));
    lr = body->getArguments().back();
    resultGradients = body->getArguments().slice(forward.getNumArguments(),
                                                 forward.getNumResults());
    module = forward->getParentOfType<ModuleOp>();
  }

  LogicalResult build(func::ReturnOp ret) {
    for (auto [i, value] : llvm::enumerate(ret.getOperands()))
      if (failed(setGradient(value, resultGradients[i], ret)))
        return failure();
    SmallVector<Operation *> ops;
    for (Operation &op : forward.getBody().front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (failed(visit(op)))
        return failure();
    func::ReturnOp::create(b, forward.getLoc());
    // A gradient whose slices cover all of it needs no zeros below them.
    for (auto &[value, base] : bases) {
      auto type = cast<RankedTensorType>(value.getType());
      int64_t covered = 0;
      for (const Window &window : windows[value])
        covered += window.rows * window.cols;
      if (covered != type.getNumElements())
        continue;
      OpBuilder at(base);
      base->replaceAllUsesWith(tensor::EmptyOp::create(
          at, base->getLoc(), type.getShape(), type.getElementType()));
      base->erase();
    }
    return success();
  }

private:
  Location loc() { return forward.getLoc(); }

  Value zeros(Type type) {
    auto tensor = cast<RankedTensorType>(type);
    return arith::ConstantOp::create(
        b, loc(), tensor,
        DenseElementsAttr::get(tensor, b.getZeroAttr(tensor.getElementType())));
  }

  /// `value`'s whole gradient is `gradient`.
  LogicalResult setGradient(Value value, Value gradient, Operation *user) {
    if (gradients.count(value) || windows.count(value))
      return user->emitOpError()
             << "uses a value whose gradient another use gives already; the "
                "backward form places gradients rather than summing them";
    gradients[value] = gradient;
    return success();
  }

  /// `gradient` is the gradient of `window` of `value`.
  LogicalResult addWindow(Value value, Window window, Value gradient,
                          Operation *user) {
    if (gradients.count(value) && !windows.count(value))
      return user->emitOpError()
             << "reads a value whose whole gradient another use gives; the "
                "backward form places gradients rather than summing them";
    SmallVector<Window> &taken = windows[value];
    for (const Window &other : taken)
      if (other.overlaps(window))
        return user->emitOpError()
               << "reads columns [" << window.col << ", "
               << window.col + window.cols
               << ") of a value that another slice reads too; the backward "
                  "form places gradients rather than summing them";
    taken.push_back(window);
    Value into = gradients.lookup(value);
    if (!into) {
      into = zeros(value.getType());
      bases[value] = into.getDefiningOp();
    }
    gradients[value] = tensor::InsertSliceOp::create(
        b, loc(), gradient, into,
        ArrayRef<OpFoldResult>{b.getIndexAttr(window.row),
                               b.getIndexAttr(window.col)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(window.rows),
                               b.getIndexAttr(window.cols)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    return success();
  }

  /// `value`'s gradient, or null if nothing reads it.
  Value gradientOf(Value value) { return gradients.lookup(value); }

  /// The backward function's copy of `value`, an input of the forward
  /// function or computed from its inputs alone.
  FailureOr<Value> recompute(Value value, Operation *user) {
    if (Value mapped = mapping.lookupOrNull(value))
      return mapped;
    Operation *producer = value.getDefiningOp();
    llvm::SetVector<Operation *> producers;
    BackwardSliceOptions options;
    options.inclusive = true;
    options.omitBlockArguments = true;
    (void)getBackwardSlice(producer, &producers, options);
    for (Operation *op : producers) {
      if (llvm::all_of(op->getResults(),
                       [&](Value r) { return mapping.contains(r); }))
        continue;
      if (!isPure(op) || op->getNumRegions() != 0)
        return user->emitOpError()
               << "reads a value computed by '" << op->getName()
               << "', which the backward form cannot recompute";
      b.clone(*op, mapping);
    }
    return mapping.lookup(value);
  }

  /// Whether the entries of `lookup` are replicas (a data-parallel table
  /// on every device); fails if only some are.
  FailureOr<bool> readsReplicas(FusedEmbeddingBagOp lookup) {
    unsigned replicas = 0;
    for (unsigned i = 0, e = lookup.getNumEntries(); i < e; ++i) {
      auto table = module.lookupSymbol<TableOp>(lookup.getEntryTable(i));
      if (table && table.isReplicated())
        ++replicas;
    }
    if (replicas != 0 && replicas != lookup.getNumEntries())
      return lookup.emitOpError()
             << "looks up " << replicas << " replicated tables and "
             << lookup.getNumEntries() - replicas
             << " other shards; the backward form updates replicas by their "
                "own lookup";
    return replicas != 0;
  }

  LogicalResult visitLookup(FusedEmbeddingBagOp lookup) {
    FailureOr<bool> replicas = readsReplicas(lookup);
    if (failed(replicas))
      return failure();
    Value gradient = gradientOf(lookup.getResult());
    // Replicas sum every rank's gradient, so every rank updates them.
    if (!gradient && !*replicas)
      return success();
    if (!gradient)
      gradient = zeros(lookup.getType());
    SmallVector<Value> indices, offsets;
    for (Value v : lookup.getIndices()) {
      FailureOr<Value> copy = recompute(v, lookup);
      if (failed(copy))
        return failure();
      indices.push_back(*copy);
    }
    for (Value v : lookup.getOffsets()) {
      FailureOr<Value> copy = recompute(v, lookup);
      if (failed(copy))
        return failure();
      offsets.push_back(*copy);
    }
    auto update = FusedEmbeddingBagSGDOp::create(
        b, lookup.getLoc(), lookup.getDeviceAttr(), lookup.getTablesAttr(),
        lookup.getColBeginsAttr(), lookup.getColEndsAttr(),
        lookup.getModesAttr(), indices, offsets, gradient, lr,
        lookup.getRowBeginsAttr(), lookup.getRowEndsAttr(), UnitAttr());
    update.setAllReduce(*replicas);
    return success();
  }

  LogicalResult visit(Operation *op) {
    if (auto lookup = dyn_cast<FusedEmbeddingBagOp>(op))
      return visitLookup(lookup);
    // Every rank runs the reverse of every collective, read or not.
    if (auto exchange = dyn_cast<ExchangeOp>(op)) {
      Value gradient = gradientOf(exchange.getResult());
      auto reverse = ExchangeGradientOp::create(
          b, exchange.getLoc(), exchange.getInput().getType(),
          gradient ? gradient : zeros(exchange.getType()),
          exchange.getRankAttr(), exchange.getWidthsAttr(),
          exchange.getBatchesAttr());
      return setGradient(exchange.getInput(), reverse.getResult(), exchange);
    }
    if (auto reduce = dyn_cast<RankReduceScatterOp>(op)) {
      Value gradient = gradientOf(reduce.getResult());
      Value offsets;
      if (Value mean = reduce.getMeanOffsets()) {
        FailureOr<Value> copy = recompute(mean, reduce);
        if (failed(copy))
          return failure();
        offsets = *copy;
      }
      auto reverse = RankReduceScatterGradientOp::create(
          b, reduce.getLoc(), reduce.getInput().getType(),
          gradient ? gradient : zeros(reduce.getType()), offsets,
          reduce.getRankAttr(), reduce.getBatchesAttr());
      return setGradient(reduce.getInput(), reverse.getResult(), reduce);
    }
    Value gradient =
        op->getNumResults() == 1 ? gradientOf(op->getResult(0)) : Value();
    if (!gradient)
      return success();
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      ArrayRef<int64_t> offsets = slice.getStaticOffsets();
      ArrayRef<int64_t> sizes = slice.getStaticSizes();
      if (offsets.size() != 2 || ShapedType::isDynamicShape(offsets) ||
          ShapedType::isDynamicShape(sizes) ||
          !llvm::all_of(slice.getStaticStrides(),
                        [](int64_t s) { return s == 1; }))
        return slice.emitOpError()
               << "takes a slice with dynamic or non-unit positions; the "
                  "backward form cannot place its gradient";
      return addWindow(slice.getSource(),
                       {offsets[0], offsets[1], sizes[0], sizes[1]}, gradient,
                       slice);
    }
    if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
      int64_t at = 0;
      auto type = cast<RankedTensorType>(concat.getType());
      for (Value input : concat.getInputs()) {
        auto inputType = cast<RankedTensorType>(input.getType());
        int64_t extent = inputType.getDimSize(concat.getDim());
        SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                             b.getIndexAttr(0)};
        SmallVector<OpFoldResult> sizes = {b.getIndexAttr(type.getDimSize(0)),
                                           b.getIndexAttr(type.getDimSize(1))};
        offsets[concat.getDim()] = b.getIndexAttr(at);
        sizes[concat.getDim()] = b.getIndexAttr(extent);
        SmallVector<OpFoldResult> strides = {b.getIndexAttr(1),
                                             b.getIndexAttr(1)};
        Value part = tensor::ExtractSliceOp::create(
            b, concat.getLoc(), gradient, offsets, sizes, strides);
        if (failed(setGradient(input, part, concat)))
          return failure();
        at += extent;
      }
      return success();
    }
    // Inputs and zeros carry no gradient further.
    if (isa<tensor::EmptyOp, arith::ConstantOp>(op))
      return success();
    return op->emitOpError()
           << "computes a value the results depend on; the backward form "
              "differentiates lookups, collectives, tensor.extract_slice and "
              "tensor.concat only";
  }

  func::FuncOp forward;
  OpBuilder b;
  ModuleOp module;
  IRMapping mapping;
  Value lr;
  ValueRange resultGradients;
  llvm::DenseMap<Value, Value> gradients;
  llvm::DenseMap<Value, SmallVector<Window>> windows;
  /// The zeros each gradient placed by slices starts from.
  llvm::MapVector<Value, Operation *> bases;
};

/// Adds `@<entry>_backward` after `func`: it takes the entry's arguments,
/// the gradient of each of its results and the learning rate, and runs the
/// reverse of the entry: the gradients go back through the reverse of every
/// collective to the SGD update of the rank's shards.
LogicalResult addBackwardFunction(func::FuncOp func) {
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator());
  if (!ret || !func.getBody().hasOneBlock())
    return func.emitOpError() << "is not one block ending in func.return; "
                                 "the backward form needs the gradients of "
                                 "its results";
  std::string name = (func.getSymName() + "_backward").str();
  auto module = func->getParentOfType<ModuleOp>();
  if (module.lookupSymbol(name))
    return func.emitOpError() << "needs the name '" << name
                              << "' for its backward function, but the module "
                                 "already has that symbol";
  MLIRContext *context = func.getContext();
  OpBuilder b(context);
  b.setInsertionPointAfter(func);
  SmallVector<Type> inputs(func.getArgumentTypes());
  llvm::append_range(inputs, func.getResultTypes());
  inputs.push_back(b.getF32Type());
  auto backward = func::FuncOp::create(b, func.getLoc(), name,
                                       FunctionType::get(context, inputs, {}));
  backward.setVisibility(func.getVisibility());
  backward->setAttr(NeuroShardDialect::getBackwardOfAttrName(),
                    FlatSymbolRefAttr::get(func.getSymNameAttr()));
  backward.addEntryBlock();
  if (failed(BackwardBuilder(func, backward).build(ret))) {
    backward.erase();
    return failure();
  }
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
    // Every function that runs a collective or a lookup is an entry.
    llvm::SetVector<func::FuncOp> funcs;
    module.walk([&](Operation *op) {
      if (isa<ExchangeOp, RankReduceScatterOp, FusedEmbeddingBagOp>(op))
        funcs.insert(op->getParentOfType<func::FuncOp>());
    });
    for (func::FuncOp func : funcs)
      if (failed(addBackwardFunction(func)))
        return signalPassFailure();
  }
};

} // namespace
