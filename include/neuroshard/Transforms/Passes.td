//===- Passes.td - NeuroShard transformation passes --------*- tablegen -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TRANSFORMS_PASSES_TD
#define NEUROSHARD_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// The options of the planning pass, which the `--neuroshard-shard` pipeline
// takes too. Search defaults are SearchOptions' (Planner/Search.h).
defvar PlanOptions = [
  Option<"devices", "devices", "unsigned", "0",
         "Number of devices (0: take it from the module's topology)">,
  Option<"memoryGb", "memory-gb", "std::string", "\"\"",
         "Memory per device in GB (2^30 bytes): one value for all, or a "
         "comma list "
         "(default: the module's, else 16 on one node, 80 on several)">,
  Option<"nodes", "nodes", "unsigned", "0",
         "Nodes of the cluster, of equal size, devices numbered node by node "
         "(0: the module's, else one node; 8 devices per node when devices "
         "are not given)">,
  Option<"devicesPerNode", "devices-per-node", "unsigned", "0",
         "Devices per node, instead of nodes (0: the module's node size)">,
  Option<"hbmGbps", "hbm-gbps", "std::string", "\"\"",
         "Device memory bandwidth in GB/s (default: the module's, else 897)">,
  Option<"intraNodeGbps", "intra-node-gbps", "std::string", "\"\"",
         "Bandwidth between the devices of a node in GB/s (default: the "
         "module's, else 600)">,
  Option<"interNodeGbps", "inter-node-gbps", "std::string", "\"\"",
         "Bandwidth from a device to other nodes in GB/s (default: the "
         "module's, else 50)">,
  Option<"hostMemoryGb", "host-memory-gb", "std::string", "\"\"",
         "Host memory of each node in GB for tables kept there behind a "
         "device cache, when the devices' memory is too small (default: the "
         "module's, else 2048; 0: none)">,
  Option<"hostGbps", "host-gbps", "std::string", "\"\"",
         "Bandwidth between a device and its node's host memory in GB/s "
         "(default: the module's, else 32)">,
  Option<"deviceKind", "device-kind", "std::string", "\"\"",
         "What the devices are: gpu, cpu (a plan for CPU execution) or a "
         "chip such as h100; it chooses the default cost model (default: "
         "the module's, else gpu)">,
  Option<"batchSize", "batch-size", "int64_t", "0",
         "Global batch size the plan is priced at (0: the lookups' batch); "
         "the module's access histograms are carried to it">,
  Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
         "Optimizer whose state shares the devices with the weights: sgd, "
         "adagrad, rowwise-adagrad, adam">,
  Option<"reservedMemory", "reserved-memory", "double", "0.0",
         "Fraction of every device's memory kept free of shards, in "
         "[0, 1)">,
  Option<"algorithm", "algorithm", "std::string",
         "::neuroshard::algorithmName(::neuroshard::SearchOptions{}.algorithm).str()",
         "Search algorithm: neuroshard, table-greedy-grid, random, "
         "size-greedy, dim-greedy, lookup-greedy, size-lookup-greedy, "
         "uniform-split-greedy">,
  Option<"costModel", "cost-model", "std::string", "\"default\"",
         "Cost model: 'default' (the shipped trained model of the device "
         "kind, or the analytical model in builds without LibTorch), "
         "'analytical', a shipped bundle's name, or the path of a neural "
         "model bundle">,
  Option<"costRisk", "cost-risk", "double", "::neuroshard::kDefaultRiskMargin",
         "Standard deviations of a cost model's uncertainty added to "
         "every compute cost it predicts, in [0, 10] (models without an "
         "ensemble ignore it)">,
  Option<"beamWidth", "beam-width", "unsigned",
         "::neuroshard::SearchOptions{}.beamWidth",
         "Beam search: states kept per level">,
  Option<"candidates", "candidates", "unsigned",
         "::neuroshard::SearchOptions{}.candidates",
         "Beam search: largest and most expensive shards tried as splits">,
  Option<"maxSteps", "max-steps", "unsigned",
         "::neuroshard::SearchOptions{}.maxSteps",
         "Beam search: most levels of column splits (0: sized from the "
         "problem, stopping when levels bring no progress)">,
  Option<"gridSteps", "grid-steps", "unsigned",
         "::neuroshard::SearchOptions{}.gridSteps",
         "Greedy grid search: dim-sum thresholds tried over "
         "[threshold-min, threshold-max]">,
  Option<"thresholdMin", "threshold-min", "double",
         "::neuroshard::SearchOptions{}.thresholdMin",
         "Greedy grid search: lowest dim-sum threshold (1.0)">,
  Option<"thresholdMax", "threshold-max", "double",
         "::neuroshard::SearchOptions{}.thresholdMax",
         "Greedy grid search: highest dim-sum threshold (1.5)">,
  Option<"seed", "seed", "uint64_t", "::neuroshard::SearchOptions{}.seed",
         "Seed of the random baseline">,
  Option<"verifyTop", "verify-top", "std::string", "\"auto\"",
         "Time the device sets of the K best distinct plans (and of the "
         "other baselines' plans priced within 1.5x the best) on this "
         "machine's CPU and keep another than the table-wise plan (else "
         "the model's best) only if it measures verify-min-gain faster, for "
         "plans "
         "for CPU execution: 'auto' verifies 4 where the cost model "
         "describes this machine, 0 never">,
  Option<"verifySeconds", "verify-seconds", "double",
         "::neuroshard::VerifyOptions{}.seconds",
         "Seconds the timed rounds of verify-top may take: the first "
         "always runs, a later one only where it ends within them; another "
         "plan replaces the table-wise plan only after 3 rounds (0: one "
         "round)">,
  Option<"verifyMinGain", "verify-min-gain", "double",
         "::neuroshard::VerifyOptions{}.minGain",
         "How much faster than the table-wise plan (else the model's best), "
         "as a fraction, another candidate of verify-top must measure to "
         "replace it (default 0.02; raise it on a noisy host)">,
  Option<"verifySpreadFactor", "verify-spread-factor", "double",
         "::neuroshard::VerifyOptions{}.spreadFactor",
         "Standard errors of its rounds' mean ratio (from the spread of the "
         "rounds' ratios) a candidate of verify-top must gain beyond, "
         "besides verify-min-gain, to replace the table-wise plan: a normal "
         "tail, shared among the candidates racing and read off Student's t "
         "for the spread's rounds (default 2; 0: verify-min-gain alone, for "
         "a quiet host)">,
  Option<"experience", "experience", "std::string", "\"\"",
         "JSON Lines file the verified device sets are appended to ('none': "
         "nowhere; default: experience.jsonl in the bundle's directory, for "
         "a bundle of your own)">,
  Option<"verifyExport", "verify-export", "std::string", "\"\"",
         "Write the device sets of the verify-top best candidates to this "
         "directory (sets.json and the neuroshard-cuda-runner manifest "
         "sets.txt) instead of timing them here, to time them on the GPU "
         "the plan is for; then plan again with verify-timings">,
  Option<"verifyTimings", "verify-timings", "std::string", "\"\"",
         "Choose among the verify-top best candidates by the times recorded "
         "in this directory (written by verify-export, its sets timed with "
         "neuroshard-cuda-runner --collect samples.jsonl), for any device "
         "kind">,
  Option<"shardingTypes", "sharding-types", "std::string", "\"default\"",
         "The kinds of shards plans may use, on top of each table's own "
         "'sharding_types': a list such as 'table_wise,row_wise', 'all', or "
         "'default' (every kind for GPUs; whole tables and column pieces "
         "for CPUs, whose kernels and measured bundles cover those), as "
         "neuroshard-plan takes it">,
  Option<"progress", "progress", "bool", "false",
         "Print a line to stderr after each step of the search (level, "
         "states priced, best cost, time)">,
  Option<"modelWarnings", "model-warnings", "bool", "true",
         "Emit the cost model's warnings (another chip, another batch, "
         "tables outside its training ranges); false silences warnings "
         "already acknowledged: the plan record keeps them">
];

