//===- TestProblems.h - Tables, topologies and models for tests -*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Small builders shared by the cost-model and planner tests, a cost model
// whose numbers are easy to check by hand, and error helpers (Debian's LLVM
// ships no LLVMTestingSupport library).
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_UNITTESTS_PLANNER_TESTPROBLEMS_H
#define NEUROSHARD_UNITTESTS_PLANNER_TESTPROBLEMS_H

#include "neuroshard/CostModel/CostModel.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace neuroshard {
namespace testing {

/// The message of a failed Error, or "" on success.
inline std::string errorMessage(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}
/// The message of a failed Expected (consumed), or "" on success.
template <typename T> std::string errorMessage(llvm::Expected<T> &value) {
  return value ? std::string() : llvm::toString(value.takeError());
}

/// A table whose access histogram one batch of `batch` bags can produce:
/// the traces' aggregate histogram when the batch's lookups do not outnumber
/// the rows, else every row in the bin of the mean hits per row (all zero
/// for a table never looked up).
inline TableSpec makeTable(std::string name, int64_t rows, int64_t dim,
                           double poolingFactor = 1.0,
                           int64_t batch = Topology().batchSize) {
  TableSpec table;
  table.name = std::move(name);
  table.rows = rows;
  table.dim = dim;
  table.poolingFactor = poolingFactor;
  double hitsPerRow = double(batch) * poolingFactor / double(rows);
  if (poolingFactor == 0.0)
    table.accessHist = {};
  else if (hitsPerRow <= 1.0)
    table.accessHist = {0.5, 0.2, 0.1, 0.1, 0.05, 0.05};
  else
    table.accessHist[std::min<unsigned>(
        kNumAccessBins - 1, unsigned(std::ceil(std::log2(hitsPerRow))))] = 1.0;
  return table;
}

/// A table of exactly `gb` GB (f32, dim 4).
inline TableSpec tableOfGB(std::string name, double gb) {
  return makeTable(std::move(name), static_cast<int64_t>(gb * kBytesPerGB / 16),
                   4);
}

/// Compute cost of a set: the sum over its slices of width x pooling factor
/// plus a fixed overhead per slice (so that splitting has a price). No
/// communication cost. Counts the queries it answers.
class SliceCostModel final : public CostModel {
public:
  explicit SliceCostModel(double overheadPerSliceMs = 0.0,
                          std::optional<unsigned> devices = std::nullopt)
      : overheadPerSliceMs(overheadPerSliceMs), devices(devices) {}

  llvm::StringRef name() const override { return "slice-test"; }
  std::string description() const override { return "test model"; }
  std::optional<unsigned> requiredDevices() const override { return devices; }
  llvm::Error prepare(llvm::ArrayRef<TableSpec> newTables,
                      const Topology &) override {
    tables.assign(newTables.begin(), newTables.end());
    return llvm::Error::success();
  }
  llvm::Error predictCompute(llvm::ArrayRef<llvm::ArrayRef<ColumnSlice>> sets,
                             llvm::MutableArrayRef<double> costsMs) override {
    ++computeCalls;
    setsPriced += sets.size();
    for (size_t i = 0; i < sets.size(); ++i) {
      costsMs[i] = 0.0;
      for (const ColumnSlice &slice : sets[i])
        costsMs[i] += slice.width() * tables[slice.table].poolingFactor +
                      overheadPerSliceMs;
      costsMs[i] += margin;
    }
    return llvm::Error::success();
  }
  llvm::Error
  predictBackwardComm(llvm::ArrayRef<DeviceTraffic>,
                      llvm::MutableArrayRef<double> costsMs) override {
    std::fill(costsMs.begin(), costsMs.end(), 0.0);
    return llvm::Error::success();
  }
  llvm::Error
  predictForwardComm(llvm::ArrayRef<DeviceTraffic>, llvm::ArrayRef<double>,
                     llvm::MutableArrayRef<double> costsMs) override {
    std::fill(costsMs.begin(), costsMs.end(), 0.0);
    return llvm::Error::success();
  }

  ModelProvenance provenance() const override {
    return {bundle, describesHost, noise};
  }
  /// A risk margin adds that many ms to every set.
  void setRiskMargin(double sigmas) override { margin = sigmas; }
  double riskMargin() const override { return margin; }
  std::optional<ComputeError> computeError() const override { return error; }

  unsigned computeCalls = 0;
  uint64_t setsPriced = 0;
  /// What provenance() answers: measuredOnThisHost and bundlePath.
  bool describesHost = false;
  std::string bundle;
  /// What computeError() and provenance().selectionNoise answer.
  std::optional<ComputeError> error;
  std::optional<SelectionNoise> noise;

private:
  double overheadPerSliceMs;
  double margin = 0.0;
  std::optional<unsigned> devices;
  std::vector<TableSpec> tables;
};

} // namespace testing
} // namespace neuroshard

#endif // NEUROSHARD_UNITTESTS_PLANNER_TESTPROBLEMS_H
