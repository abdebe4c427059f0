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
// CHECK: verification = {candidates = [{mean_ratio = {{[^,]+}}, measured_compute_ms = array<f64: {{[^>]+}}>, measured_ms = {{[^,]+}}, origin = "{{[a-z-]+}}", paired_ratio = {{[^,]+}}, predicted_ms = {{[^,]+}}, required_gain = {{[^,]+}}, rounds = {{[0-3]}} : i64, rounds_faster = {{[0-3]}} : i64}
// CHECK-SAME: chosen = {{[0-2]}} : i64, device = "cpu", draws = {{[1-3]}} : i64, experience = "{{.+}}.jsonl", host = "{{.+}}", incumbent = {{[0-2]}} : i64, min_gain = 2.000000e-02 : f64, racing = {{[0-2]}} : i64, round_spread = {{[^,]+}}, rounds = {{[1-3]}} : i64, rounds_needed = 3 : i64
// CHECK-SAME: spread_freedom = {{[0-9]+}} : i64
// RUN: FileCheck %s --check-prefix=EXPERIENCE < %t.jsonl
// EXPERIENCE: {"format":"neuroshard-experience","version":1,{{.+}}"batch_size":16,"bundle":"analytical"

// A record written before the spread and the rounds a choice needs were
// recorded still reads back: no spread, no degrees of freedom, no candidate
// racing, no rounds needed and none cut short, each candidate needed
// min_gain, and its mean ratio is its median. A spread that is not a float
// is refused by name, as is a count of rounds needed that is not a count.
// RUN: neuroshard-opt %s --neuroshard-plan="cost-model=analytical verify-top=3 verify-seconds=0 verify-min-gain=0.25 experience=none" -o %t.record.mlir 2>/dev/null
// RUN: sed -E 's/required_gain = [^,}]+, //g; s/, required_gain = [^,}]+//g; s/round_spread = [^,]+, //; s/racing = [0-9]+ : i64, //; s/, spread_freedom = [0-9]+ : i64//; s/mean_ratio = [^,]+, //g; s/, rounds_needed = [0-9]+ : i64//; s/, seconds_needed = [^,}]+//' %t.record.mlir > %t.old.mlir
// RUN: not grep -E 'required_gain|round_spread|spread_freedom|racing|mean_ratio|rounds_needed|seconds_needed' %t.old.mlir
// RUN: neuroshard-opt %t.old.mlir --neuroshard-export-plan=format=json -o /dev/null | FileCheck %s --check-prefix=OLD
// OLD: "rounds_needed": 0,
// OLD-NEXT: "budget_cut": false,
// OLD-NEXT: "min_gain": 0.25,
// OLD-NEXT: "round_spread": 0,
// OLD-NEXT: "spread_freedom": 0,
// OLD-NEXT: "racing": 0,
// OLD: "paired_ratio": [[RATIO:[0-9.e+-]+]],
// OLD-NEXT: "mean_ratio": [[RATIO]],
// OLD: "required_gain": 0.25,
// RUN: sed -E 's/round_spread = [^,]+,/round_spread = "wide",/' %t.record.mlir | not neuroshard-opt --neuroshard-export-plan=format=json -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPREAD
// SPREAD: error: has a malformed 'neuroshard.plan': its 'verification' needs 'round_spread' (a float)
// RUN: sed -E 's/rounds_needed = [0-9]+ : i64/rounds_needed = "three"/' %t.record.mlir | not neuroshard-opt --neuroshard-export-plan=format=json -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEEDED
// NEEDED: error: has a malformed 'neuroshard.plan': its 'verification' needs 'rounds_needed' (an integer)

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
