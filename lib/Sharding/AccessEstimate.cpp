//===- AccessEstimate.cpp - Access histograms a task need not give --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/AccessEstimate.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

using namespace llvm;

namespace neuroshard {

RuleViolation checkZipfAlpha(double alpha) {
  if (std::isfinite(alpha) && alpha >= 0.0 && alpha <= kMaxZipfAlpha)
    return std::nullopt;
  return formatv("'zipf_alpha' must be a number in [0, {0}], got {1}",
                 format("%g", kMaxZipfAlpha), format("%g", alpha))
      .str();
}

/// The hit counts a row of bin `bin` may have, [fewest, most]; the last
/// bin, unbounded, is taken to end at 2^16, twice the one before it.
static std::pair<double, double> hitRange(unsigned bin) {
  return {fewestHitsInBin(bin), bin + 1 == kNumAccessBins
                                    ? 2.0 * mostHitsInBin(bin - 1)
                                    : mostHitsInBin(bin)};
}

/// The bin of a hit count >= 1.
static unsigned binOf(int64_t hits) {
  unsigned bin = 0;
  while (bin + 1 < kNumAccessBins && double(hits) > mostHitsInBin(bin))
    ++bin;
  return bin;
}

/// Above this mean, a row's hit count is taken as normal rather than summed
/// term by term.
constexpr double kNormalFromMean = 200.0;

/// Adds to `rowsPerBin` the expected number of `rows` rows whose hit count,
/// normal of `mean` and `sd` rounded to a whole count, falls in each bin.
static void addNormalRows(double mean, double sd, double rows,
                          AccessBins &rowsPerBin) {
  auto atMost = [&](double hits) {
    return 0.5 * std::erfc(-(hits + 0.5 - mean) / (sd * std::sqrt(2.0)));
  };
  double below = atMost(0.0);
  for (unsigned bin = 0; bin < kNumAccessBins; ++bin) {
    double upTo = bin + 1 == kNumAccessBins ? 1.0 : atMost(mostHitsInBin(bin));
    rowsPerBin[bin] += rows * std::max(0.0, upTo - below);
    below = upTo;
  }
}

/// Adds to `rowsPerBin` the expected number of `rows` rows, each hit a
/// Poisson number of times of mean `mean`, whose hit count falls in each bin
/// (rows never hit are in no bin).
static void addPoissonRows(double mean, double rows, AccessBins &rowsPerBin) {
  if (!(mean > 0.0) || rows <= 0.0)
    return;
  if (mean > kNormalFromMean)
    return addNormalRows(mean, std::sqrt(mean), rows, rowsPerBin);
  // Terms beyond 12 standard deviations add nothing a double keeps.
  double spread = 12.0 * std::sqrt(mean) + 20.0;
  int64_t first = std::max<int64_t>(1, static_cast<int64_t>(mean - spread));
  int64_t last = static_cast<int64_t>(std::ceil(mean + spread));
  double term = std::exp(-mean + double(first) * std::log(mean) -
                         std::lgamma(double(first) + 1.0));
  unsigned bin = binOf(first);
  double top = mostHitsInBin(bin);
  for (int64_t hits = first; hits <= last; ++hits) {
    if (double(hits) > top)
      top = mostHitsInBin(bin = binOf(hits));
    rowsPerBin[bin] += rows * term;
    term *= mean / double(hits + 1);
  }
}

/// Adds to `rowsPerBin` the expected number of `rows` rows, each hit a
/// binomial number of times (`trials` lookups that each hit the row with
/// probability `chance`), whose hit count falls in each bin.
static void addBinomialRows(int64_t trials, double chance, double rows,
                            AccessBins &rowsPerBin) {
  double mean = double(trials) * chance;
  double variance = mean * (1.0 - chance);
  if (!(mean > 0.0) || rows <= 0.0)
    return;
  if (variance < 1e-6) {
    if (int64_t hits = std::llround(mean); hits >= 1)
      rowsPerBin[binOf(hits)] += rows;
    return;
  }
  double sd = std::sqrt(variance);
  if (mean > kNormalFromMean)
    return addNormalRows(mean, sd, rows, rowsPerBin);
  double spread = 12.0 * sd + 20.0;
  int64_t first = std::max<int64_t>(1, static_cast<int64_t>(mean - spread));
  int64_t last =
      std::min<int64_t>(trials, static_cast<int64_t>(std::ceil(mean + spread)));
  double logChance = std::log(chance), logMiss = std::log1p(-chance);
  double logAll = std::lgamma(double(trials) + 1.0);
  for (int64_t hits = first; hits <= last; ++hits)
    rowsPerBin[binOf(hits)] +=
        rows *
        std::exp(logAll - std::lgamma(double(hits) + 1.0) -
                 std::lgamma(double(trials - hits) + 1.0) +
                 double(hits) * logChance + double(trials - hits) * logMiss);
}

constexpr double kNegligibleShare = 1e-9;

/// Expected rows per bin as fractions of the rows hit, with no row in a bin
/// that needs more hits than a batch of `lookups` has: such mass moves to
/// the highest bin the batch can fill. All zero when no row is expected to
/// be hit.
static AccessBins normalizedWithin(AccessBins rowsPerBin, double lookups) {
  unsigned highest = 0;
  while (highest + 1 < kNumAccessBins &&
         fewestHitsInBin(highest + 1) <= std::ceil(lookups))
    ++highest;
  for (unsigned bin = highest + 1; bin < kNumAccessBins; ++bin) {
    rowsPerBin[highest] += rowsPerBin[bin];
    rowsPerBin[bin] = 0.0;
  }
  double total = 0.0;
  for (double rows : rowsPerBin)
    total += rows;
  AccessBins fractions{};
  if (!(total > 0.0))
    return fractions;
  // Shares below kNegligibleShare are rounding and far tails: dropped, so
  // that a histogram reads as the bins that matter.
  double kept = 0.0;
  for (double &rows : rowsPerBin) {
    if (rows < kNegligibleShare * total)
      rows = 0.0;
    kept += rows;
  }
  for (unsigned bin = 0; bin < kNumAccessBins; ++bin)
    fractions[bin] = rowsPerBin[bin] / kept;
  return fractions;
}

namespace {
/// The bounded power law of zipfIndexStream: rank r has the mass of
/// x^-alpha over [r + 1, r + 2) out of [1, rows + 1).
class PowerLaw {
public:
  PowerLaw(int64_t rows, double alpha)
      : exponent(1.0 - alpha), logarithmic(std::abs(alpha - 1.0) < 1e-9),
        whole(span(0, rows)) {}

