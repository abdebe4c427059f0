//===- RowCache.cpp - A device cache of a shard kept in host memory -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/RowCache.h"

#include <algorithm>
#include <cstring>
#include <limits>

using namespace neuroshard;
using namespace neuroshard::runtime;

std::optional<std::string> RowCache::check(int64_t rows, int64_t slots,
                                           int64_t ways) {
  if (rows < 1)
    return "a cached shard needs rows, got " + std::to_string(rows);
  if (slots < 1 || slots > rows)
    return "a cache of " + std::to_string(slots) +
           " rows cannot serve a shard of " + std::to_string(rows) +
           " rows: it holds 1 to " + std::to_string(rows);
  if (ways < 1)
    return "a cache needs at least one way per set, got " +
           std::to_string(ways);
  return std::nullopt;
}

RowCache::RowCache(int64_t rows, int64_t slots, int64_t ways)
    : numRows(rows), numSlots(slots), numWays(std::min(ways, slots)),
      numSets((slots + numWays - 1) / numWays), tags(slots, -1),
      lastStep(slots, 0), dirty(slots, 0), hostRowZero(slots) {}

int64_t RowCache::setOf(int64_t row) const {
  // SplitMix64's finalizer: neighbouring rows land in unrelated sets.
  uint64_t z = static_cast<uint64_t>(row) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<int64_t>(z % static_cast<uint64_t>(numSets));
}

void RowCache::writeBack(int64_t slot, const RowCacheStorage &storage) {
  std::memcpy(storage.host + tags[slot] * storage.hostStride + storage.colBegin,
              storage.cache + slot * storage.cacheStride + storage.colBegin,
              static_cast<size_t>(storage.width) * sizeof(float));
  dirty[slot] = 0;
  ++counts.writeBacks;
}

int64_t RowCache::slotOf(int64_t row, bool write,
                         const RowCacheStorage &storage) {
  int64_t first = setOf(row) * numWays;
  int64_t end = std::min(first + numWays, numSlots);
  int64_t free = -1, oldest = -1;
  for (int64_t slot = first; slot < end; ++slot) {
    if (tags[slot] == row) {
      ++counts.hits;
      lastStep[slot] = step;
      dirty[slot] |= uint8_t(write);
      return slot;
    }
    if (tags[slot] < 0) {
      if (free < 0)
        free = slot;
    } else if (lastStep[slot] < step &&
               (oldest < 0 || lastStep[slot] < lastStep[oldest])) {
      oldest = slot;
    }
  }
  int64_t slot = free >= 0 ? free : oldest;
  if (slot < 0) {
    // Every way holds a row this step reads: the kernels read this one
    // where it is.
    ++counts.readThrough;
    return hostRowZero + row;
  }
  if (tags[slot] >= 0) {
    ++counts.evictions;
    if (dirty[slot])
      writeBack(slot, storage);
  }
  std::memcpy(storage.cache + slot * storage.cacheStride + storage.colBegin,
              storage.host + row * storage.hostStride + storage.colBegin,
              static_cast<size_t>(storage.width) * sizeof(float));
  ++counts.fills;
  tags[slot] = row;
  lastStep[slot] = step;
  dirty[slot] = uint8_t(write);
  return slot;
}

template <typename Index>
std::optional<std::string>
RowCache::fetch(const Index *rows, int64_t count, Index *locations,
                const RowCacheStorage &storage, bool write) {
  int64_t lowest = std::min<int64_t>(0, hostRowZero);
  int64_t highest = std::max(numSlots - 1, hostRowZero + numRows - 1);
  if (lowest < std::numeric_limits<Index>::min() ||
      highest > std::numeric_limits<Index>::max())
    return "the locations of a cache of " + std::to_string(numSlots) +
           " rows over a shard of " + std::to_string(numRows) + " rows reach " +
           std::to_string(
               highest > std::numeric_limits<Index>::max() ? highest : lowest) +
           ", beyond the indices' type; look the shard up with i64 indices";
  for (int64_t i = 0; i < count; ++i)
    if (rows[i] < 0 || rows[i] >= numRows)
      return "index " + std::to_string(rows[i]) + " at position " +
             std::to_string(i) + " is outside the cached shard's rows [0, " +
             std::to_string(numRows) + ")";
  for (int64_t i = 0; i < count; ++i) {
    locations[i] = static_cast<Index>(slotOf(rows[i], write, storage));
    ++counts.lookups;
  }
  return std::nullopt;
}

template std::optional<std::string>
RowCache::fetch<int32_t>(const int32_t *, int64_t, int32_t *,
                         const RowCacheStorage &, bool);
template std::optional<std::string>
RowCache::fetch<int64_t>(const int64_t *, int64_t, int64_t *,
                         const RowCacheStorage &, bool);

void RowCache::flush(const RowCacheStorage &storage) {
  for (int64_t slot = 0; slot < numSlots; ++slot)
    if (dirty[slot])
      writeBack(slot, storage);
}
