//===- ModelAnalysis.h - What a NeuroShard module computes ------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Reads a NeuroShard module (sharded or not) before it is lowered: its
// tables, which function arguments are which lookup's indices and offsets,
// and every lookup's shards, as the kernel ABI describes them.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_MODELANALYSIS_H
#define NEUROSHARD_EXECUTION_MODELANALYSIS_H

#include "neuroshard/Runtime/ExchangeABI.h"
#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Sharding/Problem.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace neuroshard {
namespace execution {

/// A table, or the piece of one that the weight arena holds, as the
/// runtime sees it. A model's arena holds every table whole; the program of
/// one rank (`neuroshard.rank`) holds only its device's shards, each a piece
/// of `stats.dim` columns starting at column `columnBegin` of its table, and
/// of its rows [rowBegin, rowEnd) (every row but for a row piece).
/// `stats.rows` is the whole table's, which its lookups' indices range over.
struct TableInfo {
  inputs::TableStats stats; // name, rows, dim, pooling factor, histogram
  bool hasStatistics = false;
  int64_t columnBegin = 0;
  int64_t rowBegin = 0;
  int64_t rowEnd = ::neuroshard::kAllRows;
  int64_t pieceRows() const { return std::min(rowEnd, stats.rows) - rowBegin; }
  /// A device cache of a shard in host memory: the piece that holds the
  /// shard (whose row stride it shares), and its rows; [rowBegin, rowEnd)
  /// and the columns are the shard's. -1 for a piece of weights.
  int64_t cacheOf = -1;
  int64_t cacheRows = 0;
  bool isCache() const { return cacheOf >= 0; }
};

/// What part of its input pair a shard of a lookup that distributes rows
/// pools: the indices of rows [rowBegin, rowEnd) of its table (a row piece
/// reads them bucketized, shifted to its local rows) in bags
/// `firstBag .. firstBag + batch` (a replica reads its device's slice of
/// the batch).
struct ShardReads {
  int64_t rowBegin = 0;
  int64_t rowEnd = ::neuroshard::kAllRows;
  int64_t firstBag = 0;
  /// A row piece of a mean lookup: it sums its part of every bag, and the
  /// reduce-scatter divides the sum of the pieces by the whole bag's
  /// length, so its gradient is the result's divided by that length.
  bool wholeBagMean = false;

  bool allRows() const {
    return rowBegin == 0 && rowEnd == ::neuroshard::kAllRows;
  }
};

/// One lookup op (embedding_bag or fused_embedding_bag) of the entry. Its
/// shards' `table` is the table's ordinal (the model's arena keeps tables
/// whole, in module order) and their `input` the input pair they pool over.
struct LookupInfo {
  std::vector<kernel_abi::ShardDescriptor> shards;
  int64_t batch = 0;
  int64_t width = 0;
  /// The device of a fused lookup; -1 for an unsharded one.
  int64_t device = -1;
  /// Whether an entry reads a row piece (bucketized indices) or a replica's
  /// slice of the batch; then `reads` says, per shard, what it reads.
  bool distributesRows = false;
  std::vector<ShardReads> reads;
  /// Per shard: the piece of its cache when it is in host memory
  /// (TableInfo::isCache), else -1.
  std::vector<int64_t> caches;
};

/// `width` columns of a result, from its column `column`, that are columns
/// `tableColumn ..` of a table looked up with the indices of argument
/// `indicesArg`: where the gradient a run gives them comes from.
struct ResultSource {
  int64_t column = 0;
  int64_t width = 0;
  unsigned indicesArg = 0;
  int64_t tableColumn = 0;
};

/// The entry arguments of one lookup input: indices and offsets.
struct InputPair {
  unsigned indicesArg = 0;
  unsigned offsetsArg = 0;
  /// The table its lookups read; -1 in a rank's program for a pair none of
  /// the rank's lookups reads but whose offsets the rank needs (the mean of
  /// a reduce-scatter divides by them): then `stats` says what it is.
  int64_t table = 0;
  int64_t batch = 0;
  bool indicesAreI32 = false;
  /// The lookup's own statistics (one of several features of a shared
  /// table: `pooling_factor` and `access_hist` on the lookup, or its entry's
  /// of a fused lookup), which its inputs follow instead of the table's.
  std::optional<inputs::TableStats> stats;
};

struct ModelInfo {
  std::string entry;
  unsigned numArguments = 0;
  std::vector<TableInfo> tables;
  std::vector<InputPair> pairs;
  std::vector<LookupInfo> lookups;
  /// Static shapes of the entry's results (all 2-D f32).
  std::vector<std::vector<int64_t>> resultShapes;
  /// The program of one rank: its rank. Arguments no lookup of the rank
  /// reads are allowed (other ranks read them) and are not in `pairs`.
  std::optional<int64_t> rank;
  /// A rank's program built with its backward function
  /// (`--neuroshard-spmd=rank=R backward=true`): that function's name.
  /// Empty otherwise.
  std::string backwardEntry;
};

/// Where the columns of every result of `info`'s entry in `module` (a
/// sharded module in one program) come from: through slices, column and
/// batch concatenations, the exchange and the reduce-scatter of row pieces
/// to the entries of its fused lookups. Also checks that every column of
/// every fused lookup reaches a result, since a backward step gives each a
/// gradient; fails with the reason otherwise.
llvm::Expected<std::vector<std::vector<ResultSource>>>
traceResultSources(mlir::ModuleOp module, const ModelInfo &info);

/// Reads `module` before lowering. `entry` empty means the module's only
/// public function. Errors name the function, argument or op at fault.
/// The statistics `pair`'s inputs follow: its own, else its table's; null if
/// neither has any.
inline const inputs::TableStats *inputStatistics(const ModelInfo &info,
                                                 const InputPair &pair) {
  if (pair.stats || pair.table < 0)
    return pair.stats ? &*pair.stats : nullptr;
  const TableInfo &table = info.tables[pair.table];
  return table.hasStatistics ? &table.stats : nullptr;
}

llvm::Expected<ModelInfo> analyzeModel(mlir::ModuleOp module,
                                       llvm::StringRef entry);

/// Checks that two models can be compared: same tables, arguments and
/// result shapes.
llvm::Error checkComparable(const ModelInfo &a, const ModelInfo &b);

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_MODELANALYSIS_H