  /// The probability of a rank in [first, end).
  double mass(int64_t first, int64_t end) const {
    return span(first, end) / whole;
  }

private:
  /// The integral of x^-alpha over [first + 1, end + 1), up to the constant
  /// factor the ratio cancels, computed without subtracting close values.
  double span(int64_t first, int64_t end) const {
    double logRatio = std::log1p(double(end - first) / double(first + 1));
    if (logarithmic)
      return logRatio;
    return std::exp(exponent * std::log(double(first + 1))) *
           std::expm1(exponent * logRatio) / exponent;
  }

  double exponent;
  bool logarithmic;
  double whole;
};
} // namespace

/// Ranks priced one by one; beyond them, groups whose last rank is at most
/// 1% past their first.
constexpr int64_t kExactRanks = 1024;
constexpr double kGroupGrowth = 1.01;
/// Rows with at least this share of the lookups are counted as binomial.
constexpr double kBinomialFromChance = 0.01;

namespace {
/// A group of ranks of equal popularity: how many, and each one's chance
/// to be any one lookup.
struct RankGroup {
  double count;
  double chance;
};
} // namespace

/// The ranks of the power law of `alpha` over `rows` rows in groups: the
/// first kExactRanks one by one, then groups whose last rank is at most 1%
/// past their first, a group ending at `boundary` (a rank where one must
/// start) where it would cross it.
static std::vector<RankGroup> rankGroups(int64_t rows, double alpha,
                                         int64_t boundary = 0) {
  PowerLaw law(rows, alpha);
  std::vector<RankGroup> groups;
  int64_t first = 0;
  while (first < rows) {
    int64_t end = first + 1;
    if (first >= kExactRanks)
      end = std::max(
          end, static_cast<int64_t>(std::ceil(double(first) * kGroupGrowth)));
    end = std::min(end, rows);
    if (first < boundary)
      end = std::min(end, boundary);
    double count = double(end - first);
    groups.push_back({count, law.mass(first, end) / count});
    first = end;
  }
  return groups;
}

AccessBins expectedAccessHistogram(int64_t rows, double lookups, double alpha) {
  if (rows <= 0 || !(lookups >= 1.0))
    return AccessBins{};
  AccessBins rowsPerBin{};
  for (const RankGroup &group : rankGroups(rows, alpha)) {
    // A row that takes a large share of the lookups varies less than a
    // Poisson count would.
    if (group.chance >= kBinomialFromChance)
      addBinomialRows(std::llround(lookups), group.chance, group.count,
                      rowsPerBin);
    else
      addPoissonRows(lookups * group.chance, group.count, rowsPerBin);
  }
  return normalizedWithin(rowsPerBin, lookups);
}

/// Hit counts a bin's rows are spread over when a histogram is thinned: the
/// bin's whole range up to this many, else this many evenly spaced.
constexpr int64_t kCountsPerBin = 8;

double fitZipfAlpha(ArrayRef<double> bins, int64_t rows, double lookups) {
  auto distance = [&](double alpha) {
    AccessBins model = expectedAccessHistogram(rows, lookups, alpha);
    double squares = 0.0;
    for (unsigned bin = 0; bin < kNumAccessBins && bin < bins.size(); ++bin)
      squares += (model[bin] - bins[bin]) * (model[bin] - bins[bin]);
    return squares;
  };
  // A grid finds the basin; golden sections refine inside it.
  constexpr double step = 0.1;
  double best = 0.0, bestDistance = distance(0.0);
  for (double alpha = step; alpha <= kMaxZipfAlpha + 1e-9; alpha += step)
    if (double d = distance(alpha); d < bestDistance) {
      best = alpha;
      bestDistance = d;
    }
  double low = std::max(0.0, best - step);
  double high = std::min(kMaxZipfAlpha, best + step);
  const double ratio = 0.5 * (std::sqrt(5.0) - 1.0);
  for (int i = 0; i < 16; ++i) {
    double a = high - ratio * (high - low), b = low + ratio * (high - low);
    if (distance(a) < distance(b))
      high = b;
    else
      low = a;
  }
  double refined = 0.5 * (low + high);
  return distance(refined) < bestDistance ? refined : best;
}

AccessBins rescaleAccessHistogram(ArrayRef<double> bins, int64_t rows,
                                  double poolingFactor, int64_t fromBatch,
                                  int64_t toBatch) {
  double lookups = double(toBatch) * poolingFactor;
  double total = 0.0;
  for (double fraction : bins)
    total += fraction;
  AccessBins given{};
  for (unsigned bin = 0; bin < kNumAccessBins && bin < bins.size(); ++bin)
    given[bin] = total > 0.0 ? bins[bin] / total : 0.0;
  if (fromBatch == toBatch)
    return given;
  if (!(total > 0.0) || toBatch > fromBatch)
    return expectedAccessHistogram(
        rows, lookups,
        total > 0.0
            ? fitZipfAlpha(given, rows, double(fromBatch) * poolingFactor)
            : kDefaultZipfAlpha);

  // A smaller batch keeps each lookup of the larger one with probability
  // toBatch / fromBatch. A bin's rows are spread evenly over its counts,
  // over the upper part of them where the histogram needs more hits than
  // an even spread gives its rows (a table of few rows).
  AccessBins bottom{}, top{};
  double mean = 0.0, room = 0.0;
  for (unsigned bin = 0; bin < kNumAccessBins; ++bin) {
    std::tie(bottom[bin], top[bin]) = hitRange(bin);
    mean += given[bin] * 0.5 * (bottom[bin] + top[bin]);
    room += given[bin] * 0.5 * (top[bin] - bottom[bin]);
  }
  double need = double(fromBatch) * poolingFactor / double(rows) - mean;
  if (need > 0.0) {
    double share = room > 0.0 ? std::min(1.0, need / room) : 1.0;
    for (unsigned bin = 0; bin < kNumAccessBins; ++bin)
      bottom[bin] += share * (top[bin] - bottom[bin]);
    unsigned last = kNumAccessBins - 1;
    if (need > room && given[last] > 0.0) {
      double raise = (need - room) / given[last];
      bottom[last] += raise;
      top[last] += raise;
    }
  }
  double keep = double(toBatch) / double(fromBatch);
  AccessBins rowsPerBin{};
  for (unsigned bin = 0; bin < kNumAccessBins; ++bin) {
    if (given[bin] <= 0.0)
      continue;
    int64_t low = std::llround(bottom[bin]), high = std::llround(top[bin]);
    int64_t counts = std::min(kCountsPerBin, high - low + 1);
    for (int64_t i = 0; i < counts; ++i) {
      int64_t hits = counts == 1 ? low : low + (high - low) * i / (counts - 1);
      addBinomialRows(hits, keep, given[bin] / double(counts), rowsPerBin);
    }
  }
  return normalizedWithin(rowsPerBin, lookups);
}

RowHitMoments &RowHitMoments::operator+=(const RowHitMoments &other) {
  lookups += other.lookups;
  sumSquaredHits += other.sumSquaredHits;
  hottestRowHits = std::max(hottestRowHits, other.hottestRowHits);
  return *this;
}

RowHitMoments rowHitMoments(ArrayRef<double> bins, int64_t rows,
                            double lookups) {
  RowHitMoments moments;
  if (!(lookups > 0.0) || rows <= 0)
    return moments;
  moments.lookups = lookups;
  // A bin's rows are spread over its counts [low, high] as a power law of
  // exponent -2 (density 1 / h^2: as many rows above 2h as between h and
  // 2h, which skewed tables show), so that they gather at the bin's low
  // end: mean low high ln(high / low) / (high - low), mean square
  // low high.
  double total = 0.0, meanHits = 0.0, meanSquaredHits = 0.0;
  unsigned top = 0;
  for (unsigned bin = 0; bin < kNumAccessBins && bin < bins.size(); ++bin) {
    if (!(bins[bin] > 0.0))
      continue;
    auto [low, high] = hitRange(bin);
    double mean =
        high > low ? low * high * std::log(high / low) / (high - low) : low;
    total += bins[bin];
    meanHits += bins[bin] * mean;
    meanSquaredHits += bins[bin] * low * high;
    top = bin;
  }
  if (!(total > 0.0)) {
    // Nothing says the rows repeat: every lookup a row of its own.
    moments.sumSquaredHits = lookups;
    moments.hottestRowHits = 1.0;
    return moments;
  }
  meanHits /= total;
  meanSquaredHits /= total;
  // As many distinct rows as the lookups fill at the histogram's counts, at
  // least one and at most the table's; the counts scaled to the lookups.
  double distinct =
      std::clamp(lookups / meanHits, 1.0, static_cast<double>(rows));
  double scale = lookups / (distinct * meanHits);
  moments.sumSquaredHits = distinct * meanSquaredHits * scale * scale;
  // The hottest of the top bin's n rows: the law's quantile n / (n + 1)
  // over the bin, 4/3 of its low end for a single row.
  auto [low, high] = hitRange(top);
  double n = std::max(1.0, distinct * bins[top] / total);
  double quantile = n / (n + 1.0);
  double hottest = 1.0 / (1.0 / low - quantile * (1.0 / low - 1.0 / high));
  // One row takes every lookup.
  moments.hottestRowHits =
      distinct <= 1.0 ? lookups : std::min(lookups, hottest * scale);
  return moments;
}

/// The expected largest of `count` independent standard normal draws
/// (Blom's approximation: the normal quantile at (count - 3/8) /
/// (count + 1/4)), found by bisection.
static double solveLargestNormal(double count) {
  if (count <= 1.0)
    return 0.0;
  double target = (count - 0.375) / (count + 0.25);
  double low = 0.0, high = 10.0;
  for (int step = 0; step < 60; ++step) {
    double mid = 0.5 * (low + high);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < target)
      low = mid;
    else
      high = mid;
  }
  return 0.5 * (low + high);
}

