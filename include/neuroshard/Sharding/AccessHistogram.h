//===- AccessHistogram.h - The shape of a table's access histogram -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Dependency-free, so that the plain runtime (and the standalone CUDA
// runner) and the sharding rules take the bin count from one place.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SHARDING_ACCESSHISTOGRAM_H
#define NEUROSHARD_SHARDING_ACCESSHISTOGRAM_H

#include <cmath>

namespace neuroshard {

/// Number of bins of a table's access histogram (docs/design.md §3): bin 0
/// counts rows hit once, bin j (1..15) rows hit (2^(j-1), 2^j] times, bin 16
/// more.
constexpr unsigned kNumAccessBins = 17;

/// The fewest hits of one row in bin `bin`.
inline double fewestHitsInBin(unsigned bin) {
  return bin == 0 ? 1.0 : std::ldexp(1.0, int(bin) - 1) + 1.0;
}
/// The most hits of one row in bin `bin` (unbounded for the last).
inline double mostHitsInBin(unsigned bin) {
  return bin + 1 == kNumAccessBins ? HUGE_VAL : std::ldexp(1.0, int(bin));
}

} // namespace neuroshard

#endif // NEUROSHARD_SHARDING_ACCESSHISTOGRAM_H
