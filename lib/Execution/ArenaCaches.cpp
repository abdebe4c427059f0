//===- ArenaCaches.cpp - The row caches of a run's arena ------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/ArenaCaches.h"
#include "neuroshard/Execution/JIT.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

using namespace neuroshard;
using namespace neuroshard::execution;

void ArenaCaches::bind(const ModelInfo &info, ModelData &data) {
  caches.clear();
  error.reset();
  for (size_t p = 0; p < info.tables.size(); ++p) {
    const TableInfo &piece = info.tables[p];
    if (!piece.isCache())
      continue;
    const TableInfo &holder = info.tables[piece.cacheOf];
    int64_t stride = holder.stats.dim;
    int64_t slots = data.allocatedRows[p];
    // The shard's rows the run holds: those below the cap.
    int64_t holderEnd = holder.rowBegin + data.allocatedRows[piece.cacheOf];
    int64_t rows = std::max(
        std::min(piece.pieceRows(), holderEnd - piece.rowBegin), slots);
    int64_t cacheBase = data.layout[p];
    int64_t shardBase = data.layout[piece.cacheOf] +
                        (piece.rowBegin - holder.rowBegin) * stride;
    runtime::RowCacheStorage storage{
        data.weights.data() + cacheBase,        stride,
        data.weights.data() + shardBase,        stride,
        piece.columnBegin - holder.columnBegin, piece.stats.dim};
    Bound bound{runtime::RowCache(rows, slots), storage,
                piece.stats.name + "[" + std::to_string(piece.rowBegin) + ":" +
                    std::to_string(piece.rowBegin + piece.pieceRows()) + ", " +
                    std::to_string(piece.columnBegin) + ":" +
                    std::to_string(piece.columnBegin + piece.stats.dim) + "]"};
    // ModelData puts the cache a whole number of rows from the shard.
    bound.cache.setHostRowZero((shardBase - cacheBase) / stride);
    caches.emplace(int64_t(p), std::move(bound));
  }
}

template <typename Index>
void ArenaCaches::fetch(int64_t piece, int64_t flags, const Index *rows,
                        int64_t count, Index *locations) {
  // On failure the kernel still runs before the run reports the error: it
  // reads slot 0 for every index, never outside the arena.
  auto refuse = [&](std::string why) {
    std::fill(locations, locations + count, Index(0));
    if (!error)
      error = std::move(why);
  };
  auto it = caches.find(piece);
  if (it == caches.end())
    return refuse("the module fetches through arena piece " +
                  std::to_string(piece) + ", which is not a cache of the run");
  Bound &bound = it->second;
  if (flags & runtime::kRowCacheBeginsStep)
    bound.cache.beginStep();
  if (std::optional<std::string> refused =
          bound.cache.fetch(rows, count, locations, bound.storage,
                            (flags & runtime::kRowCacheWrites) != 0))
    refuse("the cache of " + bound.name + ": " + *refused);
}

template void ArenaCaches::fetch<int32_t>(int64_t, int64_t, const int32_t *,
                                          int64_t, int32_t *);
template void ArenaCaches::fetch<int64_t>(int64_t, int64_t, const int64_t *,
                                          int64_t, int64_t *);

void ArenaCaches::flush() {
  for (auto &[piece, bound] : caches)
    bound.cache.flush(bound.storage);
}

std::optional<std::string> ArenaCaches::takeError() {
  std::optional<std::string> taken = std::move(error);
  error.reset();
  return taken;
}

std::vector<std::pair<std::string, runtime::RowCacheStats>>
ArenaCaches::stats() const {
  std::vector<std::pair<std::string, runtime::RowCacheStats>> all;
  for (const auto &[piece, bound] : caches)
    all.emplace_back(bound.name, bound.cache.stats());
  return all;
}

ArenaCaches *&ArenaCaches::current() {
  static ArenaCaches *caches = nullptr;
  return caches;
}

namespace {

template <typename Index>
void fetchEntry(int64_t piece, int64_t flags, MemRef1D<Index> *rows,
                MemRef1D<Index> *locations) {
  ArenaCaches *caches = ArenaCaches::current();
  if (!caches) {
    // Only a CompiledModel runs code that fetches, and it binds its caches
    // first; without them the kernel would read at unset locations.
    std::fprintf(stderr,
                 "neuroshard: compiled code fetched through the cache of "
                 "arena piece %lld, but no run has bound its caches\n",
                 static_cast<long long>(piece));
    std::abort();
  }
  caches->fetch(piece, flags, rows->data + rows->offset, rows->sizes[0],
                locations->data + locations->offset);
}

extern "C" void rowCacheFetchI32(int64_t piece, int64_t flags,
                                 MemRef1D<int32_t> *rows,
                                 MemRef1D<int32_t> *locations) {
  fetchEntry(piece, flags, rows, locations);
}

extern "C" void rowCacheFetchI64(int64_t piece, int64_t flags,
                                 MemRef1D<int64_t> *rows,
                                 MemRef1D<int64_t> *locations) {
  fetchEntry(piece, flags, rows, locations);
}

} // namespace

std::vector<std::pair<std::string, void *>> ArenaCaches::entryPoints() {
  return {{std::string("_mlir_ciface_") + runtime::kRowCacheFetchI32,
           reinterpret_cast<void *>(&rowCacheFetchI32)},
          {std::string("_mlir_ciface_") + runtime::kRowCacheFetchI64,
           reinterpret_cast<void *>(&rowCacheFetchI64)}};
}
