//===- Arena.cpp - Aligned allocation of weight arenas --------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/Arena.h"

#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rt = ::neuroshard::runtime;

void *rt::allocateArena(size_t bytes) {
  if (bytes < kHugePageBytes)
    return ::operator new (bytes, std::align_val_t{64});
  void *p = ::operator new (bytes, std::align_val_t{kHugePageBytes});
#if defined(MADV_HUGEPAGE)
  // Advice only: where transparent huge pages are off, the arena keeps
  // normal pages.
  (void)::madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void rt::freeArena(void *p, size_t bytes) {
  ::operator delete (
      p,
      std::align_val_t{bytes < kHugePageBytes ? size_t(64) : kHugePageBytes});
}
