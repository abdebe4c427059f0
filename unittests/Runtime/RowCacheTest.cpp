//===- RowCacheTest.cpp - The device cache of a host-memory shard ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/RowCache.h"
#include "neuroshard/Runtime/InputGenerator.h"

#include "gtest/gtest.h"

#include <map>
#include <set>

using namespace neuroshard;
using namespace neuroshard::runtime;

namespace {

/// A shard of `rows` rows of `width` floats in host memory and a cache of
/// `slots` of them, laid out as the kernels read them: the cache's rows,
/// then the host's, one virtual table.
struct VirtualTable {
  int64_t rows, slots, width;
  std::vector<float> data;
  VirtualTable(int64_t rows, int64_t slots, int64_t width)
      : rows(rows), slots(slots), width(width),
        data(static_cast<size_t>((rows + slots) * width), 0.0f) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c)
        host(r)[c] = float(r) + 0.001f * float(c);
  }
  float *host(int64_t row) { return data.data() + (slots + row) * width; }
  float *at(int64_t location) { return data.data() + location * width; }
  RowCacheStorage storage() {
    return {data.data(), width, data.data() + slots * width, width, 0, width};
  }
};

/// `count` rows of one set of `cache`, from row 0 up.
std::vector<int64_t> rowsOfOneSet(const RowCache &cache, int64_t set,
                                  size_t count) {
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < cache.rows() && rows.size() < count; ++r)
    if (cache.setOf(r) == set)
      rows.push_back(r);
  return rows;
}

TEST(RowCacheTest, FillsHitsAndEvictsTheLeastRecentlyUsedRowOfASet) {
  VirtualTable table(256, 4, 3);
  RowCache cache(256, 4, 2);
  EXPECT_EQ(cache.sets(), 2);
  std::vector<int64_t> rows = rowsOfOneSet(cache, 0, 3);
  ASSERT_EQ(rows.size(), 3u);
  RowCacheStorage storage = table.storage();
  int64_t location = -1;

  // Step 1: rows[0] comes in; step 2: rows[1] too; both stay.
  cache.beginStep();
  ASSERT_FALSE(cache.fetch(&rows[0], 1, &location, storage, false));
  int64_t first = location;
  EXPECT_LT(first, 4);
  EXPECT_EQ(table.at(first)[2], table.host(rows[0])[2]);
  cache.beginStep();
  ASSERT_FALSE(cache.fetch(&rows[1], 1, &location, storage, false));
  EXPECT_NE(location, first);
  // Step 3 reads rows[0] again (a hit), then rows[2] evicts rows[1], the
  // set's least recently used.
  cache.beginStep();
  ASSERT_FALSE(cache.fetch(&rows[0], 1, &location, storage, false));
  EXPECT_EQ(location, first);
  int64_t second = -1;
  ASSERT_FALSE(cache.fetch(&rows[2], 1, &second, storage, false));
  EXPECT_EQ(cache.rowAt(second), rows[2]);
  EXPECT_EQ(cache.rowAt(first), rows[0]);

  const RowCacheStats &stats = cache.stats();
  EXPECT_EQ(stats.lookups, 4);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.fills, 3);
  EXPECT_EQ(stats.evictions, 1);
  EXPECT_EQ(stats.writeBacks, 0);
  EXPECT_EQ(stats.readThrough, 0);
}

TEST(RowCacheTest, ADirtyRowIsWrittenBackWhenEvictedAndOnFlush) {
  VirtualTable table(256, 2, 4);
  RowCache cache(256, 2, 1);
  std::vector<int64_t> rows = rowsOfOneSet(cache, 0, 2);
  RowCacheStorage storage = table.storage();
  int64_t location = -1;
  cache.beginStep();
  ASSERT_FALSE(cache.fetch(&rows[0], 1, &location, storage, true));
  EXPECT_TRUE(cache.isDirty(location));
  table.at(location)[1] = -7.0f; // the step's update, in the cache
  EXPECT_NE(table.host(rows[0])[1], -7.0f);
  cache.beginStep();
  int64_t next = -1;
  ASSERT_FALSE(cache.fetch(&rows[1], 1, &next, storage, true));
  EXPECT_EQ(next, location); // one way: the same slot
  EXPECT_EQ(table.host(rows[0])[1], -7.0f);
  table.at(next)[3] = 5.0f;
  cache.flush(storage);
  EXPECT_EQ(table.host(rows[1])[3], 5.0f);
  EXPECT_FALSE(cache.isDirty(next));
  EXPECT_EQ(cache.stats().writeBacks, 2);
}

