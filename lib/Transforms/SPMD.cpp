//===- SPMD.cpp - The program one rank of an SPMD job runs ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// `--neuroshard-spmd`: a sharded module computes every device's lookup and
// the exchange in one program. Rank r of an SPMD job runs only device r's
// fused lookups, its side of the exchange and of every reduce-scatter of row
// pieces, its replicas' lookups of its own bags, and the rebuilding of the
// original results restricted to the rows of the batch it owns.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/RegionUtils.h"
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

/// The values of the whole batch that a rank's program replaces by its own
/// rows, and what follows from them: slices of whole rows, concatenations of
/// columns and returns, all given the rank's rows.
struct RowRestriction {
  /// A `B x W` value (the stacking of every device's rows) and the rank's
  /// `rows x W` value that replaces it.
  struct Root {
    Value whole;
    Value own;
  };
  SmallVector<Root> roots;
  llvm::SetVector<Value> changed;
  SmallVector<tensor::ConcatOp> concats;
  llvm::SetVector<Operation *> returns;

  /// Gives `root.whole` and everything computed from it the rows of
  /// `root.own`. Only row-preserving users are accepted.
  LogicalResult restrict(const Root &root) {
    int64_t batch = cast<RankedTensorType>(root.whole.getType()).getDimSize(0);
    int64_t rows = cast<RankedTensorType>(root.own.getType()).getDimSize(0);
    SmallVector<Value> worklist = {root.whole};
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
    return success();
  }

  /// Restricts every root, then replaces it by the rank's value.
  LogicalResult apply() {
    for (const Root &root : roots)
      if (failed(restrict(root)))
        return failure();
    for (tensor::ConcatOp concat : concats)
      for (Value input : concat.getInputs())
        if (!changed.contains(input))
          return concat.emitOpError()
                 << "concatenates exchanged columns with a value that does "
                    "not come from the exchange";
    for (Root &root : roots) {
      Operation *stack = root.whole.getDefiningOp();
      root.whole.replaceAllUsesWith(root.own);
      stack->erase();
    }
    return success();
  }
};

/// The `tensor.concat dim(0)` that stacks `results` (every device's rows of
/// a collective) back into the whole batch, in device order, as the sharding
/// pass emits it; null if they are not stacked. Fails if a concatenation
/// stacks them any other way.
FailureOr<tensor::ConcatOp> findStack(Operation *op, ValueRange results,
                                      int64_t rank) {
  tensor::ConcatOp stack;
  for (Value result : results)
    for (Operation *user : result.getUsers())
      if (auto concat = dyn_cast<tensor::ConcatOp>(user))
        if (concat.getDim() == 0 && !stack)
          stack = concat;
  if (!stack)
    return stack;
  SmallVector<Value> stacked;
  for (Value result : results)
    if (cast<RankedTensorType>(result.getType()).getDimSize(0) != 0)
      stacked.push_back(result);
  bool onlyStacked = llvm::all_of(results, [&](Value r) {
    return r.use_empty() ||
           (r.hasOneUse() && *r.getUsers().begin() == stack.getOperation());
  });
  if (!onlyStacked || !llvm::equal(stack.getInputs(), stacked))
    return stack.emitOpError()
           << "stacks the slices of '" << op->getName()
           << "' otherwise than every device's rows once, in device order, "
              "with no other use; the SPMD form cannot tell which rows rank "
           << rank << " owns";
  return stack;
}

/// Gives the rank `own` in place of its result of `op`, whose results are
/// every device's rows: through the stacking of all of them, or as the
/// rank's result itself when the results are used one by one (then the
/// others must be unused).
LogicalResult replaceRankResult(Operation *op, ValueRange results, int64_t rank,
                                Value own, RowRestriction &restriction) {
  FailureOr<tensor::ConcatOp> stack = findStack(op, results, rank);
  if (failed(stack))
    return failure();
  if (*stack) {
    restriction.roots.push_back({stack->getResult(), own});
    return success();
  }
  for (auto [d, result] : llvm::enumerate(results))
    if (static_cast<int64_t>(d) != rank && !result.use_empty())
      return op->emitOpError()
             << "result " << d << " (device " << d << "'s rows) is used, but "
             << "rank " << rank << " owns only its own rows";
  results[rank].replaceAllUsesWith(own);
  return success();
}

