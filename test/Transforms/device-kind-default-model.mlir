// The default cost model is the shipped bundle of the module's device kind:
// the GPU bundle for GPUs (the default kind), the CPU bundle for a plan
// meant for CPU execution, a chip's own bundle where one is shipped. Each
// warning is one diagnostic naming the file, and a bundle used for a kind it
// does not describe says so once.
// REQUIRES: torch

// RUN: neuroshard-opt %s --neuroshard-shard="plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: neuroshard-opt %s --neuroshard-shard="device-kind=h200 plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPU
// GPU-NOT: warning
// GPU: cost model: neural cost model 'h200-b65536' (measured on NVIDIA H200;
// GPU-NOT: warning

// RUN: neuroshard-opt %s --neuroshard-shard="device-kind=cpu plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CPU
// CPU: cost model: neural cost model 'cpu-zen5-b1024'
// RUN: neuroshard-opt %s --neuroshard-shard="device-kind=cpu-zen3 plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZEN3
// ZEN3: cost model: neural cost model 'cpu-zen3-b1024'
// RUN: neuroshard-opt %s --neuroshard-shard="device-kind=h100 plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=H100
// RUN: neuroshard-opt %s --neuroshard-shard="device-kind=H100 plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=H100
// H100-NOT: warning
// H100: cost model: neural cost model 'h100-b65536' (measured on NVIDIA H100 80GB HBM3;
// H100-NOT: warning

// The H200 bundle for CPU execution, for an H100 or for a chip without a
// bundle of its own warns once.
// RUN: neuroshard-opt %s --neuroshard-shard="device-kind=cpu cost-model=h200-b65536 plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOR-CPU
// FOR-CPU: device-kind-default-model.mlir:{{[0-9]+}}:{{[0-9]+}}: warning: cost model 'h200-b65536' was measured on a GPU ('NVIDIA H200') but the plan is for device kind 'cpu', CPU execution: its compute costs describe GPU kernels; choose a CPU bundle (such as 'cpu-zen5-b1024') or a GPU device kind
// FOR-CPU-NOT: warning
// RUN: neuroshard-opt %s --neuroshard-shard="device-kind=h100 cost-model=h200-b65536 plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=H200-FOR-H100
// H200-FOR-H100: warning: cost model 'h200-b65536' was measured on the GPU 'NVIDIA H200' but the plan is for device kind 'h100': its compute costs describe the other GPU; calibrate a model of that GPU with scripts/gpu/calibrate.sh
// H200-FOR-H100-NOT: warning
// H200-FOR-H100: cost model: neural cost model 'h200-b65536'
// RUN: neuroshard-opt %s --neuroshard-shard="device-kind=a100 plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=A100
// A100: warning: cost model 'h200-b65536' was measured on the GPU 'NVIDIA H200' but the plan is for device kind 'a100': its compute costs describe the other GPU; calibrate a model of that GPU with scripts/gpu/calibrate.sh
// A100-NOT: warning
// A100: cost model: neural cost model 'h200-b65536'

// A CPU bundle for GPU plans warns about the kind, not about this machine.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=cpu-zen5-b1024 plan-table=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOR-GPU
// FOR-GPU: warning: cost model 'cpu-zen5-b1024' was measured on a CPU ('AMD EPYC') but the plan is for device kind 'gpu': its compute costs describe the CPU kernels, not a GPU's; choose a GPU bundle (such as 'h200-b65536'), or device kind 'cpu' for a plan meant for CPU execution
// FOR-GPU-NOT: warning

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 100000, dim 64, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 50000, dim 32, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @two(%i: tensor<?xi32>, %o: tensor<1025xi32>) -> (tensor<1024x64xf32>, tensor<1024x32xf32>) {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<1025xi32>) -> tensor<1024x64xf32>
    %1 = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<1025xi32>) -> tensor<1024x32xf32>
    return %0, %1 : tensor<1024x64xf32>, tensor<1024x32xf32>
  }
}
