//===- SetTiming.cpp - Timing device sets with the fused CPU kernels ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/SetTiming.h"

#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/MemoryBudget.h"
#include "neuroshard/Runtime/Threads.h"
#include "neuroshard/Support/HostInfo.h"
#include "neuroshard/Support/Statistics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <thread>
#include <tuple>

using namespace llvm;

namespace neuroshard {
namespace execution {
namespace {

/// The learning rate of the timed update (its value does not change the
/// time).
constexpr float kLearningRate = 0.01f;

/// Marks in `pages` the arena's huge pages that the lookups of `shards`,
/// laid out at `layout` (elements), read and update: the pages of every
/// looked-up row.
void addTouchedPages(const std::vector<KernelShard> &shards,
                     ArrayRef<int64_t> layout, std::vector<bool> &pages) {
  constexpr int64_t floatsPerPage = runtime::kHugePageBytes / sizeof(float);
  for (auto [shard, offset] : llvm::zip_equal(shards, layout))
    for (int64_t row : shard.inputs->indices) {
      int64_t first = offset + row * shard.width;
      for (int64_t page :
           {first / floatsPerPage, (first + shard.width - 1) / floatsPerPage}) {
        if (size_t(page) >= pages.size())
          pages.resize(size_t(page) + 1);
        pages[size_t(page)] = true;
      }
    }
}

class KernelSetTimer final : public SetTimer {
public:
  KernelSetTimer(std::unique_ptr<CPUKernels> kernels,
                 const KernelSetTimerOptions &options)
      : kernels(std::move(kernels)), options(options),
        flusher(size_t(options.flushMB) << 20) {}

  Error prepare(ArrayRef<TableSpec> tables, int64_t batchSize,
                ArrayRef<std::vector<ColumnSlice>> sets) override;
  unsigned draws() const override { return numDraws; }
  double time(size_t index, unsigned draw) override;
  std::string host() const override { return hostCPUModel(); }

private:
  /// One forward and update of `set`.
  void run(PreparedSet &set);
  /// The index stream of `table`'s feature `f` on `draw`, drawn once and
  /// shared by the sets.
  const inputs::LookupInputs &stream(const TableSpec &table, unsigned tableId,
                                     unsigned f, unsigned draw,
                                     int64_t batchSize);

