//===- Report.h - What neuroshard-run prints --------------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The parts of neuroshard-run's report that a single-process and a
// distributed run share, in text and JSON alike.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TOOLS_NEUROSHARD_RUN_REPORT_H
#define NEUROSHARD_TOOLS_NEUROSHARD_RUN_REPORT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace neuroshard {
namespace run {

/// Per result: {"shape": [rows, cols], "sum", "max_abs"}.
llvm::json::Array
summarizeResults(const std::vector<std::vector<float>> &outputs,
                 const std::vector<std::vector<int64_t>> &shapes);

/// The summaries as a table, one row per result.
void printResults(llvm::raw_ostream &os, const llvm::json::Array &results);

/// The outcome of --compare.
struct Comparison {
  std::string with;
  double outputDiff = 0.0;
  /// Each result's difference, when known (outputDiff is their maximum).
  std::vector<double> resultDiffs;
  std::optional<double> weightDiff;
  double tolerance = 0.0;
  bool mismatch() const {
    return outputDiff > tolerance || (weightDiff && *weightDiff > tolerance);
  }
  /// What differs beyond the tolerance: "result 1 (2.50E-01), the updated
  /// weights (1.00E+00)", or "the outputs (...)" when the results are not
  /// known one by one; "" on a match.
  std::string differing() const;
  /// "compare with F: max relative difference ... : match" (or "MISMATCH
  /// in <differing()>").
  void print(llvm::raw_ostream &os) const;
  /// The report's "compare", "max_rel_diff_*", "tolerance", "match" fields.
  void addTo(llvm::json::Object &report) const;
};

} // namespace run
} // namespace neuroshard

#endif // NEUROSHARD_TOOLS_NEUROSHARD_RUN_REPORT_H
