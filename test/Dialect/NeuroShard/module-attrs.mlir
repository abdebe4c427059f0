// RUN: neuroshard-opt %s -split-input-file | FileCheck %s
// RUN: neuroshard-opt %s -split-input-file | neuroshard-opt -split-input-file | FileCheck %s

// The plan summary the sharding pass attaches is a dictionary; a uniform
// topology prints its single capacity.
// CHECK: module attributes {neuroshard.plan = {cost_ms = 1.500000e+00 : f64}, neuroshard.topology = #neuroshard.topology<devices = 4, memory_gb = 0.25>}
module attributes {neuroshard.plan = {cost_ms = 1.5 : f64},
                   neuroshard.topology = #neuroshard.topology<devices = 4, memory_gb = [0.25, 0.25, 0.25, 0.25]>} {
}

// -----

// Host memory and its bandwidth print when they are not the defaults
// (2048 GB, 32 GB/s).
// CHECK: #neuroshard.topology<devices = 8, memory_gb = 80.0, nodes = 2, host_memory_gb = 1024.0, host_gbps = 50.0>
// CHECK: #neuroshard.topology<devices = 8, memory_gb = 80.0>
module attributes {neuroshard.topology = #neuroshard.topology<devices = 8, memory_gb = 80.0, nodes = 2, host_gbps = 50.0, host_memory_gb = 1024.0>} {
}
module attributes {neuroshard.topology = #neuroshard.topology<devices = 8, memory_gb = 80.0, host_memory_gb = 2048.0, host_gbps = 32.0>} {
}
