//===- ArenaCaches.h - The row caches of a run's arena ----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A module with shards in host memory, lowered for the CPU, calls the
// runtime's fetch (in host code) before every kernel that reads such a
// shard (Runtime/RowCache.h); lowered for CUDA, it asks the runtime for the
// cache's state and launches the fetch kernel on it. The caches it fetches
// through belong to the run: one RowCache per cache piece of the arena
// ModelData lays out, addressed in that arena. CompiledModel binds them to a
// run's data and makes them the ones the compiled code calls; its backward step
// fetches through the same caches, and a run flushes them before it reads the
// weights back.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_ARENACACHES_H
#define NEUROSHARD_EXECUTION_ARENACACHES_H

#include "neuroshard/Execution/ModelAnalysis.h"
#include "neuroshard/Execution/ModelData.h"
#include "neuroshard/Runtime/RowCache.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace neuroshard {
namespace execution {

class ArenaCaches {
public:
  /// Empty caches for the cache pieces of `info`'s arena as `data` lays it
  /// out, replacing any others.
  void bind(const ModelInfo &info, ModelData &data);
  bool empty() const { return caches.empty(); }

  /// Fetches `count` rows (the shard's local rows) through the cache of
  /// arena piece `piece` into `locations`, with the flags of
  /// runtime::kRowCacheFetchI32's call. On failure (no such cache, a row
  /// outside the shard) records the first error and gives every index slot
  /// 0, so that the kernel that follows reads inside the arena.
  template <typename Index>
  void fetch(int64_t piece, int64_t flags, const Index *rows, int64_t count,
             Index *locations);

  /// Starts a fetch on the device through the cache of arena piece
  /// `piece` with `indexBits`-bit indices, its step begun when `flags` say
  /// so, and returns the cache's state, which the fetch kernel reads and
  /// updates (compiled code, which must not own it, works on a copy:
  /// copyDeviceState). When the cache cannot serve the fetch (no such
  /// cache, locations beyond the index type, more ways than a warp's
  /// lanes), records why and hands out a state the kernel refuses (every
  /// location 0).
  std::vector<int64_t> &beginDeviceFetch(int64_t piece, int64_t flags,
                                         int indexBits);
  /// Copies the state of the fetch begun last into `buffer` (`toBuffer`)
  /// or back from it; `size` must be that state's.
  void copyDeviceState(bool toBuffer, int64_t *buffer, int64_t size);

  /// Writes every dirty row back to the tables.
  void flush();

  /// The first error since the last call, if any, and clears it; a device
  /// fetch's index outside its shard counts too.
  std::optional<std::string> takeError();

  /// What the caches did, each named by its shard: `table[r0:r1, c0:c1]`.
  std::vector<std::pair<std::string, runtime::RowCacheStats>> stats() const;

  /// The caches compiled code fetches through (null: none bound).
  static ArenaCaches *&current();
  /// The fetch functions for compiled code: `_mlir_ciface_` names and
  /// addresses, which fetch through `current()`.
  static std::vector<std::pair<std::string, void *>> entryPoints();

private:
  struct Bound {
    runtime::RowCache cache;
    runtime::RowCacheStorage storage;
    std::string name;
  };
  std::map<int64_t, Bound> caches;
  std::optional<std::string> error;
  /// The state of the device fetch begun last, and what a refused fetch
  /// gets instead.
  std::vector<int64_t> *deviceFetchState = nullptr;
  std::vector<int64_t> refusedState;
};

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_ARENACACHES_H
