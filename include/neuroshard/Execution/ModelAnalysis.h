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

#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace neuroshard {
namespace execution {

/// A table as the runtime sees it.
struct TableInfo {
  inputs::TableStats stats; // name, rows, dim, pooling factor, histogram
  bool hasStatistics = false;
};

/// One lookup op (embedding_bag or fused_embedding_bag) of the entry. Its
/// shards' `table` is the table's ordinal (the model's arena keeps tables
/// whole, in module order) and their `input` the input pair they pool over.
struct LookupInfo {
  std::vector<kernel_abi::ShardDescriptor> shards;
  int64_t batch = 0;
  int64_t width = 0;
};

/// The entry arguments of one lookup input: indices and offsets.
struct InputPair {
  unsigned indicesArg = 0;
  unsigned offsetsArg = 0;
  int64_t table = 0;
  int64_t batch = 0;
  bool indicesAreI32 = false;
};

struct ModelInfo {
  std::string entry;
  unsigned numArguments = 0;
  std::vector<TableInfo> tables;
  std::vector<InputPair> pairs;
  std::vector<LookupInfo> lookups;
  /// Static shapes of the entry's results (all 2-D f32).
  std::vector<std::vector<int64_t>> resultShapes;
};

/// Reads `module` before lowering. `entry` empty means the module's only
/// public function. Errors name the function, argument or op at fault.
llvm::Expected<ModelInfo> analyzeModel(mlir::ModuleOp module,
                                       llvm::StringRef entry);

/// Checks that two models can be compared: same tables, arguments and
/// result shapes.
llvm::Error checkComparable(const ModelInfo &a, const ModelInfo &b);

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_MODELANALYSIS_H
