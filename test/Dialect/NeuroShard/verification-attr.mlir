// RUN: neuroshard-opt %s -split-input-file | FileCheck %s
// RUN: neuroshard-opt %s -split-input-file | neuroshard-opt -split-input-file | FileCheck %s
// RUN: neuroshard-opt %s -split-input-file -mlir-print-op-generic | neuroshard-opt -split-input-file | FileCheck %s

// Measured selection's record in a module's plan: every field given, then
// the fields that default to zero left out. Floats print so that they read
// back bit for bit.

// CHECK-LABEL: module attributes
// CHECK-SAME: verification = #neuroshard.verification<host = "AMD EPYC 9R14 (Zen 4)", device = "cpu", sets = 7, rounds = 3, draws = 2, rounds_needed = 3, seconds = 8.100000e-01, seconds_needed = 1.250000e+00, min_gain = 2.000000e-02, round_spread = 1.200000e-02, spread_freedom = 4, racing = 1, selection_noise = 4.000000e-01, selection_noise_comparisons = 20, noise_gain = 6.000000e-01, chosen = 1, incumbent = 0, experience = "experience.jsonl", candidates = [#neuroshard.measured_candidate<origin = "table-greedy-grid", predicted_ms = 1.250000e-01, measured_ms = 1.310000e-01, measured_compute_ms = [1.310000e-01, 1.200000e-01], paired_ratio = 1.000000e+00, mean_ratio = 1.000000e+00, rounds = 3, rounds_faster = 0, required_gain = 2.000000e-02>, #neuroshard.measured_candidate<origin = "beam", predicted_ms = 1.300000e-01, measured_ms = 1.100000e-01, measured_compute_ms = [1.100000e-01, 1.050000e-01], paired_ratio = 8.400000e-01, mean_ratio = 8.500000e-01, rounds = 3, rounds_faster = 3, required_gain = 5.000000e-02>]>
module attributes {neuroshard.plan = {verification = #neuroshard.verification<
    host = "AMD EPYC 9R14 (Zen 4)", device = "cpu", sets = 7, rounds = 3,
    draws = 2, rounds_needed = 3, seconds = 0.81, seconds_needed = 1.25,
    min_gain = 0.02, round_spread = 0.012, spread_freedom = 4, racing = 1,
    selection_noise = 0.4, selection_noise_comparisons = 20, noise_gain = 0.6,
    chosen = 1, incumbent = 0, experience = "experience.jsonl",
    candidates = [
      #neuroshard.measured_candidate<origin = "table-greedy-grid",
          predicted_ms = 0.125, measured_ms = 0.131,
          measured_compute_ms = [0.131, 0.12], paired_ratio = 1.0,
          mean_ratio = 1.0, rounds = 3, rounds_faster = 0,
          required_gain = 0.02>,
      #neuroshard.measured_candidate<origin = "beam", predicted_ms = 0.13,
          measured_ms = 0.11, measured_compute_ms = [0.11, 0.105],
          paired_ratio = 0.84, mean_ratio = 0.85, rounds = 3,
          rounds_faster = 3, required_gain = 0.05>]>}} {
}

// -----

// CHECK-LABEL: module attributes
// CHECK-SAME: verification = #neuroshard.verification<host = "h", device = "cuda", sets = 2, rounds = 1, draws = 1, seconds = 0.000000e+00, min_gain = 2.000000e-02, chosen = 0, incumbent = 0, experience = "", candidates = [#neuroshard.measured_candidate<origin = "o", predicted_ms = 1.000000e+00, measured_ms = 1.000000e+00, measured_compute_ms = [1.000000e+00], paired_ratio = 1.000000e+00, mean_ratio = 1.000000e+00, rounds = 0, rounds_faster = 0, required_gain = 2.000000e-02>]>}
module attributes {neuroshard.plan = {verification = #neuroshard.verification<
    host = "h", device = "cuda", sets = 2, rounds = 1, draws = 1,
    seconds = 0.0, min_gain = 0.02, chosen = 0, incumbent = 0,
    experience = "",
    candidates = [#neuroshard.measured_candidate<origin = "o",
        predicted_ms = 1.0, measured_ms = 1.0,
        measured_compute_ms = [1.0], paired_ratio = 1.0,
        mean_ratio = 1.0, rounds = 0, rounds_faster = 0,
        required_gain = 0.02>]>}} {
}