SmallVector<int64_t> rowsOf(ValueRange results) {
  SmallVector<int64_t> batches;
  for (Value result : results)
    batches.push_back(cast<RankedTensorType>(result.getType()).getDimSize(0));
  return batches;
}

LogicalResult checkStaticShapes(Operation *op) {
  for (Type type :
       llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && tensor.getRank() == 2 && !tensor.hasStaticShape())
      return op->emitOpError()
             << "has dynamic shapes; the SPMD form needs static ones";
  return success();
}

/// The device of the fused lookup `value` takes columns of, if any.
std::optional<int64_t> lookupDevice(Value value) {
  while (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>())
    value = slice.getSource();
  if (auto lookup = value.getDefiningOp<FusedEmbeddingBagOp>())
    return static_cast<int64_t>(lookup.getDevice());
  return std::nullopt;
}

/// Replaces `exchange` by rank `rank`'s side of it.
LogicalResult rewriteExchange(AllToAllOp exchange, int64_t rank,
                              RowRestriction &restriction) {
  if (failed(checkStaticShapes(exchange)))
    return failure();
  SmallVector<int64_t> widths;
  for (Value input : exchange.getInputs())
    widths.push_back(cast<RankedTensorType>(input.getType()).getDimSize(1));
  SmallVector<int64_t> batches = rowsOf(exchange.getResults());
  OpBuilder builder(exchange);
  auto side = ExchangeOp::create(
      builder, exchange.getLoc(), exchange.getResults()[rank].getType(),
      exchange.getInputs()[rank], rank, widths, batches);
  return replaceRankResult(exchange, exchange.getResults(), rank,
                           side.getResult(), restriction);
}

/// Replaces `reduce` by rank `rank`'s side of it: the rank's partial sums,
/// zeros when it holds no row piece of the columns.
LogicalResult rewriteReduceScatter(ReduceScatterOp reduce, int64_t rank,
                                   RowRestriction &restriction) {
  if (failed(checkStaticShapes(reduce)))
    return failure();
  Value mine;
  for (auto [i, input] : llvm::enumerate(reduce.getInputs())) {
    std::optional<int64_t> device = lookupDevice(input);
    if (!device)
      return reduce.emitOpError()
             << "sums input " << i
             << ", which is not columns of a fused lookup; the SPMD form "
                "cannot tell which rank computes it";
    if (*device != rank)
      continue;
    if (mine)
      return reduce.emitOpError()
             << "sums two partial lookups of device " << rank
             << "; the SPMD form needs one per device";
    mine = input;
  }
  OpBuilder builder(reduce);
  Location loc = reduce.getLoc();
  if (!mine) {
    auto type = cast<RankedTensorType>(reduce.getInputs()[0].getType());
    mine = arith::ConstantOp::create(
        builder, loc, type,
        DenseElementsAttr::get(type,
                               builder.getZeroAttr(type.getElementType())));
  }
  auto side = RankReduceScatterOp::create(
      builder, loc, reduce.getResults()[rank].getType(), mine,
      reduce.getMeanOffsets(), rank, rowsOf(reduce.getResults()));
  return replaceRankResult(reduce, reduce.getResults(), rank, side.getResult(),
                           restriction);
}

