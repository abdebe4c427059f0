//===- Workload.cpp - Host buffers and CPU reference of one launch --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "Workload.h"

#include "neuroshard/Runtime/KernelABI.h"

#include <algorithm>
#include <cmath>

namespace neuroshard {
namespace runner {

namespace abi = kernel_abi;

namespace {

int64_t indexAt(const Workload &w, int64_t i) {
  return w.index64 ? w.indices64[size_t(i)] : w.indices32[size_t(i)];
}

int64_t offsetAt(const Workload &w, int64_t i) {
  return w.index64 ? w.offsets64[size_t(i)] : w.offsets32[size_t(i)];
}

/// Keeps the concatenated inputs in the launch's index type only.
void setIndices(Workload &w, const std::vector<int64_t> &indices,
                const std::vector<int64_t> &offsets) {
  w.numIndices = int64_t(indices.size());
  if (w.index64) {
    w.indices64 = indices;
    w.offsets64 = offsets;
  } else {
    w.indices32.assign(indices.begin(), indices.end());
    w.offsets32.assign(offsets.begin(), offsets.end());
  }
}

} // namespace

bool buildWorkload(const Manifest &manifest, size_t which, WeightLayout layout,
                   const InputOverrides &given, Workload &out,
                   std::string &error, bool withValues, int64_t maxRows) {
  const launch_manifest::LaunchSpec &launch = manifest.launches[which];
  launch_manifest::LaunchOptions options;
  options.layout = layout;
  options.given = &given;
  options.maxRows = maxRows;
  launch_manifest::LaunchBuffers buffers;
  if (!launch_manifest::buildLaunch(manifest, which, options, buffers, error))
    return false;
  out = Workload();
  out.batch = buffers.batch;
  out.index64 = launch.index64;
  out.lr = float(manifest.lr);
  out.meta = std::move(buffers.packed.layout.meta);
  out.width = buffers.packed.layout.width;
  out.layout = std::move(buffers.layout);
  out.shardNames = std::move(buffers.shardNames);
  setIndices(out, buffers.packed.indices, buffers.packed.offsets);
  out.arenaFloats = buffers.arenaSize;
  out.caches = std::move(buffers.caches);
  out.deviceLayout = std::move(buffers.deviceLayout);
  out.deviceArenaFloats = buffers.deviceArenaSize;
  if (!withValues)
    return true;

  // Weights: every slot filled from the table's value function; a table slot
  // holds all columns, a shard slot only its own.
  out.weights.assign(size_t(buffers.arenaSize), 0.0f);
  std::vector<bool> filled(out.layout.size(), false);
  for (size_t s = 0; s < launch.shards.size(); ++s) {
    const ShardSpec &shard = launch.shards[s];
    const inputs::TableStats &table =
        manifest.tables[manifest.lookups[shard.lookup].table];
    const int64_t *fields = &out.meta[s * abi::kShardFields];
    size_t slot = size_t(fields[abi::kTable]);
    if (filled[slot])
      continue;
    filled[slot] = true;
    uint64_t key = inputs::hashString(table.name);
    bool own = layout == WeightLayout::Shards || shard.isCached();
    int64_t begin = own ? shard.colBegin : 0;
    int64_t width = own ? shard.width() : table.dim;
    inputs::fillWeights(key, buffers.slotRows[slot], begin, width,
                        out.weights.data() + out.layout[slot],
                        fields[abi::kRowStride], buffers.slotRowBegin[slot]);
  }

  // Output gradient: the columns of each lookup's gradient that the shard
  // produced, at the bags of the batch the launch looks up.
  out.grad.assign(size_t(out.batch * out.width), 0.0f);
  for (size_t s = 0; s < launch.shards.size(); ++s) {
    const ShardSpec &shard = launch.shards[s];
    const LookupSpec &lookup = manifest.lookups[shard.lookup];
    uint64_t key = inputs::mixSeed(
        inputs::hashString(manifest.tables[lookup.table].name), lookup.stream);
    int64_t outColumn = out.meta[s * abi::kShardFields + abi::kOutColumn];
    for (int64_t b = 0; b < out.batch; ++b)
      for (int64_t c = 0; c < shard.width(); ++c)
        out.grad[size_t(b * out.width + outColumn + c)] = inputs::gradientValue(
            key, buffers.bagBegin + b, shard.colBegin + c);
  }
  return true;
}

Workload bandwidthWorkload(int64_t batch, int64_t dim, int64_t pooling,
                           int64_t rows, bool index64, uint64_t seed,
                           float lr) {
  Workload w;
  w.batch = batch;
  w.width = dim;
  w.index64 = index64;
  w.lr = lr;
  inputs::Random random(inputs::mixSeed(seed, 0xba5eba11));
  std::vector<int64_t> indices(size_t(batch * pooling)), offsets;
  for (int64_t &index : indices)
    index = int64_t(random.below(uint64_t(rows)));
  for (int64_t b = 0; b <= batch; ++b)
    offsets.push_back(b * pooling);
  setIndices(w, indices, offsets);
  w.layout = {0};
  abi::ShardDescriptor shard;
  shard.rowStride = dim;
  shard.width = dim;
  abi::appendShard(w.meta, shard, /*outColumn=*/0, abi::InputBase());
  w.arenaFloats = w.deviceArenaFloats = rows * dim;
  w.deviceLayout = w.layout;
  w.weights.resize(size_t(rows * dim));
  inputs::fillWeights(inputs::hashString("bandwidth"), rows, 0, dim,
                      w.weights.data(), dim);
  w.grad.resize(size_t(batch * dim));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < dim; ++c)
      w.grad[size_t(b * dim + c)] = inputs::gradientValue(seed, b, c);
  w.shardNames = {"bandwidth[0.." + std::to_string(dim) + ")"};
  return w;
}

std::vector<float> referenceForward(const Workload &w) {
  std::vector<float> out(size_t(w.batch * w.width), 0.0f);
  std::vector<float> acc;
  for (int64_t s = 0; s < w.numShards(); ++s) {
    const int64_t *f = &w.meta[size_t(s * abi::kShardFields)];
    const float *table = w.weights.data() + w.layout[size_t(f[abi::kTable])];
    int64_t width = f[abi::kWidth];
    acc.assign(size_t(width), 0.0f);
    for (int64_t b = 0; b < w.batch; ++b) {
      int64_t begin = offsetAt(w, f[abi::kOffsetsBase] + b);
      int64_t end = offsetAt(w, f[abi::kOffsetsBase] + b + 1);
      std::fill(acc.begin(), acc.end(), 0.0f);
      // Summed in index order in float, as each kernel lane does.
      for (int64_t i = begin; i < end; ++i) {
        const float *row =
            table + indexAt(w, f[abi::kIndicesBase] + i) * f[abi::kRowStride] +
            f[abi::kColBegin];
        for (int64_t c = 0; c < width; ++c)
          acc[size_t(c)] += row[c];
      }
      float scale = f[abi::kMode] == abi::kMean
                        ? 1.0f / float(std::max<int64_t>(end - begin, 1))
                        : 1.0f;
      for (int64_t c = 0; c < width; ++c)
        out[size_t(b * w.width + f[abi::kOutColumn] + c)] =
            acc[size_t(c)] * scale;
    }
  }
  return out;
}

std::vector<float> referenceBackward(const Workload &w,
                                     std::vector<double> *reorderBound) {
  std::vector<float> weights = w.weights;
  // Per element: the number of updates and |w0| + sum |update|.
  std::vector<uint32_t> count;
  std::vector<double> mass;
  if (reorderBound) {
    count.assign(weights.size(), 0);
    mass.assign(weights.size(), 0.0);
  }
  for (int64_t s = 0; s < w.numShards(); ++s) {
    const int64_t *f = &w.meta[size_t(s * abi::kShardFields)];
    float *table = weights.data() + w.layout[size_t(f[abi::kTable])];
    for (int64_t b = 0; b < w.batch; ++b) {
      int64_t begin = offsetAt(w, f[abi::kOffsetsBase] + b);
      int64_t end = offsetAt(w, f[abi::kOffsetsBase] + b + 1);
      float scale = f[abi::kMode] == abi::kMean
                        ? 1.0f / float(std::max<int64_t>(end - begin, 1))
                        : 1.0f;
      float factor = -(w.lr * scale);
      const float *grad = w.grad.data() + b * w.width + f[abi::kOutColumn];
      for (int64_t i = begin; i < end; ++i) {
        float *row = table +
                     indexAt(w, f[abi::kIndicesBase] + i) * f[abi::kRowStride] +
                     f[abi::kColBegin];
        for (int64_t c = 0; c < f[abi::kWidth]; ++c) {
          float term = grad[c] * factor;
          if (reorderBound) {
            size_t at = size_t(&row[c] - weights.data());
            if (count[at]++ == 0)
              mass[at] = std::fabs(double(w.weights[at]));
            mass[at] += std::fabs(double(term));
          }
          row[c] += term;
        }
      }
    }
  }
  if (reorderBound) {
    constexpr double kUnitRoundoff = 0x1p-24;
    reorderBound->assign(weights.size(), 0.0);
    for (size_t i = 0; i < weights.size(); ++i)
      (*reorderBound)[i] = 2.0 * double(count[i]) * kUnitRoundoff * mass[i];
  }
  return weights;
}

Comparison compare(const std::vector<float> &got,
                   const std::vector<float> &want, double tolerance,
                   const std::vector<double> *slack) {
  Comparison result;
  result.withSlack = slack != nullptr;
  if (got.size() != want.size()) {
    result.maxError = INFINITY;
    result.mismatches = std::max(got.size(), want.size());
    return result;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = std::max(std::fabs(double(want[i])), 1.0);
    double difference = std::fabs(double(got[i]) - double(want[i]));
    double error = difference / scale;
    if (std::isnan(got[i]) != std::isnan(want[i]))
      error = difference = INFINITY;
    bool mismatch =
        difference > tolerance * scale + (slack ? (*slack)[i] : 0.0);
    if (mismatch && result.mismatches++ == 0)
      result.maxError = 0.0; // from now on, the worst mismatching element
    if ((mismatch || result.mismatches == 0) &&
        (error > result.maxError || (i == 0 && error == INFINITY))) {
      result.maxError = error;
      result.worst = i;
    }
  }
  return result;
}

} // namespace runner
} // namespace neuroshard
