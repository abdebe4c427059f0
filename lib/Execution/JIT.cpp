//===- JIT.cpp - Lowering and JIT compilation of NeuroShard modules -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/JIT.h"
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"
#include "neuroshard/Conversion/Passes.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::neuroshard;
using namespace ::neuroshard::execution;
namespace ex = ::neuroshard::execution;

DiagnosticCollector::DiagnosticCollector(MLIRContext *context)
    : handler(context, [this](Diagnostic &diag) {
        llvm::raw_string_ostream os(messages);
        if (!messages.empty())
          os << "\n";
        os << diag.getLocation() << ": " << diag;
        return success();
      }) {}

llvm::Expected<std::unique_ptr<ExecutionEngine>>
ex::lowerAndCompile(ModuleOp module, const CompileOptions &compileOptions) {
  MLIRContext *ctx = module.getContext();
  bool cuda = compileOptions.target == Target::CUDA;
  if (cuda) {
    DialectRegistry registry;
    registerAllGPUToLLVMIRTranslations(registry);
    ctx->appendDialectRegistry(registry);
  }
  {
    DiagnosticCollector diagnostics(ctx);
    PassManager pm(ctx);
    if (cuda) {
      CUDAPipelineOptions cudaOptions;
      cudaOptions.chip = compileOptions.cudaChip;
      std::string why = buildCUDAPipeline(pm, cudaOptions);
      if (!why.empty())
        return llvm::createStringError("cannot lower for CUDA: " + why);
    } else {
      buildNeuroShardToCPUPipeline(pm);
    }
    if (failed(pm.run(module)))
      return llvm::createStringError(llvm::Twine("lowering to ") +
                                     (cuda ? "CUDA" : "the CPU") +
                                     " failed:\n" + diagnostics.messages);
  }
  HostCompileOptions hostOptions;
  hostOptions.hostSymbols = compileOptions.hostSymbols;
  if (cuda) {
    if (!llvm::sys::fs::exists(compileOptions.cudaRuntimeLibrary))
      return llvm::createStringError("NeuroShard's CUDA runtime library '" +
                                     compileOptions.cudaRuntimeLibrary +
                                     "' does not exist");
    hostOptions.sharedLibraries.push_back(compileOptions.cudaRuntimeLibrary);
  }
  return compileForHost(module, hostOptions);
}

llvm::Expected<std::unique_ptr<ExecutionEngine>>
ex::compileForHost(ModuleOp module, const HostCompileOptions &hostOptions) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  MLIRContext *ctx = module.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);

  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto machine = builder->createTargetMachine();
  if (!machine)
    return machine.takeError();
  // The options hold a function_ref: the transformer must outlive create().
  std::function<llvm::Error(llvm::Module *)> transformer =
      makeOptimizingTransformer(3, 0, machine->get());
  ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  llvm::SmallVector<llvm::StringRef> libraries(
      hostOptions.sharedLibraries.begin(), hostOptions.sharedLibraries.end());
  options.sharedLibPaths = libraries;
  DiagnosticCollector diagnostics(ctx);
  auto engine = ExecutionEngine::create(module, options, std::move(*machine));
  if (!engine)
    return llvm::joinErrors(engine.takeError(),
                            llvm::createStringError(diagnostics.messages));
  if (!hostOptions.hostSymbols.empty())
    (*engine)->registerSymbols([&](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap symbols;
      for (const auto &[name, address] : hostOptions.hostSymbols)
        symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                   llvm::JITSymbolFlags::Exported};
      return symbols;
    });
  return std::move(*engine);
}

llvm::Expected<PackedFunction> ex::lookupPacked(ExecutionEngine &engine,
                                                llvm::StringRef name) {
  return engine.lookupPacked((llvm::Twine("_mlir_ciface_") + name).str());
}

MemRef2D ex::memref2D(float *data, int64_t rows, int64_t cols) {
  MemRef2D d;
  d.basePtr = d.data = data;
  d.offset = 0;
  d.sizes[0] = rows;
  d.sizes[1] = cols;
  d.strides[0] = cols;
  d.strides[1] = 1;
  return d;
}