/// The lookups of a data-parallel table, one per device on its slice of the
/// batch, stacked back into the whole batch: the rank keeps its own.
LogicalResult rewriteReplicaStack(tensor::ConcatOp stack, int64_t rank,
                                  RowRestriction &restriction) {
  Value own;
  int64_t previous = -1;
  for (Value input : stack.getInputs()) {
    auto lookup = input.getDefiningOp<FusedEmbeddingBagOp>();
    int64_t device = static_cast<int64_t>(lookup.getDevice());
    if (device <= previous)
      return stack.emitOpError()
             << "stacks the lookups of a replicated table otherwise than in "
                "device order; the SPMD form cannot tell which rows rank "
             << rank << " owns";
    previous = device;
    if (!input.hasOneUse())
      return lookup.emitOpError()
             << "looks up device " << device
             << "'s slice of the batch in a replica, and its result has "
                "other uses than the stacking of every device's slice";
    if (device == rank)
      own = input;
  }
  if (!own) {
    // The rank owns no bag of the batch.
    OpBuilder builder(stack);
    auto type = cast<RankedTensorType>(stack.getType());
    own = tensor::EmptyOp::create(builder, stack.getLoc(),
                                  ArrayRef<int64_t>{0, type.getDimSize(1)},
                                  type.getElementType());
  }
  restriction.roots.push_back({stack.getResult(), own});
  return success();
}

/// True if `concat` stacks lookups of replicas: a concatenation along the
/// batch of fused lookups only.
bool stacksReplicas(tensor::ConcatOp concat) {
  return concat.getDim() == 0 && !concat.getInputs().empty() &&
         llvm::all_of(concat.getInputs(), [](Value input) {
           return input.getDefiningOp<FusedEmbeddingBagOp>() != nullptr;
         });
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
    SmallVector<ReduceScatterOp> reductions;
    SmallVector<tensor::ConcatOp> replicaStacks;
    bool unsharded = false;
    module.walk([&](Operation *op) {
      if (auto exchange = dyn_cast<AllToAllOp>(op))
        exchanges.push_back(exchange);
      if (auto reduce = dyn_cast<ReduceScatterOp>(op))
        reductions.push_back(reduce);
      if (auto concat = dyn_cast<tensor::ConcatOp>(op);
          concat && stacksReplicas(concat))
        replicaStacks.push_back(concat);
      if (isa<EmbeddingBagOp>(op)) {
        op->emitOpError() << "is a lookup of an unsharded table; shard the "
                             "module with --neuroshard-shard first";
        unsharded = true;
      }
    });
    if (unsharded)
      return signalPassFailure();
    if (exchanges.empty() && reductions.empty() && replicaStacks.empty()) {
      module.emitError()
          << "has no neuroshard.all_to_all, neuroshard.reduce_scatter or "
             "lookups of replicas; shard it with --neuroshard-shard first";
      return signalPassFailure();
    }

    RowRestriction restriction;
    SmallVector<Operation *> collectives;
    for (AllToAllOp exchange : exchanges) {
      if (failed(rewriteExchange(exchange, rank, restriction)))
        return signalPassFailure();
      collectives.push_back(exchange);
    }
    for (ReduceScatterOp reduce : reductions) {
      if (failed(rewriteReduceScatter(reduce, rank, restriction)))
        return signalPassFailure();
      collectives.push_back(reduce);
    }
    for (tensor::ConcatOp stack : replicaStacks)
      if (failed(rewriteReplicaStack(stack, rank, restriction)))
        return signalPassFailure();
    if (failed(restriction.apply()))
      return signalPassFailure();
    for (Operation *op : collectives) {
      if (!op->use_empty()) {
        op->emitOpError() << "is still used after the rewrite";
        return signalPassFailure();
      }
      op->erase();
    }

    // Other devices' lookups are other ranks' work, and so are the inputs
    // only they read.
    IRRewriter rewriter(&getContext());
    module.walk([&](func::FuncOp func) {
      (void)runRegionDCE(rewriter, func.getBody());
    });
    WalkResult used = module.walk([&](FusedEmbeddingBagOp op) {
      if (static_cast<int64_t>(op.getDevice()) == rank)
        return WalkResult::advance();
      op.emitOpError() << "runs on device " << op.getDevice()
                       << " but its result is used by rank " << rank
                       << " outside the exchange";
      return WalkResult::interrupt();
    });
    if (used.wasInterrupted())
      return signalPassFailure();

    // Results now hold the rank's rows.
    for (Operation *op : restriction.returns) {
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
