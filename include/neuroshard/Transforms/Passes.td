//===- Passes.td - NeuroShard transformation passes --------*- tablegen -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TRANSFORMS_PASSES_TD
#define NEUROSHARD_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ShardTables : Pass<"neuroshard-shard", "::mlir::ModuleOp"> {
  let summary = "Shard embedding tables across devices and fuse their lookups";
  let description = [{
    Plans where every column range of every `neuroshard.table` lives, with
    the search algorithm and cost model the options name, and rewrites the
    module accordingly:

    * every table records its `shards`;
    * every function's lookups become one `neuroshard.fused_embedding_bag`
      per device (the whole batch, all shards of that device, one buffer);
    * a `neuroshard.all_to_all` gives every device its slice of the batch,
      and `tensor.concat`/`tensor.extract_slice` give every original lookup
      its result back with the same type and values;
    * the module's `neuroshard.plan` attribute records the predicted cost of
      every device and of the plan.

    The topology comes from the module's `neuroshard.topology` attribute;
    `devices` and `memory-gb` override it. Already sharded modules are
    refused with a diagnostic rather than planned twice.
  }];
  let options = [
    Option<"devices", "devices", "unsigned", "0",
           "Number of devices (0: take it from the module's topology)">,
    Option<"memoryGb", "memory-gb", "std::string", "\"\"",
           "Memory per device in GB: one value for all, or a comma list">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "Optimizer whose state shares the devices with the weights: sgd, "
           "adagrad, rowwise-adagrad, adam">,
    Option<"reservedMemory", "reserved-memory", "double", "0.0",
           "Fraction of every device's memory kept free of shards, in "
           "[0, 1)">,
    Option<"algorithm", "algorithm", "std::string", "\"neuroshard\"",
           "Search algorithm: neuroshard, table-greedy-grid, random, "
           "size-greedy, dim-greedy, lookup-greedy, size-lookup-greedy">,
    Option<"costModel", "cost-model", "std::string", "\"default\"",
           "Cost model: 'default' (the shipped trained model, or the "
           "analytical model in builds without LibTorch), 'analytical', or "
           "the path of a neural model bundle">,
    Option<"costRisk", "cost-risk", "double", "1.0",
           "Standard deviations of a cost model's uncertainty added to "
           "every compute cost it predicts, in [0, 10] (models without an "
           "ensemble ignore it)">,
    Option<"beamWidth", "beam-width", "unsigned", "3",
           "Beam search: states kept per level">,
    Option<"candidates", "candidates", "unsigned", "10",
           "Beam search: largest and most expensive shards tried as splits">,
    Option<"maxSteps", "max-steps", "unsigned", "10",
           "Beam search: most column splits">,
    Option<"gridSteps", "grid-steps", "unsigned", "11",
           "Greedy grid search: dim-sum thresholds tried over 1.0 .. 1.5">,
    Option<"seed", "seed", "uint64_t", "0", "Seed of the random baseline">,
    Option<"progress", "progress", "bool", "false",
           "Print a line to stderr after each step of the search (level, "
           "states priced, best cost, time)">,
    Option<"planOut", "plan-out", "std::string", "\"\"",
           "Write the plan as JSON (the neuroshard-plan schema) to this file">,
    Option<"planTable", "plan-table", "std::string", "\"\"",
           "Write the readable per-device plan table to this file ('-' for "
           "standard output)">,
    Option<"torchrecOut", "torchrec-out", "std::string", "\"\"",
           "Write the plan as TorchRec ParameterSharding fields per table "
           "(neuroshard-plan --format torchrec) to this file">
  ];
  let statistics = [
    Statistic<"numTables", "tables", "Embedding tables planned">,
    Statistic<"numShards", "shards", "Shards in the plan">,
    Statistic<"numColumnSplits", "column-splits",
              "Column splits (shards beyond one per table)">,
    Statistic<"predictedCostUs", "predicted-cost-us",
              "Predicted plan cost (max over devices) in microseconds">,
    Statistic<"numCostQueries", "cost-model-queries",
              "Shard-set cost queries made by the search">,
    Statistic<"numCacheHits", "cost-cache-hits",
              "Shard-set cost queries answered by the memo">,
    Statistic<"searchTimeUs", "search-time-us", "Search time in microseconds">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def RankProgram : Pass<"neuroshard-spmd", "::mlir::ModuleOp"> {
  let summary = "Turn a sharded module into the program one rank runs";
  let description = [{
    Rewrites a module sharded by `--neuroshard-shard` into the program that
    rank `rank` of an SPMD job runs, one rank per device:

    * only device `rank`'s `neuroshard.fused_embedding_bag` is kept (the
      other devices' lookups are other ranks' work);
    * the `neuroshard.all_to_all` becomes a `neuroshard.exchange`, this
      rank's side of the collective, which gives it its slice of the batch
      with every device's columns;
    * the slices and column concatenations that rebuild the original
      results keep their columns and take this rank's rows, so every result
      of the entry function becomes the rank's `B_rank x dim` slice of the
      original result (the data-parallel part after the embedding layer
      runs on that slice);
    * the module's `neuroshard.rank` records the rank: its weight arena
      holds the shards the plan places on this device, and nothing else.

    Arguments are kept, so every rank's program has the original signature.
    After the exchange, the pass supports `tensor.extract_slice` of whole
    rows, `tensor.concat` along columns and `func.return`; anything else is
    reported rather than guessed.

    With `backward=true`, every function with an exchange `@f` also gets
    `@f_backward`, one training step's backward for the rank: it takes
    `@f`'s arguments, the gradient of each of `@f`'s results (the rank's
    rows) and the learning rate (`f32`); puts each gradient in the columns
    of the exchanged result that result is made of (zero where no result
    reads a column); sends them back with `neuroshard.exchange_gradient`;
    and updates the rank's shards with `neuroshard.fused_embedding_bag_sgd`.
    A column returned in two results is refused (its gradients would have
    to be summed).
  }];
  let options = [
    Option<"rank", "rank", "int64_t", "-1",
           "The rank (device) whose program to build">,
    Option<"backward", "backward", "bool", "false",
           "Also build each entry's backward function (reverse exchange "
           "and SGD update)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // NEUROSHARD_TRANSFORMS_PASSES_TD
