//===- Workload.h - Host buffers and CPU reference of a launch --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Fills the buffers of one launch of the manifest (LaunchManifest.h builds
// its metadata, layout and inputs) with the weights and the output gradient
// of the input generator's value functions, and computes what the kernels
// must produce with a plain CPU loop.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CUDA_RUNNER_WORKLOAD_H
#define NEUROSHARD_CUDA_RUNNER_WORKLOAD_H

#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/LaunchManifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace neuroshard {
namespace runner {

using launch_manifest::InputOverrides;
using launch_manifest::LaunchSpec;
using launch_manifest::LookupSpec;
using launch_manifest::Manifest;
using launch_manifest::ShardSpec;
using launch_manifest::WeightLayout;

struct Workload {
  int64_t batch = 0, width = 0;
  bool index64 = true;
  std::vector<int64_t> meta, layout;
  /// Floats of the weights arena; `weights` holds their values, or nothing
  /// for a workload built without values (only timed, never checked).
  int64_t arenaFloats = 0;
  std::vector<float> weights;
  /// Indices and offsets in the launch's index type (one of each pair used).
  std::vector<int32_t> indices32, offsets32;
  std::vector<int64_t> indices64, offsets64;
  std::vector<float> grad;
  float lr = 0.0f;
  /// Names for reports: "table[cols begin..end]" per shard.
  std::vector<std::string> shardNames;
  int64_t numIndices = 0;
  /// The shards in host memory behind device caches (none: every shard in
  /// device memory), and the arena the device holds (LaunchBuffers). `meta`,
  /// `layout`, `weights` and the indices are the reference's: the cached
  /// shards' slots whole and their rows, which the device's fetches turn
  /// into locations.
  std::vector<launch_manifest::CachedShard> caches;
  std::vector<int64_t> deviceLayout;
  int64_t deviceArenaFloats = 0;

  int64_t numShards() const {
    return int64_t(meta.size()) / kernel_abi::kShardFields;
  }
  size_t indexBytes() const { return index64 ? 8 : 4; }
};

/// Builds launch `which` of the manifest with launch_manifest::buildLaunch
/// (inputs given or generated from the tables' statistics); weights are
/// weightValue(hash(table), row, column) and the gradient
/// gradientValue(mixSeed(hash(table), stream), bag, column). Without
/// `withValues` the weights and the gradient are left empty: the device
/// fills them with a constant, which is all that timing needs.
/// `maxRows` keeps each table's first rows only (all for 0).
bool buildWorkload(const Manifest &manifest, size_t which, WeightLayout layout,
                   const InputOverrides &given, Workload &out,
                   std::string &error, bool withValues = true,
                   int64_t maxRows = 0);

/// A single-table workload with `pooling` indices per bag drawn uniformly
/// from `rows` rows: the bandwidth benchmark.
Workload bandwidthWorkload(int64_t batch, int64_t dim, int64_t pooling,
                           int64_t rows, bool index64, uint64_t seed, float lr);

/// out[b, c] of the forward kernel (B x W).
std::vector<float> referenceForward(const Workload &workload);
/// The weights arena after the backward kernel with SGD, the updates of each
/// row applied in index order. The GPU applies them with float atomics in
/// whatever order its warps reach them, so with `reorderBound` it also
/// gives, per element, how far any order of the same float additions can
/// end from this one: each of the n additions rounds by at most u = 2^-24
/// of its result, which is at most M = |w0| + sum |update|, so each order is
/// within n * u * M of the exact sum and two orders within 2 * n * u * M.
/// The bound is 0 for an element no update touches.
std::vector<float>
referenceBackward(const Workload &workload,
                  std::vector<double> *reorderBound = nullptr);

/// Largest |got - want| / max(|want|, 1) and where it occurs. An element
/// mismatches when |got - want| exceeds tolerance * max(|want|, 1) plus its
/// `slack` (none without one); `worst` is then the worst mismatching one.
struct Comparison {
  double maxError = 0.0;
  size_t worst = 0;
  size_t mismatches = 0;
  /// Whether per-element slack (a reordering bound) was allowed.
  bool withSlack = false;
};
Comparison compare(const std::vector<float> &got,
                   const std::vector<float> &want, double tolerance,
                   const std::vector<double> *slack = nullptr);

} // namespace runner
} // namespace neuroshard

#endif // NEUROSHARD_CUDA_RUNNER_WORKLOAD_H
