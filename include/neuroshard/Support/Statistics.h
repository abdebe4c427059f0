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

#ifndef NEUROSHARD_SUPPORT_STATISTICS_H
#define NEUROSHARD_SUPPORT_STATISTICS_H

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

/// The geometric mean of positive `values` (the exponential of their mean
/// logarithm); 1 for none.
inline double geometricMean(const std::vector<double> &values) {
  if (values.empty())
    return 1.0;
  double logs = 0.0;
  for (double value : values)
    logs += std::log(value);
  return std::exp(logs / double(values.size()));
}

/// P(Z > z) for a standard normal Z.
inline double normalTail(double z) {
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

/// The regularized incomplete beta function I_x(a, b) for a, b > 0 and
/// 0 <= x <= 1, by its continued fraction (modified Lentz), evaluated on
/// the side of x where it converges fast; accurate to about 1e-14
/// relative, tails included.
inline double incompleteBeta(double a, double b, double x) {
  if (x <= 0.0)
    return 0.0;
  if (x >= 1.0)
    return 1.0;
  if (x > (a + 1.0) / (a + b + 2.0))
    return 1.0 - incompleteBeta(b, a, 1.0 - x);
  const double tiny = 1e-300;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  d = 1.0 / (std::fabs(d) < tiny ? tiny : d);
  double fraction = d;
  bool converged = false;
  for (int m = 1; m <= 300 && !converged; ++m) {
    for (int odd = 0; odd < 2; ++odd) {
      double step =
          odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
              : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
      d = 1.0 + step * d;
      d = 1.0 / (std::fabs(d) < tiny ? tiny : d);
      c = 1.0 + step / c;
      c = std::fabs(c) < tiny ? tiny : c;
      fraction *= c * d;
      converged = odd && std::fabs(c * d - 1.0) < 1e-15;
    }
  }
  double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                          a * std::log(x) + b * std::log1p(-x));
  return front * fraction / a;
}

/// P(T > |t|) for Student's t with `freedom` (>= 1) degrees of freedom:
/// half of I_x(freedom / 2, 1 / 2) at x = freedom / (freedom + t^2).
inline double studentTail(double t, unsigned freedom) {
  double nu = double(std::max(freedom, 1u));
  return 0.5 * incompleteBeta(0.5 * nu, 0.5, nu / (nu + t * t));
}

/// The t >= 0 with studentTail(t, freedom) = `tail` (0 for a tail of 1/2 or
/// more, or of 0 or less), found by bisection to a relative 1e-9.
inline double studentQuantile(double tail, unsigned freedom) {
  if (!(tail > 0.0) || tail >= 0.5)
    return 0.0;
  double low = 0.0, high = 1.0;
  while (studentTail(high, freedom) > tail && high < 1e12)
    low = high, high *= 2.0;
  while (high - low > 1e-9 * high) {
    double mid = 0.5 * (low + high);
    (studentTail(mid, freedom) > tail ? low : high) = mid;
  }
  return 0.5 * (low + high);
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

#endif // NEUROSHARD_SUPPORT_STATISTICS_H
