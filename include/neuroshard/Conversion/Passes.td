//===- Passes.td - NeuroShard conversion passes ------------*- tablegen -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CONVERSION_PASSES_TD
#define NEUROSHARD_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerLookupsToCPU : Pass<"neuroshard-lower-lookups-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower NeuroShard lookups to calls of the generic CPU kernels";
  let description = [{
    The first step of `--neuroshard-to-cpu`. Adds the generic fused kernels
    of `neuroshard/Runtime/KernelABI.h` to the module as `func.func`s
    written in `scf`, `memref` and `vector` (a forward and a backward-SGD
    kernel for i32 and for i64 indices; their loops over a shard's columns
    use 128- down to 1-wide vectors and prefetch rows a few indices
    ahead), and rewrites every lookup:

    * `neuroshard.embedding_bag` and `neuroshard.fused_embedding_bag`
      become one call of the forward kernel: their indices and offsets are
      concatenated into one buffer each (widened to i64 when index types
      differ), a metadata buffer describes every shard, and the result is a
      freshly allocated `B x W` buffer;
    * `neuroshard.all_to_all` becomes `tensor.extract_slice`s of every
      device's rows and a `tensor.concat` per device, which is what the
      exchange computes when all devices share one address space;
    * `neuroshard.table`s are erased; a function with lookups gains two
      trailing arguments, the weight arena (`memref<?xf32>`, argument
      attribute `neuroshard.weights`) and the table layout (`memref<?xi64>`,
      `neuroshard.layout`: the arena offset of each table's row 0), and the
      module's `neuroshard.weight_tables` lists the tables in layout order;
    * an entry of a shard in host memory (`cache_rows` on its shard) reads
      its device cache, an arena piece after the tables
      (`t cache[r0:r1, c0:c1]` in `neuroshard.weight_tables`), at the
      locations a call of `neuroshard_row_cache_fetch_i32` (or `_i64`)
      gives for its indices; the runtime that runs the module owns the
      caches (docs/lowering.md, "Running a module through its caches").

    The output still holds tensors; the rest of `--neuroshard-to-cpu`
    bufferizes it and converts it to the LLVM dialect.

    The rewrite is a partial dialect conversion: every `neuroshard`
    operation is illegal afterwards, so an op the patterns cannot lower
    fails the pass. Its patterns are exported
    (`populateLookupToKernelCallPatterns`,
    `populateAllToAllToSlicesPatterns` in
    `neuroshard/Conversion/LookupToKernelCalls.h`) for pipelines that
    compose them with their own; `prepareLookupConversion` adds the weight
    arguments they read first.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def ExpandStridedCopies
    : Pass<"neuroshard-expand-strided-copies", "::mlir::ModuleOp"> {
  let summary = "Expand memref.copy between strided buffers into loops";
  let description = [{
    Rewrites every `memref.copy` whose source or target has a non-identity
    layout (the slices of a lowered exchange have them) into an `scf.for`
    nest of loads and stores. The LLVM lowering turns copies of identity
    layouts into `memcpy` but calls MLIR's C runner library for strided
    ones; after this pass lowered modules never need that library.
    `--neuroshard-to-cpu` and the CUDA host pipeline run it after
    bufferization.

    ```mlir
    memref.copy %src, %dst : memref<4x2xf32, strided<[8, 1], offset: 2>>
                          to memref<4x2xf32>
    // becomes
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c2 step %c1 {
        %v = memref.load %src[%i, %j] : memref<4x2xf32, strided<...>>
        memref.store %v, %dst[%i, %j] : memref<4x2xf32>
      }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // NEUROSHARD_CONVERSION_PASSES_TD
