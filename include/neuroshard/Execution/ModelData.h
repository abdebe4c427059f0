//===- ModelData.h - The inputs and weights of a run ------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What a run feeds a model that ModelAnalysis.h describes: the weight arena
// (tables in module order, optionally capped to a number of rows), the
// generated or given indices and offsets of every lookup input, and output
// gradients, all deterministic in a seed.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_MODELDATA_H
#define NEUROSHARD_EXECUTION_MODELDATA_H

#include "neuroshard/Execution/ModelAnalysis.h"
#include "neuroshard/Runtime/Arena.h"
#include "neuroshard/Runtime/MemoryBudget.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace neuroshard {
namespace execution {

/// The data of a run.
struct ModelData {
  /// Rows allocated per table or piece of one (its rows below the cap).
  std::vector<int64_t> allocatedRows;
  /// Per input pair: the rows its indices range over (its whole table's,
  /// or the cap), whichever piece of the table the arena holds.
  std::vector<int64_t> pairRows;
  /// Where each table starts in `weights`: in order, each base aligned to
  /// kernel_abi::kArenaAlignment floats (the gaps hold zeros).
  std::vector<int64_t> layout;
  runtime::WeightVector weights;
  /// The elements of `weights` up to the end of the last table: the device
  /// caches of shards in host memory come after (zeros until a run fills
  /// them), so that two modules with the same tables compare this far.
  int64_t tableElements = 0;
  /// Per input pair: generated indices and offsets (i64), and i32 copies
  /// for pairs whose arguments are i32.
  std::vector<inputs::LookupInputs> inputs;
  std::vector<std::vector<int32_t>> indices32, offsets32;
  /// Per lookup: its output gradient (batch x width, row-major).
  std::vector<std::vector<float>> gradients;
  /// Changed by whoever replaces the inputs, so that a model that packed
  /// them for its kernels packs them again.
  uint64_t inputsVersion = 0;
};

struct DataOptions {
  uint64_t seed = 0;
  /// Cap on the rows allocated per table (0: no cap).
  int64_t maxRows = 0;
  /// Refuse to allocate a weight arena larger than this.
  double maxWeightBytes = double(uint64_t(16) << 30);
  /// Refuse a run whose data needs more than this (0: the memory available,
  /// MemoryBudget.h).
  double memoryLimitBytes = 0.0;
};

/// Writes the output gradient of `lookup` (one of `info`'s) for its bags
/// [firstBag, firstBag + bags) into `out`, one row per bag with row stride
/// `rowStride`, the lookup's columns from column 0. Column c of a table in
/// bag b gets the same value whichever lookup or shard produces it, so a
/// model and its sharded form (or one rank's part of it) get the same
/// gradients. A replica's bag b is bag `firstBag + b` of its slice of the
/// batch; a row piece of a mean lookup gets the gradient divided by the
/// whole bag's length, read from `pairInputs` (the inputs of every pair).
void fillLookupGradient(const ModelInfo &info, const LookupInfo &lookup,
                        uint64_t seed, int64_t firstBag, int64_t bags,
                        float *out, int64_t rowStride,
                        llvm::ArrayRef<inputs::LookupInputs> pairInputs = {});

/// The output gradient a run gives column `column` of a table in bag `bag`
/// of the lookup whose indices are argument `indicesArg` (what
/// fillLookupGradient writes, before a mean row piece's division).
float lookupGradientValue(uint64_t seed, unsigned indicesArg, int64_t bag,
                          int64_t column);

/// What generateData would allocate for `info`, part by part: weights,
/// indices, offsets, outputs (with the output gradients). Index counts are
/// the expected ones (batch x pooling factor).
MemoryNeed estimateMemory(const ModelInfo &info, const DataOptions &options);

/// Generates weights, inputs and gradients for `info` deterministically,
/// after refusing data larger than the options allow.
llvm::Expected<ModelData> generateData(const ModelInfo &info,
                                       const DataOptions &options);

/// Draws `data`'s lookup inputs and output gradients anew with
/// `options.seed` (what generateData draws after the weights), keeping its
/// weights, and changes its inputsVersion.
llvm::Error drawInputs(const ModelInfo &info, const DataOptions &options,
                       ModelData &data);

/// Reads the lookup inputs a user gives in place of generated ones
/// (`neuroshard-run --inputs`): a JSON object that maps entry argument
/// numbers (as strings) to integer arrays. Errors are readJSONFile's and
/// "PATH: expected an object of argument arrays".
llvm::Expected<llvm::json::Object> readInputsFile(llvm::StringRef path);

/// Replaces the generated lookup inputs with given ones: `arguments` maps
/// entry argument numbers (as strings) to integer arrays, and must give both
/// the indices and the offsets of every lookup input. Offsets are checked
/// (B + 1 entries from 0, non-decreasing, ending at the number of indices);
/// indices are not (see findOutOfRangeIndex).
llvm::Error replaceInputs(const ModelInfo &info, ModelData &data,
                          const llvm::json::Object &arguments);

/// The first index outside its table's allocated rows, if any: "table 't3'
/// (argument #4), bag 17, position 40: index 5003 is outside [0, 5000)",
/// where the position counts the argument's elements from 0.
std::optional<std::string> findOutOfRangeIndex(const ModelInfo &info,
                                               const ModelData &data);

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_MODELDATA_H
