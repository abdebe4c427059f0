//===- neuroshard-cuda-emulate.cpp - Run the CUDA kernels on the CPU ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Executes the CUDA kernels that `--neuroshard-to-cuda` generates on the
// CPU under warp emulation (lib/Emulation) over two sweeps: shard sets and
// launch shapes, checked against the generic CPU kernels, and
// bucketizations, checked against neuroshard.bucketize's definition. Exit
// status 0 when all agree, 1 otherwise with the first difference or broken
// rule.
//
//   neuroshard-cuda-emulate [--cases=N] [--seed=S]
//                           [--sweep=all|bags|bucketize] [kernels.mlir]
//   neuroshard-cuda-emulate --manifest=FILE [--max-rows=R] [--batch-size=B]
//                           [kernels.mlir]
//
// Without a file the kernels are generated in process; a file holds the
// output of `neuroshard-opt --neuroshard-to-cuda` (its gpu.module is
// emulated, its host code ignored). `--manifest` runs the launches of a
// manifest from --neuroshard-export-cuda instead of the sweeps: the shard
// sets, batch, block size and generated inputs of a real model, with its
// tables cut to their first R rows.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Emulation/KernelSweep.h"
#include "neuroshard/Emulation/SIMTEmulator.h"
#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/LaunchManifest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
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
                   "(none, drop-index-shuffle, drop-warp-max, short-bag, "
                   "drop-scan-shuffle)"),
    llvm::cl::init("none"));
static llvm::cl::opt<std::string> sweep(
    "sweep",
    llvm::cl::desc("Kernels the sweep runs: all, bags (forward and backward) "
                   "or bucketize"),
    llvm::cl::init("all"));
static llvm::cl::opt<std::string> manifestFile(
    "manifest",
    llvm::cl::desc("Emulate the launches of this manifest (from "
                   "--neuroshard-export-cuda) instead of the sweep"),
    llvm::cl::init(""));
static llvm::cl::opt<int64_t> maxRows(
    "max-rows",
    llvm::cl::desc("With --manifest: rows kept of each table (indices are "
                   "drawn among them)"),
    llvm::cl::init(4096));
static llvm::cl::opt<int64_t> batchSize(
    "batch-size",
    llvm::cl::desc("With --manifest: bags per launch (0: the manifest's)"),
    llvm::cl::init(0));
static llvm::cl::opt<bool> verbose("verbose",
                                   llvm::cl::desc("Print every case"),
                                   llvm::cl::init(false));

namespace abi = ::neuroshard::kernel_abi;
namespace launch_manifest = ::neuroshard::launch_manifest;

