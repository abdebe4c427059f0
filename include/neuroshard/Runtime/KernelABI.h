//===- KernelABI.h - The interface of the fused kernels ---------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The one owner of the kernel ABI: what the compiler emits, the executor
// packs, the CUDA runner launches and the tests check all come from here.
//
// Every lowering (CPU and CUDA) emits the same two generic kernels per index
// type: a forward fused embedding bag and a backward pass with a fused SGD
// update. Neither kernel is specialised to a set of tables: which shards a
// call covers is run-time data, a table of `kShardFields` 64-bit integers per
// shard, as FBGEMM's table-batched embedding keeps its per-table offsets. One
// compiled kernel therefore serves any shard set, which is what cost-data
// collection needs (it times thousands of sets).
//
// This header is plain C++ with no dependency, so that a CUDA-only runner can
// include it on a machine without LLVM.
//
// Addressing. Weights live in one arena of `float`. Table `t` starts at
// element `layout[t]` of the arena; its row `r`, column `c` is at
// `layout[t] + r * rowStride + c`. A shard reads columns
// `colBegin .. colBegin + width` of its table and writes them to columns
// `outColumn .. outColumn + width` of the kernel's `B x W` output (row-major,
// row stride W). Its bags are `indices[indicesBase + offsets[offsetsBase + b]
// .. indicesBase + offsets[offsetsBase + b + 1])` for b in 0..B: every
// lookup's offsets are its own and index its own indices (they start at 0,
// as in PyTorch, except for a slice of a lookup's bags, such as a
// replica's share of the batch, which keeps the lookup's indices), and the
// shards of all lookups are concatenated into one indices and one offsets
// buffer.
//
// Forward: out[b, outColumn + c] = reduce over the bag of row[colBegin + c];
// `sum`, or `mean` (the sum divided by the bag length; empty bags give 0).
// Every element of the output is written, so it needs no initialisation.
//
// Backward with SGD: for every shard, bag b and index r of the bag,
// row[r][colBegin + c] -= lr * scale * grad[b, outColumn + c] where scale is
// 1 for sum and 1 / bag length for mean. Repeated indices (within a bag or
// across bags) all apply, exactly as `index_add` of the per-index gradients
// would.
//
// CUDA. The kernels live in the GPU module `kKernelModuleName`. MLIR passes
// a memref to a kernel as its expanded descriptor, so a host that launches
// them by hand passes, per operand of `kKernelOperands`: for a memref of rank
// R the allocated pointer, the aligned pointer, the offset, R sizes and R
// strides (the two pointers are the same device address and the offset is
// 0); for a scalar its value. The y dimension of the grid walks the shards
// and the warps of the x dimension walk the bags, both with grid-stride
// loops, so any grid is correct; blockDim.x must be a multiple of 32 (a warp
// or sub-warps of it own whole bags) and blockDim.y = blockDim.z = 1.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_KERNELABI_H
#define NEUROSHARD_RUNTIME_KERNELABI_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace neuroshard {
namespace kernel_abi {

//===----------------------------------------------------------------------===//
// Shard metadata
//===----------------------------------------------------------------------===//

/// Fields of one shard's row in the metadata table, in order.
enum ShardField : int64_t {
  kTable = 0,       ///< Table ordinal: index into the layout array.
  kRowStride = 1,   ///< Elements between consecutive rows of the table.
  kColBegin = 2,    ///< First column of the shard within the table row.
  kWidth = 3,       ///< Number of columns of the shard.
  kOutColumn = 4,   ///< First column of the shard in the kernel output.
  kIndicesBase = 5, ///< Offset of the shard's indices in the indices buffer.
  kOffsetsBase = 6, ///< Offset of the shard's B + 1 offsets.
  kMode = 7,        ///< PoolingMode.
  kShardFields = 8
};

enum PoolingMode : int64_t { kSum = 0, kMean = 1 };

/// The mode field of a shard pooled with mean (`isMean`) or sum.
constexpr int64_t poolingMode(bool isMean) { return isMean ? kMean : kSum; }

/// One shard before it is placed in a kernel call.
struct ShardDescriptor {
  int64_t table = 0;     ///< Slot of its table in the layout array.
  int64_t rowStride = 0; ///< Elements between rows of that table.
  int64_t colBegin = 0;
  int64_t width = 0;
  int64_t mode = kSum;
  size_t input = 0; ///< The input pair (indices, offsets) it pools over.
};

/// Table bases in a weight arena are multiples of this many floats (64
/// bytes, a cache line, in an arena that starts on one). A row of a table
/// whose width is a multiple of 16 then spans width / 16 lines: at a base
/// off the line every such row reads one line more (a 16-wide row two
/// instead of one), and which tables of a fused set sat off the line
/// depended on the element counts of the tables before them. It is also a
/// multiple of the 16 bytes the CUDA kernels' vector path needs.
constexpr int64_t kArenaAlignment = 16;

/// `offset` rounded up to a multiple of `alignment` (positive).
constexpr int64_t alignUp(int64_t offset, int64_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

/// `offset` (in floats) rounded up to the next table base.
constexpr int64_t alignArenaOffset(int64_t offset) {
  return alignUp(offset, kArenaAlignment);
}

/// Where an input pair starts in the concatenated indices and offsets.
struct InputBase {
  int64_t indices = 0, offsets = 0;
};

/// Appends the metadata row of `shard`; the only code that knows the field
/// order.
inline void appendShard(std::vector<int64_t> &meta,
                        const ShardDescriptor &shard, int64_t outColumn,
                        InputBase base) {
  int64_t fields[kShardFields];
  fields[kTable] = shard.table;
  fields[kRowStride] = shard.rowStride;
  fields[kColBegin] = shard.colBegin;
  fields[kWidth] = shard.width;
  fields[kOutColumn] = outColumn;
  fields[kIndicesBase] = base.indices;
  fields[kOffsetsBase] = base.offsets;
  fields[kMode] = shard.mode;
  meta.insert(meta.end(), fields, fields + kShardFields);
}

/// The metadata of one kernel call. Shards write consecutive output columns
/// in their order; every input pair they use is concatenated once, in the
/// order of first use, so the shards of a split table share their pair.
struct ShardSetLayout {
  std::vector<int64_t> meta;
  /// The input pairs used, in concatenation order, and where each starts.
  std::vector<size_t> inputs;
  std::vector<InputBase> bases;
  /// Output columns: the sum of the shards' widths.
  int64_t width = 0;

  int64_t numShards() const { return int64_t(meta.size()) / kShardFields; }
};

/// Lays out `shards` over input pairs whose sizes are `numIndices[i]` and
/// `numOffsets[i]` (i = ShardDescriptor::input).
inline ShardSetLayout layoutShardSet(const std::vector<ShardDescriptor> &shards,
                                     const std::vector<int64_t> &numIndices,
                                     const std::vector<int64_t> &numOffsets) {
  ShardSetLayout layout;
  std::vector<size_t> slot(numIndices.size(), SIZE_MAX);
  InputBase end;
  for (const ShardDescriptor &shard : shards) {
    if (slot[shard.input] == SIZE_MAX) {
      slot[shard.input] = layout.inputs.size();
      layout.inputs.push_back(shard.input);
      layout.bases.push_back(end);
      end.indices += numIndices[shard.input];
      end.offsets += numOffsets[shard.input];
    }
    appendShard(layout.meta, shard, layout.width,
                layout.bases[slot[shard.input]]);
    layout.width += shard.width;
  }
  return layout;
}

/// A shard set with its concatenated indices and offsets.
template <typename Index> struct PackedShardSet {
  ShardSetLayout layout;
  std::vector<Index> indices, offsets;
};

/// Lays out `shards` over `inputs` (indexed by ShardDescriptor::input; only
/// the pairs used are read) and concatenates the pairs used. `Input` has
/// `indices` and `offsets` containers, as inputs::LookupInputs.
template <typename Index, typename Input>
PackedShardSet<Index> packShardSet(const std::vector<ShardDescriptor> &shards,
                                   const std::vector<const Input *> &inputs) {
  std::vector<int64_t> numIndices(inputs.size(), 0), numOffsets(inputs.size());
  for (const ShardDescriptor &shard : shards) {
    numIndices[shard.input] = int64_t(inputs[shard.input]->indices.size());
    numOffsets[shard.input] = int64_t(inputs[shard.input]->offsets.size());
  }
  PackedShardSet<Index> set;
  set.layout = layoutShardSet(shards, numIndices, numOffsets);
  for (size_t input : set.layout.inputs) {
    const Input &in = *inputs[input];
    set.indices.insert(set.indices.end(), in.indices.begin(), in.indices.end());
    set.offsets.insert(set.offsets.end(), in.offsets.begin(), in.offsets.end());
  }
  return set;
}

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//

/// Symbol names of the generic kernels. The suffix is the index type. On the
/// CPU they are `func.func`s with C interfaces (`_mlir_ciface_<name>`).
constexpr const char *kForwardI32 = "neuroshard_bag_forward_i32";
constexpr const char *kForwardI64 = "neuroshard_bag_forward_i64";
constexpr const char *kBackwardI32 = "neuroshard_bag_backward_sgd_i32";
constexpr const char *kBackwardI64 = "neuroshard_bag_backward_sgd_i64";

/// Element types of operands; `Index` is the kernel's index type.
enum class ElementKind { I64, F32, Index };

/// One operand of a kernel: a memref of `rank` dynamic sizes with an
/// identity layout, or a scalar for rank 0.
struct KernelOperand {
  const char *name;
  int rank;
  ElementKind element;
};

/// Positions of the operands. Both kernels take the first six; `out` is the
/// forward output and the backward output gradient; only backward takes
/// `lr`. The number of shards is meta's size / kShardFields; the batch size
/// and output width are out's sizes.
enum OperandPosition : unsigned {
  kMetaOperand,
  kLayoutOperand,
  kWeightsOperand,
  kIndicesOperand,
  kOffsetsOperand,
  kOutOperand,
  kLearningRateOperand,
  kMaxOperands
};

constexpr KernelOperand kKernelOperands[kMaxOperands] = {
    {"meta", 1, ElementKind::I64},      {"layout", 1, ElementKind::I64},
    {"weights", 1, ElementKind::F32},   {"indices", 1, ElementKind::Index},
    {"offsets", 1, ElementKind::Index}, {"out", 2, ElementKind::F32},
    {"lr", 0, ElementKind::F32}};

constexpr unsigned numOperands(bool isBackward) {
  return isBackward ? kMaxOperands : kLearningRateOperand;
}

/// CUDA parameters of one operand when a host launches by hand (see above).
constexpr int launchParams(const KernelOperand &operand) {
  return operand.rank == 0 ? 1 : 3 + 2 * operand.rank;
}

constexpr int launchParams(bool isBackward) {
  int params = 0;
  for (unsigned i = 0; i < numOperands(isBackward); ++i)
    params += launchParams(kKernelOperands[i]);
  return params;
}

constexpr int kForwardParams = launchParams(false);
constexpr int kBackwardParams = launchParams(true);

//===----------------------------------------------------------------------===//
// CUDA launch geometry
//===----------------------------------------------------------------------===//

/// Symbol of the GPU module that holds the four kernels.
constexpr const char *kKernelModuleName = "neuroshard_kernels";

/// Threads per block of every launch the compiler emits.
constexpr int64_t kThreadsPerBlock = 256;
constexpr int64_t kWarpSize = 32;
/// Launch bounds of every kernel (PTX `.maxntid` and `.minnctapersm`): a
/// block has at most kMaxThreadsPerBlock threads, a multiple of the warp,
/// and ptxas keeps the registers low enough for kMinBlocksPerMultiprocessor
/// blocks of kThreadsPerBlock threads to be resident on one multiprocessor
/// at once (64K registers: at most 85 a thread). CUDA refuses a larger
/// block.
constexpr int64_t kMaxThreadsPerBlock = kThreadsPerBlock;
constexpr int64_t kMinBlocksPerMultiprocessor = 3;
constexpr int64_t kRegistersPerMultiprocessor = 65536;
/// The registers a thread may use under the launch bounds.
constexpr int64_t kRegisterBudget =
    kRegistersPerMultiprocessor /
    (kThreadsPerBlock * kMinBlocksPerMultiprocessor);

/// Why a block of `threads` threads cannot run the kernels; empty if it can.
inline std::string blockSizeProblem(int64_t threads) {
  if (threads < kWarpSize || threads % kWarpSize != 0)
    return std::to_string(threads) +
           " threads per block is not a positive multiple of the warp size " +
           std::to_string(kWarpSize) + " (each warp owns whole bags)";
  if (threads > kMaxThreadsPerBlock)
    return std::to_string(threads) +
           " threads per block exceeds the kernels' launch bound (.maxntid " +
           std::to_string(kMaxThreadsPerBlock) + ")";
  return "";
}
/// The grid's limits in x and y; they only cap the parallelism, since the
/// grid-stride loops cover the rest.
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridY = 65535;

struct LaunchGeometry {
  int64_t gridX = 0, gridY = 0, blockX = kThreadsPerBlock;
};

/// One warp per bag for the widest shards; narrower shards pack several bags
/// into a warp and leave the surplus warps idle. Empty when there is nothing
/// to launch (no shard or no bag).
inline LaunchGeometry
launchGeometry(int64_t numShards, int64_t batchSize,
               int64_t threadsPerBlock = kThreadsPerBlock) {
  LaunchGeometry geometry;
  geometry.blockX = threadsPerBlock;
  if (numShards <= 0 || batchSize <= 0)
    return geometry;
  int64_t warpsPerBlock = threadsPerBlock / kWarpSize;
  int64_t blocks = (batchSize + warpsPerBlock - 1) / warpsPerBlock;
  geometry.gridX = blocks < kMaxGridX ? blocks : kMaxGridX;
  geometry.gridY = numShards < kMaxGridY ? numShards : kMaxGridY;
  return geometry;
}

//===----------------------------------------------------------------------===//
// Bucketization of row pieces
//===----------------------------------------------------------------------===//
//
// `neuroshard.bucketize` on a GPU: the indices of B bags split by K
// contiguous row blocks [rows[k], rows[k + 1]). The host calls
// `kBucketizeI32`/`kBucketizeI64` with the operands of kBucketizeOperands,
// all memrefs of one dynamic size: `rows` (i64, the K + 1 increasing
// boundaries), the lookup's `indices` and B + 1 `offsets`, and two outputs
// of the index type: `block_offsets` (K * (B + 1)) and `block_indices` (as
// many as the indices). Block k's offsets are
// block_offsets[k * (B + 1) .. (k + 1) * (B + 1)), starting at 0; its
// indices, each minus rows[k] and in bag order, are
// block_indices[start(k) .. start(k) + block_offsets[k * (B + 1) + B]),
// where start(k) sums the counts of the blocks before it. An index outside
// [rows[0], rows[K]) goes to no block, so the blocks may fill less than
// block_indices.
//
// On a GPU the call is three kernels of the same operands on one stream:
// count (a thread per bag writes each block's count of the bag at
// block_offsets[k * (B + 1) + b + 1]; threads also zero every block's first
// offset), scan (a warp per block turns its B counts into offsets, 32 at a
// time with warp shuffles) and scatter (a thread per bag writes its indices
// of block k from start(k) + block_offsets[k * (B + 1) + b] on). Count and
// scatter walk a bag once per block, which suits the few blocks of one
// table. Every kernel has grid-stride loops, so any grid is correct;
// blockDim.x must be a multiple of 32.

constexpr const char *kBucketizeI32 = "neuroshard_bucketize_i32";
constexpr const char *kBucketizeI64 = "neuroshard_bucketize_i64";

/// The three steps of a bucketization, in launch order.
enum class BucketizeStep { Count, Scan, Scatter };
constexpr BucketizeStep kBucketizeSteps[] = {
    BucketizeStep::Count, BucketizeStep::Scan, BucketizeStep::Scatter};

/// The kernel of `step` for the index width `indexBits` (32 or 64).
inline std::string bucketizeKernelName(BucketizeStep step, int indexBits) {
  const char *stepName = step == BucketizeStep::Count  ? "count"
                         : step == BucketizeStep::Scan ? "scan"
                                                       : "scatter";
  return std::string("neuroshard_bucketize_") + stepName + "_i" +
         std::to_string(indexBits);
}

enum BucketizePosition : unsigned {
  kRowsOperand,
  kBucketIndicesOperand,
  kBucketOffsetsOperand,
  kBlockOffsetsOperand,
  kBlockIndicesOperand,
  kBucketizeNumOperands
};

constexpr KernelOperand kBucketizeOperands[kBucketizeNumOperands] = {
    {"rows", 1, ElementKind::I64},
    {"indices", 1, ElementKind::Index},
    {"offsets", 1, ElementKind::Index},
    {"block_offsets", 1, ElementKind::Index},
    {"block_indices", 1, ElementKind::Index}};

/// The grid of `step` for `numBlocks` row blocks and `batchSize` bags:
/// count and scatter run a thread per bag (count also a thread per block),
/// scan a warp per block; at least one block of `threadsPerBlock` threads.
inline LaunchGeometry
bucketizeGeometry(BucketizeStep step, int64_t numBlocks, int64_t batchSize,
                  int64_t threadsPerBlock = kThreadsPerBlock) {
  LaunchGeometry geometry;
  geometry.blockX = threadsPerBlock;
  geometry.gridY = 1;
  int64_t work =
      step == BucketizeStep::Scan
          ? numBlocks * kWarpSize
          : (step == BucketizeStep::Count && numBlocks > batchSize ? numBlocks
                                                                   : batchSize);
  int64_t blocks = (work + threadsPerBlock - 1) / threadsPerBlock;
  geometry.gridX = blocks < 1 ? 1 : (blocks < kMaxGridX ? blocks : kMaxGridX);
  return geometry;
}

//===----------------------------------------------------------------------===//
// The row cache of a shard in host memory, on the device
//===----------------------------------------------------------------------===//
//
// On CUDA, the fetch of a shard's rows through its cache (RowCache.h) is a
// kernel the compiler generates, `kRowCacheFetchKernelI32`/`I64`, which the
// host code launches before the embedding kernel that reads the shard. Its
// operands (kRowCacheFetchOperands): the cache's `state` (i64 words in
// RowCacheWord's layout, read and updated in place), the weight arena
// `weights` that holds the cache's slots and, at the locations a row read
// in host memory gets, the shard's rows; the shard's local `rows` and the
// `locations` it writes (memrefs of the index type, of one size), and
// `flags` (kRowCacheWrites marks the slots dirty). The runtime call that
// hands out the state (RowCache.h's kRowCacheStateWords) begins the step.
//
// Work split: one warp owns every set s with s % W == w, W the grid's
// warps; each warp reads all the indices, 32 at a time, and takes its own
// rows in index order. Lane k holds way k of the set: a hit is the lane
// whose tag matches, a miss takes the first free way, else the least
// recently used one not read this step, else reads the row in host memory.
// The warp copies the evicted row back (if dirty) and the new one in, one
// column per lane. Sets are disjoint and each is served in the order of the
// indices, so the outcome equals the host's RowCache::fetch, slot for slot.
// An index outside the shard gets location 0 and its position goes into
// kRowCacheBadPosition (atomic min); a refused state gives every index 0.

constexpr const char *kRowCacheFetchKernelI32 =
    "neuroshard_row_cache_fetch_kernel_i32";
constexpr const char *kRowCacheFetchKernelI64 =
    "neuroshard_row_cache_fetch_kernel_i64";

enum RowCacheFetchPosition : unsigned {
  kRowCacheStateOperand,
  kRowCacheWeightsOperand,
  kRowCacheRowsOperand,
  kRowCacheLocationsOperand,
  kRowCacheFlagsOperand,
  kRowCacheFetchNumOperands
};

constexpr KernelOperand kRowCacheFetchOperands[kRowCacheFetchNumOperands] = {
    {"state", 1, ElementKind::I64},
    {"weights", 1, ElementKind::F32},
    {"rows", 1, ElementKind::Index},
    {"locations", 1, ElementKind::Index},
    {"flags", 0, ElementKind::I64}};

/// The most warps one fetch launches: more would each read every index for
/// fewer sets.
constexpr int64_t kRowCacheFetchMaxWarps = 1024;

/// The grid of a fetch through a cache of `sets` sets: a warp per set up to
/// kRowCacheFetchMaxWarps, at least one block.
inline LaunchGeometry
rowCacheFetchGeometry(int64_t sets,
                      int64_t threadsPerBlock = kThreadsPerBlock) {
  LaunchGeometry geometry;
  geometry.blockX = threadsPerBlock;
  geometry.gridY = 1;
  int64_t warps = sets < kRowCacheFetchMaxWarps ? sets : kRowCacheFetchMaxWarps;
  int64_t blocks = (warps * kWarpSize + threadsPerBlock - 1) / threadsPerBlock;
  geometry.gridX = blocks < 1 ? 1 : blocks;
  return geometry;
}

//===----------------------------------------------------------------------===//
// CUDA launch manifest
//===----------------------------------------------------------------------===//

/// What `--neuroshard-export-cuda` writes and neuroshard-cuda-runner reads:
/// text, one record per line, a keyword then its fields separated by blanks
/// (names contain none), so that a reader needs only iostreams. The first
/// line is `kManifestMagic kManifestVersion`; blank lines and lines starting
/// with `#` are skipped. `module`, `kernels` and `run` appear once; tables
/// come before the lookups that name them (by position, from 0), lookups
/// before the shards, and every `shard` belongs to the `device` before it.
/// Version 3 gave shards their row range, version 4 launches their range of
/// the batch's bags, version 5 shards their device cache; versions 2
/// (shards of every row), 3 (launches of every bag) and 4 (shards in device
/// memory) are still read.
constexpr const char *kManifestMagic = "neuroshard-cuda-manifest";
constexpr int64_t kManifestVersion = 5;
constexpr int64_t kOldestManifestVersion = 2;

/// A record's keyword and the names of its fields, in order.
struct ManifestRecord {
  const char *keyword;
  const char *fields[8];
  int numFields;
};

/// The kernels object (relative to the manifest's directory), its format
/// (cubin, ptx or fatbin) and the chip it was compiled for.
constexpr ManifestRecord kModuleRecord = {
    "module", {"path", "format", "chip"}, 3};
/// The symbols of the four kernels.
constexpr ManifestRecord kKernelsRecord = {
    "kernels",
    {"forward_i32", "forward_i64", "backward_i32", "backward_i64"},
    4};
/// How every launch runs: block size, bags, the inputs' seed, SGD's rate.
constexpr ManifestRecord kRunRecord = {
    "run", {"threads_per_block", "batch_size", "seed", "lr"}, 4};
/// A table; its access histogram's bins follow the named fields.
constexpr ManifestRecord kTableRecord = {
    "table", {"name", "rows", "dim", "pooling_factor"}, 4};
/// One input stream: one per distinct indices value of the module.
constexpr ManifestRecord kLookupRecord = {"lookup", {"table", "stream"}, 2};
/// One launch: the device's fused lookup, its index type (i32 or i64) and
/// the bags [bag_begin, bag_end) of the batch it looks up: every bag, or a
/// data-parallel replica's slice of them, whose lookups then read those
/// bags of their inputs.
constexpr ManifestRecord kDeviceRecord = {
    "device", {"device", "index_type", "bag_begin", "bag_end"}, 4};
/// A launch of a version 2 or 3 manifest: every bag of the batch.
constexpr ManifestRecord kDeviceRecordV3 = {
    "device", {"device", "index_type"}, 2};
/// A shard of the launch before it: rows [row_begin, row_end) and columns
/// [col_begin, col_end) of its lookup's table, pooled with `sum` or `mean`.
/// A row piece (fewer rows than the table) is stored as its own rows and
/// reads the lookup's indices inside them, shifted to its local rows: its
/// block of `neuroshard.bucketize`. It pools with `sum`, as in the IR, where
/// a mean divides by the whole bag after the pieces' reduction.
/// `cache_rows` 0 keeps the shard in device memory; more keeps its rows in
/// host memory behind a device cache of that many rows (RowCache.h), whose
/// lookups follow a power law of exponent `skew` over the shard's rows (the
/// law the planner fitted to the table's histogram to price the cache).
constexpr ManifestRecord kShardRecord = {"shard",
                                         {"lookup", "col_begin", "col_end",
                                          "row_begin", "row_end", "cache_rows",
                                          "skew", "mode"},
                                         8};
/// A shard of a version 3 or 4 manifest: in device memory.
constexpr ManifestRecord kShardRecordV4 = {
    "shard",
    {"lookup", "col_begin", "col_end", "row_begin", "row_end", "mode"},
    6};
/// A shard of a version 2 manifest: every row of the table.
constexpr ManifestRecord kShardRecordV2 = {
    "shard", {"lookup", "col_begin", "col_end", "mode"}, 4};

} // namespace kernel_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_KERNELABI_H
