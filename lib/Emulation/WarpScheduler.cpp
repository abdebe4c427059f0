//===- WarpScheduler.cpp - Lock-step lanes and checked shuffles -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A launch runs its blocks, and the warps of each block, in an order drawn
// from the launch's seed (CUDA promises no order, so a kernel must not
// depend on one). A warp's lanes are ucontext coroutines on one OS thread:
// the scheduler resumes each live lane until it reaches a shuffle or
// returns; once no lane can run, the lanes that wait must form a legal
// `shfl.sync`: every lane of the member mask waits (none has returned or is
// missing because blockDim.x is not a multiple of the warp), no lane outside
// the mask takes part, and all are at the same shuffle with the same mode
// and width. They then receive their values together, as on the hardware.
//
// A broken rule ends the launch with an error; the lanes of that warp are
// abandoned (their frames hold no resources), and the next warp reuses
// their stacks.
//
//===----------------------------------------------------------------------===//

#include "WarpRuntime.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/FormatVariadic.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <ucontext.h>
#include <vector>

using namespace ::neuroshard::emulation;
namespace abi = ::neuroshard::kernel_abi;
namespace execution = ::neuroshard::execution;

namespace {

constexpr int kLanes = static_cast<int>(abi::kWarpSize);
constexpr size_t kStackBytes = 256 * 1024;
/// Shuffle rounds one warp may take before it counts as a runaway loop.
constexpr int64_t kMaxRoundsPerWarp = int64_t(1) << 24;

enum class LaneState { Running, AtShuffle, Returned, Missing };

struct ShuffleCall {
  int32_t value = 0, offset = 0, width = 0, mode = 0, site = 0;
};

struct Lane {
  ucontext_t context;
  LaneState state = LaneState::Missing;
  ShuffleCall call;
  uint64_t received = 0;
};

/// The state of the launch in progress on this thread.
struct Launch {
  execution::PackedFunction kernel = nullptr;
  void **arguments = nullptr;
  LaunchConfig config;
  int64_t blockX = 0, blockY = 0, warp = 0;
  int current = 0;
  Lane lanes[kLanes];
  ucontext_t scheduler;
  std::vector<char> stacks;
  LaunchStats stats;
  /// Float atomic instructions per address.
  llvm::DenseMap<int64_t, int64_t> atomicsAt;
};

thread_local Launch *active = nullptr;

const char *modeName(int32_t mode) {
  switch (static_cast<mlir::gpu::ShuffleMode>(mode)) {
  case mlir::gpu::ShuffleMode::XOR:
    return "bfly";
  case mlir::gpu::ShuffleMode::UP:
    return "up";
  case mlir::gpu::ShuffleMode::DOWN:
    return "down";
  case mlir::gpu::ShuffleMode::IDX:
    return "idx";
  }
  return "?";
}

void laneMain() {
  Launch &launch = *active;
  launch.kernel(launch.arguments);
  launch.lanes[launch.current].state = LaneState::Returned;
  // Returning resumes uc_link, the scheduler.
}

/// The source lane of `lane` for `call` and whether it is valid, as the
/// NVVM lowering of gpu.shuffle computes them (PTX shfl.sync with a
/// segment of `width` lanes).
std::pair<int, bool> sourceLane(int lane, const ShuffleCall &call) {
  int width = call.width;
  int offset = call.offset;
  int source = lane;
  switch (static_cast<mlir::gpu::ShuffleMode>(call.mode)) {
  case mlir::gpu::ShuffleMode::XOR:
    source = lane ^ offset;
    break;
  case mlir::gpu::ShuffleMode::UP:
    source = lane - offset;
    break;
  case mlir::gpu::ShuffleMode::DOWN:
    source = lane + offset;
    break;
  case mlir::gpu::ShuffleMode::IDX:
    source = width == kLanes ? (offset & (kLanes - 1)) : offset;
    break;
  }
  bool valid = source >= 0 && source < width;
  return {valid ? source : lane, valid};
}

/// Checks the waiting lanes of the current warp and exchanges their values.
llvm::Error exchange(Launch &launch) {
  Lane *lanes = launch.lanes;
  int first = -1;
  for (int l = 0; l < kLanes && first < 0; ++l)
    if (lanes[l].state == LaneState::AtShuffle)
      first = l;
  const ShuffleCall &call = lanes[first].call;
  auto where = [&]() {
    return llvm::formatv("block ({0}, {1}) warp {2}, shuffle #{3} ({4}, width "
                         "{5})",
                         launch.blockX, launch.blockY, launch.warp, call.site,
                         modeName(call.mode), call.width)
        .str();
  };
  if (call.width < 1 || call.width > kLanes)
    return llvm::createStringError("shfl.sync rule broken in " + where() +
                                   ": the width is not in 1..32");
  for (int l = 0; l < kLanes; ++l) {
    bool inMask = l < call.width;
    const Lane &lane = lanes[l];
    if (lane.state == LaneState::AtShuffle) {
      const ShuffleCall &other = lane.call;
      if (other.site != call.site || other.mode != call.mode ||
          other.width != call.width)
        return llvm::createStringError(llvm::formatv(
            "shfl.sync rule broken in {0}: lane {1} waits at shuffle #{2} "
            "({3}, width {4}) while lane {5} waits at this one; the lanes of "
            "the member mask must execute the same shuffle",
            where(), l, other.site, modeName(other.mode), other.width, first));
      if (!inMask)
        return llvm::createStringError(llvm::formatv(
            "shfl.sync rule broken in {0}: lane {1} is not in the member mask",
            where(), l));
      continue;
    }
    if (!inMask)
      continue;
    if (lane.state == LaneState::Missing)
      return llvm::createStringError(llvm::formatv(
          "shfl.sync rule broken in {0}: lane {1} of the member mask does "
          "not exist (blockDim.x = {2} is not a multiple of the warp size "
          "{3})",
          where(), l, launch.config.blockX, kLanes));
    return llvm::createStringError(llvm::formatv(
        "shfl.sync rule broken in {0}: lane {1} of the member mask has "
        "returned while lane {2} waits (divergent control flow around a "
        "shuffle)",
        where(), l, first));
  }
  for (int l = 0; l < call.width; ++l) {
    auto [source, valid] = sourceLane(l, lanes[l].call);
    uint32_t value = static_cast<uint32_t>(lanes[source].call.value);
    lanes[l].received = uint64_t(value) | (uint64_t(valid) << 32);
  }
  for (int l = 0; l < call.width; ++l)
    lanes[l].state = LaneState::Running;
  ++launch.stats.shuffles;
  return llvm::Error::success();
}

/// Makes lane `l` a coroutine that starts the kernel on its own stack.
void startLane(Launch &launch, int l) {
  Lane &lane = launch.lanes[l];
  lane.state = LaneState::Running;
  getcontext(&lane.context);
  lane.context.uc_stack.ss_sp = launch.stacks.data() + l * kStackBytes;
  lane.context.uc_stack.ss_size = kStackBytes;
  lane.context.uc_link = &launch.scheduler;
  makecontext(&lane.context, laneMain, 0);
}

/// Runs the current warp of the current block to its end.
llvm::Error runWarp(Launch &launch) {
  int64_t firstThread = launch.warp * kLanes;
  int present = static_cast<int>(
      std::min<int64_t>(kLanes, launch.config.blockX - firstThread));
  for (int l = 0; l < kLanes; ++l) {
    launch.lanes[l].state = LaneState::Missing;
    if (l < present)
      startLane(launch, l);
  }
  for (int64_t round = 0;; ++round) {
    if (round > kMaxRoundsPerWarp)
      return llvm::createStringError(llvm::formatv(
          "block ({0}, {1}) warp {2} did not finish after {3} shuffles (a "
          "runaway loop)",
          launch.blockX, launch.blockY, launch.warp, kMaxRoundsPerWarp));
    for (int l = 0; l < present; ++l) {
      if (launch.lanes[l].state != LaneState::Running)
        continue;
      launch.current = l;
      swapcontext(&launch.scheduler, &launch.lanes[l].context);
    }
    bool waiting = false;
    for (int l = 0; l < present; ++l)
      waiting |= launch.lanes[l].state == LaneState::AtShuffle;
    if (!waiting)
      return llvm::Error::success();
    if (llvm::Error error = exchange(launch))
      return error;
  }
}

} // namespace

