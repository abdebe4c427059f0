//===- RankProgram.cpp - The program one rank of an SPMD job runs ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// `--neuroshard-spmd`: a sharded module computes every device's lookup and
// the exchange in one program. Rank r of an SPMD job runs only device r's
// fused lookup, its side of the exchange, and the rebuilding of the original
// results restricted to the rows of the batch it owns. With `backward`, the
// program also gets the backward function of each entry: the gradients of
// its results go back through the reverse exchange to the rank's SGD update.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Transforms/RankProgram.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_RANKPROGRAM
#include "neuroshard/Transforms/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

/// True if `slice` takes whole rows (all `rows` of them, unit strides, static
/// sizes): a column range that every batch slice has too.
bool takesWholeRows(tensor::ExtractSliceOp slice, int64_t rows) {
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  ArrayRef<int64_t> strides = slice.getStaticStrides();
  return offsets.size() == 2 && offsets[0] == 0 &&
         !ShapedType::isDynamic(offsets[1]) && sizes[0] == rows &&
         !ShapedType::isDynamic(sizes[1]) && strides[0] == 1 && strides[1] == 1;
}

/// Gives `root` (the whole batch, `batch` rows) and everything computed from
/// it the rank's `rows` instead. Only row-preserving users are accepted;
/// `returns` collects the returns reached.
LogicalResult restrictToRows(Value root, int64_t batch, int64_t rows,
                             llvm::SetVector<Operation *> &returns) {
  llvm::SetVector<Value> changed;
  SmallVector<Value> worklist = {root};
  SmallVector<tensor::ConcatOp> concats;
  auto withRows = [&](Type type) {
    auto tensor = cast<RankedTensorType>(type);
    return RankedTensorType::get({rows, tensor.getDimSize(1)},
                                 tensor.getElementType());
  };
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!changed.insert(value))
      continue;
    for (Operation *user : value.getUsers()) {
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
        if (slice.getSource() != value || !takesWholeRows(slice, batch))
          return slice.emitOpError()
                 << "takes part of the batch's rows of the exchanged "
                    "columns; the SPMD form needs slices of whole rows";
        slice.setStaticSizes({rows, slice.getStaticSizes()[1]});
        slice.getResult().setType(withRows(slice.getType()));
        worklist.push_back(slice.getResult());
      } else if (auto concat = dyn_cast<tensor::ConcatOp>(user)) {
        if (concat.getDim() != 1)
          return concat.emitOpError()
                 << "concatenates exchanged columns along dimension "
                 << concat.getDim()
                 << "; the SPMD form needs concatenations of columns";
        concat.getResult().setType(withRows(concat.getType()));
        concats.push_back(concat);
        worklist.push_back(concat.getResult());
      } else if (isa<func::ReturnOp>(user)) {
        returns.insert(user);
      } else {
        return user->emitOpError()
               << "uses the exchanged columns; after the exchange the SPMD "
                  "form supports tensor.extract_slice, tensor.concat and "
                  "func.return only";
      }
    }
  }
  for (tensor::ConcatOp concat : concats)
    for (Value input : concat.getInputs())
      if (!changed.contains(input))
        return concat.emitOpError()
               << "concatenates exchanged columns with a value that does not "
                  "come from the exchange";
  return success();
}