/// solveLargestNormal, looked up for the whole counts planners ask for
/// most (row blocks of up to kTabledCounts devices): each solve takes 60
/// evaluations of erfc, and a search asks for millions.
static double expectedLargestNormal(double count) {
  constexpr unsigned kTabledCounts = 1024;
  static const std::vector<double> tabled = [] {
    std::vector<double> values(kTabledCounts + 1);
    for (unsigned k = 0; k <= kTabledCounts; ++k)
      values[k] = solveLargestNormal(k);
    return values;
  }();
  if (count >= 0.0 && count <= kTabledCounts && count == std::floor(count))
    return tabled[static_cast<size_t>(count)];
  return solveLargestNormal(count);
}

double heaviestRowBlockShare(const RowHitMoments &moments, double fraction) {
  if (!(fraction > 0.0) || fraction >= 1.0 || !(moments.lookups > 0.0))
    return std::clamp(fraction, 0.0, 1.0);
  double blocks = std::max(2.0, std::round(1.0 / fraction));
  double mean = fraction * moments.lookups;
  double spread =
      std::sqrt(fraction * (1.0 - fraction) * moments.sumSquaredHits);
  double largest = mean + expectedLargestNormal(blocks) * spread;
  double hot = moments.hottestRowHits;
  double holdsHottest = hot + fraction * (moments.lookups - hot);
  double heaviest =
      std::clamp(std::max(largest, holdsHottest), mean, moments.lookups);
  return heaviest / moments.lookups;
}

