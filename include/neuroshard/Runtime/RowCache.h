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
// the host's rows are, and which columns a row holds. Its whole state (the
// geometry, each slot's row, last step and dirty bit, the step and the
// counts) is one buffer of i64 words in the layout of `RowCacheWord`, so
// that a fetch on a GPU (the kernels `--neuroshard-to-cuda` generates,
// KernelABI.h) continues from where the host left it, and the reverse.
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
/// On CUDA the fetch is a kernel (KernelABI.h's kRowCacheFetchKernelI32)
/// that reads and updates a copy of the cache's state buffer. The host code
/// gets that copy from the runtime around the launch:
///   stateWords(i64 cachePiece, i64 flags, i64 indexBits) -> i64
///     begins the step when the flags say so and gives the state's size;
///   copyState(i64 cachePiece, i64 toBuffer, memref<?xi64> buffer)
///     copies the state into `buffer` (toBuffer = 1, before the launch) or
///     back from it (0, after).
/// A runtime that cannot serve the fetch (no such cache, locations beyond
/// the index type) records why and hands out a state with kRowCacheRefused
/// set.
constexpr const char *kRowCacheStateWords = "neuroshard_row_cache_state_words";
constexpr const char *kRowCacheCopyState = "neuroshard_row_cache_copy_state";
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

/// The words of a cache's state buffer: a header, then per slot its row
/// (-1: none) at kRowCacheHeaderWords + slot, the step that last read it
/// at kRowCacheHeaderWords + slots + slot, and 1 if an update wrote it
/// since it was filled at kRowCacheHeaderWords + 2 * slots + slot.
enum RowCacheWord : int64_t {
  kRowCacheRows,        ///< rows of the shard
  kRowCacheSlots,       ///< rows the cache holds
  kRowCacheSetWays,     ///< slots per set
  kRowCacheSets,        ///< sets
  kRowCacheHostRowZero, ///< location of the shard's row 0 (see fetch)
  /// Where a device fetch finds the rows in the weight arena it receives:
  /// slot 0's row at element kRowCacheArenaOffset, rows kRowCacheStride
  /// elements apart, the shard's columns from kRowCacheColBegin on,
  /// kRowCacheWidth of them. Set by the runtime that binds the cache.
  kRowCacheArenaOffset,
  kRowCacheStride,
  kRowCacheColBegin,
  kRowCacheWidth,
  kRowCacheStep, ///< the current step
  kRowCacheLookups,
  kRowCacheHits,
  kRowCacheFills,
  kRowCacheEvictions,
  kRowCacheWriteBacks,
  kRowCacheReadThrough,
  /// The lowest position of a device fetch's index outside the shard's
  /// rows (INT64_MAX: none); the runtime reports and resets it.
  kRowCacheBadPosition,
  /// Nonzero: a device fetch writes location 0 for every index and changes
  /// nothing (a runtime that cannot serve the fetch, and says why).
  kRowCacheRefused,
  kRowCacheHeaderWords
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

  int64_t rows() const { return words[kRowCacheRows]; }
  int64_t slots() const { return words[kRowCacheSlots]; }
  int64_t ways() const { return words[kRowCacheSetWays]; }
  int64_t sets() const { return words[kRowCacheSets]; }
  /// The set row `row` belongs to.
  int64_t setOf(int64_t row) const { return setOf(row, sets()); }
  /// The set row `row` belongs to in a cache of `sets` sets: SplitMix64's
  /// finalizer, so that neighbouring rows land in unrelated sets. The
  /// device fetch computes the same.
  static int64_t setOf(int64_t row, int64_t sets);

  /// Starts a step: the rows fetched from now on stay where they are until
  /// the next `beginStep`.
  void beginStep() { ++words[kRowCacheStep]; }

  /// Where the virtual table the kernels read has the shard's row 0 (`slots`
  /// unless set): a row read in host memory is at that location plus its
  /// row. A runtime whose cache does not sit right before the shard's rows
  /// sets it, negative where the rows come first.
  void setHostRowZero(int64_t location) {
    words[kRowCacheHostRowZero] = location;
  }

  /// Where a device fetch finds the cache in the weight arena it receives
  /// (the kRowCacheArenaOffset words).
  void setArenaAddress(int64_t offset, int64_t stride, int64_t colBegin,
                       int64_t width);

  /// Writes into `locations[i]` where the step finds row `rows[i]` (a slot,
  /// or the host's row zero + row for a row read in host memory), filling
  /// and evicting as the header says; with `write`, the slots found are
  /// marked dirty. Returns, without changing anything, a message naming the
  /// first row outside [0, rows) and its position, or saying that the
  /// locations do not fit `Index`.
  template <typename Index>
  std::optional<std::string> fetch(const Index *rows, int64_t count,
                                   Index *locations,
                                   const RowCacheStorage &storage, bool write);

  /// Why the locations of this cache do not fit indices of `indexBits`
  /// bits (32 or 64); nothing when they do.
  std::optional<std::string> checkLocations(int indexBits) const;

  /// Writes every dirty row back to host memory.
  void flush(const RowCacheStorage &storage);

  /// The row slot `slot` holds, or -1.
  int64_t rowAt(int64_t slot) const {
    return words[kRowCacheHeaderWords + slot];
  }
  bool isDirty(int64_t slot) const { return dirtyWord(slot) != 0; }
  RowCacheStats stats() const;

  /// The state buffer (RowCacheWord's layout), which a device fetch reads
  /// and updates in place.
  std::vector<int64_t> &state() { return words; }
  const std::vector<int64_t> &state() const { return words; }

private:
  int64_t slotOf(int64_t row, bool write, const RowCacheStorage &storage);
  void writeBack(int64_t slot, const RowCacheStorage &storage);
  int64_t &tag(int64_t slot) { return words[kRowCacheHeaderWords + slot]; }
  int64_t &lastStep(int64_t slot) {
    return words[kRowCacheHeaderWords + slots() + slot];
  }
  int64_t &dirtyWord(int64_t slot) {
    return words[kRowCacheHeaderWords + 2 * slots() + slot];
  }
  int64_t dirtyWord(int64_t slot) const {
    return words[kRowCacheHeaderWords + 2 * slots() + slot];
  }

  std::vector<int64_t> words;
};

} // namespace runtime
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_ROWCACHE_H
