// Measured selection in the pass: verify-top=K times the device sets of the
// K best distinct plans on this CPU (for a plan for CPU execution) and keeps
// another than the table-wise plan (else the model's best) only if it
// measures verify-min-gain (2%) faster; the plan record says what was
// measured.
// The analytical model describes no machine, so the default ('auto') does
// not verify and a given count warns that the plan is chosen for this CPU.

// RUN: rm -f %t.jsonl
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical verify-top=3 verify-seconds=0 experience=%t.jsonl" 2>&1 | FileCheck %s
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical verify-top=3 verify-seconds=0 verify-min-gain=0.25 experience=none" \
// RUN:   --neuroshard-export-plan=format=json -o /dev/null 2>&1 | FileCheck %s --check-prefix=GAIN
// GAIN: "min_gain": 0.25,
// CHECK: warning: the candidates are timed on this machine, which cost model 'analytical' does not describe: the plan is chosen for this machine's CPU
// CHECK: verification = #neuroshard.verification<host = "{{.+}}", device = "cpu", sets = {{[0-9]+}}, rounds = {{[1-3]}}, draws = {{[1-3]}}, rounds_needed = 3, seconds = {{[^,]+}},
// CHECK-SAME: min_gain = 2.000000e-02,
// CHECK-SAME: chosen = {{[0-2]}}, incumbent = {{[0-2]}}, experience = "{{.+}}.jsonl", candidates = [#neuroshard.measured_candidate<origin = "{{[a-z-]+}}", predicted_ms = {{[^,]+}}, measured_ms = {{[^,]+}}, measured_compute_ms = [{{[^]]+}}], paired_ratio = {{[^,]+}}, mean_ratio = {{[^,]+}}, rounds = {{[0-3]}}, rounds_faster = {{[0-3]}}, required_gain = {{[^>]+}}>
// RUN: FileCheck %s --check-prefix=EXPERIENCE < %t.jsonl
// EXPERIENCE: {"format":"neuroshard-experience","version":1,{{.+}}"batch_size":16,"bundle":"analytical"

// The record reads back from the module into the exported plan, and the
// fields a record may leave out (the spread, its degrees of freedom, the
// candidates racing and the rounds and seconds a choice needed) read as 0.
// A field of the wrong kind is refused by the attribute's parser, one that
// cannot be right by its verifier.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical verify-top=3 verify-seconds=0 verify-min-gain=0.25 experience=none" -o %t.record.mlir 2>/dev/null
// RUN: neuroshard-opt %t.record.mlir --neuroshard-export-plan=format=json -o /dev/null | FileCheck %s --check-prefix=EXPORT
// EXPORT: "min_gain": 0.25,
// EXPORT: "required_gain": 0.25,
// RUN: sed -E 's/, round_spread = [^,]+//; s/, racing = [0-9]+//; s/, spread_freedom = [0-9]+//; s/, rounds_needed = [0-9]+//; s/, seconds_needed = [^,]+//' %t.record.mlir > %t.short.mlir
// RUN: not grep -E 'round_spread|spread_freedom|racing|rounds_needed|seconds_needed' %t.short.mlir
// RUN: neuroshard-opt %t.short.mlir --neuroshard-export-plan=format=json -o /dev/null | FileCheck %s --check-prefix=SHORT
// SHORT: "rounds_needed": 0,
// SHORT-NEXT: "budget_cut": false,
// SHORT-NEXT: "min_gain": 0.25,
// SHORT-NEXT: "round_spread": 0,
// SHORT-NEXT: "spread_freedom": 0,
// SHORT-NEXT: "racing": 0,
// RUN: sed -E 's/min_gain = [^,]+,/min_gain = "wide",/' %t.record.mlir | not neuroshard-opt --neuroshard-export-plan=format=json -o /dev/null 2>&1 | FileCheck %s --check-prefix=GAINTEXT
// GAINTEXT: error: expected floating point literal
// GAINTEXT: error: failed to parse NeuroShard_VerificationAttr parameter 'min_gain'
// RUN: sed -E 's/chosen = [0-9]+/chosen = 7/' %t.record.mlir | not neuroshard-opt --neuroshard-export-plan=format=json -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHOSEN
// CHOSEN: error: 'chosen' names candidate 7 of {{[1-3]}}

// The default does not verify here; nor does 0.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical" | FileCheck %s --check-prefix=NONE
// RUN: neuroshard-opt %s --neuroshard-shard="cost-model=analytical verify-top=0" | FileCheck %s --check-prefix=NONE
// NONE-NOT: verification

// Bad values are refused by the option's name.
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical verify-top=many" 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: error: verify-top: expected 'auto' or a count of candidates from 0 to 64, got 'many'
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical verify-top=2 device-kind=gpu" 2>&1 | FileCheck %s --check-prefix=GPU
// GPU: error: verify-top: the candidates are timed with this machine's CPU kernels, but the plan is for device kind 'gpu'
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical verify-top=2 algorithm=size-greedy" 2>&1 | FileCheck %s --check-prefix=ALGORITHM
// ALGORITHM: error: verify-top: verifying candidates needs the neuroshard algorithm, which keeps them; size-greedy makes one plan
// RUN: not neuroshard-opt %s --neuroshard-plan="cost-model=analytical verify-top=2 verify-seconds=-1" 2>&1 | FileCheck %s --check-prefix=SECONDS
// SECONDS: error: verify-seconds: must be between 0 and 3600 seconds, got -1
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical verify-top=2 verify-min-gain=0.6" 2>&1 | FileCheck %s --check-prefix=MIN-GAIN
// MIN-GAIN: error: verify-min-gain: must be a fraction from 0 to 0.5 (0.05: 5% faster), got 0.6
// RUN: not neuroshard-opt %s --neuroshard-shard="cost-model=analytical verify-top=2 verify-spread-factor=11" 2>&1 | FileCheck %s --check-prefix=SPREAD-FACTOR
// SPREAD-FACTOR: error: verify-spread-factor: must be between 0 and 10 standard errors (0: the rounds' spread asks for nothing), got 11

module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0, device_kind = "cpu">} {
  neuroshard.table @a : rows 1000, dim 64, f32 {pooling_factor = 20.0 : f64,
    access_hist = array<f64: 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @b : rows 5000, dim 32, f32 {pooling_factor = 4.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  neuroshard.table @c : rows 3000, dim 32, f32 {pooling_factor = 8.0 : f64,
    access_hist = array<f64: 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0>}
  func.func @three(%i: tensor<?xi32>, %o: tensor<17xi32>) -> (tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
    %0 = neuroshard.embedding_bag @a(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x64xf32>
    %1 = neuroshard.embedding_bag @b(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    %2 = neuroshard.embedding_bag @c(%i, %o) sum : (tensor<?xi32>, tensor<17xi32>) -> tensor<16x32xf32>
    return %0, %1, %2 : tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>
  }
}