/// Replaces `exchange` by rank `rank`'s side of it.
LogicalResult rewriteExchange(AllToAllOp exchange, int64_t rank,
                              llvm::SetVector<Operation *> &returns) {
  size_t devices = exchange.getInputs().size();
  SmallVector<int64_t> widths, batches;
  int64_t batch = 0;
  for (size_t d = 0; d < devices; ++d) {
    auto input = cast<RankedTensorType>(exchange.getInputs()[d].getType());
    auto result = cast<RankedTensorType>(exchange.getResults()[d].getType());
    if (!input.hasStaticShape() || !result.hasStaticShape())
      return exchange.emitOpError()
             << "has dynamic shapes; the SPMD form needs static ones";
    widths.push_back(input.getDimSize(1));
    batches.push_back(result.getDimSize(0));
    batch += batches.back();
  }

  // The sharding pass stacks the slices back into the whole batch with one
  // concatenation in device order; then the rank's slice replaces the whole
  // batch. Otherwise the rank's own result is used as it is and the others
  // must be unused.
  tensor::ConcatOp stack;
  for (Value result : exchange.getResults())
    for (Operation *user : result.getUsers())
      if (auto concat = dyn_cast<tensor::ConcatOp>(user))
        if (concat.getDim() == 0 && !stack)
          stack = concat;
  if (stack) {
    SmallVector<Value> stacked;
    for (Value result : exchange.getResults())
      if (cast<RankedTensorType>(result.getType()).getDimSize(0) != 0)
        stacked.push_back(result);
    bool onlyStacked = llvm::all_of(exchange.getResults(), [&](Value r) {
      return r.use_empty() ||
             (r.hasOneUse() && *r.getUsers().begin() == stack.getOperation());
    });
    if (!onlyStacked || !llvm::equal(stack.getInputs(), stacked))
      return stack.emitOpError()
             << "stacks the exchanged slices otherwise than every device's "
                "rows once, in device order, with no other use; the SPMD "
                "form cannot tell which rows rank "
             << rank << " owns";
  } else {
    for (size_t d = 0; d < devices; ++d)
      if (static_cast<int64_t>(d) != rank &&
          !exchange.getResults()[d].use_empty())
        return exchange.emitOpError() << "result " << d << " (device " << d
                                      << "'s rows) is used, but rank " << rank
                                      << " owns only its own rows";
  }

  OpBuilder builder(exchange);
  auto resultType =
      cast<RankedTensorType>(exchange.getResults()[rank].getType());
  auto side =
      ExchangeOp::create(builder, exchange.getLoc(), resultType,
                         exchange.getInputs()[rank], rank, widths, batches);
  if (stack) {
    if (failed(
            restrictToRows(stack.getResult(), batch, batches[rank], returns)))
      return failure();
    stack.getResult().replaceAllUsesWith(side.getResult());
    stack.erase();
  } else {
    exchange.getResults()[rank].replaceAllUsesWith(side.getResult());
  }
  for (Value result : exchange.getResults())
    if (!result.use_empty())
      return exchange.emitOpError() << "is still used after the rewrite";
  exchange.erase();
  return success();
}

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
        lookup.getModesAttr(), indices, offsets, lookupGradient.getResult(),
        lr);
  }
  func::ReturnOp::create(b, loc);
  return success();
}

struct RankProgramPass
    : public mlir::neuroshard::impl::RankProgramBase<RankProgramPass> {
  using RankProgramBase::RankProgramBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto topology = module->getAttrOfType<TopologyAttr>(
        NeuroShardDialect::getTopologyAttrName());
    if (!topology) {
      module.emitError() << "has no #neuroshard.topology; shard it with "
                            "--neuroshard-shard first";
      return signalPassFailure();
    }
    if (rank < 0 || rank >= topology.getDevices()) {
      module.emitError() << "--neuroshard-spmd needs rank=R with R in [0, "
                         << topology.getDevices() << ") for this topology, got "
                         << rank;
      return signalPassFailure();
    }
    if (std::optional<int64_t> already = getProgramRank(module)) {
      module.emitError() << "is already the program of rank " << *already;
      return signalPassFailure();
    }

    SmallVector<AllToAllOp> exchanges;
    bool unsharded = false;
    module.walk([&](Operation *op) {
      if (auto exchange = dyn_cast<AllToAllOp>(op))
        exchanges.push_back(exchange);
      if (isa<EmbeddingBagOp>(op)) {
        op->emitOpError() << "is a lookup of an unsharded table; shard the "
                             "module with --neuroshard-shard first";
        unsharded = true;
      }
    });
    if (unsharded)
      return signalPassFailure();
    if (exchanges.empty()) {
      module.emitError() << "has no neuroshard.all_to_all; shard it with "
                            "--neuroshard-shard first";
      return signalPassFailure();
    }

    llvm::SetVector<Operation *> returns;
    for (AllToAllOp exchange : exchanges)
      if (failed(rewriteExchange(exchange, rank, returns)))
        return signalPassFailure();

    // Other devices' lookups are other ranks' work.
    SmallVector<FusedEmbeddingBagOp> others;
    module.walk([&](FusedEmbeddingBagOp op) {
      if (static_cast<int64_t>(op.getDevice()) != rank)
        others.push_back(op);
    });
    for (FusedEmbeddingBagOp op : llvm::reverse(others)) {
      if (!op.getResult().use_empty()) {
        op.emitOpError() << "runs on device " << op.getDevice()
                         << " but its result is used by rank " << rank
                         << " outside the exchange";
        return signalPassFailure();
      }
      op.erase();
    }

    // Results now hold the rank's rows.
    for (Operation *op : returns) {
      auto func = op->getParentOfType<func::FuncOp>();
      func.setType(FunctionType::get(&getContext(),
                                     func.getFunctionType().getInputs(),
                                     op->getOperandTypes()));
    }
    if (backward) {
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
    module->setAttr(
        NeuroShardDialect::getRankAttrName(),
        IntegerAttr::get(IntegerType::get(&getContext(), 64), rank));
  }
};

} // namespace

