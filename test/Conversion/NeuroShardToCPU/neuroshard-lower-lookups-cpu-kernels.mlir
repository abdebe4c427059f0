// RUN: neuroshard-opt %s --neuroshard-lower-lookups-cpu | FileCheck %s

// The generic kernels are added even to a module without lookups (cost-data
// collection compiles exactly this). Columns go in 8-, 4- and 1-wide vector
// chunks; the forward kernel keeps each chunk's sum in a loop-carried vector
// and stores it once; the backward kernel applies an FMA per index.

// CHECK-LABEL: func.func @neuroshard_bag_forward_i64(
// CHECK-SAME:    %[[META:.*]]: memref<?xi64>, %[[LAYOUT:.*]]: memref<?xi64>, %[[W:.*]]: memref<?xf32>,
// CHECK-SAME:    %[[IDX:.*]]: memref<?xi64>, %[[OFF:.*]]: memref<?xi64>, %[[OUT:.*]]: memref<?x?xf32>)
// CHECK:         scf.for %[[S:.*]] =
// CHECK:           scf.for %[[B:.*]] =
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c8
// CHECK:               %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<8xf32>)
// CHECK:                 memref.load %[[IDX]]
// CHECK:                 vector.load %[[W]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:                 arith.addf %[[ACC]]
// CHECK:               arith.mulf %[[SUM]]
// CHECK:               vector.store %{{.*}}, %[[OUT]][%[[B]], %{{.*}}] : memref<?x?xf32>, vector<8xf32>
// CHECK:             step %c4
// CHECK:               vector.load %[[W]][%{{.*}}] : memref<?xf32>, vector<4xf32>
// CHECK:             step %c1
// CHECK:               vector.load %[[W]][%{{.*}}] : memref<?xf32>, vector<1xf32>

// CHECK-LABEL: func.func @neuroshard_bag_backward_sgd_i32(
// CHECK-SAME:    %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %[[GRAD:.*]]: memref<?x?xf32>, %[[LR:.*]]: f32)
// CHECK:         arith.negf %[[LR]]
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               vector.load %[[GRAD]]{{.*}} vector<8xf32>
// CHECK:               vector.fma
// CHECK:               vector.store
module {
}
