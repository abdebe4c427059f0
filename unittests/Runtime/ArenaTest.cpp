//===- ArenaTest.cpp - Weight arenas and their pages ----------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/Arena.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

using namespace neuroshard::runtime;

namespace {

constexpr size_t kFloatsPerHugePage = kHugePageBytes / sizeof(float);

#if defined(__linux__)
/// Whether the first base page of huge page `page` of `arena` is in memory.
bool resident(const ZeroedArena &arena, size_t page) {
  unsigned char in = 0;
  void *at = arena.data() + page * kFloatsPerHugePage;
  EXPECT_EQ(::mincore(at, size_t(::sysconf(_SC_PAGESIZE)), &in), 0);
  return in & 1;
}
#endif

TEST(ZeroedArenaTest, SmallArenasAreZeroedOnALine) {
  ZeroedArena arena(1000);
  ASSERT_EQ(arena.size(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.data()) % 64, 0u);
  for (size_t i = 0; i < arena.size(); ++i)
    ASSERT_EQ(arena.data()[i], 0.0f) << "element " << i;
}

TEST(ZeroedArenaTest, LargeArenasMapOnlyThePagesTouched) {
  ZeroedArena arena(3 * kFloatsPerHugePage + 5);
  ASSERT_EQ(arena.size(), 3 * kFloatsPerHugePage + 5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.data()) % kHugePageBytes, 0u);
#if defined(__linux__)
  for (size_t page = 0; page < 4; ++page)
    EXPECT_FALSE(resident(arena, page)) << "page " << page;
  // Page 1, and page 9, past the end, which is ignored.
  arena.map({1, 9}, 2);
  EXPECT_FALSE(resident(arena, 0));
  EXPECT_TRUE(resident(arena, 1));
  EXPECT_FALSE(resident(arena, 2));
  EXPECT_FALSE(resident(arena, 3));
#endif
  // Every element reads zero, mapped or not, and the last one is writable.
  for (size_t i = 0; i < arena.size(); i += 4099)
    ASSERT_EQ(arena.data()[i], 0.0f) << "element " << i;
  arena.data()[arena.size() - 1] = 2.0f;
  EXPECT_EQ(arena.data()[arena.size() - 1], 2.0f);
}

TEST(ZeroedArenaTest, MapAllMapsEveryPage) {
  ZeroedArena arena(2 * kFloatsPerHugePage + 5);
  arena.mapAll(2);
#if defined(__linux__)
  for (size_t page = 0; page < 3; ++page)
    EXPECT_TRUE(resident(arena, page)) << "page " << page;
#endif
  for (size_t i = 0; i < arena.size(); i += 4099)
    ASSERT_EQ(arena.data()[i], 0.0f) << "element " << i;
  ZeroedArena small(16);
  small.mapAll(2);
  EXPECT_EQ(small.data()[15], 0.0f);
}

TEST(ZeroedArenaTest, MovesHandOverTheMemory) {
  ZeroedArena first(kFloatsPerHugePage);
  first.data()[7] = 1.5f;
  float *data = first.data();
  ZeroedArena second(std::move(first));
  EXPECT_EQ(first.data(), nullptr);
  EXPECT_EQ(first.size(), 0u);
  EXPECT_EQ(second.data(), data);
  EXPECT_EQ(second.data()[7], 1.5f);

  ZeroedArena third(16);
  third = std::move(second);
  EXPECT_EQ(third.data(), data);
  EXPECT_EQ(third.size(), kFloatsPerHugePage);
  EXPECT_EQ(second.data(), nullptr);

  ZeroedArena empty;
  EXPECT_EQ(empty.size(), 0u);
  empty.map({0}, 4); // nothing to map
}

} // namespace
