//===- Arena.h - Aligned allocation of weight arenas ------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The kernels read every table from one arena of floats (KernelABI.h). How
// that arena is allocated decides how the kernels' row gathers meet the
// caches and the TLB, so every host that builds one allocates it here.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_ARENA_H
#define NEUROSHARD_RUNTIME_ARENA_H

#include <cstddef>
#include <vector>

namespace neuroshard {
namespace runtime {

/// Allocates `bytes` for a weight arena: on a cache-line (64-byte) boundary,
/// so that rows whose size is a multiple of 64 bytes start on a line and the
/// kernels' wide vector loads of a row do not straddle two lines each; from
/// kHugePageBytes up, on a huge-page boundary with transparent huge pages
/// requested (Linux), so that random row gathers over large tables miss the
/// TLB far less often. Release with `freeArena(p, bytes)`.
void *allocateArena(size_t bytes);
void freeArena(void *p, size_t bytes);
constexpr size_t kHugePageBytes = size_t(2) << 20;

template <typename T> struct ArenaAllocator {
  using value_type = T;
  ArenaAllocator() = default;
  template <typename U> ArenaAllocator(const ArenaAllocator<U> &) {}
  T *allocate(size_t n) {
    return static_cast<T *>(allocateArena(n * sizeof(T)));
  }
  void deallocate(T *p, size_t n) { freeArena(p, n * sizeof(T)); }
  template <typename U> bool operator==(const ArenaAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const ArenaAllocator<U> &) const {
    return false;
  }
};

/// A weight arena.
using WeightVector = std::vector<float, ArenaAllocator<float>>;

} // namespace runtime
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_ARENA_H