extern "C" {

static int64_t emuThreadId(int32_t dimension) {
  return dimension == 0 ? active->warp * kLanes + active->current : 0;
}

static int64_t emuBlockId(int32_t dimension) {
  return dimension == 0 ? active->blockX : dimension == 1 ? active->blockY : 0;
}

static int64_t emuBlockDim(int32_t dimension) {
  return dimension == 0 ? active->config.blockX : 1;
}

static int64_t emuGridDim(int32_t dimension) {
  return dimension == 0   ? active->config.gridX
         : dimension == 1 ? active->config.gridY
                          : 1;
}

static int64_t emuShuffle(int32_t value, int32_t offset, int32_t width,
                          int32_t mode, int32_t site) {
  Launch &launch = *active;
  Lane &lane = launch.lanes[launch.current];
  lane.call = {value, offset, width, mode, site};
  lane.state = LaneState::AtShuffle;
  swapcontext(&lane.context, &launch.scheduler);
  return static_cast<int64_t>(lane.received);
}

/// Counts one float atomic instruction at `address`.
static void countAtomic(int64_t address) {
  Launch &launch = *active;
  ++launch.stats.atomics;
  int64_t here = ++launch.atomicsAt[address];
  launch.stats.hottestAtomics = std::max(launch.stats.hottestAtomics, here);
}

/// Adds `value` to the float at `element` atomically (a compare-and-swap
/// loop on its bits), as the monotonic atomicrmw it stands for would: a
/// grid runs on one OS thread, but grids of other threads may share memory.
static void addAtomically(float *element, float value) {
  auto *word = reinterpret_cast<uint32_t *>(element);
  uint32_t expected = __atomic_load_n(word, __ATOMIC_RELAXED), desired;
  do {
    float sum;
    std::memcpy(&sum, &expected, sizeof(sum));
    sum += value;
    std::memcpy(&desired, &sum, sizeof(sum));
  } while (!__atomic_compare_exchange_n(word, &expected, desired,
                                        /*weak=*/true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
}

static void emuAtomicAdd(int64_t address, float value) {
  countAtomic(address);
  addAtomically(reinterpret_cast<float *>(address), value);
}

static void emuAtomicAddV4(int64_t address, float x, float y, float z,
                           float w) {
  countAtomic(address);
  auto *element = reinterpret_cast<float *>(address);
  addAtomically(element, x);
  addAtomically(element + 1, y);
  addAtomically(element + 2, z);
  addAtomically(element + 3, w);
}

} // extern "C"

std::vector<std::pair<std::string, void *>>
neuroshard::emulation::runtimeSymbols() {
  std::vector<std::pair<std::string, void *>> symbols;
  auto add = [&](const char *name, auto *function) {
    symbols.emplace_back(name, reinterpret_cast<void *>(function));
  };
  add(kThreadIdSymbol, &emuThreadId);
  add(kBlockIdSymbol, &emuBlockId);
  add(kBlockDimSymbol, &emuBlockDim);
  add(kGridDimSymbol, &emuGridDim);
  add(kShuffleSymbol, &emuShuffle);
  add(kAtomicAddSymbol, &emuAtomicAdd);
  add(kVectorAtomicAddSymbol, &emuAtomicAddV4);
  return symbols;
}

llvm::Error neuroshard::emulation::runGrid(execution::PackedFunction kernel,
                                           void **arguments,
                                           const LaunchConfig &config,
                                           LaunchStats *stats) {
  // What cuLaunchKernel refuses.
  if (config.blockX < 1 || config.blockX > 1024 || config.gridX < 1 ||
      config.gridX > abi::kMaxGridX || config.gridY < 1 ||
      config.gridY > abi::kMaxGridY)
    return llvm::createStringError(llvm::formatv(
        "invalid launch: grid {0} x {1} and block {2} (the block takes 1..1024 "
        "threads, the grid 1..{3} x 1..{4} blocks)",
        config.gridX, config.gridY, config.blockX, abi::kMaxGridX,
        abi::kMaxGridY));
  if (active)
    return llvm::createStringError("emulated launches cannot nest");
  auto launch = std::make_unique<Launch>();
  launch->kernel = kernel;
  launch->arguments = arguments;
  launch->config = config;
  launch->stacks.resize(kLanes * kStackBytes);
  active = launch.get();
  struct Reset {
    ~Reset() { active = nullptr; }
  } reset;

  std::mt19937_64 random(config.seed);
  std::vector<std::pair<int64_t, int64_t>> blocks;
  blocks.reserve(static_cast<size_t>(config.gridX * config.gridY));
  for (int64_t y = 0; y < config.gridY; ++y)
    for (int64_t x = 0; x < config.gridX; ++x)
      blocks.emplace_back(x, y);
  std::shuffle(blocks.begin(), blocks.end(), random);
  int64_t numWarps = (config.blockX + kLanes - 1) / kLanes;
  std::vector<int64_t> warps(static_cast<size_t>(numWarps));
  for (auto [x, y] : blocks) {
    launch->blockX = x;
    launch->blockY = y;
    for (int64_t w = 0; w < numWarps; ++w)
      warps[w] = w;
    std::shuffle(warps.begin(), warps.end(), random);
    for (int64_t w : warps) {
      launch->warp = w;
      if (llvm::Error error = runWarp(*launch))
        return error;
      ++launch->stats.warps;
    }
    ++launch->stats.blocks;
  }
  if (stats)
    *stats = launch->stats;
  return llvm::Error::success();
}
