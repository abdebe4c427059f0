//===- ArenaCaches.h - The row caches of a run's arena ----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A module with shards in host memory, lowered for the CPU or CUDA, calls
// the runtime's fetch (in host code) before every kernel that reads such a
// shard (Runtime/RowCache.h). The caches it fetches through belong to the run:
// one RowCache per cache piece of the arena ModelData lays out, addressed
// in that arena. CompiledModel binds them to a run's data and makes them
// the ones the compiled code calls; its backward step fetches through the
// same caches, and a run flushes them before it reads the weights back.
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

  /// Writes every dirty row back to the tables.
  void flush();

  /// The first error since the last call, if any, and clears it.
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
};

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_ARENACACHES_H