/// The chance that a row of `rate` lookups per batch is used in `batches`
/// batches.
static double usedWithin(double rate, double batches) {
  return -std::expm1(-rate * batches);
}

CacheEstimate estimateRowCache(ArrayRef<double> bins, int64_t rows,
                               double lookups, int64_t cacheRows,
                               CachePolicy policy) {
  if (rows <= 0 || !(lookups > 0.0))
    return CacheEstimate();
  double total = 0.0;
  for (double fraction : bins)
    total += fraction;
  double alpha =
      total > 0.0 ? fitZipfAlpha(bins, rows, lookups) : kDefaultZipfAlpha;
  return estimateRowCacheOfLaw(alpha, rows, lookups, cacheRows, policy);
}

CacheEstimate estimateRowCacheOfLaw(double alpha, int64_t rows, double lookups,
                                    int64_t cacheRows, CachePolicy policy) {
  CacheEstimate estimate;
  if (rows <= 0 || !(lookups > 0.0))
    return estimate;
  int64_t cached = std::clamp<int64_t>(cacheRows, 0, rows);
  std::vector<RankGroup> groups = rankGroups(rows, alpha, cached);
  for (const RankGroup &group : groups)
    estimate.batchRows += group.count * usedWithin(lookups * group.chance, 1.0);
  if (cached == rows)
    return estimate;

  if (policy == CachePolicy::Frequency) {
    // The groups are split at the cache's last rank.
    double ranks = 0.0;
    for (const RankGroup &group : groups) {
      if (ranks >= double(cached))
        estimate.missedRows +=
            group.count * usedWithin(lookups * group.chance, 1.0);
      ranks += group.count;
    }
    return estimate;
  }

  // The characteristic time: the batches in which cacheRows distinct rows
  // are used, found by bisection on its logarithm.
  auto distinctWithin = [&](double batches) {
    double distinct = 0.0;
    for (const RankGroup &group : groups)
      distinct += group.count * usedWithin(lookups * group.chance, batches);
    return distinct;
  };
  double low = std::log(1e-12), high = std::log(1e18);
  for (int i = 0; i < 200 && high - low > 1e-10; ++i) {
    double middle = 0.5 * (low + high);
    if (distinctWithin(std::exp(middle)) < double(cached))
      low = middle;
    else
      high = middle;
  }
  double window = cached > 0 ? std::exp(0.5 * (low + high)) : 0.0;
  for (const RankGroup &group : groups)
    estimate.missedRows += group.count *
                           usedWithin(lookups * group.chance, 1.0) *
                           std::exp(-lookups * group.chance * window);
  return estimate;
}

} // namespace neuroshard
