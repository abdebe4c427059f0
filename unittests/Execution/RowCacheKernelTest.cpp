//===- RowCacheKernelTest.cpp - The generated row cache fetch kernel ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// On CUDA the fetch through the cache of a shard in host memory is a kernel
// that `--neuroshard-to-cuda` generates (KernelABI.h), run here under the
// warp emulation. It must do exactly what the host's RowCache::fetch does on
// the same state: the same locations, the same tags, last steps, dirty bits
// and counts, and the same rows moved between the cache and the shard,
// whatever the grid.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Emulation/SIMTEmulator.h"
#include "neuroshard/Execution/JIT.h"
#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/RowCache.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <limits>

using namespace neuroshard;
using namespace neuroshard::runtime;

namespace {

class RowCacheKernelTest : public ::testing::Test {
public:
  static void SetUpTestSuite() {
    context = new mlir::MLIRContext();
    auto compiled = emulation::EmulatedKernels::compileGenerated(*context);
    ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
    kernels = std::move(*compiled);
  }
  static void TearDownTestSuite() {
    kernels.reset();
    delete context;
  }

  /// Runs the fetch kernel on `state` and `arena`, `rows` to `locations`.
  template <typename Index>
  static void launch(std::vector<int64_t> &state, std::vector<float> &arena,
                     std::vector<Index> &rows, std::vector<Index> &locations,
                     int64_t flags, emulation::LaunchConfig config) {
    auto stateDesc = execution::memref1D(state);
    auto arenaDesc = execution::memref1D(arena);
    auto rowsDesc = execution::memref1D(rows);
    auto locationsDesc = execution::memref1D(locations);
    void *pointers[] = {&stateDesc, &arenaDesc, &rowsDesc, &locationsDesc};
    void *arguments[] = {&pointers[0], &pointers[1], &pointers[2], &pointers[3],
                         &flags};
    llvm::Error error = kernels->launchPacked(
        sizeof(Index) == 4 ? kernel_abi::kRowCacheFetchKernelI32
                           : kernel_abi::kRowCacheFetchKernelI64,
        arguments, config);
    ASSERT_FALSE(bool(error)) << llvm::toString(std::move(error));
  }

