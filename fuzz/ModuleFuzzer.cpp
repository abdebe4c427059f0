//===- ModuleFuzzer.cpp - Fuzz the IR parser, verifier and sharding -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Parses arbitrary bytes as MLIR with the NeuroShard, func and tensor
// dialects, verifies the result and runs `--neuroshard-shard` with the
// analytical cost model on every module that verifies, or
// `--neuroshard-materialize` on one whose tables already have shards. Inputs
// are split on `// -----` as `-split-input-file` does, so that the lit
// tests' files seed one case per chunk. Diagnostics are expected and dropped:
// only crashes, hangs and memory errors are findings.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/ToolUtilities.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;
using namespace mlir::neuroshard;

// The analytical cost model needs no files; small search options keep one
// input to milliseconds.
static ShardOptions shardOptions() {
  ShardOptions options;
  options.costModel = "analytical";
  options.beamWidth = 2;
  options.candidates = 2;
  options.maxSteps = 2;
  options.gridSteps = 2;
  return options;
}

static void parseVerifyAndShard(std::unique_ptr<llvm::MemoryBuffer> chunk,
                                MLIRContext &context) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module || failed(verify(*module)))
    return;

  PassManager pm(&context);
  bool annotated = llvm::any_of(module->getOps<TableOp>(), [](TableOp table) {
    return table.getShardsAttr() != nullptr;
  });
  if (annotated)
    pm.addPass(createMaterialize());
  else
    pm.addPass(createShard(shardOptions()));
  (void)pm.run(*module);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    r->insert<NeuroShardDialect, func::FuncDialect, tensor::TensorDialect>();
    return r;
  }();

  // One context per input (shared by its chunks) so that nothing one input
  // interns outlives it; threads would only add start-up time.
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });

  // The lexer relies on a terminating null, which libFuzzer's data lacks.
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  (void)splitAndProcessBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "input"),
      [&](std::unique_ptr<llvm::MemoryBuffer> chunk, llvm::raw_ostream &) {
        parseVerifyAndShard(std::move(chunk), context);
        return success();
      },
      llvm::nulls());
  return 0;
}