  std::unique_ptr<CPUKernels> kernels;
  KernelSetTimerOptions options;
  runtime::CacheFlusher flusher;
  unsigned numDraws = 1;
  /// The index stream of each draw, table and feature, shared by the sets.
  std::map<std::tuple<unsigned, unsigned, unsigned>, inputs::LookupInputs>
      streams;
  /// Set s on draw d at d x numSets + s.
  std::vector<PreparedSet> prepared;
  size_t numSets = 0;
  /// One weight arena for every set and draw: only one runs at a time, and
  /// the kernels' time does not depend on the weights' values.
  runtime::ZeroedArena arena;
  /// One output and one gradient for every set and draw, for the same
  /// reasons, as neuroshard-collect reuses one of each from set to set.
  std::vector<float> output, gradient;
};

const inputs::LookupInputs &KernelSetTimer::stream(const TableSpec &table,
                                                   unsigned tableId, unsigned f,
                                                   unsigned draw,
                                                   int64_t batchSize) {
  auto [found, added] = streams.try_emplace({draw, tableId, f});
  if (added) {
    FeatureStats feature = table.feature(f);
    inputs::TableStats stats;
    stats.name = table.name;
    stats.rows = table.rows;
    stats.dim = table.dim;
    stats.poolingFactor = feature.poolingFactor;
    stats.accessHist = feature.accessHist;
    found->second = inputs::generateLookup(
        stats, batchSize, inputs::mixSeed(options.seed, draw),
        inputs::mixSeed(inputs::hashString(table.name), f));
  }
  return found->second;
}

Error KernelSetTimer::prepare(ArrayRef<TableSpec> tables, int64_t batchSize,
                              ArrayRef<std::vector<ColumnSlice>> sets) {
  streams.clear();
  prepared.clear();
  arena = runtime::ZeroedArena();
  output = {};
  gradient = {};
  numDraws = std::max(options.draws, 1u);
  numSets = sets.size();
  // What the sets take before any of it is allocated: the largest set's
  // weights (the arena), on every draw each set's packed indices with the
  // streams they copy, and the widest set's output and gradient.
  double largestWeights = 0.0, indices = 0.0, widest = 0.0;
  std::map<std::pair<unsigned, unsigned>, double> streamBytes;
  for (const std::vector<ColumnSlice> &set : sets) {
    double weights = 0.0, width = 0.0;
    for (const ColumnSlice &slice : set) {
      const TableSpec &table = tables[slice.table];
      for (unsigned f = 0; f < table.numFeatures(); ++f) {
        double bytes = (double(batchSize) * table.feature(f).poolingFactor +
                        double(batchSize) + 1) *
                       sizeof(int64_t);
        streamBytes[{slice.table, f}] = bytes;
        indices += bytes;
        weights +=
            double(table.sliceBytes(slice.width())) * slice.rowShare(table);
        width += double(slice.width());
      }
    }
    largestWeights = std::max(largestWeights, weights);
    widest = std::max(widest, width);
  }
  for (const auto &entry : streamBytes)
    indices += entry.second;
  // How far apart the draws lay a set out in the arena.
  int64_t shiftFloats =
      int64_t(options.drawShiftPages) * runtime::kHugePageBytes / sizeof(float);
  MemoryNeed need;
  need.add("weights of the largest set", largestWeights);
  if (numDraws > 1 && shiftFloats > 0)
    need.add(formatv("the other placements of {0} draws", numDraws).str(),
             double(numDraws - 1) * double(shiftFloats) * sizeof(float));
  need.add(numDraws == 1
               ? std::string("indices and offsets")
               : formatv("indices and offsets of {0} draws", numDraws).str(),
           indices * numDraws);
  need.add("output and gradient",
           2.0 * double(batchSize) * widest * sizeof(float));
  need.add("cache flush", double(options.flushMB) * (1 << 20));
  if (std::optional<std::string> refused =
          admitMemory(need, options.memoryLimitBytes))
    return createStringError(inconvertibleErrorCode(),
                             "timing the candidates' device sets " + *refused);

  // Every draw of every table's streams, drawn before the sets are packed
  // in parallel (the packing only reads them).
  for (unsigned draw = 0; draw < numDraws; ++draw)
    for (const std::vector<ColumnSlice> &slices : sets)
      for (const ColumnSlice &slice : slices)
        for (unsigned f = 0; f < tables[slice.table].numFeatures(); ++f)
          stream(tables[slice.table], slice.table, f, draw, batchSize);

  // Set s on draw d packed at d x numSets + s, the sets spread over the
  // cores: packing copies each set's indices.
  prepared.resize(size_t(numDraws) * numSets);
  std::vector<int64_t> arenaSizes(prepared.size());
  unsigned threads =
      std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(),
                                      unsigned(prepared.size())));
  std::vector<std::vector<bool>> touchedBy(threads);
  std::atomic<size_t> next{0};
  auto pack = [&](unsigned worker) {
    for (size_t i = next++; i < prepared.size(); i = next++) {
      unsigned draw = unsigned(i / numSets);
      std::vector<KernelShard> shards;
      // A row piece's block of its lookup, packed with the set.
      std::deque<inputs::LookupInputs> blocks;
      for (const ColumnSlice &slice : sets[i % numSets]) {
        const TableSpec &table = tables[slice.table];
        // A table that several features look up is one lookup per feature
        // (each with weights of its own: the kernels take one lookup per
        // shard). A row piece looks up its rows' block of each (what
        // neuroshard.bucketize gives it).
        for (unsigned f = 0; f < table.numFeatures(); ++f) {
          const inputs::LookupInputs *in = &streams.at({draw, slice.table, f});
          if (!slice.allRows()) {
            blocks.push_back(inputs::rowBlockInputs(*in, slice.rowBegin,
                                                    slice.rowEndIn(table)));
            in = &blocks.back();
          }
          shards.push_back({nullptr, slice.numRows(table), slice.width(),
                            kernel_abi::kSum, in});
        }
      }
      arenaSizes[i] = CPUKernels::packIndices(prepared[i], shards, batchSize);
      // Each draw lays the set out further into the arena (drawShiftPages),
      // so that no table reads the same pages on every draw.
      int64_t shift = int64_t(draw) * shiftFloats;
      for (int64_t &offset : prepared[i].layout)
        offset += shift;
      arenaSizes[i] += shift;
      addTouchedPages(shards, prepared[i].layout, touchedBy[worker]);
    }
  };
  runtime::runOnThreads(threads, pack);
  int64_t arenaSize = 0;
  for (int64_t size : arenaSizes)
    arenaSize = std::max(arenaSize, size);
  std::vector<bool> touched;
  for (const std::vector<bool> &pages : touchedBy) {
    if (pages.size() > touched.size())
      touched.resize(pages.size());
    for (size_t page = 0; page < pages.size(); ++page)
      if (pages[page])
        touched[page] = true;
  }
  // Zeros the system maps page by page: only the huge pages the lookups
  // touch (the rows the forwards read and the updates write, on any draw)
  // are mapped, across the cores, and no other page is ever read, so every
  // timed run finds its pages mapped without the arena having been written
  // whole (seconds for gigabytes of weights). The kernels' time does not
  // depend on the values.
  arena = runtime::ZeroedArena(size_t(arenaSize));
  std::vector<size_t> pages;
  for (size_t page = 0; page < touched.size(); ++page)
    if (touched[page])
      pages.push_back(page);
  arena.map(pages, std::max(1u, std::thread::hardware_concurrency()));
  // The output and the gradient of the widest set, lent to all of them:
  // packing a buffer of each for every set on every draw took more time
  // than copying the indices, and a set is timed after a flush either way.
  int64_t width = 0;
  for (const PreparedSet &set : prepared)
    width = std::max(width, set.width);
  size_t bufferSize = size_t(batchSize * width);
  output.assign(bufferSize, 0.0f);
  gradient.resize(bufferSize);
  CPUKernels::fillGradient(gradient, batchSize, width, options.seed);
  for (auto [set, size] : llvm::zip_equal(prepared, arenaSizes)) {
    set.sharedWeights = MutableArrayRef<float>(arena.data(), size_t(size));
    size_t used = size_t(batchSize * set.width);
    set.sharedOutput = MutableArrayRef<float>(output.data(), used);
    set.sharedGradient = MutableArrayRef<float>(gradient.data(), used);
  }
  return Error::success();
}

void KernelSetTimer::run(PreparedSet &set) {
  kernels->forward(set);
  kernels->backward(set, kLearningRate);
}

double KernelSetTimer::time(size_t index, unsigned draw) {
  PreparedSet &set = prepared[size_t(draw % numDraws) * numSets + index];
  for (unsigned warmup = 0; warmup < options.warmupRuns; ++warmup) {
    if (options.flushUntimedRuns)
      flusher.flush();
    run(set);
  }
  runtime::Timing timing = runtime::timeRuns(
      0, std::max(options.runsPerTiming, 1u), [&] { run(set); },
      [&] { flusher.flush(); });
  return timing.median;
}

} // namespace

Expected<std::unique_ptr<SetTimer>>
createKernelSetTimer(const KernelSetTimerOptions &options) {
  Expected<std::unique_ptr<CPUKernels>> kernels = CPUKernels::compile();
  if (!kernels)
    return kernels.takeError();
  return std::make_unique<KernelSetTimer>(std::move(*kernels), options);
}

void registerKernelSetTimer() {
  registerSetTimerFactory([]() -> Expected<std::unique_ptr<SetTimer>> {
    return createKernelSetTimer();
  });
}

} // namespace execution
} // namespace neuroshard
