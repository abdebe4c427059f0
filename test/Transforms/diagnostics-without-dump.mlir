// An error names its location and does not print the op it is on: an error
// on the module would otherwise dump the whole module. A module without
// tables and `plan-out` fails in words and writes nothing.

// RUN: rm -f %t.json
// RUN: not neuroshard-opt %s --neuroshard-shard="plan-out=%t.json cost-model=analytical" 2>&1 \
// RUN:   | FileCheck %s
// RUN: not test -e %t.json
// CHECK: diagnostics-without-dump.mlir:{{[0-9]+}}:1: error: has no neuroshard.table to export a plan of
// CHECK-NOT: see current operation
// CHECK-NOT: builtin.module

// Asked for, the op is still printed.
// RUN: not neuroshard-opt %s --mlir-print-op-on-diagnostic=true \
// RUN:   --neuroshard-shard="plan-out=%t.json cost-model=analytical" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DUMP
// DUMP: see current operation

module {
}
