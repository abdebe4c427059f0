//===- Workload.cpp - Host buffers and CPU reference of one launch --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "Workload.h"

#include "neuroshard/Runtime/BagInputs.h"
#include "neuroshard/Runtime/KernelABI.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

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

bool readInputOverrides(const std::string &path, const Manifest &manifest,
                        InputOverrides &out, std::string &error) {
  std::ifstream file(path);
  if (!file) {
    error = "cannot read inputs '" + path + "'";
    return false;
  }
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string keyword, kind;
    if (!(words >> keyword))
      continue;
    long long lookup = -1;
    auto fail = [&](const std::string &why) {
      error =
          "inputs '" + path + "': line " + std::to_string(number) + ": " + why;
      return false;
    };
    if (keyword != "lookup" || !(words >> lookup >> kind) ||
        (kind != "offsets" && kind != "indices"))
      return fail("expected 'lookup K offsets|indices VALUES...'");
    if (lookup < 0 || size_t(lookup) >= manifest.lookups.size())
      return fail("lookup " + std::to_string(lookup) +
                  " but the manifest has " +
                  std::to_string(manifest.lookups.size()) + " lookup(s)");
    inputs::LookupInputs &in = out[size_t(lookup)];
    std::vector<int64_t> &values = kind == "offsets" ? in.offsets : in.indices;
    std::string word;
    while (words >> word) {
      char *end = nullptr;
      long long value = std::strtoll(word.c_str(), &end, 10);
      if (word.empty() || *end != '\0')
        return fail("'" + word + "' is not an integer");
      values.push_back(value);
    }
  }
  return true;
}

bool checkLaunchInputs(const Manifest &manifest, const InputOverrides &given,
                       long long launch, std::string &error) {
  // A lookup is checked once for each index type that reads it.
  std::map<std::pair<size_t, bool>, bool> checked;
  for (size_t k = 0; k < manifest.launches.size(); ++k) {
    if (launch >= 0 && size_t(launch) != k)
      continue;
    const LaunchSpec &spec = manifest.launches[k];
    for (const ShardSpec &shard : spec.shards) {
      if (!checked.emplace(std::make_pair(shard.lookup, spec.index64), true)
               .second)
        continue;
      const LookupSpec &lookup = manifest.lookups[shard.lookup];
      const inputs::TableStats &table = manifest.tables[lookup.table];
      inputs::LookupInputs generated;
      auto found = given.find(shard.lookup);
      const inputs::LookupInputs *in = &generated;
      if (found != given.end())
        in = &found->second;
      else
        generated = inputs::generateLookup(table, manifest.batchSize,
                                           manifest.seed, lookup.stream);
      std::string name = "launch " + std::to_string(k) + ", lookup " +
                         std::to_string(shard.lookup) + " (table " +
                         table.name + ")";
      error = abi::checkBagInputs(
          name, in->offsets.data(), int64_t(in->offsets.size()),
          in->indices.data(), int64_t(in->indices.size()), manifest.batchSize,
          table.rows, !spec.index64);
      if (!error.empty())
        return false;
    }
  }
  return true;
}

bool buildWorkload(const Manifest &manifest, size_t which, WeightLayout layout,
                   const InputOverrides &given, Workload &out,
                   std::string &error) {
  const LaunchSpec &launch = manifest.launches[which];
  out = Workload();
  out.batch = manifest.batchSize;
  out.index64 = launch.index64;
  out.lr = float(manifest.lr);

  // The inputs of the lookups the launch uses (input pair = lookup).
  std::vector<inputs::LookupInputs> generated(manifest.lookups.size());
  std::vector<const inputs::LookupInputs *> pairs(manifest.lookups.size());
  std::map<size_t, int64_t> tableSlot;
  std::vector<abi::ShardDescriptor> shards;
  int64_t arena = 0;
  for (const ShardSpec &shard : launch.shards) {
    const LookupSpec &lookup = manifest.lookups[shard.lookup];
    const inputs::TableStats &table = manifest.tables[lookup.table];
    if (!pairs[shard.lookup]) {
      auto found = given.find(shard.lookup);
      if (found != given.end())
        generated[shard.lookup] = found->second;
      else
        generated[shard.lookup] = inputs::generateLookup(
            table, out.batch, manifest.seed, lookup.stream);
      pairs[shard.lookup] = &generated[shard.lookup];
    }
    abi::ShardDescriptor descriptor;
    descriptor.width = shard.width();
    descriptor.mode = abi::poolingMode(shard.mean);
    descriptor.input = shard.lookup;
    if (layout == WeightLayout::Shards) {
      descriptor.table = int64_t(out.layout.size());
      out.layout.push_back(arena);
      descriptor.rowStride = shard.width();
      arena = abi::alignArenaOffset(arena + table.rows * descriptor.rowStride);
    } else {
      auto found = tableSlot.find(lookup.table);
      if (found == tableSlot.end()) {
        found =
            tableSlot.emplace(lookup.table, int64_t(out.layout.size())).first;
        out.layout.push_back(arena);
        arena = abi::alignArenaOffset(arena + table.rows * table.dim);
      }
      descriptor.table = found->second;
      descriptor.rowStride = table.dim;
      descriptor.colBegin = shard.colBegin;
    }
    shards.push_back(descriptor);
    out.shardNames.push_back(table.name + "[" + std::to_string(shard.colBegin) +
                             ".." + std::to_string(shard.colEnd) + ")");
  }
  abi::PackedShardSet<int64_t> set = abi::packShardSet<int64_t>(shards, pairs);
  if (!out.index64 && set.indices.size() > 2147483647) {
    error = "launch " + std::to_string(which) + " has " +
            std::to_string(set.indices.size()) +
            " indices, more than i32 offsets can address";
    return false;
  }
  out.meta = std::move(set.layout.meta);
  out.width = set.layout.width;
  setIndices(out, set.indices, set.offsets);

  // Weights: every slot filled from the table's value function; a table slot
  // holds all columns, a shard slot only its own.
  out.weights.assign(size_t(arena), 0.0f);
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
    int64_t begin = layout == WeightLayout::Shards ? shard.colBegin : 0;
    int64_t width = layout == WeightLayout::Shards ? shard.width() : table.dim;
    inputs::fillWeights(key, table.rows, begin, width,
                        out.weights.data() + out.layout[slot],
                        fields[abi::kRowStride]);
  }

  // Output gradient: the columns of each lookup's gradient that the shard
  // produced.
  out.grad.assign(size_t(out.batch * out.width), 0.0f);
  for (size_t s = 0; s < launch.shards.size(); ++s) {
    const ShardSpec &shard = launch.shards[s];
    const LookupSpec &lookup = manifest.lookups[shard.lookup];
    uint64_t key = inputs::mixSeed(
        inputs::hashString(manifest.tables[lookup.table].name), lookup.stream);
    int64_t outColumn = out.meta[s * abi::kShardFields + abi::kOutColumn];
    for (int64_t b = 0; b < out.batch; ++b)
      for (int64_t c = 0; c < shard.width(); ++c)
        out.grad[size_t(b * out.width + outColumn + c)] =
            inputs::gradientValue(key, b, shard.colBegin + c);
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