TEST(RowCacheTest, AFullSetReadsThroughToHostMemoryForTheStep) {
  VirtualTable table(256, 2, 2);
  RowCache cache(256, 2, 2);
  ASSERT_EQ(cache.sets(), 1);
  std::vector<int64_t> rows = {10, 11, 12, 10};
  std::vector<int64_t> locations(rows.size(), -1);
  cache.beginStep();
  ASSERT_FALSE(
      cache.fetch(rows.data(), 4, locations.data(), table.storage(), false));
  // Rows 10 and 11 fill both ways; 12 finds none it may evict and is read
  // where it is; 10 is a hit at its slot.
  EXPECT_LT(locations[0], 2);
  EXPECT_LT(locations[1], 2);
  EXPECT_EQ(locations[2], 2 + 12);
  EXPECT_EQ(locations[3], locations[0]);
  EXPECT_EQ(table.at(locations[2]), table.host(12));
  EXPECT_EQ(cache.stats().readThrough, 1);
  // The next step may evict: 12 comes in.
  cache.beginStep();
  int64_t location = -1;
  ASSERT_FALSE(cache.fetch(&rows[2], 1, &location, table.storage(), false));
  EXPECT_LT(location, 2);
}

TEST(RowCacheTest, RefusesWhatItCannotServe) {
  EXPECT_EQ(RowCache::check(100, 0).value_or(""),
            "a cache of 0 rows cannot serve a shard of 100 rows: it holds 1 "
            "to 100");
  EXPECT_EQ(RowCache::check(100, 101).value_or(""),
            "a cache of 101 rows cannot serve a shard of 100 rows: it holds 1 "
            "to 100");
  EXPECT_EQ(RowCache::check(0, 1).value_or(""),
            "a cached shard needs rows, got 0");
  EXPECT_TRUE(RowCache::check(100, 3, 0).has_value());
  EXPECT_FALSE(RowCache::check(100, 100).has_value());

  VirtualTable table(10, 2, 1);
  RowCache cache(10, 2);
  std::vector<int64_t> rows = {3, 10};
  std::vector<int64_t> locations(2, -1);
  EXPECT_EQ(
      cache.fetch(rows.data(), 2, locations.data(), table.storage(), false)
          .value_or(""),
      "index 10 at position 1 is outside the cached shard's rows [0, "
      "10)");
  EXPECT_EQ(cache.stats().lookups, 0); // nothing changed
  EXPECT_EQ(cache.rowAt(0), -1);

  RowCache wide(int64_t(1) << 31, 16);
  int32_t row = 5, location = 0;
  EXPECT_TRUE(wide.fetch(&row, 1, &location, table.storage(), false)
                  .value_or("")
                  .find("look the shard up with i64 indices") !=
              std::string::npos);
}

/// Steps of pooled sums and SGD updates through the cache give, bit for
/// bit, what the same steps give on the table itself; the cache is far
/// smaller than the rows the steps read, so rows are evicted, written back
/// and read through.
TEST(RowCacheTest, StepsThroughTheCacheEqualStepsOnTheTable) {
  const int64_t rows = 5000, width = 8, batch = 64, perBag = 12;
  for (int64_t slots : {int64_t(40), int64_t(700)}) {
    SCOPED_TRACE("slots " + std::to_string(slots));
    VirtualTable cached(rows, slots, width);
    std::vector<float> direct(cached.host(0), cached.host(0) + rows * width);
    RowCache cache(rows, slots);
    std::vector<int64_t> stream =
        inputs::zipfIndexStream(rows, 1.05, 10 * batch * perBag, 17);
    std::set<int64_t> distinct(stream.begin(), stream.end());
    ASSERT_GT(int64_t(distinct.size()), 2 * slots);
    for (int64_t step = 0; step < 10; ++step) {
      std::vector<int64_t> indices(stream.begin() + step * batch * perBag,
                                   stream.begin() +
                                       (step + 1) * batch * perBag);
      std::vector<int64_t> locations(indices.size());
      cache.beginStep();
      ASSERT_FALSE(cache.fetch(indices.data(), int64_t(indices.size()),
                               locations.data(), cached.storage(),
                               /*write=*/true));
      // Forward: bag b sums its perBag rows.
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t c = 0; c < width; ++c) {
          float viaCache = 0.0f, onTable = 0.0f;
          for (int64_t k = b * perBag; k < (b + 1) * perBag; ++k) {
            viaCache += cached.at(locations[k])[c];
            onTable += direct[indices[k] * width + c];
          }
          ASSERT_EQ(viaCache, onTable) << "step " << step << " bag " << b;
        }
      // Backward with SGD: every index applies its bag's gradient.
      for (size_t k = 0; k < indices.size(); ++k)
        for (int64_t c = 0; c < width; ++c) {
          float gradient = 0.01f * float((int64_t(k) / perBag + c) % 7 - 3);
          cached.at(locations[k])[c] -= 0.5f * gradient;
          direct[indices[k] * width + c] -= 0.5f * gradient;
        }
    }
    cache.flush(cached.storage());
    EXPECT_EQ(std::vector<float>(cached.host(0), cached.host(0) + rows * width),
              direct);
    const RowCacheStats &stats = cache.stats();
    EXPECT_GT(stats.evictions, 0);
    EXPECT_GT(stats.writeBacks, 0);
    EXPECT_GT(stats.hits, 0);
    if (slots == 40) {
      EXPECT_GT(stats.readThrough, 0);
    }
    EXPECT_EQ(stats.hits + stats.fills + stats.readThrough, stats.lookups);
  }
}

} // namespace
