//===- KernelsOnHost.cpp - The GPU kernels rewritten for the host ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Clones the `gpu.func` kernels of the kernels module into host functions
// whose thread, block and grid queries and shuffles call the warp runtime
// (WarpScheduler.cpp), lowers them to LLVM and JIT-compiles them. Only the
// GPU operations the kernels use are rewritten; any other one is refused
// with its name, so that a new kernel feature cannot pass unemulated.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"
#include "neuroshard/Conversion/Passes.h"
#include "neuroshard/Emulation/SIMTEmulator.h"
#include "neuroshard/Execution/JIT.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

#include "WarpRuntime.h"

using namespace mlir;
using namespace ::neuroshard::emulation;
namespace abi = ::neuroshard::kernel_abi;

bool ::neuroshard::emulation::parseKernelDefect(llvm::StringRef text,
                                                KernelDefect &defect) {
  defect = llvm::StringSwitch<KernelDefect>(text)
               .Case("none", KernelDefect::None)
               .Case("drop-index-shuffle", KernelDefect::DropIndexShuffle)
               .Case("drop-warp-max", KernelDefect::DropWarpMax)
               .Case("short-bag", KernelDefect::ShortBag)
               .Case("drop-scan-shuffle", KernelDefect::DropScanShuffle)
               .Default(KernelDefect(-1));
  return defect != KernelDefect(-1);
}

namespace {

/// Makes every shuffle of `mode` in `func` return its own value (valid).
void dropShuffles(func::FuncOp func, gpu::ShuffleMode mode) {
  func.walk([&](gpu::ShuffleOp shuffle) {
    if (shuffle.getMode() != mode)
      return;
    OpBuilder b(shuffle);
    b.setInsertionPointAfter(shuffle);
    Value valid = arith::ConstantIntOp::create(b, shuffle.getLoc(), 1, 1);
    shuffle.getShuffleResult().replaceAllUsesWith(shuffle.getValue());
    shuffle.getValid().replaceAllUsesWith(valid);
  });
}

/// Whether `value` is an index_cast of a load from the offsets argument.
bool isOffsetLoad(Value value, Value offsets) {
  auto cast = value.getDefiningOp<arith::IndexCastOp>();
  if (!cast)
    return false;
  auto load = cast.getIn().getDefiningOp<memref::LoadOp>();
  return load && load.getMemRef() == offsets;
}

/// Shortens every bag by one index: each `end - begin` of two offsets loads
/// becomes max(end - begin - 1, 0).
void shortenBags(func::FuncOp func) {
  Value offsets = func.getArgument(abi::kOffsetsOperand);
  func.walk([&](arith::SubIOp sub) {
    if (!isOffsetLoad(sub.getLhs(), offsets) ||
        !isOffsetLoad(sub.getRhs(), offsets))
      return;
    OpBuilder b(sub);
    b.setInsertionPointAfter(sub);
    Location loc = sub.getLoc();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value shorter = arith::SubIOp::create(
        b, loc, arith::MaxUIOp::create(b, loc, sub.getResult(), one), one);
    sub.getResult().replaceAllUsesExcept(
        shorter, shorter.getDefiningOp()->getOperand(0).getDefiningOp());
  });
}

/// The runtime function that answers `op`, declared in `module` once.
func::FuncOp runtimeFunction(ModuleOp module, StringRef name,
                             FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

/// Rewrites the GPU operations of `func` into runtime calls.
LogicalResult callRuntime(func::FuncOp func, ModuleOp host) {
  MLIRContext *context = host.getContext();
  Type i32 = IntegerType::get(context, 32), i64 = IntegerType::get(context, 64);
  Type index = IndexType::get(context);
  FunctionType queryType = FunctionType::get(context, {i32}, {index});
  FunctionType shuffleType =
      FunctionType::get(context, {i32, i32, i32, i32, i32}, {i64});

  SmallVector<Operation *> gpuOps;
  func.walk([&](Operation *op) {
    if (isa<gpu::GPUDialect>(op->getDialect()))
      gpuOps.push_back(op);
  });
  int32_t site = 0;
  for (Operation *op : gpuOps) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    auto query = [&](StringRef name, gpu::Dimension dimension) {
      Value dim = arith::ConstantIntOp::create(b, loc, i32,
                                               static_cast<int64_t>(dimension));
      auto call = func::CallOp::create(
          b, loc, runtimeFunction(host, name, queryType), ValueRange{dim});
      op->getResult(0).replaceAllUsesWith(call.getResult(0));
      op->erase();
    };
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      query(kThreadIdSymbol, id.getDimension());
    } else if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      query(kBlockIdSymbol, id.getDimension());
    } else if (auto dim = dyn_cast<gpu::BlockDimOp>(op)) {
      query(kBlockDimSymbol, dim.getDimension());
    } else if (auto dim = dyn_cast<gpu::GridDimOp>(op)) {
      query(kGridDimSymbol, dim.getDimension());
    } else if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op)) {
      Type type = shuffle.getValue().getType();
      if (!type.isInteger(32) && !type.isF32())
        return shuffle.emitOpError("cannot be emulated: only 32-bit values "
                                   "are shuffled");
      Value value = shuffle.getValue();
      if (type.isF32())
        value = arith::BitcastOp::create(b, loc, i32, value);
      Value mode = arith::ConstantIntOp::create(
          b, loc, i32, static_cast<int64_t>(shuffle.getMode()));
      Value siteValue = arith::ConstantIntOp::create(b, loc, i32, site++);
      auto call = func::CallOp::create(
          b, loc, runtimeFunction(host, kShuffleSymbol, shuffleType),
          ValueRange{value, shuffle.getOffset(), shuffle.getWidth(), mode,
                     siteValue});
      Value packed = call.getResult(0);
      Value result = arith::TruncIOp::create(b, loc, i32, packed);
      if (type.isF32())
        result = arith::BitcastOp::create(b, loc, type, result);
      Value valid = arith::TruncIOp::create(
          b, loc, b.getI1Type(),
          arith::ShRUIOp::create(
              b, loc, packed, arith::ConstantIntOp::create(b, loc, i64, 32)));
      shuffle.getShuffleResult().replaceAllUsesWith(result);
      shuffle.getValid().replaceAllUsesWith(valid);
      shuffle.erase();
    } else if (isa<gpu::ReturnOp>(op)) {
      func::ReturnOp::create(b, loc);
      op->erase();
    } else {
      return op->emitOpError("has no emulation; the warp runtime supports "
                             "thread/block/grid queries and shuffles");
    }
  }
  return success();
}

