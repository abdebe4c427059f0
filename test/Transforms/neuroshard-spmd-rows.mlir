// The rank programs of a plan with row pieces and replicas
// (neuroshard-materialize-rows.mlir's 3-device plan).
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/row-pieces.mlir \
// RUN:   --neuroshard-import-plan=file=%S/Inputs/row-pieces.plan.json --neuroshard-materialize -o %t.mlir
// RUN: neuroshard-opt %t.mlir --neuroshard-spmd="rank=1 backward=true" | FileCheck %s
// They lower: the collectives become calls of the runtime, the update of
// replicas a call that sums every rank's gradient first, and the arena holds
// the rank's row blocks.
// RUN: neuroshard-opt %t.mlir --neuroshard-spmd="rank=1 backward=true" \
// RUN:   | neuroshard-opt --neuroshard-lower-lookups-cpu | FileCheck %s --check-prefix=LOWER
// RUN: neuroshard-opt %t.mlir --neuroshard-spmd="rank=0 backward=true" \
// RUN:   | neuroshard-opt --neuroshard-to-cpu -o /dev/null

// Rank 1 keeps its buckets, its fused lookup of the whole batch and its
// lookup of the replica on its 22 bags. Every reduce-scatter has a side on
// every rank: partial sums where the rank holds a row piece of the
// columns, zeros where it does not.
// CHECK:      func.func @embed(
// CHECK-SAME:   -> (tensor<22x16xf32>, tensor<22x16xf32>, tensor<22x16xf32>, tensor<22x8xf32>, tensor<22x8xf32>)
// CHECK:        %[[L:.+]] = neuroshard.fused_embedding_bag device 1 [
// CHECK-NEXT:     @whole cols 0 to 8
// CHECK-NEXT:     @rows rows 167 to 334 cols 0 to 16
// CHECK:        ] : tensor<65x40xf32>
// CHECK-NOT:    device 0
// CHECK-NOT:    device 2
// CHECK:        neuroshard.exchange %{{.+}} rank 1 widths [0, 8, 0] batches [22, 22, 21] : tensor<65x8xf32> -> tensor<22x8xf32>
// CHECK:        %[[OFF:.+]] = tensor.extract_slice %arg7[22] [23] [1]
// CHECK-NEXT:   %[[REP:.+]] = neuroshard.fused_embedding_bag device 1 [
// CHECK-NEXT:     @small cols 0 to 8 mean(%arg6, %[[OFF]] : tensor<?xi64>, tensor<23xi64>)
// CHECK-NEXT:   ] : tensor<22x8xf32>
// CHECK:        %[[P:.+]] = tensor.extract_slice %[[L]][0, 8] [65, 16] [1, 1]
// CHECK-NEXT:   %[[R:.+]] = neuroshard.rank_reduce_scatter %[[P]] rank 1 batches [22, 22, 21] : tensor<65x16xf32> -> tensor<22x16xf32>
// CHECK:        %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<65x8xf32>
// CHECK-NEXT:   neuroshard.rank_reduce_scatter %[[Z]] mean(%arg3 : tensor<66xi64>) rank 1
// CHECK:        return %[[R]], %{{.+}}, %{{.+}}, %[[REP]], %{{.+}} :

// The backward runs the reverse of every collective, last first: the
// all-gather of each reduce-scatter's gradient (divided by the bags' lengths
// for a mean), the replica's update summed over ranks, the reverse exchange,
// and the update of the rank's pieces with its buckets.
// CHECK:      func.func @embed_backward(
// CHECK-COUNT-3: neuroshard.rank_reduce_scatter_gradient
// CHECK:        neuroshard.rank_reduce_scatter_gradient %arg10 rank 1 batches [22, 22, 21] : tensor<22x16xf32> -> tensor<65x16xf32>
// CHECK:        neuroshard.fused_embedding_bag_sgd device 1 [
// CHECK-NEXT:     @small cols 0 to 8 mean
// CHECK-NEXT:   ] gradient %arg13 lr %arg15 all_reduce : tensor<22x8xf32>
// CHECK-NEXT:   %[[X:.+]] = neuroshard.exchange_gradient %arg14 rank 1
// CHECK:        neuroshard.bucketize %arg0, %arg1 rows [0, 167, 334, 500]
// CHECK:        neuroshard.fused_embedding_bag_sgd device 1 [
// CHECK-NEXT:     @whole cols 0 to 8
// CHECK-NEXT:     @rows rows 167 to 334 cols 0 to 16 sum(%block_indices#1, %block_offsets#1
// CHECK:        ] gradient %{{.+}} lr %arg15 : tensor<65x40xf32>

// LOWER: neuroshard.weight_tables = ["rows[167:334, 0:16]", "grid[100:400, 0:8]", "sparse[0:150, 8:16]", "small", "whole"]
// LOWER-DAG: func.func private @neuroshard_reduce_scatter_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?xi64>, memref<?xi64>, i64) attributes {llvm.emit_c_interface}
// LOWER-DAG: func.func private @neuroshard_reduce_scatter_gradient_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?xi64>, memref<?xi64>, i64) attributes {llvm.emit_c_interface}
// LOWER-DAG: func.func private @neuroshard_replica_sgd_i64(
// LOWER: call @neuroshard_reduce_scatter_f32(
// LOWER: call @neuroshard_replica_sgd_i64(
// LOWER: call @neuroshard_exchange_gradient_f32(
