//===- ArenaCaches.cpp - The row caches of a run's arena ------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/ArenaCaches.h"
#include "neuroshard/Execution/JIT.h"
#include "neuroshard/Runtime/KernelABI.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

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
    bound.cache.setArenaAddress(cacheBase, stride, storage.colBegin,
                                storage.width);
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

std::vector<int64_t> &
ArenaCaches::beginDeviceFetch(int64_t piece, int64_t flags, int indexBits) {
  auto refuse = [&](std::string why) -> std::vector<int64_t> & {
    if (!error)
      error = std::move(why);
    refusedState.assign(runtime::kRowCacheHeaderWords, 0);
    refusedState[runtime::kRowCacheRefused] = 1;
    refusedState[runtime::kRowCacheSets] = 1;
    deviceFetchState = &refusedState;
    return refusedState;
  };
  auto it = caches.find(piece);
  if (it == caches.end())
    return refuse("the module fetches through arena piece " +
                  std::to_string(piece) + ", which is not a cache of the run");
  Bound &bound = it->second;
  if (std::optional<std::string> wide = bound.cache.checkLocations(indexBits))
    return refuse("the cache of " + bound.name + ": " + *wide);
  if (bound.cache.ways() > kernel_abi::kWarpSize)
    return refuse("the cache of " + bound.name + " has " +
                  std::to_string(bound.cache.ways()) +
                  " ways per set; the device fetch serves at most " +
                  std::to_string(kernel_abi::kWarpSize));
  if (flags & runtime::kRowCacheBeginsStep)
    bound.cache.beginStep();
  deviceFetchState = &bound.cache.state();
  return *deviceFetchState;
}

void ArenaCaches::copyDeviceState(bool toBuffer, int64_t *buffer,
                                  int64_t size) {
  if (!deviceFetchState || size != int64_t(deviceFetchState->size())) {
    // Only compiled code that skipped beginDeviceFetch gets here.
    std::fprintf(stderr,
                 "neuroshard: compiled code copied a row cache's "
                 "state of %lld words without beginning its fetch\n",
                 static_cast<long long>(size));
    std::abort();
  }
  if (toBuffer)
    std::copy(deviceFetchState->begin(), deviceFetchState->end(), buffer);
  else if (deviceFetchState != &refusedState)
    std::copy(buffer, buffer + size, deviceFetchState->begin());
}

void ArenaCaches::flush() {
  for (auto &[piece, bound] : caches)
    bound.cache.flush(bound.storage);
}

std::optional<std::string> ArenaCaches::takeError() {
  for (auto &[piece, bound] : caches) {
    int64_t &bad = bound.cache.state()[runtime::kRowCacheBadPosition];
    if (bad == std::numeric_limits<int64_t>::max())
      continue;
    if (!error)
      error = "the cache of " + bound.name + ": the index at position " +
              std::to_string(bad) +
              " of a fetch on the device is outside the cached shard's "
              "rows [0, " +
              std::to_string(bound.cache.rows()) + ")";
    bad = std::numeric_limits<int64_t>::max();
  }
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

/// The caches compiled code calls; aborts without them, since the kernel
/// would read at unset locations.
ArenaCaches &boundCaches(int64_t piece) {
  ArenaCaches *caches = ArenaCaches::current();
  if (!caches) {
    std::fprintf(stderr,
                 "neuroshard: compiled code fetched through the cache of "
                 "arena piece %lld, but no run has bound its caches\n",
                 static_cast<long long>(piece));
    std::abort();
  }
  return *caches;
}

template <typename Index>
void fetchEntry(int64_t piece, int64_t flags, MemRef1D<Index> *rows,
                MemRef1D<Index> *locations) {
  boundCaches(piece).fetch(piece, flags, rows->data + rows->offset,
                           rows->sizes[0], locations->data + locations->offset);
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

extern "C" int64_t rowCacheStateWords(int64_t piece, int64_t flags,
                                      int64_t indexBits) {
  return int64_t(
      boundCaches(piece).beginDeviceFetch(piece, flags, int(indexBits)).size());
}

extern "C" void rowCacheCopyState(int64_t piece, int64_t toBuffer,
                                  MemRef1D<int64_t> *buffer) {
  boundCaches(piece).copyDeviceState(
      toBuffer != 0, buffer->data + buffer->offset, buffer->sizes[0]);
}

} // namespace

std::vector<std::pair<std::string, void *>> ArenaCaches::entryPoints() {
  return {{std::string("_mlir_ciface_") + runtime::kRowCacheFetchI32,
           reinterpret_cast<void *>(&rowCacheFetchI32)},
          {std::string("_mlir_ciface_") + runtime::kRowCacheFetchI64,
           reinterpret_cast<void *>(&rowCacheFetchI64)},
          {std::string("_mlir_ciface_") + runtime::kRowCacheStateWords,
           reinterpret_cast<void *>(&rowCacheStateWords)},
          {std::string("_mlir_ciface_") + runtime::kRowCacheCopyState,
           reinterpret_cast<void *>(&rowCacheCopyState)}};
}
