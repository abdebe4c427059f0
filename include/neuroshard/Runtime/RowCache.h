//===- RowCache.h - A device cache of a shard kept in host memory -*- C++
//-*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A shard of a table in host memory (`cache_rows` on its #neuroshard.shard)
// is looked up through a cache of some of its rows in device memory. This is
// that cache's bookkeeping, the same on every target: which rows are where,
// which to evict, and the rows it moves between the two memories.
//
// Design. The cache has `slots` rows, grouped into sets of `ways` slots
// (the last set may have fewer); a row may only occupy a slot of the set its
// number hashes to, and a set evicts its least recently used row. This is
// the organisation of FBGEMM's UVM cache (32 ways, LRU): a lookup scans one
// set, not the whole cache, and the sets spread a popular range of rows.
//
// A training step looks up through the cache in three moves:
//
//   1. `beginStep`, then `fetch` of every index the step's lookups read,
//      which maps each index to a *location*: a slot when the row is cached
//      or was brought in (a miss fills a free slot, or evicts the set's least
//      recently used row, writing it back to host memory first when it was
//      updated since it came in), and `slots + row` when the row's set has
//      no slot to give (every way holds a row the step already reads): the
//      kernels then read and update the row in host memory directly. A row
//      keeps its location for the whole step, because a row the step has
//      read is never evicted in that step.
//   2. The kernels run on the locations, reading a virtual table whose rows
//      [0, slots) are the cache and rows [slots, slots + rows) the shard in
//      host memory: one address space, as a GPU maps pinned host memory.
//   3. `fetch` with `write` marks the slots the step's update writes dirty;
//      `flush` writes every dirty row back (before the host copy is read).
//
// The class owns no weights: `RowCacheStorage` says where the cache's and
// the host's rows are, and which columns a row holds.
//
// Plain C++ with no dependency, like the rest of the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_ROWCACHE_H
#define NEUROSHARD_RUNTIME_ROWCACHE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace neuroshard {
namespace runtime {

/// Ways per set when none are given: FBGEMM's UVM cache's.
constexpr int64_t kRowCacheWays = 32;

/// The function a lowered module calls before a kernel reads a cached
/// shard (C interface, `_mlir_ciface_<name>`), per index type:
///   fetch(i64 cachePiece, i64 flags, memref<?xiN> rows, memref<?xiN>
///   locations)
/// with the cache's arena piece (its position in `neuroshard.weight_tables`)
/// and the flags below; the runtime that runs the module owns the caches.
constexpr const char *kRowCacheFetchI32 = "neuroshard_row_cache_fetch_i32";
constexpr const char *kRowCacheFetchI64 = "neuroshard_row_cache_fetch_i64";
/// The fetch begins a step (the first of a kernel's fetches of the cache).
constexpr int64_t kRowCacheBeginsStep = 1;
/// The kernel updates the rows (the fetch marks their slots dirty).
constexpr int64_t kRowCacheWrites = 2;

/// Where a cached shard's rows are: slot `s` at `cache + s * cacheStride`,
/// host row `r` at `host + r * hostStride`, each holding the shard's
/// columns `colBegin .. colBegin + width` of the row it points at.
struct RowCacheStorage {
  float *cache = nullptr;
  int64_t cacheStride = 0;
  float *host = nullptr;
  int64_t hostStride = 0;
  int64_t colBegin = 0;
  int64_t width = 0;
};

/// What a cache did since it was made.
struct RowCacheStats {
  int64_t lookups = 0;     ///< indices fetched
  int64_t hits = 0;        ///< of them, found in the cache
  int64_t fills = 0;       ///< misses brought into a slot
  int64_t evictions = 0;   ///< rows a fill replaced
  int64_t writeBacks = 0;  ///< dirty rows written back (evicted or flushed)
  int64_t readThrough = 0; ///< misses read from host memory (set full)
};

class RowCache {
public:
  /// Why a cache of `slots` rows in sets of `ways` cannot serve a shard of
  /// `rows` rows, naming the numbers; nothing when it can.
  static std::optional<std::string> check(int64_t rows, int64_t slots,
                                          int64_t ways = kRowCacheWays);

  /// An empty cache; the arguments must pass `check`.
  RowCache(int64_t rows, int64_t slots, int64_t ways = kRowCacheWays);

  int64_t rows() const { return numRows; }
  int64_t slots() const { return numSlots; }
  int64_t ways() const { return numWays; }
  int64_t sets() const { return numSets; }
  /// The set row `row` belongs to.
  int64_t setOf(int64_t row) const;

  /// Starts a step: the rows fetched from now on stay where they are until
  /// the next `beginStep`.
  void beginStep() { ++step; }

  /// Where the virtual table the kernels read has the shard's row 0 (`slots`
  /// unless set): a row read in host memory is at that location plus its
  /// row. A runtime whose cache does not sit right before the shard's rows
  /// sets it, negative where the rows come first.
  void setHostRowZero(int64_t location) { hostRowZero = location; }

  /// Writes into `locations[i]` where the step finds row `rows[i]` (a slot,
  /// or the host's row zero + row for a row read in host memory), filling
  /// and evicting as
  /// the header says; with `write`, the slots found are marked dirty.
  /// Returns, without changing anything, a message naming the first row
  /// outside [0, rows) and its position.
  template <typename Index>
  std::optional<std::string> fetch(const Index *rows, int64_t count,
                                   Index *locations,
                                   const RowCacheStorage &storage, bool write);

  /// Writes every dirty row back to host memory.
  void flush(const RowCacheStorage &storage);

  /// The row slot `slot` holds, or -1.
  int64_t rowAt(int64_t slot) const { return tags[slot]; }
  bool isDirty(int64_t slot) const { return dirty[slot] != 0; }
  const RowCacheStats &stats() const { return counts; }

private:
  int64_t slotOf(int64_t row, bool write, const RowCacheStorage &storage);
  void writeBack(int64_t slot, const RowCacheStorage &storage);

  int64_t numRows, numSlots, numWays, numSets;
  /// Per slot: the row it holds (-1: none), the step that last read it,
  /// and whether an update wrote it since it was filled.
  std::vector<int64_t> tags, lastStep;
  std::vector<uint8_t> dirty;
  int64_t step = 0;
  int64_t hostRowZero;
  RowCacheStats counts;
};

} // namespace runtime
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_ROWCACHE_H