/// Rewrites the kernels' float atomics into counting runtime calls: the
/// vector reduction of the backward kernel (its one inline PTX statement)
/// becomes one call on four floats, every `memref.atomic_rmw addf` one call
/// on its element's address. Any other inline assembly is refused.
LogicalResult countFloatAtomics(func::FuncOp func, ModuleOp host) {
  MLIRContext *context = host.getContext();
  Type i64 = IntegerType::get(context, 64), f32 = Float32Type::get(context);
  SmallVector<LLVM::InlineAsmOp> statements;
  func.walk([&](LLVM::InlineAsmOp op) { statements.push_back(op); });
  for (LLVM::InlineAsmOp op : statements) {
    if (op.getAsmString() != mlir::neuroshard::kVectorAtomicAddAsm ||
        op.getConstraints() != mlir::neuroshard::kVectorAtomicAddConstraints ||
        op.getNumResults() != 0 || op.getNumOperands() != 5)
      return op.emitOpError("has no emulation: '")
             << op.getAsmString()
             << "' is not the vector atomic add of the kernels";
    OpBuilder b(op);
    auto type = FunctionType::get(context, {i64, f32, f32, f32, f32}, {});
    func::CallOp::create(b, op.getLoc(),
                         runtimeFunction(host, kVectorAtomicAddSymbol, type),
                         op.getOperands());
    op.erase();
  }

  SmallVector<memref::AtomicRMWOp> adds;
  func.walk([&](memref::AtomicRMWOp op) {
    if (op.getKind() == arith::AtomicRMWKind::addf)
      adds.push_back(op);
  });
  for (memref::AtomicRMWOp op : adds) {
    if (!op.getValue().getType().isF32() || op.getIndices().size() != 1 ||
        !op.getResult().use_empty())
      return op.emitOpError("cannot be emulated: only float adds into a 1-D "
                            "memref whose old value is unused are counted");
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value address = mlir::neuroshard::floatElementAddress(
        b, loc, op.getMemref(), op.getIndices()[0]);
    auto type = FunctionType::get(context, {i64, f32}, {});
    func::CallOp::create(
        b, loc, runtimeFunction(host, kAtomicAddSymbol, type),
        ValueRange{arith::IndexCastOp::create(b, loc, i64, address),
                   op.getValue()});
    op.erase();
  }
  return success();
}