/// Emulates every launch of the manifest at `path` against the CPU kernels.
/// Tables are stored whole (their first `rows` rows), so that the shards of
/// a split table read column ranges of one table, as on a device.
static llvm::Error emulateManifest(emu::EmulatedKernels &emulated,
                                   ::neuroshard::execution::CPUKernels &cpu,
                                   const std::string &path, int64_t rows,
                                   int64_t batch, emu::SweepTotals &totals) {
  launch_manifest::Manifest manifest;
  std::string error;
  if (!launch_manifest::loadManifest(path, manifest, error))
    return llvm::createStringError(error);
  if (batch > 0)
    manifest.batchSize = batch;
  launch_manifest::LaunchOptions options;
  options.layout = launch_manifest::WeightLayout::Tables;
  options.maxRows = rows;
  for (size_t k = 0; k < manifest.launches.size(); ++k) {
    const launch_manifest::LaunchSpec &launch = manifest.launches[k];
    launch_manifest::LaunchBuffers buffers;
    if (!launch_manifest::buildLaunch(manifest, k, options, buffers, error))
      return llvm::createStringError(error);
    int64_t numShards = buffers.packed.layout.numShards();
    int64_t bags = buffers.batch;
    size_t cached = buffers.caches.size();
    ::neuroshard::execution::PreparedSet set = emu::prepareSet(
        std::move(buffers.packed), std::move(buffers.layout), buffers.arenaSize,
        bags, !launch.index64, manifest.seed + k);
    abi::LaunchGeometry geometry =
        abi::launchGeometry(numShards, bags, manifest.threadsPerBlock);
    emu::LaunchConfig config;
    config.gridX = std::max<int64_t>(geometry.gridX, 1);
    config.gridY = std::max<int64_t>(geometry.gridY, 1);
    config.blockX = geometry.blockX;
    config.seed = seed + k;
    emu::SweepTotals launchTotals;
    if (llvm::Error error = emu::compareWithCPU(
            emulated, cpu, set, config, float(manifest.lr), launchTotals))
      return llvm::createStringError("launch " + std::to_string(k) + ": " +
                                     llvm::toString(std::move(error)));
    ++launchTotals.cases;
    totals.add(launchTotals);
    llvm::outs() << "launch " << k << " (device " << launch.device << ", "
                 << (launch.index64 ? "i64" : "i32") << "): " << numShards
                 << " shards, width " << set.width << ", " << bags << " bags, "
                 << set.indices.size() << " indices, grid " << config.gridX
                 << " x " << config.gridY << ", block " << config.blockX
                 << ": agrees";
    // The lookup kernels are checked; a cached shard's rows are read from
    // the arena, without a fetch (RowCacheKernelTest checks the fetch).
    if (cached)
      llvm::outs() << " (" << cached
                   << " cached shard(s) read from device memory)";
    llvm::outs() << "; backward " << launchTotals.atomics
                 << " float atomics, at most " << launchTotals.hottestAtomics
                 << " on one address\n";
  }
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "NeuroShard's CUDA kernels executed on the CPU with warp semantics and "
      "compared with the CPU kernels\n");
  emu::KernelDefect kernelDefect;
  if (!emu::parseKernelDefect(defect, kernelDefect)) {
    llvm::errs() << "error: unknown --inject-defect '" << defect
                 << "': expected none, drop-index-shuffle, drop-warp-max, "
                    "short-bag or drop-scan-shuffle\n";
    return 2;
  }
  if (sweep != "all" && sweep != "bags" && sweep != "bucketize") {
    llvm::errs() << "error: unknown --sweep '" << sweep
                 << "': expected all, bags or bucketize\n";
    return 2;
  }
  if (threadsPerBlock < 0 || cases < 0 || batchSize < 0 || maxRows < 1) {
    llvm::errs() << "error: --threads-per-block, --cases and --batch-size "
                    "take a non-negative number, --max-rows a positive one\n";
    return 2;
  }

  auto start = std::chrono::steady_clock::now();
  // A file of kernels may be a whole model lowered with
  // --neuroshard-to-cuda: its host code and module attributes must parse
  // too, though only the kernels module is emulated.
  DialectRegistry registry;
  registry.insert<mlir::neuroshard::NeuroShardDialect>();
  registerAllDialects(registry);
  MLIRContext context(registry);
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
  auto reference = ::neuroshard::execution::CPUKernels::compile();
  if (!reference) {
    llvm::errs() << "error: " << llvm::toString(reference.takeError()) << "\n";
    return 2;
  }

  emu::SweepOptions options;
  options.cases = cases;
  options.seed = seed;
  options.threadsPerBlock = threadsPerBlock;
  options.verbose = verbose;
  emu::SweepTotals totals, bucketizeTotals;
  llvm::Error error = llvm::Error::success();
  if (!manifestFile.empty())
    error = emulateManifest(**emulated, **reference, manifestFile, maxRows,
                            batchSize, totals);
  if (manifestFile.empty() && sweep != "bucketize")
    error = emu::runKernelSweep(**emulated, **reference, options, llvm::outs(),
                                totals);
  if (!error && manifestFile.empty() && sweep != "bags") {
    error = emu::runBucketizeSweep(**emulated, options, llvm::outs(),
                                   bucketizeTotals);
    if (!error)
      llvm::outs() << "bucketize: " << bucketizeTotals.cases
                   << " cases, emulated count, scan and scatter agree with "
                      "neuroshard.bucketize ("
                   << bucketizeTotals.launches << " launches, "
                   << bucketizeTotals.shuffles << " warp shuffles, "
                   << bucketizeTotals.elements << " elements compared)\n";
    totals.cases += bucketizeTotals.cases;
  }
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
  if (sweep == "bucketize" && manifestFile.empty()) {
    llvm::outs() << "PASSED: " << totals.cases << " bucketize cases ("
                 << llvm::format("%.1f", seconds) << " s)\n";
    return 0;
  }
  llvm::outs() << "PASSED: " << totals.cases - bucketizeTotals.cases
               << (manifestFile.empty() ? " cases" : " manifest launches")
               << ", emulated forward and backward agree with the CPU "
                  "kernels ("
               << totals.launches << " launches, " << totals.shuffles
               << " warp shuffles, " << totals.atomics << " float atomics, "
               << totals.elements << " elements compared, "
               << llvm::format("%.1f", seconds) << " s)\n";
  return 0;
}
