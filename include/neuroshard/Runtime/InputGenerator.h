//===- InputGenerator.h - Deterministic lookup inputs and weights -*- C++
//-*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The inputs `neuroshard-run` feeds a model and cost-data collection feeds the
// kernels: bag lengths and indices drawn from a table's statistics (pooling
// factor and 17-bin access histogram, docs/design.md §3), weights and output
// gradients that are pure functions of (seed, table, row/bag, column).
//
// Everything is a pure function of its arguments, with its own random number
// generator, so that the original and the sharded version of a model see
// bit-identical inputs and weights, on any machine and any standard library.
// Plain C++ with no dependency: the CUDA-only runner builds it too.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_INPUTGENERATOR_H
#define NEUROSHARD_RUNTIME_INPUTGENERATOR_H

#include "neuroshard/Sharding/AccessHistogram.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace neuroshard {
namespace inputs {

/// What the generator needs to know about a table.
struct TableStats {
  std::string name;
  int64_t rows = 0;
  int64_t dim = 0;
  double poolingFactor = 0.0;
  std::array<double, kNumAccessBins> accessHist{};
};

/// One lookup's inputs: `offsets` has batchSize + 1 entries starting at 0.
struct LookupInputs {
  std::vector<int64_t> indices;
  std::vector<int64_t> offsets;
};

/// SplitMix64: small, fast and identical everywhere.
class Random {
public:
  explicit Random(uint64_t seed) : state(seed) {}
  uint64_t next();
  /// Uniform in [0, 1).
  double uniform();
  /// Uniform in [0, bound); bound > 0.
  uint64_t below(uint64_t bound);
  /// Poisson-distributed with the given mean (>= 0).
  int64_t poisson(double mean);

private:
  uint64_t state;
};

/// A 64-bit hash of a string (FNV-1a), for keying generators by table name.
uint64_t hashString(const std::string &text);
/// Mixes values into one seed.
uint64_t mixSeed(uint64_t a, uint64_t b);

/// Generates one lookup of `batchSize` bags over the first `rowLimit` rows of
/// the table (rowLimit <= 0 or > rows means all rows). Bag lengths are
/// Poisson with the table's pooling factor (so some bags are empty); the
/// indices are chosen so that the distinct-row hit counts follow the access
/// histogram (each bin's rows get a hit count inside the bin's range) and
/// then shuffled. `stream` separates several lookups of the same table.
LookupInputs generateLookup(const TableStats &table, int64_t batchSize,
                            uint64_t seed, uint64_t stream,
                            int64_t rowLimit = 0);

/// The part of `lookup` that a row piece holding rows [rowBegin, rowEnd)
/// receives: each bag keeps its indices inside the rows, in order, shifted
/// to the piece's local rows (one block of `neuroshard.bucketize`). Bags
/// with none of them become empty; the batch is unchanged.
LookupInputs rowBlockInputs(const LookupInputs &lookup, int64_t rowBegin,
                            int64_t rowEnd);

/// The bags [bagBegin, bagEnd) of `lookup`, with offsets from 0: what a
/// data-parallel replica looks up.
LookupInputs bagSliceInputs(const LookupInputs &lookup, int64_t bagBegin,
                            int64_t bagEnd);

/// Row `row` of a table of `rows` rows when only its first `kept` rows are
/// allocated (a `--max-rows` cap): the same fraction of the way, so that a
/// table's row pieces still divide the kept rows in the same shares.
int64_t keptRow(int64_t row, int64_t kept, int64_t rows);

/// `length` row indices in [0, rows) whose popularity follows a bounded power
/// law: rank r is drawn from a density proportional to x^-skew on
/// [1, rows + 1) (skew 0 is uniform, larger is more skewed), and ranks are
/// scattered over the rows by a random affine permutation, so that the hot
/// rows are not the first ones. The synthetic table pool's index streams
/// (python/neuroshard/table_pool.py); rows > 0, length >= 0. Draws other
/// than 0 are further batches of the same stream: the permutation, hence
/// which rows are hot, is the seed's, and only the samples differ.
std::vector<int64_t> zipfIndexStream(int64_t rows, double skew, int64_t length,
                                     uint64_t seed, uint64_t draw = 0);

/// The row zipfIndexStream(rows, skew, length, seed) draws for rank `rank`
/// (0: the most popular), whatever the skew and length.
int64_t zipfRankRow(int64_t rows, uint64_t seed, int64_t rank);

/// The 17-bin access histogram of an index stream (docs/design.md §3).
std::array<double, kNumAccessBins>
accessHistogram(const std::vector<int64_t> &indices);

/// Initial weight of (table, row, column): uniform in [-1, 1).
float weightValue(uint64_t tableKey, int64_t row, int64_t column);
/// Gradient of the pooled output of a lookup at (bag, column of the table):
/// uniform in [-1, 1). Keyed like the lookup, so every shard of a split table
/// receives the columns of the same gradient.
float gradientValue(uint64_t lookupKey, int64_t bag, int64_t column);

/// Fills rows [rowBegin, rowBegin + rows) x columns [colBegin, colBegin +
/// width) of a table into `out` with the given row stride (elements).
void fillWeights(uint64_t tableKey, int64_t rows, int64_t colBegin,
                 int64_t width, float *out, int64_t rowStride,
                 int64_t rowBegin = 0);

} // namespace inputs
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_INPUTGENERATOR_H
