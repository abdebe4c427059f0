//===- LaunchManifest.h - Kernel launches from a manifest -------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What --neuroshard-export-cuda writes and both the CUDA runner and the warp
// emulator read: the kernels object, the tables with their statistics, the
// lookups (one input stream each) and the launches (one per device's fused
// lookup). KernelABI.h defines its records; every field is checked here, so
// that the programs work on validated data. buildLaunch turns one launch
// into the buffers of KernelABI.h, the one place either program does.
//
// Plain C++ with no dependency, so the standalone runner compiles it.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_LAUNCHMANIFEST_H
#define NEUROSHARD_RUNTIME_LAUNCHMANIFEST_H

#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/KernelABI.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace neuroshard {
namespace launch_manifest {

struct LookupSpec {
  size_t table = 0;
  uint64_t stream = 0;
};

struct ShardSpec {
  size_t lookup = 0;
  int64_t colBegin = 0, colEnd = 0;
  /// Rows [rowBegin, rowEnd) of the table: all of them unless a row piece.
  int64_t rowBegin = 0, rowEnd = 0;
  /// Rows of the device cache in front of the shard's rows in host memory
  /// (0: the shard is in device memory), and the power law its lookups
  /// follow.
  int64_t cacheRows = 0;
  double skew = 0.0;
  bool mean = false;
  int64_t width() const { return colEnd - colBegin; }
  bool isCached() const { return cacheRows > 0; }
  bool isRowPiece(const inputs::TableStats &table) const {
    return rowBegin != 0 || rowEnd != table.rows;
  }
};

struct LaunchSpec {
  int64_t device = 0;
  bool index64 = true;
  /// The bags [bagBegin, bagEnd) of the manifest's batch the launch looks
  /// up (bagEnd -1: to the last): every bag, or a replica's slice.
  int64_t bagBegin = 0, bagEnd = -1;
  std::vector<ShardSpec> shards;
  bool isBatchSlice(int64_t batchSize) const {
    return bagBegin != 0 || (bagEnd != -1 && bagEnd != batchSize);
  }
};

struct Manifest {
  /// The kernels object, resolved against the manifest's directory.
  std::string modulePath;
  std::string moduleFormat;
  std::string chip;
  std::string forwardI32, forwardI64, backwardI32, backwardI64;
  int64_t threadsPerBlock = 256;
  /// The bags of a lookup; a program may run the manifest at another batch
  /// than the one written (`declaredBatchSize`), and a launch's slice of
  /// the bags then keeps its share of them.
  int64_t batchSize = 0;
  int64_t declaredBatchSize = 0;
  uint64_t seed = 0;
  double lr = 0.0;
  std::vector<inputs::TableStats> tables;
  std::vector<LookupSpec> lookups;
  std::vector<LaunchSpec> launches;
};

/// Parses and checks manifest text; `baseDir` resolves a relative module
/// path. On failure `error` names the field and the offending value.
bool parseManifest(const std::string &text, const std::string &baseDir,
                   Manifest &out, std::string &error);

/// Reads and parses the manifest file `path`.
bool loadManifest(const std::string &path, Manifest &out, std::string &error);

/// Reads a whole file; false with a message if it cannot.
bool readFile(const std::string &path, std::string &contents,
              std::string &error);

/// Inputs given for some lookups (by position in the manifest) in place of
/// generated ones.
using InputOverrides = std::map<size_t, inputs::LookupInputs>;

/// Reads `path`: lines `lookup K offsets V...` and `lookup K indices V...`
/// (`#` starts a comment; a lookup's values may span several lines).
bool readInputOverrides(const std::string &path, const Manifest &manifest,
                        InputOverrides &out, std::string &error);

/// The inputs of lookup `lookup`: the given ones, else generated with
/// InputGenerator from its table's statistics (seed from the manifest,
/// stream from the lookup) over the table's first `rowLimit` rows (all for
/// 0).
inputs::LookupInputs lookupInputs(const Manifest &manifest, size_t lookup,
                                  const InputOverrides &given,
                                  int64_t rowLimit = 0);

/// Checks the inputs of every lookup the selected launches use (all for
/// `launch` < 0) with kernel_abi::checkBagInputs, before any launch.
bool checkLaunchInputs(const Manifest &manifest, const InputOverrides &given,
                       long long launch, std::string &error);

/// How a launch's weights arena holds its shards.
enum class WeightLayout {
  /// Each shard as its own rows x width block (what a device stores).
  Shards,
  /// Each table whole (rows x dim), shards reading their column range of it.
  Tables
};

struct LaunchOptions {
  WeightLayout layout = WeightLayout::Shards;
  /// Rows kept of each table (all for 0); indices are drawn among them.
  /// A row piece keeps its part of them: its rows scaled by the kept
  /// fraction, so that a table's pieces still divide its indices.
  int64_t maxRows = 0;
  /// Inputs given in place of generated ones.
  const InputOverrides *given = nullptr;
};

/// A shard of a launch kept in host memory behind a device cache. It has
/// its own slot and its own input pair, whose indices are rows of the
/// shard drawn from its power law (draw 0 of zipfIndexStream with `seed`;
/// later draws are further batches of the same stream), or the given
/// inputs of its lookup (`drawn` false: every batch the same). On the device, a
/// fetch (RowCache.h) turns them into locations before the kernels run:
/// the cache's slots, which take `cacheRows` rows of the device arena, and
/// past them the shard's rows in host memory.
struct CachedShard {
  size_t shard = 0;
  int64_t slot = 0;
  /// The shard's rows and columns (its slot's, kept under a row cap) and
  /// the rows its cache holds (scaled with them).
  int64_t rows = 0, width = 0, cacheRows = 0;
  /// Its input pair's indices in the packed set: [indexBegin, + count).
  int64_t indexBegin = 0, count = 0;
  double skew = 0.0;
  uint64_t seed = 0;
  bool drawn = true;
};

/// One launch of the manifest as KernelABI.h lays it out: the shards'
/// metadata and the concatenated inputs of the lookups they read (a row
/// piece's block of them, a replica's bags of them), and where
/// each slot (a shard or a table, by the layout) starts in a weights arena
/// of `arenaSize` floats holding every slot whole, which is what a
/// reference computation reads. The weights' values are the caller's.
struct LaunchBuffers {
  /// The launch's bags, the first of them in the manifest's batch (0 unless
  /// the launch looks up a replica's slice).
  int64_t batch = 0;
  int64_t bagBegin = 0;
  kernel_abi::PackedShardSet<int64_t> packed;
  std::vector<int64_t> layout;
  int64_t arenaSize = 0;
  /// Per slot: the rows it holds, and the table row of its first.
  std::vector<int64_t> slotRows;
  std::vector<int64_t> slotRowBegin;
  /// Per shard: "table[begin..end)" for reports, with " rows a..b" for a
  /// row piece.
  std::vector<std::string> shardNames;
  /// The cached shards, and the arena a device holds: every slot where
  /// `layout` has it, except that a cached shard's slot holds only its
  /// cache. Both are `layout` and `arenaSize` for a launch without caches.
  std::vector<CachedShard> caches;
  std::vector<int64_t> deviceLayout;
  int64_t deviceArenaSize = 0;
};

/// Builds launch `which` of the manifest; false with a message when an i32
/// launch has more indices than i32 offsets can address. A cached shard
/// gets its own slot in either layout.
bool buildLaunch(const Manifest &manifest, size_t which,
                 const LaunchOptions &options, LaunchBuffers &out,
                 std::string &error);

} // namespace launch_manifest
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_LAUNCHMANIFEST_H
