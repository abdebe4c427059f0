//===- Statistics.h - Summaries of timed runs -------------------*- C++ -*-===//
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

#include <cstddef>
#include <vector>

namespace neuroshard {

/// The median of values sorted in ascending order (the mean of the middle
/// two for an even count); `sorted` must not be empty.
inline double sortedMedian(const std::vector<double> &sorted) {
  size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_STATISTICS_H
