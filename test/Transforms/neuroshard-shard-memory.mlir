// The pass counts optimizer state and a reserve like neuroshard-plan:
// @big (1000 x 64 f32, 0.000238 GB of weights) fits a 0.0004 GB device
// whole with SGD; with Adam's state (three times the weights) and 10% of
// each device reserved it needs both devices, so a table-wise plan is
// refused and the beam search splits it. With 90% reserved it fits no
// device memory; without host memory to keep it in, the plan is refused
// (neuroshard-host-memory.mlir keeps such tables in host memory).
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=table-greedy-grid" \
// RUN:   | FileCheck %s --check-prefix=SGD
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical algorithm=table-greedy-grid optimizer=adam reserved-memory=0.1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=WHOLE
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical optimizer=adam reserved-memory=0.1" \
// RUN:   | FileCheck %s --check-prefix=ADAM
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical optimizer=lamb" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical reserved-memory=1.5" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=RESERVE
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical optimizer=adam reserved-memory=0.9 host-memory-gb=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FULL
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical cost-risk=11" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=RISK

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 0.0004>} {
  neuroshard.table @big : rows 1000, dim 64, f32 {pooling_factor = 2.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @f(%i: tensor<?xi32>, %o: tensor<9xi32>) -> tensor<8x64xf32> {
    %r = neuroshard.embedding_bag @big(%i, %o) sum : (tensor<?xi32>, tensor<9xi32>) -> tensor<8x64xf32>
    return %r : tensor<8x64xf32>
  }
}

// SGD: optimizer = "sgd"
// SGD-SAME: memory_used_gb = 2.384185791015625E-4 : f64, {{.*}}, weights_gb = 2.384185791015625E-4 : f64
// SGD-SAME: reserved_fraction = 0.000000e+00
// SGD: neuroshard.table @big : rows 1000, dim 64, f32 shards [#neuroshard.shard<cols = 0 to 64, device = {{[01]}}>]

// WHOLE: error: table 'big' needs 0.000715 GB (weights and adam state) but the largest device has 0.000360 GB (10% of each device kept free)

// Each device holds half the weights and three times that in all.
// ADAM: optimizer = "adam"
// ADAM-SAME: memory_used_gb = 3.5762786865234375E-4 : f64, {{.*}}, weights_gb = 1.1920928955078125E-4 : f64
// ADAM-SAME: reserved_fraction = 1.000000e-01
// ADAM: neuroshard.table @big : rows 1000, dim 64, f32 shards [#neuroshard.shard<cols = 0 to 32, device = {{[01]}}>, #neuroshard.shard<cols = 32 to 64, device = {{[01]}}>]

// UNKNOWN: error: optimizer: unknown optimizer 'lamb'; expected one of sgd, adagrad, rowwise-adagrad, adam
// RESERVE: error: reserved-memory: the reserved memory must be a fraction in [0, 1) of each device, got 1.5
// RISK: error: cost-risk: the risk margin must be between 0 and 10 standard deviations, got 11
// FULL: error: {{.*}}(weights and adam state){{.*}}(90% of each device kept free)
