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
    : words(kRowCacheHeaderWords + 3 * slots, 0) {
  int64_t w = std::min(ways, slots);
  words[kRowCacheRows] = rows;
  words[kRowCacheSlots] = slots;
  words[kRowCacheSetWays] = w;
  words[kRowCacheSets] = (slots + w - 1) / w;
  words[kRowCacheHostRowZero] = slots;
  words[kRowCacheBadPosition] = std::numeric_limits<int64_t>::max();
  std::fill(words.begin() + kRowCacheHeaderWords,
            words.begin() + kRowCacheHeaderWords + slots, int64_t(-1));
}

void RowCache::setArenaAddress(int64_t offset, int64_t stride, int64_t colBegin,
                               int64_t width) {
  words[kRowCacheArenaOffset] = offset;
  words[kRowCacheStride] = stride;
  words[kRowCacheColBegin] = colBegin;
  words[kRowCacheWidth] = width;
}

int64_t RowCache::setOf(int64_t row, int64_t sets) {
  uint64_t z = static_cast<uint64_t>(row) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<int64_t>(z % static_cast<uint64_t>(sets));
}

RowCacheStats RowCache::stats() const {
  RowCacheStats counts;
  counts.lookups = words[kRowCacheLookups];
  counts.hits = words[kRowCacheHits];
  counts.fills = words[kRowCacheFills];
  counts.evictions = words[kRowCacheEvictions];
  counts.writeBacks = words[kRowCacheWriteBacks];
  counts.readThrough = words[kRowCacheReadThrough];
  return counts;
}

void RowCache::writeBack(int64_t slot, const RowCacheStorage &storage) {
  std::memcpy(storage.host + tag(slot) * storage.hostStride + storage.colBegin,
              storage.cache + slot * storage.cacheStride + storage.colBegin,
              static_cast<size_t>(storage.width) * sizeof(float));
  dirtyWord(slot) = 0;
  ++words[kRowCacheWriteBacks];
}

int64_t RowCache::slotOf(int64_t row, bool write,
                         const RowCacheStorage &storage) {
  int64_t step = words[kRowCacheStep];
  int64_t first = setOf(row) * ways();
  int64_t end = std::min(first + ways(), slots());
  int64_t free = -1, oldest = -1;
  for (int64_t slot = first; slot < end; ++slot) {
    if (tag(slot) == row) {
      ++words[kRowCacheHits];
      lastStep(slot) = step;
      dirtyWord(slot) |= int64_t(write);
      return slot;
    }
    if (tag(slot) < 0) {
      if (free < 0)
        free = slot;
    } else if (lastStep(slot) < step &&
               (oldest < 0 || lastStep(slot) < lastStep(oldest))) {
      oldest = slot;
    }
  }
  int64_t slot = free >= 0 ? free : oldest;
  if (slot < 0) {
    // Every way holds a row this step reads: the kernels read this one
    // where it is.
    ++words[kRowCacheReadThrough];
    return words[kRowCacheHostRowZero] + row;
  }
  if (tag(slot) >= 0) {
    ++words[kRowCacheEvictions];
    if (dirtyWord(slot))
      writeBack(slot, storage);
  }
  std::memcpy(storage.cache + slot * storage.cacheStride + storage.colBegin,
              storage.host + row * storage.hostStride + storage.colBegin,
              static_cast<size_t>(storage.width) * sizeof(float));
  ++words[kRowCacheFills];
  tag(slot) = row;
  lastStep(slot) = step;
  dirtyWord(slot) = int64_t(write);
  return slot;
}

std::optional<std::string> RowCache::checkLocations(int indexBits) const {
  int64_t hostRowZero = words[kRowCacheHostRowZero];
  int64_t lowest = std::min<int64_t>(0, hostRowZero);
  int64_t highest = std::max(slots() - 1, hostRowZero + rows() - 1);
  int64_t limit = indexBits >= 64 ? std::numeric_limits<int64_t>::max()
                                  : (int64_t(1) << (indexBits - 1)) - 1;
  if (lowest >= -limit - 1 && highest <= limit)
    return std::nullopt;
  return "the locations of a cache of " + std::to_string(slots()) +
         " rows over a shard of " + std::to_string(rows()) + " rows reach " +
         std::to_string(highest > limit ? highest : lowest) +
         ", beyond the indices' type; look the shard up with i64 indices";
}

template <typename Index>
std::optional<std::string>
RowCache::fetch(const Index *rows, int64_t count, Index *locations,
                const RowCacheStorage &storage, bool write) {
  if (std::optional<std::string> wide = checkLocations(int(sizeof(Index) * 8)))
    return wide;
  for (int64_t i = 0; i < count; ++i)
    if (rows[i] < 0 || rows[i] >= this->rows())
      return "index " + std::to_string(rows[i]) + " at position " +
             std::to_string(i) + " is outside the cached shard's rows [0, " +
             std::to_string(this->rows()) + ")";
  for (int64_t i = 0; i < count; ++i) {
    locations[i] = static_cast<Index>(slotOf(rows[i], write, storage));
    ++words[kRowCacheLookups];
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
  for (int64_t slot = 0; slot < slots(); ++slot)
    if (dirtyWord(slot))
      writeBack(slot, storage);
}
