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

/// A weight arena of zeros that allocating does not write: from
/// kHugePageBytes up it is a fresh anonymous mapping (Linux), aligned and
/// advised as allocateArena's, whose pages the system maps, zeroed, when
/// they are first touched. A timing that looks up a few rows of gigabytes of
/// weights then maps only the pages those rows are on, where writing the
/// zeros first would map them all (seconds on a large arena, far more on a
/// virtual machine that backs its memory on first touch). Smaller arenas,
/// and every arena elsewhere, are allocateArena's, zeroed by writing.
class ZeroedArena {
public:
  ZeroedArena() = default;
  /// Throws std::bad_alloc when the memory cannot be had, as `new` does.
  explicit ZeroedArena(size_t floats);
  ~ZeroedArena();
  ZeroedArena(ZeroedArena &&other) noexcept;
  ZeroedArena &operator=(ZeroedArena &&other) noexcept;
  ZeroedArena(const ZeroedArena &) = delete;
  ZeroedArena &operator=(const ZeroedArena &) = delete;

  float *data() const { return elements; }
  size_t size() const { return count; }

  /// Maps the huge pages (kHugePageBytes each, numbered from the arena's
  /// start) `hugePages` by writing a zero on each, spread over `threads`
  /// threads: first touches cost the system time (zeroing, and on a virtual
  /// machine backing the memory), which threads divide. Pages past the end
  /// are ignored.
  void map(const std::vector<size_t> &hugePages, unsigned threads);
  /// Maps every huge page of the arena, as `map` does: for an arena every
  /// run reads from its start, whichever rows it looks up.
  void mapAll(unsigned threads);

private:
  void release();

  float *elements = nullptr;
  size_t count = 0;
  /// Whether `elements` is a mapping of its own (else allocateArena's).
  bool mapped = false;
};

} // namespace runtime
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_ARENA_H