/// The host module of the kernels in `source`, or a null one after
/// reporting why.
OwningOpRef<ModuleOp> buildHostModule(ModuleOp source, KernelDefect defect,
                                      llvm::StringMap<int64_t> &maxThreads) {
  auto kernels = dyn_cast_or_null<gpu::GPUModuleOp>(
      SymbolTable::lookupSymbolIn(source, abi::kKernelModuleName));
  if (!kernels) {
    emitError(source.getLoc())
        << "no gpu.module '" << abi::kKernelModuleName
        << "' to emulate; generate it with --neuroshard-to-cuda";
    return nullptr;
  }
  OwningOpRef<ModuleOp> host = ModuleOp::create(source.getLoc());
  OpBuilder b(source.getContext());
  b.setInsertionPointToEnd(host->getBody());
  for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
    if (!kernel.isKernel())
      continue;
    if (!kernel.getWorkgroupAttributions().empty() ||
        !kernel.getPrivateAttributions().empty()) {
      kernel.emitOpError("cannot be emulated: it has memory attributions");
      return nullptr;
    }
    if (auto bound = kernel->getAttrOfType<DenseI32ArrayAttr>(
            NVVM::NVVMDialect::getMaxntidAttrName())) {
      int64_t threads = 1;
      for (int32_t extent : bound.asArrayRef())
        threads *= extent;
      maxThreads[kernel.getName()] = threads;
    }
    auto func = func::FuncOp::create(b, kernel.getLoc(), kernel.getName(),
                                     kernel.getFunctionType());
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  b.getUnitAttr());
    IRMapping mapping;
    kernel.getBody().cloneInto(&func.getBody(), mapping);
    switch (defect) {
    case KernelDefect::None:
      break;
    case KernelDefect::DropIndexShuffle:
      dropShuffles(func, gpu::ShuffleMode::IDX);
      break;
    case KernelDefect::DropWarpMax:
      dropShuffles(func, gpu::ShuffleMode::XOR);
      break;
    case KernelDefect::ShortBag:
      shortenBags(func);
      break;
    case KernelDefect::DropScanShuffle:
      dropShuffles(func, gpu::ShuffleMode::UP);
      break;
    }
    if (failed(callRuntime(func, *host)) ||
        failed(countFloatAtomics(func, *host)))
      return nullptr;
  }
  return host;
}

} // namespace

EmulatedKernels::~EmulatedKernels() = default;

llvm::Expected<std::unique_ptr<EmulatedKernels>>
EmulatedKernels::compile(ModuleOp source, KernelDefect defect) {
  MLIRContext *context = source.getContext();
  context->loadDialect<func::FuncDialect, arith::ArithDialect>();
  execution::DiagnosticCollector diagnostics(context);
  llvm::StringMap<int64_t> maxThreads;
  OwningOpRef<ModuleOp> host = buildHostModule(source, defect, maxThreads);
  if (!host)
    return llvm::createStringError("cannot emulate the kernels:\n" +
                                   diagnostics.messages);
  PassManager pm(context);
  // The kernels divide with ceildivui, which has no LLVM form; expanding
  // every arith op would also turn the CPU kernels' umax and umin into
  // compares and selects, so only this pipeline does it.
  pm.addPass(arith::createArithExpandOpsPass());
  mlir::neuroshard::addLowerToLLVMPasses(pm);
  if (failed(pm.run(*host)))
    return llvm::createStringError(
        "lowering the emulated kernels to LLVM failed:\n" +
        diagnostics.messages);

  execution::HostCompileOptions options;
  options.hostSymbols = runtimeSymbols();
  auto engine = execution::compileForHost(*host, options);
  if (!engine)
    return engine.takeError();
  std::unique_ptr<EmulatedKernels> kernels(new EmulatedKernels());
  kernels->engine = std::move(*engine);
  kernels->maxThreads = std::move(maxThreads);
  return kernels;
}

llvm::Expected<std::unique_ptr<EmulatedKernels>>
EmulatedKernels::compileGenerated(MLIRContext &context, KernelDefect defect) {
  context.loadDialect<func::FuncDialect, gpu::GPUDialect, NVVM::NVVMDialect,
                      arith::ArithDialect, memref::MemRefDialect,
                      scf::SCFDialect, vector::VectorDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  execution::DiagnosticCollector diagnostics(&context);
  PassManager pm(&context);
  mlir::neuroshard::ConvertNeuroShardToCUDAOptions options;
  options.host = false;
  pm.addPass(mlir::neuroshard::createConvertNeuroShardToCUDA(options));
  if (failed(pm.run(*module)))
    return llvm::createStringError("generating the kernels failed:\n" +
                                   diagnostics.messages);
  return compile(*module, defect);
}

llvm::Error EmulatedKernels::launchPacked(llvm::StringRef name,
                                          void **arguments,
                                          const LaunchConfig &config,
                                          LaunchStats *stats) {
  auto bound = maxThreads.find(name);
  if (bound != maxThreads.end() && config.blockX > bound->second)
    return llvm::createStringError(
        "invalid launch: a block of " + std::to_string(config.blockX) +
        " threads exceeds the launch bound of " + name.str() + " (.maxntid " +
        std::to_string(bound->second) + ")");
  auto kernel = execution::lookupPacked(*engine, name);
  if (!kernel)
    return kernel.takeError();
  return runGrid(*kernel, arguments, config, stats);
}
