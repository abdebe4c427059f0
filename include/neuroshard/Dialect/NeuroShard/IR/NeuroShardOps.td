//===- NeuroShardOps.td - NeuroShard operations ------------*- tablegen -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDOPS_TD
#define NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDOPS_TD

include "neuroshard/Dialect/NeuroShard/IR/NeuroShardBase.td"
include "neuroshard/Dialect/NeuroShard/IR/NeuroShardAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NeuroShard_IndexTensor : 1DTensorOf<[I32, I64]>;
def NeuroShard_PooledTensor : 2DTensorOf<[F32, F16, BF16]>;
def NeuroShard_ShardArrayAttr
    : TypedArrayAttrBase<NeuroShard_ShardAttr, "array of table shards">;
def NeuroShard_PoolingModeArrayAttr
    : TypedArrayAttrBase<NeuroShard_PoolingModeAttr, "array of pooling modes">;

//===----------------------------------------------------------------------===//
// TableOp
//===----------------------------------------------------------------------===//

def NeuroShard_TableOp : NeuroShard_Op<"table", [Symbol]> {
  let summary = "an embedding table";
  let description = [{
    Declares an embedding table of `rows x dim` elements. The attributes the
    cost model reads are optional in the IR, but the sharding pass requires
    them:

    * `pooling_factor`: the mean number of indices per bag;
    * `access_hist`: 17 bins of the access histogram of one batch of the
      table's lookups (B bags, B the batch size of its `embedding_bag`
      results): bin 0 is the fraction of the distinct rows that batch hits
      once, bin j = 1..15 the fraction hit (2^(j-1), 2^j] times, bin 16 the
      fraction hit more than 2^15 times. The bins sum to 1, or are all zero
      for a table that is never hit. The lookups' verifier checks that one
      batch of B bags with the pooling factor's B * pooling_factor indices
      can produce the histogram over at most `rows` distinct rows.

    Planner constraints: `pinned_device` keeps the whole table on one device,
    `no_split` forbids column splits, and `sharding_types` lists the kinds
    of shards the table may take (TorchRec's `ShardingType` names:
    `table_wise`, `column_wise`, `row_wise`, `table_row_wise`,
    `data_parallel`; every kind when absent), as TorchRec's
    `ParameterConstraints.sharding_types` does.

    `module_path` is the table's name in the model it comes from, such as
    the PyTorch module path `sparse.user_id`, which the symbol can only
    spell in a symbol-safe form (`sparse_user_id`). Plans and reports (the
    plan table, the JSON plan, the TorchRec export, diagnostics of the
    planner) name the table by it.

    After sharding, `shards` records where each column range lives.

    ```mlir
    neuroshard.table @user : rows 4000000, dim 128, f32 {
      pooling_factor = 12.5 : f64,
      access_hist = array<f64: 0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01, 0.02,
                               0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
    neuroshard.table @item : rows 100000, dim 64, f16
        shards [#neuroshard.shard<cols = 0 to 32, device = 0>,
                #neuroshard.shard<cols = 32 to 64, device = 1>]
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    // Checked by the verifier with the shared table rules (TableRules.h),
    // so that every reader words a broken rule alike.
    I64Attr:$rows,
    I64Attr:$dim,
    TypeAttrOf<AnyTypeOf<[F32, F16, BF16]>>:$element_type,
    OptionalAttr<F64Attr>:$pooling_factor,
    OptionalAttr<DenseF64ArrayAttr>:$access_hist,
    OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$pinned_device,
    UnitAttr:$no_split,
    OptionalAttr<StrArrayAttr>:$sharding_types,
    OptionalAttr<NeuroShard_ShardArrayAttr>:$shards,
    OptionalAttr<StrAttr>:$module_path
  );
  let assemblyFormat = [{
    $sym_name `:` `rows` $rows `,` `dim` $dim `,` $element_type
    (`shards` $shards^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Size of the table in bytes.
    int64_t getSizeInBytes();
    /// Rows and columns as signed values, as the rest of the code uses them.
    int64_t getNumRows() { return static_cast<int64_t>(getRows()); }
    int64_t getNumCols() { return static_cast<int64_t>(getDim()); }
    /// The mean number of indices per bag, if recorded.
    std::optional<double> getPoolingFactorValue() {
      if (FloatAttr attr = getPoolingFactorAttr())
        return attr.getValueAsDouble();
      return std::nullopt;
    }
    /// The name reports give the table: its module path if it has one,
    /// else its symbol.
    ::llvm::StringRef getReportName() {
      if (std::optional<::llvm::StringRef> path = getModulePath())
        return *path;
      return getSymName();
    }
    /// True when the table's shards are replicas (a data-parallel table).
    bool isReplicated() {
      return getShardsAttr() &&
             ::llvm::any_of(getShardsAttr().getAsRange<ShardAttr>(),
                            [](ShardAttr shard) { return shard.getReplica(); });
    }
    /// True when the table carries the statistics the cost model needs.
    bool hasCostStatistics() {
      return getPoolingFactor().has_value() && getAccessHist().has_value();
    }
  }];
}

//===----------------------------------------------------------------------===//
// EmbeddingBagOp
//===----------------------------------------------------------------------===//

def NeuroShard_EmbeddingBagOp : NeuroShard_Op<"embedding_bag", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    AllElementTypesMatch<["indices", "offsets"]>]> {
  let summary = "pooled lookup into one embedding table";
  let description = [{
    For every bag `b` of the batch, reduces (`sum` or `mean`) the table rows
    named by `indices[offsets[b] .. offsets[b+1])` into row `b` of the
    result. `offsets` has `B + 1` entries, the last being the number of
    indices; an empty bag yields zeros. The result is `B x dim` of the
    table's element type.

    A table several features look up (one lookup each) may give every
    lookup its own statistics, `pooling_factor` and `access_hist` with the
    table's meaning, for this lookup's bags alone; the sharding pass then
    prices the table as the sum of its lookups' work. Either every lookup
    of the table carries them or none does.

    ```mlir
    %0 = neuroshard.embedding_bag @user(%idx, %off) sum
        : (tensor<?xi32>, tensor<1025xi32>) -> tensor<1024x128xf32>
    %1 = neuroshard.embedding_bag @shared(%idx2, %off2) sum
        {pooling_factor = 4.0 : f64, access_hist = array<f64: 0.5, 0.5, 0.0,
         0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
        : (tensor<?xi32>, tensor<1025xi32>) -> tensor<1024x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$table,
                       NeuroShard_IndexTensor:$indices,
                       NeuroShard_IndexTensor:$offsets,
                       NeuroShard_PoolingModeAttr:$mode,
                       OptionalAttr<F64Attr>:$pooling_factor,
                       OptionalAttr<DenseF64ArrayAttr>:$access_hist);
  let results = (outs NeuroShard_PooledTensor:$result);
  let assemblyFormat = [{
    $table `(` $indices `,` $offsets `)` custom<PoolingMode>($mode) attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FusedEmbeddingBagOp
//===----------------------------------------------------------------------===//

def NeuroShard_FusedEmbeddingBagOp : NeuroShard_Op<"fused_embedding_bag", [
    Pure, SameVariadicOperandSize,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "one device's fused lookup over all table shards placed on it";
  let description = [{
    The single kernel a device runs: every entry looks up columns
    `begin to end` (end excluded) of one table with its own indices and offsets and writes
    the pooled rows into the entry's slice of the result. Entries are laid
    out left to right in the order written, so the result is
    `B x sum(end - begin)` in one buffer. All entries share the batch size
    and the element type of the result.

    An entry that reads a row piece names its rows, `rows r0 to r1`: its
    indices are the piece's local rows (index `i` reads row `r0 + i` of the
    table), as `neuroshard.bucketize` produces them, and it pools partial
    sums of the bags. An entry's offsets index into its indices; a batch
    slice of a lookup (a data-parallel replica's share of the bags) may use
    a slice of the lookup's offsets with the lookup's whole indices.

    When the lookups it fuses had statistics of their own (a table shared
    by several features), `pooling_factors` (one per entry) and
    `access_hists` (17 bins per entry, entry after entry) keep them, so that
    tools that generate or measure the inputs of a sharded module see the
    same lookups as in the module before sharding.

    ```mlir
    %f = neuroshard.fused_embedding_bag device 1 [
        @user cols 0 to 64 sum(%idx0, %off0 : tensor<?xi32>, tensor<1025xi32>),
        @item cols 0 to 32 mean(%idx1, %off1 : tensor<?xi64>, tensor<1025xi64>),
        @ads rows 500 to 1000 cols 0 to 16 sum(%b1, %o1
                                               : tensor<?xi32>, tensor<1025xi32>)
      ] : tensor<1024x112xf32>
    ```
  }];
  let arguments = (ins
    ConfinedAttr<I64Attr, [IntNonNegative]>:$device,
    FlatSymbolRefArrayAttr:$tables,
    DenseI64ArrayAttr:$col_begins,
    DenseI64ArrayAttr:$col_ends,
    NeuroShard_PoolingModeArrayAttr:$modes,
    Variadic<NeuroShard_IndexTensor>:$indices,
    Variadic<NeuroShard_IndexTensor>:$offsets,
    OptionalAttr<DenseF64ArrayAttr>:$pooling_factors,
    OptionalAttr<DenseF64ArrayAttr>:$access_hists,
    OptionalAttr<DenseI64ArrayAttr>:$row_begins,
    OptionalAttr<DenseI64ArrayAttr>:$row_ends
  );
  let results = (outs NeuroShard_PooledTensor:$result);
  let assemblyFormat = [{
    `device` $device
    custom<FusedEntries>($tables, $row_begins, $row_ends, $col_begins,
                         $col_ends, $modes, $indices, $offsets,
                         type($indices), type($offsets))
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of (table shard, indices, offsets) entries.
    unsigned getNumEntries() { return getTables().size(); }
    /// Name of the table looked up by entry `i`.
    ::llvm::StringRef getEntryTable(unsigned i);
    /// Width (columns) of entry `i`.
    int64_t getEntryWidth(unsigned i) {
      return getColEnds()[i] - getColBegins()[i];
    }
  }];
}

//===----------------------------------------------------------------------===//
// BucketizeOp
//===----------------------------------------------------------------------===//

def NeuroShard_BucketizeOp : NeuroShard_Op<"bucketize", [
    Pure, SameVariadicResultSize]> {
  let summary = "split a lookup's indices by contiguous row blocks";
  let description = [{
    The input distribution of a row-wise table: `rows` lists the boundaries
    `r0 < r1 < ... < rk` of k row blocks, and result pair `j` (its indices
    and offsets) holds, bag by bag and in order, the indices `i` of the
    lookup with `r_j <= i < r_{j+1}`, shifted to the block's local row
    `i - r_j`. Every pair has the lookup's `B + 1` offsets, starting at 0;
    a bag with no index in a block is empty there. Indices outside
    `[r0, rk)` go to no block.

    ```mlir
    %i:2, %o:2 = neuroshard.bucketize %idx, %off rows [0, 500, 1000]
        : tensor<?xi32>, tensor<1025xi32>
        -> (tensor<?xi32>, tensor<?xi32>), (tensor<1025xi32>, tensor<1025xi32>)
    ```
  }];
  let arguments = (ins NeuroShard_IndexTensor:$indices,
                       NeuroShard_IndexTensor:$offsets,
                       DenseI64ArrayAttr:$rows);
  let results = (outs Variadic<NeuroShard_IndexTensor>:$block_indices,
                      Variadic<NeuroShard_IndexTensor>:$block_offsets);
  let assemblyFormat = [{
    $indices `,` $offsets `rows` $rows attr-dict `:` type($indices) `,`
    type($offsets) `->` `(` type($block_indices) `)` `,`
    `(` type($block_offsets) `)`
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ReduceScatterOp
//===----------------------------------------------------------------------===//

def NeuroShard_ReduceScatterOp : NeuroShard_Op<"reduce_scatter", [
    Pure, AttrSizedOperandSegments]> {
  let summary = "sum partial lookups while scattering the batch";
  let description = [{
    The output distribution of a row-wise table: every operand is one row
    piece's `B x W` partial sums of the same columns of the batch, and
    result `d` is device `d`'s slice of the batch, `B_d x W`, of their sum;
    the rows of device `d` follow those of devices `0 .. d-1`, so the
    `B_d` sum to `B`. With `mean` and the lookup's offsets, every bag's
    sum is divided by the whole bag's length after the reduction (an empty
    bag stays zero), which is how mean pooling splits over row pieces.

    ```mlir
    %r:2 = neuroshard.reduce_scatter %p0, %p1 mean(%off : tensor<1025xi32>)
        : tensor<1024x16xf32>, tensor<1024x16xf32>
        -> tensor<512x16xf32>, tensor<512x16xf32>
    ```
  }];
  let arguments = (ins Variadic<NeuroShard_PooledTensor>:$inputs,
                       Optional<NeuroShard_IndexTensor>:$mean_offsets);
  let results = (outs Variadic<NeuroShard_PooledTensor>:$results);
  let assemblyFormat = [{
    $inputs (`mean` `(` $mean_offsets^ `:` type($mean_offsets) `)`)?
    attr-dict `:` type($inputs) `->` type($results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AllToAllOp
//===----------------------------------------------------------------------===//

def NeuroShard_AllToAllOp : NeuroShard_Op<"all_to_all", [Pure]> {
  let summary = "exchange pooled columns between devices";
  let description = [{
    Operand `d` is device `d`'s fused lookup result for the whole batch
    (`B x W_d`; widths differ per device). Result `d` is the slice of the
    batch that device `d` owns, with every device's columns concatenated in
    device order: `B_d x (W_0 + ... + W_{N-1})`. The result types fix the
    batch split, the `B_d` summing to `B`. This is the all-to-all of
    model-parallel embeddings feeding a data-parallel dense part.

    ```mlir
    %r:2 = neuroshard.all_to_all %f0, %f1
        : tensor<1024x96xf32>, tensor<1024x64xf32>
        -> tensor<512x160xf32>, tensor<512x160xf32>
    ```
  }];
  let arguments = (ins Variadic<NeuroShard_PooledTensor>:$inputs);
  let results = (outs Variadic<NeuroShard_PooledTensor>:$results);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ExchangeOp
//===----------------------------------------------------------------------===//

def NeuroShard_ExchangeOp : NeuroShard_Op<"exchange"> {
  let summary = "one rank's side of the all-to-all exchange";
  let description = [{
    The SPMD form of `neuroshard.all_to_all` (see `--neuroshard-spmd`): the
    program of rank `rank` gives its own fused lookup result for the whole
    batch (`B x widths[rank]`) and receives its slice of the batch with every
    rank's columns concatenated in rank order
    (`batches[rank] x (widths[0] + ... + widths[N-1])`). `widths` and
    `batches` list, per rank, the columns its fused lookup produces and the
    rows of the batch it owns; the rows of rank `d` are those after the rows
    of ranks `0 .. d-1`, so the `batches` sum to `B`. Every rank of the
    communicator must run the exchange with the same `widths` and
    `batches`, as the collective it lowers to requires.

    ```mlir
    %x = neuroshard.exchange %f1 rank 1 widths [96, 64] batches [512, 512]
        : tensor<1024x64xf32> -> tensor<512x160xf32>
    ```
  }];
  let arguments = (ins NeuroShard_PooledTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$rank,
                       DenseI64ArrayAttr:$widths,
                       DenseI64ArrayAttr:$batches);
  let results = (outs NeuroShard_PooledTensor:$result);
  let assemblyFormat = [{
    $input `rank` $rank `widths` $widths `batches` $batches attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ExchangeGradientOp
//===----------------------------------------------------------------------===//

def NeuroShard_ExchangeGradientOp : NeuroShard_Op<"exchange_gradient"> {
  let summary = "one rank's side of the exchange's backward direction";
  let description = [{
    The reverse of `neuroshard.exchange` with the same `rank`, `widths` and
    `batches`: the rank gives the gradient of its slice of the batch with
    every rank's columns (`batches[rank] x (widths[0] + ... +
    widths[N-1])`) and receives the gradient of its own fused lookup for the
    whole batch (`B x widths[rank]`). Rank `d`'s columns of every rank's
    slice go back to rank `d`. It is what `--neuroshard-spmd` emits in the
    backward function of a rank's program.

    ```mlir
    %g = neuroshard.exchange_gradient %dx rank 1 widths [96, 64]
        batches [512, 512] : tensor<512x160xf32> -> tensor<1024x64xf32>
    ```
  }];
  let arguments = (ins NeuroShard_PooledTensor:$gradient,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$rank,
                       DenseI64ArrayAttr:$widths,
                       DenseI64ArrayAttr:$batches);
  let results = (outs NeuroShard_PooledTensor:$result);
  let assemblyFormat = [{
    $gradient `rank` $rank `widths` $widths `batches` $batches attr-dict
    `:` type($gradient) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RankReduceScatterOp
//===----------------------------------------------------------------------===//

def NeuroShard_RankReduceScatterOp : NeuroShard_Op<"rank_reduce_scatter"> {
  let summary = "one rank's side of the reduce-scatter of row pieces";
  let description = [{
    The SPMD form of `neuroshard.reduce_scatter` (see `--neuroshard-spmd`):
    the program of rank `rank` gives its partial sums of the columns for the
    whole batch (`B x W`; zeros when the rank holds no row piece of them) and
    receives its slice of the batch of every rank's sum
    (`batches[rank] x W`). `batches` lists, per rank, the rows of the batch
    it owns, in rank order, summing to `B`. With `mean` and the lookup's
    offsets, each of the rank's bags is divided by its whole length after
    the reduction (an empty bag stays zero). Every rank of the communicator
    must run it with the same `batches`, as the collective it lowers to
    requires.

    ```mlir
    %s = neuroshard.rank_reduce_scatter %p mean(%off : tensor<1025xi32>)
        rank 1 batches [512, 512] : tensor<1024x16xf32> -> tensor<512x16xf32>
    ```
  }];
  let arguments = (ins NeuroShard_PooledTensor:$input,
                       Optional<NeuroShard_IndexTensor>:$mean_offsets,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$rank,
                       DenseI64ArrayAttr:$batches);
  let results = (outs NeuroShard_PooledTensor:$result);
  let assemblyFormat = [{
    $input (`mean` `(` $mean_offsets^ `:` type($mean_offsets) `)`)?
    `rank` $rank `batches` $batches attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RankReduceScatterGradientOp
//===----------------------------------------------------------------------===//

def NeuroShard_RankReduceScatterGradientOp
    : NeuroShard_Op<"rank_reduce_scatter_gradient"> {
  let summary = "one rank's side of the reduce-scatter's backward direction";
  let description = [{
    The reverse of `neuroshard.rank_reduce_scatter` with the same `rank`,
    `batches` and offsets: the rank gives the gradient of its slice of the
    batch (`batches[rank] x W`) and receives the gradient of its partial
    sums for the whole batch (`B x W`), which is every rank's slice gathered
    in rank order (an all-gather). With `mean`, every bag's gradient is
    first divided by the bag's whole length, the adjoint of the division
    after the reduction.

    ```mlir
    %g = neuroshard.rank_reduce_scatter_gradient %ds mean(%off : tensor<1025xi32>)
        rank 1 batches [512, 512] : tensor<512x16xf32> -> tensor<1024x16xf32>
    ```
  }];
  let arguments = (ins NeuroShard_PooledTensor:$gradient,
                       Optional<NeuroShard_IndexTensor>:$mean_offsets,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$rank,
                       DenseI64ArrayAttr:$batches);
  let results = (outs NeuroShard_PooledTensor:$result);
  let assemblyFormat = [{
    $gradient (`mean` `(` $mean_offsets^ `:` type($mean_offsets) `)`)?
    `rank` $rank `batches` $batches attr-dict `:` type($gradient) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FusedEmbeddingBagSGDOp
//===----------------------------------------------------------------------===//

def NeuroShard_FusedEmbeddingBagSGDOp
    : NeuroShard_Op<"fused_embedding_bag_sgd", [
        SameVariadicOperandSize, MemoryEffects<[MemWrite]>,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the SGD update of the table shards one device looks up";
  let description = [{
    The backward of `neuroshard.fused_embedding_bag` fused with plain SGD:
    with the same entries as the device's lookup and `gradient`, the
    gradient of that lookup's `B x sum(end - begin)` result, every row an
    entry's bag reads is updated in place,
    `w[row, begin:end] -= lr * scale * gradient[bag, entry's columns]`, with
    `scale` 1 for `sum` and 1 / (bag size) for `mean`. A row read several
    times is updated once per read. An entry of a row piece (`rows r0 to
    r1`) reads and updates local rows, as in the fused lookup. The tables
    are the op's memory: it has no result and is ordered with respect to
    other memory effects.

    With `all_reduce`, in the program of one rank, the entries are
    data-parallel replicas held by every rank and `gradient` is the rank's
    slice of the batch: the gradients of every rank's slice are summed
    (an all-reduce of each entry's rows) before one update, so that the
    replicas stay identical. Every rank runs it, as the collective
    requires.

    ```mlir
    neuroshard.fused_embedding_bag_sgd device 1 [
        @user cols 0 to 64 sum(%idx0, %off0 : tensor<?xi32>, tensor<1025xi32>)
      ] gradient %g lr %lr : tensor<1024x64xf32>
    ```
  }];
  let arguments = (ins
    ConfinedAttr<I64Attr, [IntNonNegative]>:$device,
    FlatSymbolRefArrayAttr:$tables,
    DenseI64ArrayAttr:$col_begins,
    DenseI64ArrayAttr:$col_ends,
    NeuroShard_PoolingModeArrayAttr:$modes,
    Variadic<NeuroShard_IndexTensor>:$indices,
    Variadic<NeuroShard_IndexTensor>:$offsets,
    NeuroShard_PooledTensor:$gradient,
    F32:$lr,
    OptionalAttr<DenseI64ArrayAttr>:$row_begins,
    OptionalAttr<DenseI64ArrayAttr>:$row_ends,
    UnitAttr:$all_reduce
  );
  let assemblyFormat = [{
    `device` $device
    custom<FusedEntries>($tables, $row_begins, $row_ends, $col_begins,
                         $col_ends, $modes, $indices, $offsets,
                         type($indices), type($offsets))
    `gradient` $gradient `lr` $lr (`all_reduce` $all_reduce^)? attr-dict
    `:` type($gradient)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of (table shard, indices, offsets) entries.
    unsigned getNumEntries() { return getTables().size(); }
    /// Name of the table updated by entry `i`.
    ::llvm::StringRef getEntryTable(unsigned i);
    /// Width (columns) of entry `i`.
    int64_t getEntryWidth(unsigned i) {
      return getColEnds()[i] - getColBegins()[i];
    }
  }];
}

#endif // NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDOPS_TD
