//===- SetTiming.cpp - Timing device sets with the fused CPU kernels ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/SetTiming.h"

#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/HostInfo.h"
#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/MemoryBudget.h"
#include "neuroshard/Runtime/Statistics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <deque>
#include <map>

using namespace llvm;

namespace neuroshard {
namespace execution {
namespace {

/// The learning rate of the timed update (its value does not change the
/// time).
constexpr float kLearningRate = 0.01f;

class KernelSetTimer final : public SetTimer {
public:
  KernelSetTimer(std::unique_ptr<CPUKernels> kernels,
                 const KernelSetTimerOptions &options)
      : kernels(std::move(kernels)), options(options),
        flusher(size_t(options.flushMB) << 20) {}

  Error prepare(ArrayRef<TableSpec> tables, int64_t batchSize,
                ArrayRef<std::vector<ColumnSlice>> sets) override;
  double time(size_t index) override;
  std::string host() const override { return hostCPUModel(); }

private:
  std::unique_ptr<CPUKernels> kernels;
  KernelSetTimerOptions options;
  runtime::CacheFlusher flusher;
  /// One index stream per lookup (table and feature), shared by its sets.
  std::map<std::pair<unsigned, unsigned>, inputs::LookupInputs> streams;
  std::vector<PreparedSet> prepared;
  /// One weight arena for every set: only one runs at a time, and the
  /// kernels' time does not depend on the weights' values.
  runtime::WeightVector arena;
};

Error KernelSetTimer::prepare(ArrayRef<TableSpec> tables, int64_t batchSize,
                              ArrayRef<std::vector<ColumnSlice>> sets) {
  streams.clear();
  prepared.clear();
  // What the sets take before any of it is allocated: the largest set's
  // weights (the arena), and every set's packed indices and buffers with
  // the streams they copy.
  double largestWeights = 0.0, indices = 0.0, outputs = 0.0;
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
    outputs += 2.0 * double(batchSize) * width * sizeof(float);
  }
  for (const auto &entry : streamBytes)
    indices += entry.second;
  MemoryNeed need;
  need.add("weights of the largest set", largestWeights);
  need.add("indices and offsets", indices);
  need.add("outputs and gradients", outputs);
  need.add("cache flush", double(options.flushMB) * (1 << 20));
  if (std::optional<std::string> refused =
          admitMemory(need, options.memoryLimitBytes))
    return createStringError(inconvertibleErrorCode(),
                             "timing the candidates' device sets " + *refused);

  int64_t arenaSize = 0;
  for (const std::vector<ColumnSlice> &slices : sets) {
    std::vector<KernelShard> shards;
    // A row piece's block of its lookup, packed with the set.
    std::deque<inputs::LookupInputs> blocks;
    for (const ColumnSlice &slice : slices) {
      const TableSpec &table = tables[slice.table];
      // A table that several features look up is one lookup per feature
      // (each with weights of its own: the kernels take one lookup per
      // shard). A row piece looks up its rows' block of each (what
      // neuroshard.bucketize gives it).
      for (unsigned f = 0; f < table.numFeatures(); ++f) {
        auto [stream, added] = streams.try_emplace({slice.table, f});
        if (added) {
          FeatureStats feature = table.feature(f);
          inputs::TableStats stats;
          stats.name = table.name;
          stats.rows = table.rows;
          stats.dim = table.dim;
          stats.poolingFactor = feature.poolingFactor;
          stats.accessHist = feature.accessHist;
          stream->second = inputs::generateLookup(
              stats, batchSize, options.seed,
              inputs::mixSeed(inputs::hashString(table.name), f));
        }
        const inputs::LookupInputs *in = &stream->second;
        if (!slice.allRows()) {
          blocks.push_back(inputs::rowBlockInputs(*in, slice.rowBegin,
                                                  slice.rowEndIn(table)));
          in = &blocks.back();
        }
        shards.push_back({nullptr, slice.numRows(table), slice.width(),
                          kernel_abi::kSum, in});
      }
    }
    PreparedSet &set = prepared.emplace_back();
    arenaSize =
        std::max(arenaSize,
                 CPUKernels::packInputs(set, shards, batchSize, options.seed));
  }
  // Zeros: writing them maps every page before the timed runs, and the
  // kernels' time does not depend on the values (filling gigabytes with
  // generated values would take seconds).
  arena.assign(size_t(arenaSize), 0.0f);
  return Error::success();
}

double KernelSetTimer::time(size_t index) {
  PreparedSet &set = prepared[index];
  set.weights.swap(arena);
  runtime::Timing timing = runtime::timeRuns(
      /*warmup=*/0, std::max(options.runsPerTiming, 1u),
      [&] {
        kernels->forward(set);
        kernels->backward(set, kLearningRate);
      },
      [&] { flusher.flush(); });
  set.weights.swap(arena);
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
