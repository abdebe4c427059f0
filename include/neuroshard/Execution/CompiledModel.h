//===- CompiledModel.h - A NeuroShard module ready to run -------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What `neuroshard-run` executes: a module lowered for the CPU or a CUDA GPU
// and JIT-compiled (JIT.h), run forward through its entry function and
// backward through the generic backward-SGD kernel, once per lookup.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_COMPILEDMODEL_H
#define NEUROSHARD_EXECUTION_COMPILEDMODEL_H

#include "neuroshard/Execution/JIT.h"
#include "neuroshard/Execution/ModelAnalysis.h"
#include "neuroshard/Execution/ModelData.h"

#include "neuroshard/Runtime/RowCache.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace neuroshard {
namespace execution {

/// A module lowered for the CPU or a CUDA GPU and JIT-compiled. On CUDA,
/// every kernel call copies its buffers to the device and its result back,
/// so a run's time includes those copies.
class CompiledModel {
public:
  ~CompiledModel();
  /// Lowers a clone of `module` (which `info` describes) and compiles it.
  static llvm::Expected<std::unique_ptr<CompiledModel>>
  compile(mlir::ModuleOp module, const ModelInfo &info,
          const CompileOptions &options = {});

  /// Runs the entry function; `outputs[i]` receives result i (row-major).
  llvm::Error forward(ModelData &data,
                      std::vector<std::vector<float>> &outputs);
  /// Runs the backward-SGD kernel of every lookup with its gradient.
  llvm::Error backward(ModelData &data, float learningRate);
  /// Runs the module's own backward function (ModelInfo::backwardEntry):
  /// `resultGradients[i]` is the gradient of result i (row-major), and the
  /// function updates the weights with SGD.
  llvm::Error backwardEntry(ModelData &data,
                            std::vector<std::vector<float>> &resultGradients,
                            float learningRate);

  /// Shards in host memory are read through device caches of their rows
  /// (ArenaCaches.h): writes every row a step updated in a cache back to
  /// its table, before the weights are read.
  void flushCaches();
  /// What each cache did, named by its shard; empty without caches.
  std::vector<std::pair<std::string, runtime::RowCacheStats>>
  cacheStats() const;

private:
  CompiledModel() = default;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_COMPILEDMODEL_H
