//===- KernelSweep.cpp - Emulated CUDA kernels against the CPU ------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Emulation/KernelSweep.h"
#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace ::neuroshard;
using namespace ::neuroshard::emulation;
namespace abi = ::neuroshard::kernel_abi;

namespace {

constexpr int64_t kWidths[] = {1,  2,   3,   4,   5,   7,   8,   12,
                               16, 17,  31,  32,  33,  36,  63,  64,
                               65, 100, 128, 129, 200, 255, 256, 300};
/// Whole warps up to the kernels' launch bound.
constexpr int64_t kBlockSizes[] = {32, 64, 96, 128, 160, 192, 224, 256};
static_assert(kBlockSizes[std::size(kBlockSizes) - 1] ==
              abi::kMaxThreadsPerBlock);

/// One table of a case: its dim, rows, where it starts in the arena and
/// its row stride.
struct CaseTable {
  int64_t dim = 0, rows = 0, base = 0, rowStride = 0;
};

/// A shard set, its buffers and its launch.
struct SweepCase {
  std::string description;
  std::vector<CaseTable> tables;
  execution::PreparedSet set;
  LaunchConfig launch;
  float learningRate = 0.05f;
};

int64_t pick(std::mt19937_64 &random, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(random);
}

/// The columns at which table `dim` is split into shards (none: one shard).
std::vector<int64_t> splitPoints(std::mt19937_64 &random, int64_t dim,
                                 bool keepAligned) {
  std::vector<int64_t> points;
  int64_t pieces = std::min<int64_t>(pick(random, 2, 3), dim);
  for (int64_t p = 1; p < pieces; ++p) {
    int64_t at = pick(random, 1, dim - 1);
    if (keepAligned)
      at -= at % 4;
    if (at > 0 && at < dim)
      points.push_back(at);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

SweepCase makeCase(int64_t number, uint64_t seed, int64_t forcedBlock) {
  std::mt19937_64 random(seed * 1000003 + static_cast<uint64_t>(number));
  SweepCase c;
  constexpr int64_t numWidths = std::size(kWidths);
  // Every width comes first in turn; the others are drawn.
  bool aligned = number % 3 != 2; // 1 in 3 cases leaves the vector path
  int64_t numTables = pick(random, 1, 3);
  bool split = number % 2 == 1;
  bool i32 = (number / 2) % 2 == 0;
  int64_t batch = number % 17 == 5 ? 1 : pick(random, 1, 40);
  int64_t arena = 0;
  for (int64_t t = 0; t < numTables; ++t) {
    CaseTable table;
    table.dim = t == 0 ? kWidths[number % numWidths]
                       : kWidths[pick(random, 0, numWidths - 1)];
    // Few rows so that indices repeat within and across bags.
    table.rows = pick(random, 1, 24);
    table.rowStride = table.dim + (aligned ? 0 : pick(random, 0, 2));
    if (aligned)
      arena = (arena + 3) / 4 * 4;
    else
      arena += 1;
    table.base = arena;
    arena += table.rows * table.rowStride;
    c.tables.push_back(table);
  }

  // One input pair per table; its shards (the table's split) share it.
  std::vector<inputs::LookupInputs> pairs(numTables);
  std::vector<abi::ShardDescriptor> shards;
  std::string shape;
  for (int64_t t = 0; t < numTables; ++t) {
    const CaseTable &table = c.tables[t];
    inputs::LookupInputs &in = pairs[t];
    in.offsets.push_back(0);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t kind = pick(random, 0, 9);
      int64_t length = kind < 2   ? 0                     // empty
                       : kind < 8 ? pick(random, 1, 12)   // typical
                                  : pick(random, 30, 70); // several chunks
      for (int64_t i = 0; i < length; ++i)
        in.indices.push_back(pick(random, 0, table.rows - 1));
      in.offsets.push_back(int64_t(in.indices.size()));
    }
    int64_t mode = pick(random, 0, 1) ? abi::kMean : abi::kSum;
    std::vector<int64_t> points;
    if (split && t == 0)
      points = splitPoints(random, table.dim, aligned);
    points.push_back(table.dim);
    int64_t begin = 0;
    for (int64_t end : points) {
      abi::ShardDescriptor shard;
      shard.table = t;
      shard.rowStride = table.rowStride;
      shard.colBegin = begin;
      shard.width = end - begin;
      shard.mode = mode;
      shard.input = static_cast<size_t>(t);
      shards.push_back(shard);
      shape += llvm::formatv("{0}{1}[{2},{3}){4}", shape.empty() ? "" : " ", t,
                             begin, end, mode == abi::kMean ? "m" : "s")
                   .str();
      begin = end;
    }
  }
  std::vector<const inputs::LookupInputs *> pointers;
  for (const inputs::LookupInputs &in : pairs)
    pointers.push_back(&in);
  abi::PackedShardSet<int64_t> packed =
      abi::packShardSet<int64_t>(shards, pointers);

  std::vector<int64_t> layout;
  for (const CaseTable &table : c.tables)
    layout.push_back(table.base);
  int64_t numShards = packed.layout.numShards();
  c.set = prepareSet(std::move(packed), std::move(layout), arena, batch, i32,
                     random());

  int64_t block =
      forcedBlock ? forcedBlock : kBlockSizes[number % std::size(kBlockSizes)];
  abi::LaunchGeometry geometry = abi::launchGeometry(numShards, batch, block);
  c.launch.blockX = block;
  switch (number % 3) {
  case 0: // what the runtime launches
    c.launch.gridX = std::max<int64_t>(geometry.gridX, 1);
    c.launch.gridY = std::max<int64_t>(geometry.gridY, 1);
    break;
  case 1: // one block walks everything
    c.launch.gridX = c.launch.gridY = 1;
    break;
  default: // too few or too many blocks
    c.launch.gridX = pick(random, 1, 4);
    c.launch.gridY = pick(random, 1, numShards + 1);
    break;
  }
  c.launch.seed = seed + static_cast<uint64_t>(number);
  c.description =
      llvm::formatv("case {0}: B={1} {2} {3} {4}, grid {5}x{6}, block {7}: "
                    "{8}",
                    number, batch, i32 ? "i32" : "i64",
                    aligned ? "aligned" : "unaligned",
                    split ? "split" : "whole", c.launch.gridX, c.launch.gridY,
                    c.launch.blockX, shape)
          .str();
  return c;
}

/// The first element of `actual` that differs from `expected`, as a
/// message; empty when all agree.
template <typename Vector>
std::string compare(const char *what, const Vector &actual,
                    const Vector &expected, int64_t rowLength) {
  for (size_t i = 0; i < expected.size(); ++i) {
    float a = actual[i], e = expected[i];
    if (std::fabs(a - e) <= 1e-4f + 1e-5f * std::fabs(e))
      continue;
    return llvm::formatv("{0} differs at [{1}, {2}]: emulated {3}, CPU {4}",
                         what, int64_t(i) / rowLength, int64_t(i) % rowLength,
                         a, e)
        .str();
  }
  return "";
}

/// Launches `kernel` on `set` with `out` as its matrix operand.
template <typename Index>
llvm::Error launchOn(EmulatedKernels &emulated, const char *kernel,
                     execution::PreparedSet &set, std::vector<Index> &indices,
                     std::vector<Index> &offsets, runtime::WeightVector &out,
                     float lr, const LaunchConfig &config, LaunchStats &stats) {
  execution::KernelOperands<Index> operands;
  operands.meta = execution::memref1D(set.meta);
  operands.layout = execution::memref1D(set.layout);
  operands.weights = execution::memref1D(set.weights);
  operands.indices = execution::memref1D(indices);
  operands.offsets = execution::memref1D(offsets);
  operands.out = execution::memref2D(out.data(), set.batch, set.width);
  operands.lr = lr;
  return emulated.launch(kernel, operands, config, &stats);
}

} // namespace

execution::PreparedSet neuroshard::emulation::prepareSet(
    abi::PackedShardSet<int64_t> packed, std::vector<int64_t> layout,
    int64_t arenaSize, int64_t batch, bool i32, uint64_t seed) {
  std::mt19937_64 random(seed);
  execution::PreparedSet set;
  execution::adoptPackedSet(set, std::move(packed), batch, i32);
  set.layout = std::move(layout);
  set.weights.resize(static_cast<size_t>(arenaSize));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (float &w : set.weights)
    w = value(random);
  for (float &g : set.gradient)
    g = value(random);
  return set;
}

llvm::Error neuroshard::emulation::compareWithCPU(
    EmulatedKernels &emulated, execution::CPUKernels &reference,
    execution::PreparedSet &set, const LaunchConfig &launch, float learningRate,
    SweepTotals &totals) {
  execution::PreparedSet emulatedSet = set;
  bool i32 = set.indicesAreI32;

  // Forward: NaN marks any element the kernel fails to write.
  reference.forward(set);
  runtime::WeightVector out(set.output.size(),
                            std::numeric_limits<float>::quiet_NaN());
  LaunchStats stats;
  llvm::Error error =
      i32 ? launchOn(emulated, abi::kForwardI32, emulatedSet,
                     emulatedSet.indices32, emulatedSet.offsets32, out, 0.0f,
                     launch, stats)
          : launchOn(emulated, abi::kForwardI64, emulatedSet,
                     emulatedSet.indices, emulatedSet.offsets, out, 0.0f,
                     launch, stats);
  if (error)
    return error;
  totals.shuffles += stats.shuffles;
  std::vector<float> outCopy(out.begin(), out.end());
  std::string mismatch =
      compare("the forward output", outCopy, set.output, set.width);
  if (!mismatch.empty())
    return llvm::createStringError(mismatch);

  // Backward with SGD on both copies of the weights.
  reference.backward(set, learningRate);
  runtime::WeightVector gradient(set.gradient.begin(), set.gradient.end());
  error = i32 ? launchOn(emulated, abi::kBackwardI32, emulatedSet,
                         emulatedSet.indices32, emulatedSet.offsets32, gradient,
                         learningRate, launch, stats)
              : launchOn(emulated, abi::kBackwardI64, emulatedSet,
                         emulatedSet.indices, emulatedSet.offsets, gradient,
                         learningRate, launch, stats);
  if (error)
    return error;
  totals.shuffles += stats.shuffles;
  totals.atomics += stats.atomics;
  totals.hottestAtomics = std::max(totals.hottestAtomics, stats.hottestAtomics);
  mismatch =
      compare("the updated weight arena", emulatedSet.weights, set.weights,
              std::max<int64_t>(int64_t(set.weights.size()), 1));
  if (!mismatch.empty())
    return llvm::createStringError(mismatch);
  totals.launches += 2;
  totals.elements += int64_t(set.output.size() + set.weights.size());
  return llvm::Error::success();
}

llvm::Error neuroshard::emulation::runKernelSweep(
    EmulatedKernels &emulated, execution::CPUKernels &reference,
    const SweepOptions &options, llvm::raw_ostream &log, SweepTotals &totals) {
  for (int64_t number = 0; number < options.cases; ++number) {
    SweepCase c = makeCase(number, options.seed, options.threadsPerBlock);
    if (options.verbose)
      log << c.description << "\n";
    if (llvm::Error error = compareWithCPU(emulated, reference, c.set, c.launch,
                                           c.learningRate, totals))
      return llvm::createStringError(c.description + ": " +
                                     llvm::toString(std::move(error)));
    ++totals.cases;
  }
  return llvm::Error::success();
}

namespace {

/// One bucketization: row boundaries, a lookup's bags and the launch.
struct BucketizeCase {
  std::string description;
  std::vector<int64_t> rows, indices, offsets;
  bool i32 = true;
  LaunchConfig launch;
  /// Caps every step's grid at this many blocks (0: the runtime's grid).
  int64_t maxGrid = 0;
};

BucketizeCase makeBucketizeCase(int64_t number, uint64_t seed,
                                int64_t forcedBlock) {
  std::mt19937_64 random(seed * 7919 + static_cast<uint64_t>(number));
  BucketizeCase c;
  c.i32 = number % 2 == 0;
  int64_t numBlocks = pick(random, 1, 5);
  // Blocks from row 0 or later; some i64 cases beyond 2^32.
  int64_t first = number % 3 == 0 ? 0 : pick(random, 1, 40);
  if (!c.i32 && number % 4 == 1)
    first += int64_t(5) << 30;
  c.rows.push_back(first);
  for (int64_t k = 0; k < numBlocks; ++k)
    c.rows.push_back(c.rows.back() + pick(random, 1, 50));
  int64_t batch = number % 11 == 3  ? 0
                  : number % 7 == 1 ? 1
                                    : pick(random, 2, 100);
  c.offsets.push_back(0);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t kind = pick(random, 0, 9);
    int64_t length = kind < 2   ? 0
                     : kind < 9 ? pick(random, 1, 8)
                                : pick(random, 20, 80);
    for (int64_t i = 0; i < length; ++i) {
      int64_t where = pick(random, 0, 19);
      int64_t index = where == 0 && c.rows.front() > 0
                          ? pick(random, 0, c.rows.front() - 1) // below
                      : where == 1
                          ? c.rows.back() + pick(random, 0, 30) // above
                          : pick(random, c.rows.front(), c.rows.back() - 1);
      c.indices.push_back(index);
    }
    c.offsets.push_back(int64_t(c.indices.size()));
  }
  c.launch.blockX =
      forcedBlock ? forcedBlock : kBlockSizes[number % std::size(kBlockSizes)];
  c.launch.seed = seed + static_cast<uint64_t>(number);
  c.maxGrid = number % 3 == 1 ? 1 : (number % 3 == 2 ? pick(random, 1, 3) : 0);
  std::string bounds;
  for (int64_t row : c.rows)
    bounds += (bounds.empty() ? "" : ", ") + std::to_string(row);
  c.description =
      llvm::formatv("bucketize case {0}: B={1} {2}, {3} indices, rows [{4}], "
                    "block {5}, grid {6}",
                    number, batch, c.i32 ? "i32" : "i64", c.indices.size(),
                    bounds, c.launch.blockX,
                    c.maxGrid ? "at most " + std::to_string(c.maxGrid)
                              : std::string("the runtime's"))
          .str();
  return c;
}

/// Each block's offsets and local indices, as neuroshard.bucketize defines
/// them.
void bucketizeOnHost(const BucketizeCase &c,
                     std::vector<std::vector<int64_t>> &blockOffsets,
                     std::vector<std::vector<int64_t>> &blockIndices) {
  size_t numBlocks = c.rows.size() - 1;
  blockOffsets.assign(numBlocks, {});
  blockIndices.assign(numBlocks, {});
  inputs::LookupInputs lookup{c.indices, c.offsets};
  for (size_t k = 0; k < numBlocks; ++k) {
    inputs::LookupInputs block =
        inputs::rowBlockInputs(lookup, c.rows[k], c.rows[k + 1]);
    blockOffsets[k] = std::move(block.offsets);
    blockIndices[k] = std::move(block.indices);
  }
}

template <typename Index>
llvm::Error runBucketizeCase(EmulatedKernels &emulated, const BucketizeCase &c,
                             SweepTotals &totals) {
  std::vector<int64_t> rows = c.rows;
  std::vector<Index> indices(c.indices.begin(), c.indices.end());
  std::vector<Index> offsets(c.offsets.begin(), c.offsets.end());
  int64_t numBlocks = int64_t(rows.size()) - 1;
  int64_t batch = int64_t(offsets.size()) - 1;
  // A value no step writes marks what the kernels leave out.
  constexpr Index kUnwritten = -7;
  std::vector<Index> blockOffsets(size_t(numBlocks * (batch + 1)), kUnwritten);
  std::vector<Index> blockIndices(indices.size(), kUnwritten);
  BucketizeOperands<Index> operands{
      execution::memref1D(rows), execution::memref1D(indices),
      execution::memref1D(offsets), execution::memref1D(blockOffsets),
      execution::memref1D(blockIndices)};
  int indexBits = sizeof(Index) == 4 ? 32 : 64;
  for (abi::BucketizeStep step : abi::kBucketizeSteps) {
    abi::LaunchGeometry geometry =
        abi::bucketizeGeometry(step, numBlocks, batch, c.launch.blockX);
    LaunchConfig config = c.launch;
    config.gridX =
        c.maxGrid ? std::min(geometry.gridX, c.maxGrid) : geometry.gridX;
    config.gridY = 1;
    LaunchStats stats;
    if (llvm::Error error =
            emulated.launchBucketize(abi::bucketizeKernelName(step, indexBits),
                                     operands, config, &stats))
      return error;
    totals.shuffles += stats.shuffles;
    ++totals.launches;
  }

  std::vector<std::vector<int64_t>> expectedOffsets, expectedIndices;
  bucketizeOnHost(c, expectedOffsets, expectedIndices);
  int64_t start = 0;
  for (int64_t k = 0; k < numBlocks; ++k) {
    for (int64_t b = 0; b <= batch; ++b) {
      int64_t actual = blockOffsets[size_t(k * (batch + 1) + b)];
      if (actual != expectedOffsets[k][b])
        return llvm::createStringError(
            llvm::formatv("block {0}'s offset {1} is {2}, expected {3}", k, b,
                          actual, expectedOffsets[k][b])
                .str());
    }
    for (size_t i = 0; i < expectedIndices[k].size(); ++i) {
      int64_t actual = blockIndices[size_t(start) + i];
      if (actual != expectedIndices[k][i])
        return llvm::createStringError(
            llvm::formatv("block {0}'s index {1} (element {2} of the output) "
                          "is {3}, expected {4}",
                          k, i, start + int64_t(i), actual,
                          expectedIndices[k][i])
                .str());
    }
    start += int64_t(expectedIndices[k].size());
    totals.elements += batch + 1 + int64_t(expectedIndices[k].size());
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error neuroshard::emulation::runBucketizeSweep(
    EmulatedKernels &emulated, const SweepOptions &options,
    llvm::raw_ostream &log, SweepTotals &totals) {
  for (int64_t number = 0; number < options.cases; ++number) {
    BucketizeCase c =
        makeBucketizeCase(number, options.seed, options.threadsPerBlock);
    if (options.verbose)
      log << c.description << "\n";
    llvm::Error error = c.i32 ? runBucketizeCase<int32_t>(emulated, c, totals)
                              : runBucketizeCase<int64_t>(emulated, c, totals);
    if (error)
      return llvm::createStringError(c.description + ": " +
                                     llvm::toString(std::move(error)));
    ++totals.cases;
  }
  return llvm::Error::success();
}
