// The device kind: what the plan's kernels run on. It is part of the
// topology (printed only when it is not the default, gpu), an option of the
// pass that overrides the module's, and it chooses the default cost model:
// the shipped GPU bundle for GPUs, the CPU bundle for CPU execution.

// RUN: neuroshard-opt %s | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: neuroshard-opt %s | neuroshard-opt | FileCheck %s --check-prefix=ROUNDTRIP
// ROUNDTRIP: neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0, device_kind = "cpu">

// The option overrides the module's kind and the pass writes back the kind
// it planned for; "gpu" is the default and is not printed.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical device-kind=H100" | FileCheck %s --check-prefix=OVERRIDE
// OVERRIDE: #neuroshard.topology<devices = 2, memory_gb = 1.0, device_kind = "h100">
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical device-kind=gpu" | FileCheck %s --check-prefix=GPU
// GPU: #neuroshard.topology<devices = 2, memory_gb = 1.0>}

// The plan JSON and the TorchRec plan say what the plan is for.
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical plan-out=%t.json torchrec-out=%t.torchrec.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=TORCHREC < %t.torchrec.json
// JSON: "device_kind": "cpu",
// TORCHREC: "compute_device": "cpu",

// A bad kind in the option is refused with the option's name.
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical device-kind=h/100" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: device-kind: 'h/100' is not a device kind: expected 1 to 64 lower-case letters, digits, '-', '_' or '.' (gpu, cpu, or a chip such as h100 or cpu-zen3)

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0, device_kind = "cpu">} {
  neuroshard.table @a : rows 1000, dim 64, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 5000, dim 32, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @two(%i: tensor<?xi32>, %o: tensor<17xi32>) -> (tensor<16x64xf32>, tensor<16x32xf32>) {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x64xf32>
    %1 = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    return %0, %1 : tensor<16x64xf32>, tensor<16x32xf32>
  }
}
