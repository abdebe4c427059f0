// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd=rank=0 | FileCheck %s --check-prefix=RANK0
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd=rank=1 | FileCheck %s --check-prefix=RANK1
// RUN: neuroshard-opt %s --neuroshard-spmd=rank=1 | FileCheck %s --check-prefix=DIRECT
// The program of each rank round-trips and lowers (its arena holds its
// device's shards, named by their columns).
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd=rank=0 \
// RUN:   | neuroshard-opt | neuroshard-opt --neuroshard-lower-lookups-cpu | FileCheck %s --check-prefix=LOWER0
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/mixed-sharded.mlir --neuroshard-spmd=rank=1 \
// RUN:   | neuroshard-opt --neuroshard-to-cpu -o /dev/null

// Rank 0 keeps device 0's lookup, exchanges it, and rebuilds its 33 rows of
// every result from the same columns as the sharded module.
// RANK0:      module attributes {neuroshard.rank = 0 : i64
// RANK0:      func.func @embed(%arg0: tensor<?xi32>, %arg1: tensor<66xi32>, %arg2: tensor<?xi32>, %arg3: tensor<66xi32>, %arg4: tensor<?xi64>, %arg5: tensor<66xi64>)
// RANK0-SAME:   -> (tensor<33x64xf32>, tensor<33x32xf32>, tensor<33x16xf32>)
// RANK0-NEXT:   %[[D0:.+]] = neuroshard.fused_embedding_bag device 0 [
// RANK0:        ] : tensor<65x48xf32>
// RANK0-NEXT:   %[[X:.+]] = neuroshard.exchange %[[D0]] rank 0 widths [48, 64] batches [33, 32] : tensor<65x48xf32> -> tensor<33x112xf32>
// RANK0-NEXT:   %[[S0:.+]] = tensor.extract_slice %[[X]][0, 0] [33, 16] [1, 1]
// RANK0-NEXT:   %[[S1:.+]] = tensor.extract_slice %[[X]][0, 48] [33, 32] [1, 1]
// RANK0-NEXT:   %[[S2:.+]] = tensor.extract_slice %[[X]][0, 16] [33, 16] [1, 1]
// RANK0-NEXT:   %[[S:.+]] = tensor.concat dim(1) %[[S0]], %[[S1]], %[[S2]] : {{.*}} -> tensor<33x64xf32>
// RANK0-NEXT:   %[[P:.+]] = tensor.extract_slice %[[X]][0, 80] [33, 32] [1, 1]
// RANK0-NEXT:   %[[L:.+]] = tensor.extract_slice %[[X]][0, 32] [33, 16] [1, 1]
// RANK0-NEXT:   return %[[S]], %[[P]], %[[L]] : tensor<33x64xf32>, tensor<33x32xf32>, tensor<33x16xf32>
// RANK0-NOT:  device 1
// RANK0-NOT:  all_to_all

// RANK1:      module attributes {neuroshard.rank = 1 : i64
// RANK1:      -> (tensor<32x64xf32>, tensor<32x32xf32>, tensor<32x16xf32>)
// RANK1-NEXT:   %[[D1:.+]] = neuroshard.fused_embedding_bag device 1 [
// RANK1:        ] : tensor<65x64xf32>
// RANK1-NEXT:   neuroshard.exchange %[[D1]] rank 1 widths [48, 64] batches [33, 32] : tensor<65x64xf32> -> tensor<32x112xf32>

// LOWER0: module attributes {neuroshard.rank = 0 : i64, neuroshard.topology = {{.*}}, neuroshard.weight_tables = ["split[0:16]", "split[48:64]", "long"]}
// LOWER0: func.func private @neuroshard_exchange_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?xi64>, memref<?xi64>, i64) attributes {llvm.emit_c_interface}
// LOWER0: call @neuroshard_exchange_f32(

// A hand-written exchange whose results are used one by one: rank 1 uses
// its own slice and nothing else.
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @t : rows 10, dim 8, f32
      shards [#neuroshard.shard<cols = 0 to 4, device = 0>,
              #neuroshard.shard<cols = 4 to 8, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>) -> tensor<2x8xf32> {
    %d0 = neuroshard.fused_embedding_bag device 0 [
        @t cols 0 to 4 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %d1 = neuroshard.fused_embedding_bag device 1 [
        @t cols 4 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)] : tensor<4x4xf32>
    %x:2 = neuroshard.all_to_all %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>
        -> tensor<2x8xf32>, tensor<2x8xf32>
    return %x#1 : tensor<2x8xf32>
  }
}
// DIRECT:      func.func @f(%{{.*}}) -> tensor<2x8xf32> {
// DIRECT-NEXT:   %[[D:.+]] = neuroshard.fused_embedding_bag device 1
// DIRECT:        ] : tensor<4x4xf32>
// DIRECT-NEXT:   %[[X:.+]] = neuroshard.exchange %[[D]] rank 1 widths [4, 4] batches [2, 2] : tensor<4x4xf32> -> tensor<2x8xf32>
// DIRECT-NEXT:   return %[[X]] : tensor<2x8xf32>
