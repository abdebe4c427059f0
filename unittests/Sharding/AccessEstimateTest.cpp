//===- AccessEstimateTest.cpp - Histograms a task need not give -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The estimates are checked against streams the runtime draws
// (inputs::zipfIndexStream, inputs::accessHistogram), and against the rule
// every histogram must pass at its batch size.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/AccessEstimate.h"
#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/RowCache.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <list>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace neuroshard;

namespace {

/// The mean histogram of `draws` streams of `lookups` indices.
AccessBins drawnHistogram(int64_t rows, double alpha, int64_t lookups,
                          unsigned draws) {
  AccessBins mean{};
  for (unsigned d = 0; d < draws; ++d) {
    std::array<double, kNumAccessBins> hist = inputs::accessHistogram(
        inputs::zipfIndexStream(rows, alpha, lookups, 17 + d));
    for (unsigned bin = 0; bin < kNumAccessBins; ++bin)
      mean[bin] += hist[bin] / draws;
  }
  return mean;
}

std::string describe(const AccessBins &bins) {
  std::string text;
  for (double v : bins)
    text += std::to_string(v).substr(0, 6) + " ";
  return text;
}

/// The largest difference of two histograms in one bin.
double largestGap(const AccessBins &a, const AccessBins &b) {
  double gap = 0.0;
  for (unsigned bin = 0; bin < kNumAccessBins; ++bin)
    gap = std::max(gap, std::abs(a[bin] - b[bin]));
  return gap;
}

double sum(const AccessBins &bins) {
  double total = 0.0;
  for (double v : bins)
    total += v;
  return total;
}

struct Case {
  int64_t rows;
  double alpha;
  int64_t lookups;
};

TEST(AccessEstimateTest, MatchesDrawnStreams) {
  for (Case c : {Case{500, 1.05, 30720}, Case{100000, 1.05, 10240},
                 Case{100000, 0.0, 50000}, Case{2000000, 1.2, 200000},
                 Case{5000, 0.5, 100000}, Case{1000000, 2.0, 100000},
                 Case{20000000, 1.05, 400000}}) {
    AccessBins expected = expectedAccessHistogram(c.rows, c.lookups, c.alpha);
    AccessBins drawn = drawnHistogram(c.rows, c.alpha, c.lookups, 4);
    SCOPED_TRACE("rows " + std::to_string(c.rows) + ", alpha " +
                 std::to_string(c.alpha) + ", lookups " +
                 std::to_string(c.lookups) + "\n expected " +
                 describe(expected) + "\n drawn    " + describe(drawn));
    EXPECT_NEAR(sum(expected), 1.0, 1e-9);
    EXPECT_LT(largestGap(expected, drawn), 0.02);
  }
}

TEST(AccessEstimateTest, RescaledMatchesDrawnStreams) {
  for (Case c : {Case{500, 1.05, 30720}, Case{100000, 1.05, 100000},
                 Case{2000000, 1.2, 400000}, Case{5000, 0.5, 100000}}) {
    for (int64_t divisor : {2, 8, 64}) {
      AccessBins large = drawnHistogram(c.rows, c.alpha, c.lookups, 4);
      AccessBins small =
          drawnHistogram(c.rows, c.alpha, c.lookups / divisor, 4);
      AccessBins down = rescaleAccessHistogram(large, c.rows, 1.0, c.lookups,
                                               c.lookups / divisor);
      AccessBins up = rescaleAccessHistogram(small, c.rows, 1.0,
                                             c.lookups / divisor, c.lookups);
      SCOPED_TRACE("rows " + std::to_string(c.rows) + ", alpha " +
                   std::to_string(c.alpha) + ", lookups " +
                   std::to_string(c.lookups) + " / " + std::to_string(divisor) +
                   "\n small " + describe(small) + "\n down  " +
                   describe(down) + "\n large " + describe(large) +
                   "\n up    " + describe(up));
      EXPECT_LT(largestGap(down, small), 0.05);
      // A small batch shows little of the law a large one reaches.
      EXPECT_LT(largestGap(up, large), divisor < 64 ? 0.05 : 0.12);
    }
  }
}

TEST(AccessEstimateTest, FitFindsTheSkew) {
  for (double alpha : {0.0, 0.6, 1.05, 1.5, 2.5})
    EXPECT_NEAR(fitZipfAlpha(expectedAccessHistogram(1000000, 200000, alpha),
                             1000000, 200000),
                alpha, 0.02);
  EXPECT_NEAR(
      fitZipfAlpha(drawnHistogram(1000000, 1.2, 200000, 2), 1000000, 200000),
      1.2, 0.05);
}

/// Every estimate is a histogram the rules accept at the batch it is for,
/// from one row to billions, from under one lookup per row to thousands.
TEST(AccessEstimateTest, EstimatesPassTheRules) {
  for (int64_t rows : {int64_t(1), int64_t(7), int64_t(500), int64_t(100000),
                       int64_t(5000000000)})
    for (double pooling : {0.0, 0.001, 1.0, 30.0})
      for (int64_t batch : {int64_t(1), int64_t(1024), int64_t(65536)})
        for (double alpha : {0.0, 1.05, 3.0}) {
          AccessBins bins =
              expectedAccessHistogram(rows, double(batch) * pooling, alpha);
          SCOPED_TRACE("rows " + std::to_string(rows) + ", pooling " +
                       std::to_string(pooling) + ", batch " +
                       std::to_string(batch) + ", alpha " +
                       std::to_string(alpha) + ": " + describe(bins));
          EXPECT_EQ(checkAccessHistogram(bins), std::nullopt);
          EXPECT_EQ(checkAccessHistogramForBatch(bins, rows, pooling, batch),
                    std::nullopt);
          for (int64_t other : {int64_t(1), int64_t(512), int64_t(262144)}) {
            AccessBins moved =
                rescaleAccessHistogram(bins, rows, pooling, batch, other);
            SCOPED_TRACE("to batch " + std::to_string(other) + ": " +
                         describe(moved));
            EXPECT_EQ(checkAccessHistogram(moved), std::nullopt);
            EXPECT_EQ(checkAccessHistogramForBatch(moved, rows, pooling, other),
                      std::nullopt);
          }
        }
}

TEST(AccessEstimateTest, SameBatchKeepsTheHistogram) {
  std::vector<double> bins(kNumAccessBins, 0.0);
  bins[0] = 0.5;
  bins[3] = 0.5;
  AccessBins same = rescaleAccessHistogram(bins, 1000, 10.0, 1024, 1024);
  for (unsigned bin = 0; bin < kNumAccessBins; ++bin)
    EXPECT_EQ(same[bin], bins[bin]);
}

/// The share of the lookups of `stream` that the most loaded of `blocks`
/// contiguous row blocks of `rows` rows receives.
double heaviestBlockOf(const std::vector<int64_t> &stream, int64_t rows,
                       int64_t blocks) {
  std::vector<double> counts(blocks, 0.0);
  for (int64_t index : stream) {
    // The block that holds the row, as rows * p / blocks cuts them.
    int64_t block = (index * blocks + blocks - 1) / rows;
    while (block > 0 && rows * block / blocks > index)
      --block;
    while (block + 1 < blocks && rows * (block + 1) / blocks <= index)
      ++block;
    counts[block] += 1.0;
  }
  return *std::max_element(counts.begin(), counts.end()) /
         double(stream.size());
}

// The assumption row pieces are priced by (Problem.h, rowBlockShare): with
// the rows in random order, the most loaded block's share follows from the
// histogram alone. Checked against the blocks of streams the runtime draws,
// from tables of many evenly hit rows (the share is the blocks' row share)
// to tables whose lookups go to a few very hot rows (half the lookups or
// more on one block of 16): within 25% of the mean measured share, where
// the blocks' row share alone is up to ten times below it.
TEST(AccessEstimateTest, HeaviestRowBlockFollowsTheHistogram) {
  constexpr unsigned kDraws = 6;
  for (Case c : {Case{4000000, 1.05, 65536}, Case{100000, 1.05, 16384},
                 Case{100000, 0.6, 50000}, Case{20000, 1.5, 16384},
                 Case{5000, 2.0, 4096}, Case{1000000, 2.5, 12288},
                 Case{300, 1.2, 30000}}) {
    for (int64_t blocks : {2, 4, 8, 16}) {
      double measured = 0.0, predicted = 0.0;
      for (unsigned d = 0; d < kDraws; ++d) {
        std::vector<int64_t> stream =
            inputs::zipfIndexStream(c.rows, c.alpha, c.lookups, 31 + d);
        measured += heaviestBlockOf(stream, c.rows, blocks) / kDraws;
        // Each draw's own histogram, as a task would give it.
        std::array<double, kNumAccessBins> hist =
            inputs::accessHistogram(stream);
        predicted += heaviestRowBlockShare(
                         rowHitMoments(hist, c.rows, double(c.lookups)),
                         1.0 / double(blocks)) /
                     kDraws;
      }
      SCOPED_TRACE("rows " + std::to_string(c.rows) + ", alpha " +
                   std::to_string(c.alpha) + ", lookups " +
                   std::to_string(c.lookups) + ", " + std::to_string(blocks) +
                   " blocks: measured " + std::to_string(measured) +
                   ", predicted " + std::to_string(predicted));
      EXPECT_NEAR(predicted / measured, 1.0, 0.25);
    }
  }
}

TEST(AccessEstimateTest, HeaviestRowBlockBounds) {
  // A table never hit, a piece of every row, and a table whose every lookup
  // is one row.
  EXPECT_DOUBLE_EQ(heaviestRowBlockShare(RowHitMoments(), 0.25), 0.25);
  RowHitMoments even =
      rowHitMoments(std::vector<double>(kNumAccessBins, 0.0), 1000000, 1000.0);
  EXPECT_DOUBLE_EQ(even.sumSquaredHits, 1000.0);
  EXPECT_DOUBLE_EQ(heaviestRowBlockShare(even, 1.0), 1.0);
  std::vector<double> one(kNumAccessBins, 0.0);
  one[12] = 1.0;
  RowHitMoments single = rowHitMoments(one, 1000000, 1500.0);
  EXPECT_DOUBLE_EQ(single.hottestRowHits, 1500.0);
  EXPECT_DOUBLE_EQ(heaviestRowBlockShare(single, 0.125), 1.0);
  // Combined features: the lookups and squares add, the hottest row is the
  // hotter of the two.
  RowHitMoments both = even;
  both += single;
  EXPECT_DOUBLE_EQ(both.lookups, 2500.0);
  EXPECT_DOUBLE_EQ(both.hottestRowHits, 1500.0);
}

TEST(AccessEstimateTest, SkewRule) {
  EXPECT_EQ(checkZipfAlpha(0.0), std::nullopt);
  EXPECT_EQ(checkZipfAlpha(kDefaultZipfAlpha), std::nullopt);
  EXPECT_EQ(checkZipfAlpha(9.0).value_or(""),
            "'zipf_alpha' must be a number in [0, 4], got 9");
  EXPECT_NE(checkZipfAlpha(-0.5), std::nullopt);
  EXPECT_NE(checkZipfAlpha(std::nan("")), std::nullopt);
}

/// A stream of `batches` batches of `lookups` lookups each, drawn by the
/// runtime's generator with one popularity throughout.
std::vector<std::vector<int64_t>> drawnBatches(int64_t rows, double alpha,
                                               int64_t lookups,
                                               unsigned batches,
                                               uint64_t seed) {
  std::vector<int64_t> stream =
      inputs::zipfIndexStream(rows, alpha, lookups * batches, seed);
  std::vector<std::vector<int64_t>> split(batches);
  for (unsigned b = 0; b < batches; ++b)
    split[b].assign(stream.begin() + b * lookups,
                    stream.begin() + (b + 1) * lookups);
  return split;
}

std::vector<int64_t> distinctRows(const std::vector<int64_t> &batch) {
  std::vector<int64_t> rows = batch;
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

/// Missed rows per batch of a static cache of the `cacheRows` most popular
/// rows of the stream drawn with `seed`, over the batches from `measured`
/// on.
double
simulatedFrequencyMisses(const std::vector<std::vector<int64_t>> &batches,
                         int64_t rows, uint64_t seed, unsigned measured,
                         int64_t cacheRows) {
  std::unordered_set<int64_t> cache;
  for (int64_t rank = 0; rank < cacheRows; ++rank)
    cache.insert(inputs::zipfRankRow(rows, seed, rank));
  double missed = 0.0;
  for (unsigned b = measured; b < batches.size(); ++b)
    for (int64_t row : distinctRows(batches[b]))
      missed += cache.count(row) ? 0.0 : 1.0;
  return missed / double(batches.size() - measured);
}

/// Missed rows per batch of a cache of `cacheRows` rows that takes in every
/// row a batch uses before it runs and evicts the least recently used,
/// started empty at batch `start`, over the batches from `measured` on.
/// The distinct rows the `measured` batches after the first `warmup` use,
/// on average.
double meanDistinctRows(const std::vector<std::vector<int64_t>> &batches,
                        unsigned warmup, unsigned measured) {
  double used = 0.0;
  for (unsigned b = warmup; b < warmup + measured; ++b)
    used += double(distinctRows(batches[b]).size());
  return used / double(measured);
}

double simulatedLRUMisses(const std::vector<std::vector<int64_t>> &batches,
                          unsigned start, unsigned measured,
                          int64_t cacheRows) {
  std::list<int64_t> recency; // most recent first
  std::unordered_map<int64_t, std::list<int64_t>::iterator> where;
  double missed = 0.0;
  for (unsigned b = start; b < batches.size(); ++b) {
    // The measured batches find the cache full: its steady state.
    if (b == measured) {
      EXPECT_EQ(int64_t(recency.size()), cacheRows) << "a cold cache";
    }
    for (int64_t row : distinctRows(batches[b])) {
      auto found = where.find(row);
      if (found == where.end()) {
        if (b >= measured)
          missed += 1.0;
      } else {
        recency.erase(found->second);
      }
      recency.push_front(row);
      where[row] = recency.begin();
    }
    while (int64_t(recency.size()) > cacheRows) {
      where.erase(recency.back());
      recency.pop_back();
    }
  }
  return missed / double(batches.size() - measured);
}

TEST(AccessEstimateTest, CacheMissesMatchSimulatedStreams) {
  // Skews around the public workloads' (Zipf 1.05 to 1.2), and caches of
  // one to four batches' distinct rows, up to a quarter of the table (the
  // sizes worth a cache: TorchRec's default holds a fifth). The frequency
  // cache holds the most popular rows of the stream; the LRU cache starts
  // empty `warmup` batches before the measured ones.
  struct CacheCase {
    int64_t rows;
    double alpha;
  };
  // One batch of 65536 bags of 2 lookups.
  constexpr int64_t lookups = 131072;
  constexpr uint64_t seed = 7;
  constexpr unsigned warmup = 15, measured = 10;
  for (CacheCase c : {CacheCase{4000000, 0.9}, CacheCase{4000000, 1.05},
                      CacheCase{4000000, 1.2}, CacheCase{1000000, 1.3}}) {
    std::vector<std::vector<int64_t>> drawn =
        drawnBatches(c.rows, c.alpha, lookups, warmup + measured, seed);
    std::array<double, kNumAccessBins> hist =
        inputs::accessHistogram(drawn.front());
    double used = meanDistinctRows(drawn, warmup, measured);
    for (double times : {1.0, 2.0, 4.0}) {
      int64_t cacheRows = std::llround(times * used);
      if (cacheRows > c.rows / 4)
        continue;
      SCOPED_TRACE(testing::Message()
                   << c.rows << " rows, alpha " << c.alpha << ", cache "
                   << cacheRows << " rows (" << times << " batches' rows)");
      CacheEstimate frequency = estimateRowCache(
          hist, c.rows, double(lookups), cacheRows, CachePolicy::Frequency);
      CacheEstimate lru =
          estimateRowCache(hist, c.rows, double(lookups), cacheRows,
                           CachePolicy::LeastRecentlyUsed);
      EXPECT_NEAR(frequency.batchRows, used, 0.1 * used);
      double frequencyMisses =
          simulatedFrequencyMisses(drawn, c.rows, seed, warmup, cacheRows);
      double lruMisses = simulatedLRUMisses(drawn, 0, warmup, cacheRows);
      EXPECT_NEAR(frequency.missedRows, frequencyMisses, 0.1 * frequencyMisses);
      EXPECT_NEAR(lru.missedRows, lruMisses, 0.1 * lruMisses);
      // Least recently used misses what a static choice of the most popular
      // rows holds.
      EXPECT_GE(lru.missedRows, frequency.missedRows);
    }
  }
}

TEST(AccessEstimateTest, TheRuntimeCacheMissesWhatTheLRUEstimateSays) {
  // The cache a host-memory shard runs through (Runtime/RowCache.h: sets of
  // 32 ways, least recently used within a set, batch after batch) misses
  // about what Che's approximation of a fully associative LRU cache says.
  constexpr int64_t lookups = 131072;
  constexpr unsigned warmup = 15, measured = 10;
  struct CacheCase {
    int64_t rows;
    double alpha;
  };
  for (CacheCase c : {CacheCase{4000000, 1.05}, CacheCase{1000000, 1.3}}) {
    std::vector<std::vector<int64_t>> drawn =
        drawnBatches(c.rows, c.alpha, lookups, warmup + measured, 11);
    std::array<double, kNumAccessBins> hist =
        inputs::accessHistogram(drawn.front());
    double used = meanDistinctRows(drawn, warmup, measured);
    for (double times : {2.0, 4.0}) {
      int64_t cacheRows = std::llround(times * used);
      SCOPED_TRACE(testing::Message() << c.rows << " rows, alpha " << c.alpha
                                      << ", cache " << cacheRows << " rows");
      runtime::RowCache cache(c.rows, cacheRows);
      // Rows of no columns: the bookkeeping alone.
      float nothing = 0.0f;
      runtime::RowCacheStorage storage{&nothing, 0, &nothing, 0, 0, 0};
      double missed = 0.0;
      for (unsigned b = 0; b < warmup + measured; ++b) {
        std::vector<int64_t> rows = distinctRows(drawn[b]);
        std::vector<int64_t> locations(rows.size());
        runtime::RowCacheStats before = cache.stats();
        cache.beginStep();
        ASSERT_FALSE(cache.fetch(rows.data(), int64_t(rows.size()),
                                 locations.data(), storage, false));
        if (b >= warmup)
          missed += double(cache.stats().lookups - before.lookups -
                           (cache.stats().hits - before.hits));
      }
      missed /= double(measured);
      CacheEstimate lru =
          estimateRowCache(hist, c.rows, double(lookups), cacheRows,
                           CachePolicy::LeastRecentlyUsed);
      EXPECT_NEAR(lru.missedRows, missed, 0.1 * missed);
      RecordProperty(std::to_string(c.rows) + "-rows-" +
                         std::to_string(int(times)) + "-batches-error",
                     std::to_string(lru.missedRows / missed - 1.0));
    }
  }
}

TEST(AccessEstimateTest, CacheEstimateBounds) {
  std::array<double, kNumAccessBins> hist =
      inputs::accessHistogram(inputs::zipfIndexStream(50000, 1.05, 20000, 3));
  for (CachePolicy policy :
       {CachePolicy::Frequency, CachePolicy::LeastRecentlyUsed}) {
    CacheEstimate none = estimateRowCache(hist, 50000, 20000.0, 0, policy);
    EXPECT_DOUBLE_EQ(none.missedRows, none.batchRows);
    EXPECT_DOUBLE_EQ(none.hitRate(), 0.0);
    CacheEstimate all = estimateRowCache(hist, 50000, 20000.0, 50000, policy);
    EXPECT_DOUBLE_EQ(all.missedRows, 0.0);
    EXPECT_DOUBLE_EQ(all.hitRate(), 1.0);
    // More cache, fewer misses.
    double previous = none.missedRows;
    for (int64_t cacheRows : {1000, 5000, 20000, 40000}) {
      double missed =
          estimateRowCache(hist, 50000, 20000.0, cacheRows, policy).missedRows;
      EXPECT_LT(missed, previous);
      previous = missed;
    }
  }
  // No lookups: nothing used, nothing missed.
  CacheEstimate idle =
      estimateRowCache(hist, 50000, 0.0, 100, CachePolicy::Frequency);
  EXPECT_DOUBLE_EQ(idle.batchRows, 0.0);
  EXPECT_DOUBLE_EQ(idle.hitRate(), 1.0);
}

} // namespace