  static mlir::MLIRContext *context;
  static std::unique_ptr<emulation::EmulatedKernels> kernels;
};
mlir::MLIRContext *RowCacheKernelTest::context = nullptr;
std::unique_ptr<emulation::EmulatedKernels> RowCacheKernelTest::kernels;

/// One arena as a runtime lays it out: a table of `rows` rows of `stride`
/// floats, of which the shard holds columns [colBegin, colBegin + width),
/// then the cache's `slots` rows (ModelData's layout: the cache a whole
/// number of rows after the shard).
struct CachedArena {
  int64_t rows, slots, stride, colBegin, width;
  std::vector<float> arena;
  CachedArena(int64_t rows, int64_t slots, int64_t stride, int64_t colBegin,
              int64_t width)
      : rows(rows), slots(slots), stride(stride), colBegin(colBegin),
        width(width), arena(size_t((rows + slots) * stride)) {
    for (size_t e = 0; e < arena.size(); ++e)
      arena[e] = float(e % 1009) * 0.25f;
  }
  int64_t cacheOffset() const { return rows * stride; }
  RowCacheStorage storage() {
    return {arena.data() + cacheOffset(),
            stride,
            arena.data(),
            stride,
            colBegin,
            width};
  }
  RowCache makeCache(int64_t ways) const {
    RowCache cache(rows, slots, ways);
    cache.setHostRowZero(-rows);
    cache.setArenaAddress(cacheOffset(), stride, colBegin, width);
    return cache;
  }
  /// What an update does to a fetched row: changes its columns where the
  /// location says it is.
  void update(int64_t location, float by) {
    for (int64_t c = 0; c < width; ++c)
      arena[size_t(cacheOffset() + location * stride + colBegin + c)] += by;
  }
};

template <typename Index>
void runSteps(int64_t ways, int64_t gridX, int64_t blockX) {
  const int64_t rows = 3000, slots = 70, steps = 6, lookups = 400;
  CachedArena host(rows, slots, 20, 3, 13), device = host;
  RowCache hostCache = host.makeCache(ways);
  RowCache deviceCache = device.makeCache(ways);
  std::vector<int64_t> stream =
      inputs::zipfIndexStream(rows, 1.05, steps * 2 * lookups, 11);
  size_t next = 0;
  for (int64_t step = 0; step < steps; ++step) {
    hostCache.beginStep();
    deviceCache.beginStep();
    // A read, then an update, within the step.
    for (bool write : {false, true}) {
      std::vector<Index> rowsOf(static_cast<size_t>(lookups));
      std::vector<Index> hostAt(rowsOf.size()),
          deviceAt(rowsOf.size(), Index(-7));
      for (Index &row : rowsOf)
        row = Index(stream[next++]);
      ASSERT_FALSE(hostCache.fetch(rowsOf.data(), lookups, hostAt.data(),
                                   host.storage(), write));
      emulation::LaunchConfig config;
      config.gridX = gridX;
      config.blockX = blockX;
      RowCacheKernelTest::launch<Index>(deviceCache.state(), device.arena,
                                        rowsOf, deviceAt,
                                        write ? kRowCacheWrites : 0, config);
      ASSERT_EQ(deviceAt, hostAt)
          << "step " << step << (write ? " update" : "");
      ASSERT_EQ(deviceCache.state(), hostCache.state()) << "step " << step;
      ASSERT_EQ(device.arena, host.arena) << "step " << step;
      if (write)
        for (size_t i = 0; i < rowsOf.size(); i += 3) {
          host.update(int64_t(hostAt[i]), 1.5f);
          device.update(int64_t(deviceAt[i]), 1.5f);
        }
    }
  }
  RowCacheStats stats = deviceCache.stats();
  EXPECT_EQ(stats.lookups, steps * 2 * lookups);
  EXPECT_GT(stats.hits, 0);
  EXPECT_GT(stats.evictions, 0);
  EXPECT_GT(stats.writeBacks, 0);
  EXPECT_GT(stats.readThrough, 0);
  hostCache.flush(host.storage());
  deviceCache.flush(device.storage());
  EXPECT_EQ(device.arena, host.arena);
}

TEST_F(RowCacheKernelTest, FetchesAsTheHostCacheDoesOnAnyGrid) {
  int64_t sets32 = (70 + 31) / 32;
  kernel_abi::LaunchGeometry geometry =
      kernel_abi::rowCacheFetchGeometry(sets32);
  {
    SCOPED_TRACE("i64, 32 ways, the lowering's grid");
    runSteps<int64_t>(32, geometry.gridX, geometry.blockX);
  }
  {
    SCOPED_TRACE("i32, 4 ways, one warp for all 18 sets");
    runSteps<int32_t>(4, 1, 32);
  }
  {
    SCOPED_TRACE("i64, 4 ways, more warps than sets");
    runSteps<int64_t>(4, 2, 256);
  }
}

TEST_F(RowCacheKernelTest, AnIndexOutsideTheShardIsNamedAndReadsSlotZero) {
  CachedArena device(100, 8, 4, 0, 4);
  RowCache cache = device.makeCache(kRowCacheWays);
  cache.beginStep();
  std::vector<int64_t> rowsOf = {5, 100, 7, -1}, at(4, -7);
  RowCacheKernelTest::launch<int64_t>(cache.state(), device.arena, rowsOf, at,
                                      0, {});
  EXPECT_EQ(at[1], 0);
  EXPECT_EQ(at[3], 0);
  EXPECT_EQ(cache.state()[kRowCacheBadPosition], 1);
  EXPECT_EQ(cache.stats().lookups, 2);
  EXPECT_EQ(cache.rowAt(at[0]), 5);
  EXPECT_EQ(cache.rowAt(at[2]), 7);

  // A refused state gives slot 0 to every index and changes nothing.
  std::vector<int64_t> refused(kRowCacheHeaderWords, 0);
  refused[kRowCacheRefused] = 1;
  std::vector<int64_t> before = refused;
  std::vector<float> arena = device.arena;
  RowCacheKernelTest::launch<int64_t>(refused, device.arena, rowsOf, at, 0, {});
  EXPECT_EQ(at, std::vector<int64_t>(4, 0));
  EXPECT_EQ(refused, before);
  EXPECT_EQ(device.arena, arena);
}

} // namespace
