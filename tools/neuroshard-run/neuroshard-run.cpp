//===- neuroshard-run.cpp - Execute NeuroShard modules --------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Compiles a NeuroShard module (sharded or not) for the CPU or a CUDA GPU,
// generates its lookup inputs and weights deterministically from the tables'
// statistics, runs the entry function (and, with --backward, the backward-SGD
// kernels), and prints a checksum of every result. --compare runs a second
// module on the same data and reports the largest relative difference; --iters
// times the run. Exits 1 with a one-line reason on bad input or a mismatch.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Execution/CompiledModel.h"
#include "neuroshard/Support/Statistics.h"
#ifdef NEUROSHARD_HAS_MPI
#include "Distributed.h"
#endif
#include "Report.h"
#ifdef NEUROSHARD_CUDA_RUNTIME_LIBRARY
#include "neuroshard/Runtime/Cuda/CudaRuntime.h"
#include "neuroshard/Support/Version.h"
#endif

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using namespace mlir;
using namespace ::neuroshard::execution;
using namespace ::neuroshard::runtime;

static cl::OptionCategory category("neuroshard-run options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<module.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    entry("entry",
          cl::desc("Function to run (default: the only public function)"),
          cl::cat(category));
static cl::opt<std::string> device("device",
                                   cl::desc("Where to run: cpu or cuda"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    chip("chip", cl::desc("--device cuda: the GPU architecture (e.g. sm_90)"),
         cl::init("sm_90"), cl::cat(category));
static cl::opt<int64_t>
    batchSize("batch-size",
              cl::desc("Expected batch size (the module's types fix it; a "
                       "different value is an error)"),
              cl::init(0), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of inputs and weights"),
                              cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    maxRows("max-rows",
            cl::desc("Allocate at most this many rows per table and draw "
                     "indices below it (0: every row)"),
            cl::init(0), cl::cat(category));
static cl::opt<double> maxWeightGB(
    "max-weight-gb",
    cl::desc("Refuse weight arenas larger than this (GB, 2^30 bytes)"),
    cl::init(16.0), cl::cat(category));
static cl::opt<double> memoryLimitGB(
    "memory-limit-gb",
    cl::desc("Refuse a run whose weights, indices, offsets and outputs need "
             "more than this (GB, 2^30 bytes; default: the memory "
             "available)"),
    cl::init(0.0), cl::cat(category));
static cl::opt<bool>
    backward("backward",
             cl::desc("Run the backward pass with an SGD update after the "
                      "forward pass"),
             cl::cat(category));
static cl::opt<float> learningRate("lr", cl::desc("SGD learning rate"),
                                   cl::init(0.01f), cl::cat(category));
static cl::opt<unsigned> steps(
    "steps",
    cl::desc("Steps to run before the results are reported and compared: "
             "each draws its inputs and gradients anew (with the seed plus "
             "the step's number) and the weights carry over (default 1)"),
    cl::init(1), cl::cat(category));
static cl::opt<unsigned> warmup("warmup",
                                cl::desc("Untimed runs before timing"),
                                cl::init(0), cl::cat(category));
static cl::opt<unsigned> iters("iters", cl::desc("Timed runs (0: no timing)"),
                               cl::init(0), cl::cat(category));
static cl::opt<std::string>
    comparePath("compare",
                cl::desc("Run this module too and compare results (and "
                         "updated weights with --backward)"),
                cl::cat(category));
static cl::opt<double>
    tolerance("tolerance",
              cl::desc("Largest relative difference --compare accepts"),
              cl::init(1e-5), cl::cat(category));
static cl::opt<bool> trustInputs(
    "trust-inputs",
    cl::desc("Skip the check of every index against its table's rows before "
             "running (the kernels themselves do not check; only for inputs "
             "known to be in range)"),
    cl::cat(category));
static cl::opt<std::string> inputsPath(
    "inputs",
    cl::desc("Take the lookup inputs from this JSON file instead of "
             "generating them: {\"<argument number>\": [integers], ...}"),
    cl::cat(category));
static cl::opt<bool> jsonOutput("json", cl::desc("Print the report as JSON"),
                                cl::cat(category));
static cl::opt<unsigned> devicesPerNode(
    "devices-per-node",
    cl::desc("--distributed: ranks per node of the exchange, which runs "
             "between the nodes and then inside each (default: the plan's "
             "node size when it has several nodes, else the ranks that share "
             "a machine)"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> distributed(
    "distributed",
    cl::desc("Run a sharded module on one MPI rank per device (under mpirun "
             "-np <devices>): each rank holds only its shards and exchanges "
             "over MPI; --compare runs the original on rank 0"),
    cl::cat(category));

namespace {

[[noreturn]] void fail(const Twine &message) {
  WithColor::error(errs(), "neuroshard-run") << message << "\n";
  exit(1);
}

void failOn(Error error, StringRef what) {
  if (error)
    fail(what + ": " + toString(std::move(error)));
}

#ifdef NEUROSHARD_CUDA_RUNTIME_LIBRARY
/// NeuroShard's CUDA runtime library: next to this program's bin/ (in the
/// build tree and an installed prefix alike), else where it was built.
std::string cudaRuntimeLibrary() {
  std::string executable = sys::fs::getMainExecutable(nullptr, nullptr);
  for (StringRef libdir : {StringRef("lib"), StringRef(NEUROSHARD_LIBDIR)}) {
    SmallString<256> path(sys::path::parent_path(executable));
    sys::path::append(path, "..", libdir, NEUROSHARD_CUDA_RUNTIME_LIBRARY_NAME);
    if (sys::fs::exists(path))
      return std::string(path);
  }
  return NEUROSHARD_CUDA_RUNTIME_LIBRARY;
}
#endif

CompileOptions compileOptions() {
  CompileOptions options;
  if (device == "cuda") {
    options.target = Target::CUDA;
    options.cudaChip = chip;
#ifdef NEUROSHARD_CUDA_RUNTIME_LIBRARY
    options.cudaRuntimeLibrary = cudaRuntimeLibrary();
#endif
  }
  return options;
}

/// --device cuda: fails unless a CUDA driver and device 0 are usable.
void checkCUDADevice() {
#ifdef NEUROSHARD_CUDA_RUNTIME_LIBRARY
  std::unique_ptr<::neuroshard::cuda::Runtime> runtime;
  ::neuroshard::cuda::Status status =
      ::neuroshard::cuda::Runtime::open(0, runtime);
  if (!status.ok())
    fail("--device cuda: " + status.message());
#endif
}

struct Loaded {
  OwningOpRef<ModuleOp> module;
  ModelInfo info;
  std::unique_ptr<CompiledModel> model;
};

Loaded load(MLIRContext &context, StringRef path) {
  Loaded loaded;
  std::string message;
  auto file = openInputFile(path, &message);
  if (!file)
    fail(message);
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  loaded.module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!loaded.module)
    fail("cannot parse '" + path + "'");
  auto info = analyzeModel(*loaded.module, entry);
  if (!info)
    fail(path + ": " + toString(info.takeError()));
  loaded.info = std::move(*info);
  if (batchSize > 0)
    for (const InputPair &pair : loaded.info.pairs)
      if (pair.batch != batchSize)
        fail(path + ": the lookups of @" + loaded.info.entry +
             " have batch size " + Twine(pair.batch) +
             ", fixed by their types, but --batch-size is " + Twine(batchSize));
  auto model =
      CompiledModel::compile(*loaded.module, loaded.info, compileOptions());
  if (!model)
    fail(path + ": " + toString(model.takeError()));
  loaded.model = std::move(*model);
  return loaded;
}

/// The seed, row cap and memory limits of the run's data.
DataOptions dataOptions() {
  DataOptions options;
  options.seed = seed;
  options.maxRows = maxRows;
  options.maxWeightBytes = maxWeightGB * ::neuroshard::kBytesPerGB;
  options.memoryLimitBytes = memoryLimitGB * ::neuroshard::kBytesPerGB;
  return options;
}

/// One step: forward, then backward with SGD when asked.
void step(Loaded &loaded, ModelData &data,
          std::vector<std::vector<float>> &outputs) {
  failOn(loaded.model->forward(data, outputs), "forward");
  if (backward) {
    failOn(loaded.model->backward(data, learningRate), "backward");
    // Rows a step updated in the cache of a shard in host memory go back
    // to their table before anything reads the weights.
    loaded.model->flushCaches();
  }
}

using CacheStats =
    std::vector<std::pair<std::string, ::neuroshard::runtime::RowCacheStats>>;

/// One line per device cache of a shard in host memory: what the run's
/// lookups and updates did through it.
void printCaches(raw_ostream &os, const CacheStats &caches) {
  for (const auto &[shard, stats] : caches)
    os << formatv("row cache of {0}: {1} rows fetched, {2} hits, "
                  "{3} filled, {4} evicted, {5} written back, {6} read in "
                  "host memory\n",
                  shard, stats.lookups, stats.hits, stats.fills,
                  stats.evictions, stats.writeBacks, stats.readThrough);
}

json::Value cachesJSON(const CacheStats &caches) {
  json::Array all;
  for (const auto &[shard, stats] : caches)
    all.push_back(json::Object{{"shard", shard},
                               {"fetched", stats.lookups},
                               {"hits", stats.hits},
                               {"filled", stats.fills},
                               {"evicted", stats.evictions},
                               {"written_back", stats.writeBacks},
                               {"read_in_host_memory", stats.readThrough}});
  return all;
}

/// Runs the --steps steps on `data`, drawing every step's inputs and
/// gradients after the first anew; `outputs` are the last step's.
void runSteps(Loaded &loaded, ModelData &data,
              std::vector<std::vector<float>> &outputs, StringRef path) {
  for (unsigned k = 0; k < steps; ++k) {
    if (k > 0) {
      DataOptions options = dataOptions();
      options.seed = seed + k;
      if (llvm::Error err = drawInputs(loaded.info, options, data))
        fail(path + ": " + toString(std::move(err)));
    }
    step(loaded, data, outputs);
  }
}

/// The tables of `data`'s arena, without the caches that follow them.
llvm::ArrayRef<float> tableWeights(const ModelData &data) {
  return llvm::ArrayRef<float>(data.weights.data(),
                               static_cast<size_t>(data.tableElements));
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  ::neuroshard::addVersionPrinter();
  ::neuroshard::addDocumentationHelp("lowering.md");
  cl::ParseCommandLineOptions(
      argc, argv,
      "Execute a NeuroShard module on generated inputs\n\n"
      "Inputs and weights are drawn from each table's pooling_factor and "
      "access_hist with --seed, identically for a model and its sharded "
      "form, so --compare checks that sharding preserved the results.\n");

#ifndef NEUROSHARD_CUDA_RUNTIME_LIBRARY
  if (device == "cuda")
    fail("--device cuda: this neuroshard-run was built without a CUDA "
         "toolkit; rebuild with one, or run the kernels with "
         "neuroshard-cuda-runner (docs/lowering.md)");
#endif
  if (device != "cpu" && device != "cuda")
    fail("unknown --device '" + device + "' (expected cpu or cuda)");
  if (maxRows < 0)
    fail("--max-rows must be >= 0, got " + Twine(maxRows));
  if (!(maxWeightGB > 0.0) || !std::isfinite(maxWeightGB))
    fail("--max-weight-gb must be a positive number");
  if (!(memoryLimitGB >= 0.0) || !std::isfinite(memoryLimitGB))
    fail("--memory-limit-gb must be a number >= 0");
  if (!(tolerance >= 0.0))
    fail("--tolerance must be >= 0");

  DialectRegistry registry;
  registry.insert<mlir::neuroshard::NeuroShardDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  MLIRContext context(registry);

  if (distributed) {
#ifdef NEUROSHARD_HAS_MPI
    if (device != "cpu")
      fail("--distributed runs on the CPU; --device " + device +
           " is not supported with it");
    DistributedRunOptions options;
    options.modulePath = inputPath;
    options.comparePath = comparePath;
    options.inputsPath = inputsPath;
    options.entry = entry;
    options.data = dataOptions();
    options.backward = backward;
    options.learningRate = learningRate;
    options.warmup = warmup;
    options.iters = iters;
    options.trustInputs = trustInputs;
    options.devicesPerNode = devicesPerNode;
    options.programName = "neuroshard-run";
    ::neuroshard::run::ReportOptions report;
    report.tolerance = tolerance;
    report.json = jsonOutput;
    return ::neuroshard::run::runDistributed(context, options, report);
#else
    fail("--distributed: this neuroshard-run was built without MPI; install "
         "Open MPI (openmpi-bin, libopenmpi-dev) and rebuild");
#endif
  }

  // The module is lowered and compiled first, so that a machine without a
  // GPU still checks everything up to the driver.
  Loaded model = load(context, inputPath);
  if (device == "cuda")
    checkCUDADevice();
  auto generated = generateData(model.info, dataOptions());
  if (!generated)
    fail(inputPath + ": " + toString(generated.takeError()));
  ModelData data = std::move(*generated);
  std::optional<json::Object> givenInputs;
  if (!inputsPath.empty() && steps > 1)
    fail("--inputs gives the inputs of one step, but --steps " +
         std::to_string(steps) +
         " draws new ones for every step after the "
         "first; run one step");
  if (steps == 0)
    fail("--steps must be at least 1");
  if (!inputsPath.empty()) {
    auto read = readInputsFile(inputsPath);
    if (!read)
      fail(toString(read.takeError()));
    givenInputs = std::move(*read);
    failOn(replaceInputs(model.info, data, *givenInputs), inputsPath);
  }
  if (!trustInputs)
    if (auto bad = findOutOfRangeIndex(model.info, data))
      fail(inputPath + ": " + *bad);

  // Without a single index the kernels read no weights and every result is
  // zero: a comparison would pass having tested nothing.
  size_t totalIndices = 0;
  for (const ::neuroshard::inputs::LookupInputs &in : data.inputs)
    totalIndices += in.indices.size();
  if (totalIndices == 0) {
    std::string empty = "every bag of the " +
                        std::to_string(data.inputs.size()) +
                        " lookup inputs of @" + model.info.entry +
                        " is empty, so the run reads no weights";
    if (!comparePath.empty())
      fail(empty + " and --compare would compare nothing; raise the tables' "
                   "pooling_factor or give --inputs with indices");
    WithColor::warning(errs(), "neuroshard-run") << empty << "\n";
  }

  std::vector<std::vector<float>> outputs;
  runSteps(model, data, outputs, inputPath);

  json::Object report;
  report["module"] = inputPath.getValue();
  report["entry"] = model.info.entry;
  report["device"] = device.getValue();
  report["seed"] = static_cast<int64_t>(seed);
  report["max_rows"] = static_cast<int64_t>(maxRows);
  report["backward"] = static_cast<bool>(backward);
  report["steps"] = static_cast<int64_t>(steps);
  json::Array results =
      ::neuroshard::run::summarizeResults(outputs, model.info.resultShapes);

  std::optional<::neuroshard::run::Comparison> comparison;
  if (!comparePath.empty()) {
    Loaded other = load(context, comparePath);
    failOn(checkComparable(model.info, other.info),
           "cannot compare '" + inputPath + "' with '" + comparePath + "'");
    // Same seed and options: identical inputs and weights, and gradients
    // laid out for the other module's lookups.
    auto otherGenerated = generateData(other.info, dataOptions());
    if (!otherGenerated)
      fail(comparePath + ": " + toString(otherGenerated.takeError()));
    ModelData otherData = std::move(*otherGenerated);
    if (givenInputs)
      failOn(replaceInputs(other.info, otherData, *givenInputs), inputsPath);
    if (!trustInputs)
      if (auto bad = findOutOfRangeIndex(other.info, otherData))
        fail(comparePath + ": " + *bad);
    std::vector<std::vector<float>> otherOutputs;
    runSteps(other, otherData, otherOutputs, comparePath);
    comparison.emplace();
    comparison->with = comparePath;
    comparison->tolerance = tolerance;
    for (size_t r = 0; r < outputs.size(); ++r) {
      double diff = maxRelativeDifference(otherOutputs[r], outputs[r]);
      comparison->resultDiffs.push_back(diff);
      comparison->outputDiff = std::max(comparison->outputDiff, diff);
    }
    if (backward)
      comparison->weightDiff =
          maxRelativeDifference(tableWeights(otherData), tableWeights(data));
  }

  std::optional<Timing> timing;
  if (iters > 0)
    timing = timeRuns(warmup, iters, [&] {
      std::vector<std::vector<float>> outputs;
      step(model, data, outputs);
    });

  bool mismatch = comparison && comparison->mismatch();
  if (jsonOutput) {
    report["results"] = std::move(results);
    if (comparison)
      comparison->addTo(report);
    if (json::Value caches = cachesJSON(model.model->cacheStats());
        caches.getAsArray() && !caches.getAsArray()->empty())
      report["row_caches"] = std::move(caches);
    if (timing)
      report["timing_ms"] =
          json::Object{{"median", timing->median},
                       {"min", timing->min},
                       {"max", timing->max},
                       {"warmup", int64_t(warmup)},
                       {"iters", int64_t(iters)},
                       {"step", backward ? "forward+backward" : "forward"}};
    outs() << formatv("{0:2}", json::Value(std::move(report))) << "\n";
  } else {
    outs() << "@" << model.info.entry << " on " << device << ": "
           << outputs.size() << " results, " << model.info.pairs.size()
           << " lookup inputs, "
           << llvm::count_if(model.info.tables,
                             [](const TableInfo &t) { return !t.isCache(); })
           << " tables, seed " << seed;
    if (maxRows > 0)
      outs() << ", at most " << maxRows << " rows per table";
    outs() << (backward ? ", forward + backward (SGD)\n" : ", forward\n");
    ::neuroshard::run::printResults(outs(), results);
    printCaches(outs(), model.model->cacheStats());
    if (comparison)
      comparison->print(outs());
    if (timing)
      outs() << formatv("{0} ms: median {1:F3}, min {2:F3}, max {3:F3} over "
                        "{4} runs after {5} warm-up\n",
                        backward ? "forward+backward" : "forward",
                        timing->median, timing->min, timing->max,
                        unsigned(iters), unsigned(warmup));
  }
  if (mismatch) {
    WithColor::error(errs(), "neuroshard-run")
        << "results differ beyond the tolerance: " << comparison->differing()
        << "\n";
    return 1;
  }
  return 0;
}
