//===- Report.cpp - What neuroshard-run prints ----------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
namespace run = ::neuroshard::run;

json::Array
run::summarizeResults(const std::vector<std::vector<float>> &outputs,
                      const std::vector<std::vector<int64_t>> &shapes) {
  json::Array results;
  for (size_t r = 0; r < outputs.size(); ++r) {
    double sum = 0, maxAbs = 0;
    for (float v : outputs[r]) {
      sum += v;
      maxAbs = std::max(maxAbs, std::fabs(double(v)));
    }
    results.push_back(
        json::Object{{"shape", json::Array{shapes[r][0], shapes[r][1]}},
                     {"sum", sum},
                     {"max_abs", maxAbs}});
  }
  return results;
}

void run::printResults(raw_ostream &os, const json::Array &results) {
  os << formatv("{0,-8} {1,-12} {2,16} {3,12}\n", "result", "shape", "sum",
                "max |x|");
  for (size_t r = 0; r < results.size(); ++r) {
    const json::Object &row = *results[r].getAsObject();
    const json::Array &shape = *row.getArray("shape");
    os << formatv(
        "{0,-8} {1,-12} {2,16:F6} {3,12:F6}\n", r,
        formatv("{0}x{1}", *shape[0].getAsInteger(), *shape[1].getAsInteger())
            .str(),
        *row.getNumber("sum"), *row.getNumber("max_abs"));
  }
}

void run::Comparison::print(raw_ostream &os) const {
  os << formatv("compare with {0}: max relative difference {1:E2} (outputs)",
                with, outputDiff);
  if (weightDiff)
    os << formatv(", {0:E2} (updated weights)", *weightDiff);
  os << formatv(", tolerance {0:E1}: {1}\n", tolerance,
                mismatch() ? "MISMATCH in " + differing() : "match");
}

std::string run::Comparison::differing() const {
  SmallVector<std::string> parts;
  if (resultDiffs.empty()) {
    if (outputDiff > tolerance)
      parts.push_back(formatv("the outputs ({0:E2})", outputDiff));
  } else {
    for (auto [r, diff] : llvm::enumerate(resultDiffs))
      if (diff > tolerance)
        parts.push_back(formatv("result {0} ({1:E2})", r, diff));
  }
  if (weightDiff && *weightDiff > tolerance)
    parts.push_back(formatv("the updated weights ({0:E2})", *weightDiff));
  return join(parts, ", ");
}

void run::Comparison::addTo(json::Object &report) const {
  report["compare"] = with;
  report["max_rel_diff_outputs"] = outputDiff;
  if (!resultDiffs.empty())
    report["rel_diff_per_result"] = json::Array(resultDiffs);
  if (weightDiff)
    report["max_rel_diff_weights"] = *weightDiff;
  report["tolerance"] = tolerance;
  report["match"] = !mismatch();
}
