//===- ReplicaUpdate.h - The SGD update of data-parallel replicas -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What a rank does for `neuroshard.fused_embedding_bag_sgd ... all_reduce`
// (kReplicaSGDI32/I64 of ExchangeABI.h), whichever library moves the data:
// the gradient of each replicated shard's rows from the rank's slice of the
// batch, summed over the ranks, then applied once, so that every rank's
// replica stays the same. The collective library supplies the two
// reductions over the ranks.
//
// This header is plain C++ with no dependency.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_REPLICAUPDATE_H
#define NEUROSHARD_RUNTIME_REPLICAUPDATE_H

#include "neuroshard/Runtime/ExchangeCall.h"
#include "neuroshard/Runtime/KernelABI.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace neuroshard {
namespace exchange_abi {

/// The C interface of the replicas' update: the backward kernel's operands
/// (KernelABI.h: meta, layout, weights, indices, offsets, output gradient,
/// learning rate).
template <typename Index>
using ReplicaSGDFunction = void (*)(MemRefDescriptor<int64_t, 1> *,
                                    MemRefDescriptor<int64_t, 1> *,
                                    MemRefDescriptor<float, 1> *,
                                    MemRefDescriptor<Index, 1> *,
                                    MemRefDescriptor<Index, 1> *,
                                    MemRefDescriptor<float, 2> *, float);

/// Updates the replicas of one call. For each shard, the rows any rank
/// touched are its extent: `maxOverRanks(values, count)` replaces each of
/// `count` int64 values with its maximum over the ranks. The rank's
/// gradient of those rows (a mean's bag scaled by its length) is summed over
/// the ranks by `sumOverRanks(values, count)` on `count` floats, then
/// subtracted times `lr` from the shard's rows. Both reductions are
/// collective: every rank calls them in the same order.
template <typename Index, typename MaxOverRanks, typename SumOverRanks>
void updateReplicas(const MemRefDescriptor<int64_t, 1> &meta,
                    const MemRefDescriptor<int64_t, 1> &layout,
                    MemRefDescriptor<float, 1> &weights,
                    const MemRefDescriptor<Index, 1> &indices,
                    const MemRefDescriptor<Index, 1> &offsets,
                    const MemRefDescriptor<float, 2> &gradient, float lr,
                    MaxOverRanks maxOverRanks, SumOverRanks sumOverRanks) {
  namespace abi = kernel_abi;
  const int64_t *fields = meta.aligned + meta.offset;
  int64_t shards = meta.sizes[0] / abi::kShardFields;
  const int64_t *bases = layout.aligned + layout.offset;
  float *arena = weights.aligned + weights.offset;
  const Index *index = indices.aligned + indices.offset;
  const Index *offset = offsets.aligned + offsets.offset;
  const float *grad = gradient.aligned + gradient.offset;
  int64_t bags = gradient.sizes[0], gradStride = gradient.strides[0];

  std::vector<int64_t> extent(size_t(shards), 0);
  for (int64_t s = 0; s < shards; ++s) {
    const int64_t *f = fields + s * abi::kShardFields;
    for (int64_t b = 0; b < bags; ++b)
      for (Index i = offset[f[abi::kOffsetsBase] + b];
           i < offset[f[abi::kOffsetsBase] + b + 1]; ++i)
        extent[size_t(s)] = std::max<int64_t>(
            extent[size_t(s)], int64_t(index[f[abi::kIndicesBase] + i]) + 1);
  }
  maxOverRanks(extent.data(), extent.size());

  std::vector<float> sum;
  for (int64_t s = 0; s < shards; ++s) {
    const int64_t *f = fields + s * abi::kShardFields;
    int64_t width = f[abi::kWidth];
    sum.assign(size_t(extent[size_t(s)] * width), 0.0f);
    for (int64_t b = 0; b < bags; ++b) {
      Index first = offset[f[abi::kOffsetsBase] + b];
      Index end = offset[f[abi::kOffsetsBase] + b + 1];
      float scale = f[abi::kMode] == abi::kMean && end > first
                        ? 1.0f / float(end - first)
                        : 1.0f;
      const float *row = grad + b * gradStride + f[abi::kOutColumn];
      for (Index i = first; i < end; ++i) {
        float *into =
            sum.data() + int64_t(index[f[abi::kIndicesBase] + i]) * width;
        for (int64_t c = 0; c < width; ++c)
          into[c] += scale * row[c];
      }
    }
    sumOverRanks(sum.data(), sum.size());
    float *table = arena + bases[f[abi::kTable]];
    for (int64_t r = 0; r < extent[size_t(s)]; ++r)
      for (int64_t c = 0; c < width; ++c)
        table[r * f[abi::kRowStride] + f[abi::kColBegin] + c] -=
            lr * sum[size_t(r * width + c)];
  }
}

} // namespace exchange_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_REPLICAUPDATE_H