def Plan : Pass<"neuroshard-plan", "::mlir::ModuleOp"> {
  let summary = "Decide where every table's columns live and record it";
  let description = [{
    Plans the sharding of every `neuroshard.table` with the search
    algorithm and cost model the options name (the planner that
    `neuroshard-plan` runs on JSON tasks), and records the plan on the
    module without rewriting a lookup:

    * every table gets its `shards` (a column range and a device each,
      and a row range or `replica` where `sharding-types` allows row
      pieces or replicas);
    * the module's `neuroshard.topology` becomes the topology planned for
      (`devices` and `memory-gb` override the module's);
    * the module's `neuroshard.plan` records how the plan was made and what
      it is predicted to cost: algorithm, cost model, its warnings, the
      optimizer and memory reserve, every device's memory and cost terms,
      and the search's statistics.

    `--neuroshard-materialize` turns the annotated module into per-device
    fused lookups; `--neuroshard-export-plan` writes the recorded plan as
    JSON, a TorchRec plan or a readable table. The cost model's warnings
    are emitted once, as warnings at the module (`model-warnings=false`
    silences them; the plan record keeps them).

    Refused with a diagnostic, leaving the module unchanged: a table that
    already has shards or a module with fused lookups, a table without the
    statistics the cost model reads, lookups without a static batch or of
    different batch sizes, a bad option, and a problem no plan can solve
    (naming the table and the numbers).

    ```mlir
    // before
    neuroshard.table @user : rows 4000000, dim 128, f32 {pooling_factor = 12.5 : f64, access_hist = array<f64: ...>}
    // after --neuroshard-plan="devices=2 memory-gb=16"
    neuroshard.table @user : rows 4000000, dim 128, f32
        shards [#neuroshard.shard<cols = 0 to 64, device = 0>,
                #neuroshard.shard<cols = 64 to 128, device = 1>] {...}
    ```
  }];
  let options = PlanOptions;
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
}

def ImportPlan : Pass<"neuroshard-import-plan", "::mlir::ModuleOp"> {
  let summary = "Annotate the tables with a plan read from a file";
  let description = [{
    Reads a plan made elsewhere, in NeuroShard's plan JSON (what
    `neuroshard-plan` and `--neuroshard-export-plan="format=json"` write;
    a hand-written `{"devices": N, "shards": [{"table", "col_begin",
    "col_end", "device"}, ...]}` is enough) or in the TorchRec format
    (`neuroshard-plan --format torchrec`), and records it as every table's
    `shards`, exactly as `--neuroshard-plan` would have placed them, so that
    `--neuroshard-materialize` can rewrite the module. Tables are named as
    plans name them: by `module_path` if they have one, else by symbol.

    The plan is checked with the planner's own validator against the
    module's `neuroshard.topology` (which the module must have): every
    column of every table on exactly one device, 4-aligned splits, pinned
    and `no_split` tables respected, and no device over its memory. Every
    failure is a diagnostic naming the file, the table and the numbers;
    the module is left unchanged. The plan is not priced (the module gets
    no `neuroshard.plan`): `neuroshard-plan TASK --price FILE` prices it.

    ```sh
    build/bin/neuroshard-opt examples/dlrm.mlir --neuroshard-plan \
        --neuroshard-export-plan="format=torchrec output=build/dlrm.torchrec.json" \
        -o /dev/null
    build/bin/neuroshard-opt examples/dlrm.mlir \
        --neuroshard-import-plan="file=build/dlrm.torchrec.json" \
        --neuroshard-materialize -o build/dlrm.imported.mlir
    ```
  }];
  let options = [
    Option<"file", "file", "std::string", "\"\"",
           "The plan to import: plan JSON or a TorchRec plan ('-' reads "
           "standard input)">
  ];
}

