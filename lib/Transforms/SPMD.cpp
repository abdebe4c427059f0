//===- SPMD.cpp - The program one rank of an SPMD job runs ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// `--neuroshard-spmd`: a sharded module computes every device's lookup and
// the exchange in one program. Rank r of an SPMD job runs only device r's
// fused lookup, its side of the exchange, and the rebuilding of the original
// results restricted to the rows of the batch it owns.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Transforms/SPMD.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_SPMD
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

struct SPMDPass : public mlir::neuroshard::impl::SPMDBase<SPMDPass> {
  using SPMDBase::SPMDBase;

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
      // Row pieces and replicas run in one address space for now.
      if (isa<BucketizeOp, ReduceScatterOp>(op)) {
        op->emitOpError() << "distributes a row-wise table; the SPMD form "
                             "holds whole tables and column pieces only";
        unsharded = true;
      }
      if (auto table = dyn_cast<TableOp>(op);
          table && table.getShardsAttr() &&
          llvm::any_of(table.getShardsAttr().getAsRange<ShardAttr>(),
                       [](ShardAttr shard) { return shard.getReplica(); })) {
        op->emitOpError() << "table '" << table.getSymName()
                          << "' is replicated; the SPMD form holds whole "
                             "tables and column pieces only";
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
    module->setAttr(
        NeuroShardDialect::getRankAttrName(),
        IntegerAttr::get(IntegerType::get(&getContext(), 64), rank));
    if (backward) {
      OpPassManager backwardPipeline(ModuleOp::getOperationName());
      backwardPipeline.addPass(createSPMDBackward());
      if (failed(runPipeline(backwardPipeline, module)))
        return signalPassFailure();
    }
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
