//===- Statistics.h - Timed runs and their summaries ------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Header-only and plain C++, so that the standalone CUDA runner and the MPI
// collector use it as well as the MLIR-linked tools.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_STATISTICS_H
#define NEUROSHARD_RUNTIME_STATISTICS_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

namespace neuroshard {

/// The median of values sorted in ascending order (the mean of the middle
/// two for an even count); `sorted` must not be empty.
inline double sortedMedian(const std::vector<double> &sorted) {
  size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

/// The median of `values` in any order; `values` must not be empty.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return sortedMedian(values);
}

namespace runtime {

/// Median, fastest and slowest of timed runs, in ms.
struct Timing {
  double median = 0, min = 0, max = 0;
};

/// Touches a buffer larger than the last-level cache, so that a timed run
/// starts from cold caches as the cost models' samples did.
struct CacheFlusher {
  explicit CacheFlusher(size_t bytes) : buffer(bytes / sizeof(long long), 0) {}
  void flush() {
    for (size_t i = 0; i < buffer.size(); i += 8)
      buffer[i] += 1;
  }
  std::vector<long long> buffer;
};

/// The cache flush of the CPU samples (MiB): neuroshard-collect's default.
constexpr unsigned kDefaultFlushMB = 64;

/// Runs `step` `warmup` times, then `iters` (>= 1) times timed, calling
/// `beforeEach` (untimed; e.g. a cache flush) before every run.
inline Timing timeRuns(unsigned warmup, unsigned iters,
                       const std::function<void()> &step,
                       const std::function<void()> &beforeEach = {}) {
  std::vector<double> ms;
  for (unsigned run = 0; run < warmup + iters; ++run) {
    if (beforeEach)
      beforeEach();
    auto start = std::chrono::steady_clock::now();
    step();
    auto stop = std::chrono::steady_clock::now();
    if (run >= warmup)
      ms.push_back(
          std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(ms.begin(), ms.end());
  Timing timing;
  timing.median = sortedMedian(ms);
  timing.min = ms.front();
  timing.max = ms.back();
  return timing;
}

/// Element-wise comparison of two float containers: max |a - b| divided by
/// max |b| (0 when both are empty or all zero; infinite when the sizes
/// differ).
template <typename A, typename B>
double maxRelativeDifference(const A &a, const B &b) {
  double maxDiff = 0.0, maxRef = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    maxDiff = std::max(maxDiff, std::fabs(double(a[i]) - double(b[i])));
    maxRef = std::max(maxRef, std::fabs(double(b[i])));
  }
  if (a.size() != b.size())
    return INFINITY;
  return maxRef == 0.0 ? maxDiff : maxDiff / maxRef;
}

} // namespace runtime
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_STATISTICS_H
