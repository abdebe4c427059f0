// RUN: neuroshard-opt %s | FileCheck %s
// RUN: neuroshard-opt %s | neuroshard-opt | FileCheck %s

// The plan summary the sharding pass attaches is a dictionary; a uniform
// topology prints its single capacity.
// CHECK: module attributes {neuroshard.plan = {cost_ms = 1.500000e+00 : f64}, neuroshard.topology = #neuroshard.topology<devices = 4, memory_gb = 0.25>}
module attributes {neuroshard.plan = {cost_ms = 1.5 : f64},
                   neuroshard.topology = #neuroshard.topology<devices = 4, memory_gb = [0.25, 0.25, 0.25, 0.25]>} {
}
