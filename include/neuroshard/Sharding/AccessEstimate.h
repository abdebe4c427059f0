//===- AccessEstimate.h - Access histograms a task need not give -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A table's access histogram (docs/design.md §3) describes one batch of B bags.
// A user often knows only a table's rows and pooling factor, or has a histogram
// measured at another batch size. This file derives the histogram in both
// cases:
//
//  - expectedAccessHistogram: the expected histogram of B x pooling factor
//    lookups drawn independently from a bounded power law over the rows
//    (rank r in [0, rows) has probability proportional to the integral of
//    x^-alpha over [r + 1, r + 2), the law inputs::zipfIndexStream draws);
//  - rescaleAccessHistogram: a histogram of one batch size carried to
//    another.
//
// Both count a row's hits in a batch as Poisson with the row's expected
// count (the binomial's limit for a row that takes a small share of the
// lookups; a row with a large share lands in one bin either way).
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SHARDING_ACCESSESTIMATE_H
#define NEUROSHARD_SHARDING_ACCESSESTIMATE_H

#include "neuroshard/Sharding/AccessHistogram.h"
#include "neuroshard/Sharding/TableRules.h"

#include "llvm/ADT/ArrayRef.h"

#include <array>
#include <cstdint>

namespace neuroshard {

using AccessBins = std::array<double, kNumAccessBins>;

/// The skew a table's index stream is assumed to have when a task gives
/// neither a histogram nor `zipf_alpha`: slightly steeper than Zipf's law,
/// within the range measured on public click logs.
constexpr double kDefaultZipfAlpha = 1.05;
/// The skews a task may give: 0 (uniform) to far steeper than any
/// recommendation workload.
constexpr double kMaxZipfAlpha = 4.0;

/// "'zipf_alpha' must be a number in [0, 4], got 9".
RuleViolation checkZipfAlpha(double alpha);

/// The expected one-batch histogram of `lookups` (B x pooling factor)
/// indices drawn from the bounded power law of exponent `alpha` over `rows`
/// rows: the expected number of distinct rows in each hit-count bin over the
/// expected number of distinct rows. All zero when fewer than one lookup is
/// expected. Exact over the first rows, over log-spaced groups of rows
/// beyond (the rate varies by under 1% in a group); a few milliseconds for
/// any table.
AccessBins expectedAccessHistogram(int64_t rows, double lookups, double alpha);

/// The exponent of the power law whose expected histogram of `lookups`
/// lookups over `rows` rows is closest to `bins` (least squares over the
/// bins), in [0, kMaxZipfAlpha].
double fitZipfAlpha(llvm::ArrayRef<double> bins, int64_t rows, double lookups);

/// `bins`, a histogram of one batch of `fromBatch` bags with `poolingFactor`
/// indices per bag over `rows` rows, carried to a batch of `toBatch` bags.
/// A smaller batch keeps each lookup of the larger with probability
/// toBatch / fromBatch (binomial thinning, a bin's rows spread evenly over
/// its hit counts). A larger batch also reaches rows the given one never
/// hit, which the histogram cannot show: its histogram is that of the power
/// law fitZipfAlpha finds in `bins`. An all-zero histogram (a table a batch
/// never hit) becomes the default power law's. Expects a histogram that
/// checkAccessHistogramForBatch accepts at `fromBatch`.
AccessBins rescaleAccessHistogram(llvm::ArrayRef<double> bins, int64_t rows,
                                  double poolingFactor, int64_t fromBatch,
                                  int64_t toBatch);

/// How one batch's lookups of a table fall on its rows, as far as the
/// loads of its row blocks go: the lookups, the sum over distinct rows of
/// their squared hit counts, and the hits of the hottest row.
struct RowHitMoments {
  double lookups = 0.0;
  double sumSquaredHits = 0.0;
  double hottestRowHits = 0.0;
  RowHitMoments &operator+=(const RowHitMoments &other);
};

/// The moments of `lookups` lookups over `rows` rows whose distinct rows'
/// hit counts `bins` describes: within a bin the rows follow a power law
/// of exponent -2 over its counts, as many distinct rows as the lookups
/// fill at those counts (at most `rows`, the counts scaled up where they
/// must be), the hottest row the expected largest of the top bin's rows.
/// An all-zero histogram: every lookup on a distinct row.
RowHitMoments rowHitMoments(llvm::ArrayRef<double> bins, int64_t rows,
                            double lookups);

/// The expected share of the lookups that the most loaded of a table's row
/// blocks receives, for blocks of a fraction `fraction` of the rows
/// (1 / fraction of them) of a table whose rows are in random order with
/// respect to their hits. A block's lookups are then the sum of its rows'
/// hits, of mean `fraction` x lookups and variance
/// fraction (1 - fraction) x sumSquaredHits; the largest of the blocks is
/// taken as the expected largest of as many normal draws, and at least as
/// the block that holds the hottest row with its share of the others. At
/// least `fraction`, at most 1; `fraction` itself for a table of many
/// evenly hit rows.
double heaviestRowBlockShare(const RowHitMoments &moments, double fraction);

/// How a cache in device memory picks the rows of a table kept in host
/// memory that it holds.
enum class CachePolicy {
  /// The rows most often used, chosen once: a static frequency cache.
  Frequency,
  /// Every row a batch uses enters the cache before the batch runs, evicting
  /// the rows least recently used (FBGEMM's UVM cache works this way, per
  /// set of its set-associative cache).
  LeastRecentlyUsed,
};

/// What a cache of some of a table's rows serves of one batch, expected.
/// Each distinct row a batch uses that is not cached is read from host
/// memory once and, updated by the backward, written back once.
struct CacheEstimate {
  /// Distinct rows one batch uses.
  double batchRows = 0.0;
  /// Of those, the rows not in the cache when the batch starts.
  double missedRows = 0.0;
  /// The share of a batch's distinct rows the cache holds (1 for a batch
  /// that uses no row).
  double hitRate() const {
    return batchRows > 0.0 ? 1.0 - missedRows / batchRows : 1.0;
  }
};

/// The expected cache behaviour of a table of `rows` rows whose batches of
/// `lookups` lookups have the one-batch histogram `bins`, with a cache of
/// `cacheRows` rows and policy `policy`, batch after batch with the same
/// popularity. The popularity is the power law fitZipfAlpha finds in the
/// histogram (the default one's for an all-zero histogram); a row of
/// popularity p is used in a batch with probability 1 - exp(-lookups p).
///
///  - Frequency: the cache holds the cacheRows most popular rows; a batch
///    misses the rows it uses beyond them.
///  - LeastRecentlyUsed: by the characteristic-time approximation (Che,
///    Tung and Wang, 2002), the cache holds a row exactly when it was used
///    in the last T batches, T the time (in batches) in which the distinct
///    rows used number cacheRows; a batch misses a row it uses that the T
///    batches before it did not.
///
/// Exact over the first ranks, over groups of ranks 1% apart beyond, like
/// expectedAccessHistogram; a few milliseconds for any table.
CacheEstimate estimateRowCache(llvm::ArrayRef<double> bins, int64_t rows,
                               double lookups, int64_t cacheRows,
                               CachePolicy policy);
/// The same for a popularity of power law `alpha` (fitZipfAlpha's), which a
/// caller pricing many caches of one table fits once.
CacheEstimate estimateRowCacheOfLaw(double alpha, int64_t rows, double lookups,
                                    int64_t cacheRows, CachePolicy policy);

} // namespace neuroshard

#endif // NEUROSHARD_SHARDING_ACCESSESTIMATE_H
