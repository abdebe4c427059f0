//===- Arena.cpp - Aligned allocation of weight arenas --------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/Arena.h"
#include "neuroshard/Runtime/Threads.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <numeric>
#include <utility>

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

namespace {
size_t bytesOf(size_t floats) {
  if (floats > SIZE_MAX / sizeof(float))
    throw std::bad_alloc();
  return floats * sizeof(float);
}

/// The length of a ZeroedArena's own mapping of `bytes`: whole huge pages,
/// so that its ends are page-aligned for munmap.
size_t mappingBytes(size_t bytes) {
  return (bytes + rt::kHugePageBytes - 1) & ~(rt::kHugePageBytes - 1);
}
} // namespace

rt::ZeroedArena::ZeroedArena(size_t floats) : count(floats) {
  size_t bytes = bytesOf(floats);
  if (bytes == 0)
    return;
#if defined(__linux__)
  if (bytes >= kHugePageBytes) {
    // Over-map by a huge page, then unmap the ends around the aligned part.
    size_t length = mappingBytes(bytes);
    if (length < bytes || length > SIZE_MAX - kHugePageBytes)
      throw std::bad_alloc();
    size_t span = length + kHugePageBytes;
    void *map = ::mmap(nullptr, span, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
      throw std::bad_alloc();
    uintptr_t begin = reinterpret_cast<uintptr_t>(map);
    uintptr_t aligned = (begin + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    size_t head = aligned - begin;
    size_t tail = span - head - length;
    if (head)
      ::munmap(map, head);
    if (tail)
      ::munmap(reinterpret_cast<void *>(aligned + length), tail);
#if defined(MADV_HUGEPAGE)
    (void)::madvise(reinterpret_cast<void *>(aligned), length, MADV_HUGEPAGE);
#endif
    elements = reinterpret_cast<float *>(aligned);
    mapped = true;
    return;
  }
#endif
  elements = static_cast<float *>(allocateArena(bytes));
  std::memset(elements, 0, bytes);
}

void rt::ZeroedArena::map(const std::vector<size_t> &hugePages,
                          unsigned threads) {
  constexpr size_t floatsPerPage = kHugePageBytes / sizeof(float);
  size_t pages = (count + floatsPerPage - 1) / floatsPerPage;
  auto touch = [&](size_t first, size_t step) {
    volatile float *base = elements;
    for (size_t i = first; i < hugePages.size(); i += step)
      if (hugePages[i] < pages)
        base[hugePages[i] * floatsPerPage] = 0.0f;
  };
  threads = std::max(1u, std::min<unsigned>(threads, hugePages.size()));
  runOnThreads(threads, [&](unsigned worker) { touch(worker, threads); });
}

void rt::ZeroedArena::mapAll(unsigned threads) {
  std::vector<size_t> pages(mappingBytes(bytesOf(count)) / kHugePageBytes);
  std::iota(pages.begin(), pages.end(), size_t(0));
  map(pages, threads);
}

rt::ZeroedArena::~ZeroedArena() { release(); }

rt::ZeroedArena::ZeroedArena(ZeroedArena &&other) noexcept
    : elements(std::exchange(other.elements, nullptr)),
      count(std::exchange(other.count, 0)),
      mapped(std::exchange(other.mapped, false)) {}

rt::ZeroedArena &rt::ZeroedArena::operator=(ZeroedArena &&other) noexcept {
  if (this != &other) {
    release();
    elements = std::exchange(other.elements, nullptr);
    count = std::exchange(other.count, 0);
    mapped = std::exchange(other.mapped, false);
  }
  return *this;
}

void rt::ZeroedArena::release() {
  if (!elements)
    return;
  size_t bytes = count * sizeof(float);
#if defined(__linux__)
  if (mapped)
    ::munmap(elements, mappingBytes(bytes));
  else
#endif
    freeArena(elements, bytes);
  elements = nullptr;
  count = 0;
  mapped = false;
}
