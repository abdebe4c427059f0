//===- neuroshard-cuda-emulate.cpp - Run the CUDA kernels on the CPU ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Executes the CUDA kernels that `--neuroshard-to-cuda` generates on the
// CPU under warp emulation (lib/Emulation) over a sweep of shard sets and
// launch shapes, and checks every result against the generic CPU kernels.
// Exit status 0 when all agree, 1 otherwise with the first difference or
// broken rule.
//
//   neuroshard-cuda-emulate [--cases=N] [--seed=S] [kernels.mlir]
//
// Without a file the kernels are generated in process; a file holds the
// output of `neuroshard-opt --neuroshard-to-cuda` (its gpu.module is
// emulated, its host code ignored).
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Emulation/KernelSweep.h"
#include "neuroshard/Emulation/SIMTEmulator.h"
#include "neuroshard/Execution/CPUKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
namespace emu = ::neuroshard::emulation;

static llvm::cl::opt<std::string>
    kernelsFile(llvm::cl::Positional,
                llvm::cl::desc("[module with the kernels' gpu.module]"),
                llvm::cl::init(""));
static llvm::cl::opt<int64_t>
    cases("cases", llvm::cl::desc("Shard sets to run"), llvm::cl::init(200));
static llvm::cl::opt<uint64_t>
    seed("seed", llvm::cl::desc("Seed of the cases and of the block order"),
         llvm::cl::init(1));
static llvm::cl::opt<int64_t> threadsPerBlock(
    "threads-per-block",
    llvm::cl::desc("Launch every case with this block size (0: the case's)"),
    llvm::cl::init(0));
static llvm::cl::opt<std::string> defect(
    "inject-defect",
    llvm::cl::desc("Test only: break the kernels before emulating them "
                   "(none, drop-index-shuffle, drop-warp-max, short-bag)"),
    llvm::cl::init("none"));
static llvm::cl::opt<bool> verbose("verbose",
                                   llvm::cl::desc("Print every case"),
                                   llvm::cl::init(false));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "NeuroShard's CUDA kernels executed on the CPU with warp semantics and "
      "compared with the CPU kernels\n");
  emu::KernelDefect kernelDefect;
  if (!emu::parseKernelDefect(defect, kernelDefect)) {
    llvm::errs() << "error: unknown --inject-defect '" << defect
                 << "': expected none, drop-index-shuffle, drop-warp-max or "
                    "short-bag\n";
    return 2;
  }
  if (threadsPerBlock < 0 || cases < 0) {
    llvm::errs() << "error: --threads-per-block and --cases take a "
                    "non-negative number\n";
    return 2;
  }

  auto start = std::chrono::steady_clock::now();
  MLIRContext context;
  context.loadDialect<func::FuncDialect, gpu::GPUDialect, NVVM::NVVMDialect,
                      arith::ArithDialect, memref::MemRefDialect,
                      scf::SCFDialect, vector::VectorDialect>();
  OwningOpRef<ModuleOp> source;
  auto compile =
      [&]() -> llvm::Expected<std::unique_ptr<emu::EmulatedKernels>> {
    if (kernelsFile.empty())
      return emu::EmulatedKernels::compileGenerated(context, kernelDefect);
    llvm::SourceMgr sources;
    source =
        parseSourceFile<ModuleOp>(kernelsFile, sources, ParserConfig(&context));
    if (!source)
      return llvm::createStringError("cannot read the kernels from '" +
                                     kernelsFile + "'");
    return emu::EmulatedKernels::compile(*source, kernelDefect);
  };
  auto emulated = compile();
  if (!emulated) {
    llvm::errs() << "error: " << llvm::toString(emulated.takeError()) << "\n";
    return 2;
  }
  auto reference = neuroshard::execution::CPUKernels::compile();
  if (!reference) {
    llvm::errs() << "error: " << llvm::toString(reference.takeError()) << "\n";
    return 2;
  }

  emu::SweepOptions options;
  options.cases = cases;
  options.seed = seed;
  options.threadsPerBlock = threadsPerBlock;
  options.verbose = verbose;
  emu::SweepTotals totals;
  llvm::Error error = emu::runKernelSweep(**emulated, **reference, options,
                                          llvm::outs(), totals);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (error) {
    llvm::outs().flush();
    llvm::errs() << "FAILED after " << totals.cases
                 << " matching cases: " << llvm::toString(std::move(error))
                 << "\n";
    return 1;
  }
  llvm::outs() << "PASSED: " << totals.cases
               << " cases, emulated forward and backward agree with the CPU "
                  "kernels ("
               << totals.launches << " launches, " << totals.shuffles
               << " warp shuffles, " << totals.elements
               << " elements compared, " << llvm::format("%.1f", seconds)
               << " s)\n";
  return 0;
}
