//===- Passes.td - NeuroShard CUDA lowering passes ---------*- tablegen -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_PASSES_TD
#define NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertNeuroShardToCUDA : Pass<"neuroshard-to-cuda", "::mlir::ModuleOp"> {
  let summary = "Add the generic CUDA embedding kernels and lower lookups to "
                "kernel calls";
  let description = [{
    Adds `gpu.module @neuroshard_kernels [#nvvm.target<chip = ...>]` with the
    generic kernels of `KernelABI.h` (forward and backward+SGD, the count,
    scan and scatter steps of bucketization, and the fetch through the row
    cache of a shard in host memory, for i32 and i64 indices) as
    `gpu.func ... kernel`, and marks the module as a
    `gpu.container_module`. Every shard's description is read from the
    metadata buffer at run time, so the module is the same for every model
    and every shard set.

    With `host=true` (the default), the module's lookups are lowered with the
    lookup lowering the CPU target uses (`LookupLowering.h`): every
    `neuroshard.embedding_bag` and `neuroshard.fused_embedding_bag` becomes
    one `func.call` of a kernel symbol on memrefs (metadata, concatenated
    indices and offsets, a fresh output buffer), the exchange becomes slices
    and concatenations, each `neuroshard.bucketize` becomes one call of
    `neuroshard_bucketize_i32` or `_i64` (row boundaries, indices, offsets,
    every block's offsets and all blocks' indices) followed by copies of each
    block's pair out of them, an entry of a shard in host memory reads the
    locations that a call of `neuroshard_row_cache_fetch_kernel_i32` or
    `_i64` writes on a copy of its cache's state (which the runtime hands
    out through `neuroshard_row_cache_state_words` and
    `neuroshard_row_cache_copy_state`), tables are erased and functions with lookups
    gain the weight arena and table layout arguments. `--neuroshard-cuda-launch` turns
    those calls into GPU launches once the host code is bufferized.

    ```mlir
    %0 = neuroshard.embedding_bag @t(%i, %o) sum
        : (tensor<?xi32>, tensor<5xi32>) -> tensor<4x16xf32>
    // becomes (abridged)
    func.call @neuroshard_bag_forward_i32(%meta, %layout, %weights, %idx,
        %off, %out) : (memref<?xi64>, memref<?xi64>, memref<?xf32>,
        memref<?xi32>, memref<?xi32>, memref<?x?xf32>) -> ()
    ```

    The module fails with a diagnostic, unchanged, if the chip, the features,
    the optimisation level or `merged-rows` are malformed, if it already holds a symbol
    `neuroshard_kernels`, or if the lookup lowering refuses a lookup.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_90\"",
           "CUDA architecture of the kernels: sm_<N>, optionally with an "
           "'a' or 'f' suffix">,
    Option<"features", "features", "std::string", "\"\"",
           "PTX features, e.g. +ptx80 (with no +ptx item: +ptx81 on sm_90 "
           "and later, whose backward kernel then adds 16 bytes per vector "
           "atomic, and the backend's default on older chips)">,
    Option<"optLevel", "opt-level", "unsigned", "3",
           "Optimisation level of the device code, 0 to 3">,
    Option<"host", "host", "bool", "true",
           "Lower the module's lookups into calls of the kernel symbols">,
    Option<"mergedRows", "merged-rows", "int", "-1",
           "Rows of a bag the backward kernel holds back to merge repeated "
           "indices: 0 to 8, or -1 for the most that fit in registers (3 "
           "with i32 indices, 2 with i64); 0 adds one atomic per index">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def LaunchCUDAKernels : Pass<"neuroshard-cuda-launch", "::mlir::ModuleOp"> {
  let summary = "Turn host calls of the kernel symbols into GPU launches";
  let description = [{
    Every `func.call` of one of the four kernel symbols with the memref
    signature of `KernelABI.h` (what the lookup lowering emits) becomes a
    launch of the kernel of `@neuroshard_kernels`: device buffers
    (`gpu.alloc`), uploads, `gpu.launch_func` with the geometry of
    `KernelABI.h`, the download of the result (the output after
    forward, the weights after backward) and `gpu.dealloc`, on one stream
    that the call waits for. A call of the bucketization becomes the
    launches of its count, scan and scatter kernels in order, with both
    outputs downloaded after the last. Declarations of the kernel symbols that are no
    longer used are erased.

    ```mlir
    func.call @neuroshard_bag_forward_i32(%meta, %layout, %weights, %idx,
        %off, %out) : (...) -> ()
    // becomes
    %t = gpu.wait async
    %d0, %t0 = gpu.alloc async [%t] (%n) : memref<?xi64>
    ...
    %tl = gpu.launch_func async [%t9] @neuroshard_kernels::@neuroshard_bag_forward_i32
        blocks in (%gx, %gy, %c1) threads in (%c256, %c1, %c1) args(...)
    ```

    Runs after bufferization (its `gpu.dealloc`s would otherwise meet the
    buffer deallocation pipeline). Fails, leaving the module unchanged, if a
    kernel call has another signature or the module has no kernels module.
  }];
  let statistics = [
    Statistic<"numLaunches", "launches", "Kernel calls turned into launches">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def ExportCUDAKernels : Pass<"neuroshard-export-cuda", "::mlir::ModuleOp"> {
  let summary = "Write the compiled kernels and a launch manifest for the "
                "CUDA runner";
  let description = [{
    Writes the object of `gpu.binary @neuroshard_kernels` (a cubin, PTX or
    fatbin, as `gpu-module-to-binary` produced it) to `binary`, and the
    launch manifest of the module's lookups to `manifest`: the tables with
    their statistics, every lookup (one per distinct indices value), and one
    entry per `neuroshard.fused_embedding_bag` with its device, the bags of
    the batch it looks up and its shards (an unsharded
    `neuroshard.embedding_bag` counts as a whole-table shard on device 0). A
    row piece is listed with its rows and the lookup its
    `neuroshard.bucketize` block was cut from; a launch of replicas with the
    slice of the lookup's bags its offsets are cut from; a shard in host
    memory with its cache's rows and the power law fitted to its table's
    histogram, on a launch of i64 indices.
    `neuroshard-cuda-runner` reads both; docs/lowering.md describes the
    format. The module itself is not changed.

    Fails with a diagnostic if the module has no kernel binary, no lookups,
    a table without `pooling_factor` and `access_hist`, a table that is not
    f32, lookups of different static batch sizes, a row piece whose indices
    are not its block of a `neuroshard.bucketize`, a replica whose offsets
    are not a contiguous static slice of its lookup's offsets or a launch whose
    replicas look up different bags or sit beside other shards, or if a
    file cannot be written.
  }];
  let options = [
    Option<"manifest", "manifest", "std::string", "\"\"",
           "Path of the text launch manifest to write">,
    Option<"binary", "binary", "std::string", "\"\"",
           "Path of the kernel object to write (the manifest names it "
           "relative to its own directory when they share one)">,
    Option<"seed", "seed", "uint64_t", "0",
           "Input-generator seed recorded in the manifest">,
    Option<"lr", "lr", "double", "0.01",
           "SGD learning rate recorded in the manifest">
  ];
}

#endif // NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_PASSES_TD