def Materialize : Pass<"neuroshard-materialize", "::mlir::ModuleOp"> {
  let summary = "Rewrite annotated lookups into fused per-device lookups "
                "and the exchange";
  let description = [{
    Rewrites a module whose tables carry `shards` (from `--neuroshard-plan`,
    `--neuroshard-import-plan` or by hand) into what each device runs. For
    every block with lookups:

    * every device gets one `neuroshard.fused_embedding_bag` over all the
      shards it holds of the block's lookups (the whole batch, one buffer),
      placed after the block's last lookup;
    * a `neuroshard.all_to_all` gives every device its slice of the batch;
    * `tensor.concat`/`tensor.extract_slice` give every original lookup its
      result back, with the same type and values.

    The rewrite is a set of patterns (`populateMaterializePatterns`) applied
    as a conversion whose target makes every lookup of a sharded table
    illegal, so a module either comes out fully materialized or the pass
    fails. A module without lookups is left as it is. Refused with a
    diagnostic: a table without `shards` beside tables with them (a plan
    places every table), a module without `neuroshard.topology`, lookups
    without a static batch, uses of a lookup before the last lookup of its
    block, and lookups of one block with different element types. Invalid
    shards (gaps, overlaps, columns outside the table, devices outside the
    topology) are the table verifier's errors.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def ExportPlan : Pass<"neuroshard-export-plan", "::mlir::ModuleOp"> {
  let summary = "Write the module's plan as JSON, a TorchRec plan or a table";
  let description = [{
    Writes the plan recorded on the module, and nothing else: the module is
    not changed. `format=json` writes the plan JSON of `neuroshard-plan`
    (docs/planner.md), `format=table` the readable per-device table,
    `format=torchrec` the TorchRec `ParameterSharding` fields per table and
    `format=svg` a picture of the plan (every device's time and memory,
    split by table; `neuroshard-plan --plot` draws the same). The JSON, the
    table and the picture need the costs `--neuroshard-plan` records in
    `neuroshard.plan`; the TorchRec plan needs only the tables' `shards`, so
    an imported or hand-annotated module exports too. Works before and
    after `--neuroshard-materialize`.

    ```sh
    build/bin/neuroshard-opt examples/dlrm.mlir --neuroshard-plan \
        --neuroshard-export-plan="format=json output=build/dlrm.plan.json" \
        -o build/dlrm.planned.mlir
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", "\"json\"",
           "What to write: json, table, torchrec or svg">,
    Option<"output", "output", "std::string", "\"-\"",
           "The file to write ('-' for standard output)">
  ];
}

def Shard : Pass<"neuroshard-shard", "::mlir::ModuleOp"> {
  let summary = "Plan and materialize: --neuroshard-plan, then "
                "--neuroshard-materialize";
  let description = [{
    The one-flag form of the sharding pipeline: runs `--neuroshard-plan`
    with the same options, then `--neuroshard-materialize`. The module
    comes out with every table's `shards`, its `neuroshard.plan` and one
    fused lookup per device and block, or, if either step fails, unchanged
    with that step's diagnostic.

    `plan-out`, `plan-table` and `torchrec-out` are kept for one release as
    aliases of `--neuroshard-export-plan` run between the two steps
    (`format=json`, `table` and `torchrec`); new pipelines should spell the
    export pass out. `plot` draws the plan the same way, with
    `format=svg`, for a picture of the plan a one-flag pipeline makes.
  }];
  let options = !listconcat(PlanOptions, [
    Option<"planOut", "plan-out", "std::string", "\"\"",
           "Deprecated alias: also run --neuroshard-export-plan="
           "\"format=json output=FILE\"">,
    Option<"planTable", "plan-table", "std::string", "\"\"",
           "Deprecated alias: also run --neuroshard-export-plan="
           "\"format=table output=FILE\" ('-' for standard output)">,
    Option<"torchrecOut", "torchrec-out", "std::string", "\"\"",
           "Deprecated alias: also run --neuroshard-export-plan="
           "\"format=torchrec output=FILE\"">,
    Option<"plot", "plot", "std::string", "\"\"",
           "Also run --neuroshard-export-plan=\"format=svg output=FILE\": "
           "a picture of the plan">
  ]);
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def SPMD : Pass<"neuroshard-spmd", "::mlir::ModuleOp"> {
  let summary = "Turn a sharded module into the program one rank runs";
  let description = [{
    Rewrites a module sharded by `--neuroshard-shard` (or
    `--neuroshard-materialize`) into the program that rank `rank` of an SPMD
    job runs, one rank per device:

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
    * every `neuroshard.reduce_scatter` of row pieces becomes a
      `neuroshard.rank_reduce_scatter`: the rank gives its partial sums
      (zeros if it holds no row piece of those columns) and receives its
      rows of the sum;
    * the lookups of a replicated table, one per device on its slice of the
      batch, become the rank's own lookup of its slice;
    * the module's `neuroshard.rank` records the rank: its weight arena
      holds the shards the plan places on this device (a row piece's rows
      only), and nothing else.

    Arguments are kept, so every rank's program has the original signature.
    After the exchange, the pass supports `tensor.extract_slice` of whole
    rows, `tensor.concat` along columns and `func.return`; anything else is
    reported rather than guessed. `--neuroshard-spmd-backward` adds the
    training step's backward to the rank's program; `backward=true` is kept
    for one release as an alias that runs it after this pass.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", "-1",
           "The rank (device) whose program to build">,
    Option<"backward", "backward", "bool", "false",
           "Deprecated alias: also run --neuroshard-spmd-backward">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SPMDBackward : Pass<"neuroshard-spmd-backward", "::mlir::ModuleOp"> {
  let summary = "Add the backward step to one rank's program";
  let description = [{
    In a rank's program (`--neuroshard-spmd`), every function `@f` with
    lookups or collectives gets `@f_backward` (marked
    `neuroshard.backward_of = @f`), one training step's backward for the
    rank: it takes `@f`'s arguments, the gradient of each of `@f`'s results
    (the rank's rows) and the learning rate (`f32`), and walks `@f`
    backwards: column concatenations and slices place the gradients, every
    collective is reversed in reverse order on every rank
    (`neuroshard.exchange_gradient`, and for row pieces
    `neuroshard.rank_reduce_scatter_gradient`, an all-gather), and the
    rank's shards are updated with `neuroshard.fused_embedding_bag_sgd`
    (`all_reduce` for replicas, which sums every rank's gradient first).

    Refused with a diagnostic: a module that is not one rank's program, a
    value whose gradient two uses would have to sum (a column returned in
    two results, overlapping slices), an operation other than lookups,
    collectives, slices and concatenations between the lookups and the
    results, a fused lookup mixing replicas and other shards, and a
    function `@f_backward` that already exists.

    ```sh
    build/bin/neuroshard-opt build/dlrm.imported.mlir --neuroshard-spmd="rank=1" \
        --neuroshard-spmd-backward -o build/dlrm.rank1.mlir
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // NEUROSHARD_TRANSFORMS_PASSES_TD
