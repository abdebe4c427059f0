// A plan of row pieces, a grid of row and column pieces, row ranges that
// do not partition the rows, a replicated table and a whole table
// (Inputs/row-pieces.plan.json, on 3 devices) materializes into bucketized
// lookups, one fused lookup per device, the exchange of the whole table,
// a reduce-scatter per column cell of each row-split table, and per-device
// lookups of the replicas' batch slices. It computes what the unsharded
// module computes, forward and backward with SGD: sum and mean pooling, i32 and i64 indices, bags empty
// in a row block, 500 rows in 3 blocks, 65 bags over 3 devices.
// RUN: neuroshard-opt %S/../neuroshard-run/Inputs/row-pieces.mlir \
// RUN:   --neuroshard-import-plan=file=%S/Inputs/row-pieces.plan.json \
// RUN:   --neuroshard-materialize -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: neuroshard-run %S/../neuroshard-run/Inputs/row-pieces.mlir --compare %t.mlir \
// RUN:   | FileCheck %s --check-prefix=MATCH
// MATCH: (outputs), tolerance 1.0E-05: match
//
// The backward updates the same weights: each row piece the rows of its
// bucket with the result's gradient (divided by the whole bag's length for
// mean bags), each replica with its slice of the batch.
// RUN: neuroshard-run %S/../neuroshard-run/Inputs/row-pieces.mlir --compare %t.mlir \
// RUN:   --backward | FileCheck %s --check-prefix=BACKWARD
// BACKWARD: (updated weights), tolerance 1.0E-05: match
// (neuroshard-spmd-rows.mlir checks the rank programs of this module, and
// neuroshard-run/distributed-rows.test runs them over MPI.)

// CHECK-LABEL: func.func @embed
// CHECK-NOT: neuroshard.embedding_bag
// The row ranges of @rows and @grid partition their rows: one op each.
// CHECK: %[[R:.*]]:3, %[[RO:.*]]:3 = neuroshard.bucketize %arg0, %arg1 rows [0, 167, 334, 500]
// CHECK: %[[G:.*]]:2, %[[GO:.*]]:2 = neuroshard.bucketize %arg2, %arg3 rows [0, 100, 400]
// @sparse's piece of every row reads the lookup's indices; its other
// ranges are buckets of their own.
// CHECK: %[[S0:.*]], %[[SO0:.*]] = neuroshard.bucketize %arg4, %arg5 rows [0, 150]
// CHECK: %[[S1:.*]], %[[SO1:.*]] = neuroshard.bucketize %arg4, %arg5 rows [150, 300]
// Row pieces pool partial sums of their local rows.
// CHECK: %[[D0:.*]] = neuroshard.fused_embedding_bag device 0 [
// CHECK-NEXT: @rows rows 0 to 167 cols 0 to 16 sum(%[[R]]#0, %[[RO]]#0 : tensor<?xi32>, tensor<66xi32>),
// CHECK-NEXT: @grid rows 0 to 100 cols 0 to 16 sum(%[[G]]#0, %[[GO]]#0 : tensor<?xi64>, tensor<66xi64>),
// CHECK-NEXT: @sparse cols 0 to 8 sum(%arg4, %arg5 : tensor<?xi32>, tensor<66xi32>)
// CHECK-NEXT: ] : tensor<65x40xf32>
// Exchanged pieces come first on a device, then its row pieces.
// CHECK: %[[D1:.*]] = neuroshard.fused_embedding_bag device 1 [
// CHECK-NEXT: @whole cols 0 to 8 sum(%arg8, %arg9 : tensor<?xi32>, tensor<66xi32>),
// CHECK-NEXT: @rows rows 167 to 334 cols 0 to 16 sum(
// CHECK-NEXT: @grid rows 100 to 400 cols 0 to 8 sum(
// CHECK-NEXT: @sparse rows 0 to 150 cols 8 to 16 sum(%[[S0]], %[[SO0]]
// CHECK-NEXT: ] : tensor<65x40xf32>
// CHECK: %[[X1:.*]] = tensor.extract_slice %[[D1]][0, 0] [65, 8] [1, 1]
// CHECK: %[[D2:.*]] = neuroshard.fused_embedding_bag device 2 [
// CHECK: neuroshard.all_to_all %{{.*}}, %[[X1]], %{{.*}} : tensor<65x0xf32>, tensor<65x8xf32>, tensor<65x0xf32> -> tensor<22x8xf32>, tensor<22x8xf32>, tensor<21x8xf32>
// Each device looks up its slice of the batch in its replica of @small.
// CHECK: %[[O0:.*]] = tensor.extract_slice %arg7[0] [23] [1] : tensor<66xi64> to tensor<23xi64>
// CHECK: neuroshard.fused_embedding_bag device 0 [
// CHECK-NEXT: @small cols 0 to 8 mean(%arg6, %[[O0]] : tensor<?xi64>, tensor<23xi64>)
// CHECK-NEXT: ] : tensor<22x8xf32>
// CHECK: tensor.extract_slice %arg7[44] [22] [1] : tensor<66xi64> to tensor<22xi64>
// The partial sums of @rows are reduced while the batch is scattered.
// CHECK: %[[P0:.*]] = tensor.extract_slice %[[D0]][0, 0] [65, 16] [1, 1]
// CHECK: %[[P1:.*]] = tensor.extract_slice %[[D1]][0, 8] [65, 16] [1, 1]
// CHECK: %[[P2:.*]] = tensor.extract_slice %[[D2]][0, 0] [65, 16] [1, 1]
// CHECK: neuroshard.reduce_scatter %[[P0]], %[[P1]], %[[P2]] : tensor<65x16xf32>, tensor<65x16xf32>, tensor<65x16xf32> -> tensor<22x16xf32>, tensor<22x16xf32>, tensor<21x16xf32>
// @grid, pooled with mean, is divided by the whole bag after the sum; one
// reduce-scatter per column cell.
// CHECK: neuroshard.reduce_scatter %{{.*}}, %{{.*}} mean(%arg3 : tensor<66xi64>) : tensor<65x8xf32>, tensor<65x8xf32>
// CHECK: neuroshard.reduce_scatter %{{.*}}, %{{.*}} mean(%arg3 : tensor<66xi64>) : tensor<65x8xf32>, tensor<65x8xf32>