FailureOr<SmallVector<ExchangedColumns>>
mlir::neuroshard::traceExchangedColumns(Value value, Value exchanged,
                                        std::string &why) {
  if (value == exchanged) {
    int64_t width = cast<RankedTensorType>(value.getType()).getDimSize(1);
    return SmallVector<ExchangedColumns>{{0, 0, width}};
  }
  Operation *op = value.getDefiningOp();
  if (auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(op)) {
    auto sourceType = cast<RankedTensorType>(slice.getSourceType());
    if (!takesWholeRows(slice, sourceType.getDimSize(0))) {
      why = "it takes part of the rows of the exchanged columns";
      return failure();
    }
    FailureOr<SmallVector<ExchangedColumns>> source =
        traceExchangedColumns(slice.getSource(), exchanged, why);
    if (failed(source))
      return failure();
    // The source's pieces that overlap the slice's columns, clipped.
    int64_t begin = slice.getStaticOffsets()[1];
    int64_t end = begin + slice.getStaticSizes()[1];
    SmallVector<ExchangedColumns> pieces;
    for (const ExchangedColumns &piece : *source) {
      int64_t from = std::max(begin, piece.column);
      int64_t to = std::min(end, piece.column + piece.width);
      if (from < to)
        pieces.push_back(
            {from - begin, piece.source + (from - piece.column), to - from});
    }
    return pieces;
  }
  if (auto concat = dyn_cast_or_null<tensor::ConcatOp>(op)) {
    if (concat.getDim() != 1) {
      why = "it concatenates along dimension " +
            std::to_string(concat.getDim()) + ", not columns";
      return failure();
    }
    SmallVector<ExchangedColumns> pieces;
    int64_t column = 0;
    for (Value input : concat.getInputs()) {
      FailureOr<SmallVector<ExchangedColumns>> traced =
          traceExchangedColumns(input, exchanged, why);
      if (failed(traced))
        return failure();
      for (ExchangedColumns piece : *traced) {
        piece.column += column;
        // Neighbours in both the value and the exchange are one piece.
        if (!pieces.empty() &&
            pieces.back().column + pieces.back().width == piece.column &&
            pieces.back().source + pieces.back().width == piece.source)
          pieces.back().width += piece.width;
        else
          pieces.push_back(piece);
      }
      column += cast<RankedTensorType>(input.getType()).getDimSize(1);
    }
    return pieces;
  }
  if (!op)
    why = "it is an argument of the function, not exchanged columns";
  else
    why = "it is computed by '" + op->getName().getStringRef().str() +
          "'; only tensor.extract_slice of whole rows and tensor.concat of "
          "columns lead back to the exchange";
  return failure();
}
