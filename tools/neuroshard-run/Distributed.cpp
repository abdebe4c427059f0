//===- Distributed.cpp - neuroshard-run on one rank per device ------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "Distributed.h"
#include "Report.h"

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Execution/CompiledModel.h"
#include "neuroshard/Runtime/MPI/MPIExchange.h"
#include "neuroshard/Runtime/Statistics.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>

using namespace llvm;
using namespace mlir;
using namespace ::neuroshard::execution;
using ::neuroshard::exchange_abi::ExchangeLayout;
namespace mpi = ::neuroshard::mpi;
namespace inputs = ::neuroshard::inputs;
namespace run = ::neuroshard::run;
using run::Comparison;
using run::printResults;
using run::summarizeResults;

namespace {

int worldRank = 0, worldSize = 1;

/// A failure every rank meets alike, before or between collectives: rank 0
/// reports it and every rank leaves, so the job ends without a hang.
[[noreturn]] void failAll(const Twine &message) {
  if (worldRank == 0)
    WithColor::error(errs(), "neuroshard-run") << message << "\n";
  MPI_Finalize();
  exit(1);
}

/// A failure of this rank alone: the others may already wait for it in a
/// collective, so the whole job is aborted.
[[noreturn]] void failRank(const Twine &message) {
  WithColor::error(errs(), "neuroshard-run")
      << "rank " << worldRank << ": " << message << "\n";
  errs().flush();
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

/// Every rank's flag, true if any rank's is.
bool anyRank(bool flag) {
  int local = flag ? 1 : 0, any = 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

/// A failure of every rank alike, or of this rank alone.
[[noreturn]] void fail(bool everyRank, const Twine &message) {
  if (everyRank)
    failAll(message);
  failRank(message);
}

/// Parses `path`: on every rank (`everyRank`), or on this one alone.
OwningOpRef<ModuleOp> parse(MLIRContext &context, StringRef path,
                            bool everyRank) {
  std::string message;
  auto file = openInputFile(path, &message);
  if (!file)
    fail(everyRank, message);
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  // Only rank 0 prints diagnostics: every rank parses the same file.
  std::optional<SourceMgrDiagnosticHandler> handler;
  std::optional<ScopedDiagnosticHandler> silence;
  if (worldRank == 0)
    handler.emplace(sourceMgr, &context);
  else
    silence.emplace(&context, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    fail(everyRank, "cannot parse '" + path + "'");
  return module;
}

ModelInfo analyze(ModuleOp module, StringRef path, StringRef entry,
                  bool everyRank) {
  auto info = analyzeModel(module, entry);
  if (!info)
    fail(everyRank, path + ": " + toString(info.takeError()));
  return std::move(*info);
}

/// The plan's weight bytes per device, from the module's neuroshard.plan.
std::vector<double> planWeightsGB(ModuleOp module, int64_t devices) {
  std::vector<double> memory(devices, -1.0);
  auto plan = module->getAttrOfType<DictionaryAttr>(
      mlir::neuroshard::NeuroShardDialect::getPlanAttrName());
  auto perDevice = plan ? plan.getAs<ArrayAttr>("per_device") : ArrayAttr();
  if (!perDevice)
    return memory;
  for (Attribute entry : perDevice) {
    auto dict = dyn_cast<DictionaryAttr>(entry);
    auto device = dict ? dict.getAs<IntegerAttr>("device") : IntegerAttr();
    // The weights alone; plans without optimizer state have only
    // memory_used_gb, which is then the same.
    auto used = dict ? dict.getAs<FloatAttr>("weights_gb") : FloatAttr();
    if (dict && !used)
      used = dict.getAs<FloatAttr>("memory_used_gb");
    if (device && used && device.getInt() >= 0 && device.getInt() < devices)
      memory[device.getInt()] = used.getValueAsDouble();
  }
  return memory;
}

/// The gradient of this rank's result (its rows, every device's columns),
/// laid out as the exchange delivers it: the values a single-process run
/// gives each device's lookup.
std::vector<float> resultGradient(const ModelInfo &sharded,
                                  const ExchangeLayout &layout, uint64_t seed) {
  int64_t rows = layout.batches[layout.rank], width = layout.totalWidth();
  std::vector<float> gradient(static_cast<size_t>(rows * width), 0.0f);
  for (const LookupInfo &lookup : sharded.lookups)
    fillLookupGradient(
        sharded, lookup, seed, layout.rowBegin(layout.rank), rows,
        gradient.data() + layout.columnBegin(lookup.device), width);
  return gradient;
}

/// The gradients of the rank program's results, taken from `exchanged`, the
/// gradient of its exchanged columns (B_rank x sum(W)), by the columns each
/// result holds. Every exchanged column must reach a result: the original
/// module's backward updates it, while the program's backward would send it
/// a zero gradient. `why` says otherwise.
std::vector<std::vector<float>>
splitResultGradient(const ModelInfo &program,
                    const std::vector<float> &exchanged, std::string &why) {
  const ExchangeLayout &layout = program.exchange;
  int64_t rows = layout.batches[layout.rank], width = layout.totalWidth();
  std::vector<bool> reached(static_cast<size_t>(width), false);
  std::vector<std::vector<float>> gradients;
  for (auto [r, pieces] : llvm::enumerate(program.resultColumns)) {
    int64_t cols = program.resultShapes[r][1];
    std::vector<float> gradient(static_cast<size_t>(rows * cols), 0.0f);
    for (const ResultColumns &piece : pieces)
      for (int64_t c = 0; c < piece.width; ++c) {
        reached[piece.source + c] = true;
        for (int64_t row = 0; row < rows; ++row)
          gradient[row * cols + piece.column + c] =
              exchanged[row * width + piece.source + c];
      }
    gradients.push_back(std::move(gradient));
  }
  auto missing = std::find(reached.begin(), reached.end(), false);
  if (missing != reached.end())
    why = "exchanged column " + std::to_string(missing - reached.begin()) +
          " of @" + program.entry +
          " reaches no result, so the backward check cannot give it the "
          "gradient a single-process run gives it";
  return gradients;
}

/// Gathers every rank's `local` values to rank 0, in rank order.
std::vector<float> gatherToRoot(const std::vector<float> &local) {
  if (local.size() > size_t(INT_MAX))
    failRank("cannot gather " + Twine(local.size()) +
             " values (more than MPI's int counts hold); lower the batch or "
             "cap the rows with --max-rows");
  int count = static_cast<int>(local.size());
  std::vector<int> counts(worldSize), offsets(worldSize);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int64_t total = 0;
  for (int d = 0; d < worldSize; ++d) {
    offsets[d] = static_cast<int>(std::min<int64_t>(total, INT_MAX));
    total += counts[d];
  }
  bool tooMany = worldRank == 0 && total > INT_MAX;
  if (anyRank(tooMany))
    failAll("cannot gather " + Twine(total) +
            " values to rank 0 (more than MPI's int counts hold); lower the "
            "batch or cap the rows with --max-rows");
  std::vector<float> all(worldRank == 0 ? size_t(total) : 0);
  MPI_Gatherv(local.data(), count, MPI_FLOAT, all.data(), counts.data(),
              offsets.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
  return all;
}

/// Per rank: step, compute and exchange medians (ms).
struct RankTiming {
  double step = 0, compute = 0, exchange = 0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return ::neuroshard::sortedMedian(values);
}

struct Program {
  OwningOpRef<ModuleOp> module;
  ModelInfo info;
  std::unique_ptr<CompiledModel> model;
};

} // namespace

int run::runDistributed(MLIRContext &context, const RunOptions &options) {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  const std::string &path = options.modulePath;

  // What every device does, read from the sharded module.
  OwningOpRef<ModuleOp> sharded = parse(context, path, /*everyRank=*/true);
  auto topology = (*sharded)->getAttrOfType<mlir::neuroshard::TopologyAttr>(
      mlir::neuroshard::NeuroShardDialect::getTopologyAttrName());
  if (!topology)
    failAll(path + ": the module has no #neuroshard.topology; shard it with "
                   "--neuroshard-shard first");
  int64_t devices = topology.getDevices();
  if (devices != worldSize)
    failAll(path + ": the plan places shards on " + Twine(devices) +
            " devices but the job has " + Twine(worldSize) +
            (worldSize == 1 ? " rank" : " ranks") +
            "; run it with one rank per device: mpirun -np " + Twine(devices) +
            " neuroshard-run " + path + " --distributed");
  ModelInfo whole = analyze(*sharded, path, options.entry, /*everyRank=*/true);
  for (const LookupInfo &lookup : whole.lookups)
    if (lookup.device < 0)
      failAll(path + ": @" + whole.entry +
              " has lookups of unsharded tables; shard the module with "
              "--neuroshard-shard before running it on several ranks");

  // This rank's program.
  Program program;
  program.module = sharded->clone();
  {
    PassManager pm(&context);
    mlir::neuroshard::SPMDOptions rankOptions;
    rankOptions.rank = worldRank;
    pm.addPass(mlir::neuroshard::createSPMD(rankOptions));
    if (options.backward)
      pm.addPass(mlir::neuroshard::createSPMDBackward());
    if (failed(pm.run(*program.module)))
      failRank(path + ": cannot build the program of rank " + Twine(worldRank));
  }
  program.info =
      analyze(*program.module, path, options.entry, /*everyRank=*/false);
  const ExchangeLayout &layout = program.info.exchange;
  for (const LookupInfo &lookup : whole.lookups)
    if (lookup.width != layout.widths[lookup.device])
      failAll(path + ": device " + Twine(lookup.device) + "'s lookup has " +
              Twine(lookup.width) + " columns but the exchange gives it " +
              Twine(layout.widths[lookup.device]));
  CompileOptions compileOptions;
  compileOptions.hostSymbols.push_back(
      {std::string("_mlir_ciface_") + ::neuroshard::exchange_abi::kExchangeF32,
       mpi::exchangeEntryPoint()});
  compileOptions.hostSymbols.push_back(
      {std::string("_mlir_ciface_") +
           ::neuroshard::exchange_abi::kExchangeGradientF32,
       mpi::exchangeGradientEntryPoint()});
  auto compiled =
      CompiledModel::compile(*program.module, program.info, compileOptions);
  if (!compiled)
    failRank(path + ": " + toString(compiled.takeError()));
  program.model = std::move(*compiled);

  // Data: this rank's shards and the inputs of its lookups.
  DataOptions dataOptions;
  dataOptions.seed = options.seed;
  dataOptions.maxRows = options.maxRows;
  dataOptions.maxWeightBytes = options.maxWeightBytes;
  dataOptions.memoryLimitBytes = options.memoryLimitBytes;
  auto generated = generateData(program.info, dataOptions);
  if (!generated)
    failRank(path + ": " + toString(generated.takeError()));
  ModelData data = std::move(*generated);
  std::optional<json::Object> givenInputs;
  if (!options.inputsPath.empty()) {
    auto read = readInputsFile(options.inputsPath);
    if (!read)
      failAll(toString(read.takeError()));
    givenInputs = std::move(*read);
    if (Error e = replaceInputs(program.info, data, *givenInputs))
      failRank(options.inputsPath + ": " + toString(std::move(e)));
  }
  if (!options.trustInputs)
    if (auto bad = findOutOfRangeIndex(program.info, data))
      failRank(path + ": " + *bad);
  int64_t localIndices = 0, totalIndices = 0;
  for (const inputs::LookupInputs &in : data.inputs)
    localIndices += static_cast<int64_t>(in.indices.size());
  MPI_Allreduce(&localIndices, &totalIndices, 1, MPI_INT64_T, MPI_SUM,
                MPI_COMM_WORLD);
  if (totalIndices == 0 && !options.comparePath.empty())
    failAll("every bag of @" + whole.entry +
            " is empty on every rank, so --compare would compare nothing; "
            "raise the tables' pooling_factor or give --inputs with indices");

  // One step: forward, then the program's backward function: the reverse
  // exchange of its results' gradients and the fused SGD update of the
  // rank's shards.
  std::vector<std::vector<float>> resultGradients;
  if (options.backward) {
    std::string why;
    resultGradients = splitResultGradient(
        program.info, resultGradient(whole, layout, options.seed), why);
    if (anyRank(!why.empty()))
      failAll(why.empty() ? "another rank's results do not hold its exchanged "
                            "columns"
                          : why);
  }
  std::vector<std::vector<float>> outputs;
  auto step = [&] {
    if (Error e = program.model->forward(data, outputs))
      failRank("forward: " + toString(std::move(e)));
    if (!options.backward)
      return;
    if (Error e = program.model->backwardEntry(data, resultGradients,
                                               options.learningRate))
      failRank("backward: " + toString(std::move(e)));
  };
  step();

  // Results, whole, on rank 0.
  std::vector<std::vector<float>> results;
  for (const std::vector<float> &output : outputs)
    results.push_back(gatherToRoot(output));

  // The check against the original module, run in one process on rank 0.
  std::optional<Comparison> comparison;
  if (!options.comparePath.empty()) {
    // Every shard's rows, without the arena's alignment gaps.
    std::vector<float> weights;
    if (options.backward) {
      std::vector<float> mine;
      for (size_t t = 0; t < program.info.tables.size(); ++t) {
        auto begin = data.weights.begin() + data.layout[t];
        mine.insert(mine.end(), begin,
                    begin + data.allocatedRows[t] *
                                program.info.tables[t].stats.dim);
      }
      weights = gatherToRoot(mine);
    }
    bool mismatchedModules = false;
    std::string why;
    if (worldRank == 0) {
      // Rank 0 alone reads the original; the others wait for its verdict.
      OwningOpRef<ModuleOp> original =
          parse(context, options.comparePath, /*everyRank=*/false);
      ModelInfo info = analyze(*original, options.comparePath, options.entry,
                               /*everyRank=*/false);
      if (Error e = checkComparable(whole, info))
        why = "cannot compare '" + path + "' with '" + options.comparePath +
              "': " + toString(std::move(e));
      auto model = why.empty() ? CompiledModel::compile(*original, info, {})
                               : Expected<std::unique_ptr<CompiledModel>>(
                                     createStringError(why));
      if (!model) {
        why = toString(model.takeError());
      } else {
        auto otherData = generateData(info, dataOptions);
        if (!otherData)
          failRank(options.comparePath + ": " +
                   toString(otherData.takeError()));
        if (givenInputs)
          if (Error e = replaceInputs(info, *otherData, *givenInputs))
            failRank(options.inputsPath + ": " + toString(std::move(e)));
        std::vector<std::vector<float>> expected;
        if (Error e = (*model)->forward(*otherData, expected))
          failRank("forward of '" + options.comparePath +
                   "': " + toString(std::move(e)));
        if (options.backward)
          if (Error e = (*model)->backward(*otherData, options.learningRate))
            failRank("backward of '" + options.comparePath +
                     "': " + toString(std::move(e)));
        comparison.emplace();
        comparison->with = options.comparePath;
        comparison->tolerance = options.tolerance;
        for (size_t r = 0; r < results.size(); ++r)
          comparison->outputDiff =
              std::max(comparison->outputDiff,
                       ::neuroshard::runtime::maxRelativeDifference(
                           expected[r], results[r]));
        if (options.backward) {
          // Every rank's shards back into the original's tables.
          std::vector<float> assembled(otherData->weights.size(), 0.0f);
          size_t next = 0;
          llvm::StringMap<size_t> ordinal;
          for (size_t t = 0; t < info.tables.size(); ++t)
            ordinal[info.tables[t].stats.name] = t;
          for (int64_t d = 0; d < devices; ++d)
            for (mlir::neuroshard::DeviceShard shard :
                 mlir::neuroshard::getDeviceShards(*sharded, d)) {
              size_t t = ordinal.lookup(shard.table.getSymName());
              int64_t rows = otherData->allocatedRows[t];
              int64_t dim = info.tables[t].stats.dim;
              for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < shard.width(); ++c)
                  assembled[otherData->layout[t] + r * dim + shard.colBegin +
                            c] = weights[next++];
            }
          comparison->weightDiff = ::neuroshard::runtime::maxRelativeDifference(
              otherData->weights, assembled);
        }
      }
      mismatchedModules = !why.empty();
    }
    if (anyRank(mismatchedModules))
      failAll(why);
  }

  // Timing: every iteration starts together, so the exchange includes the
  // wait for the slowest rank.
  std::optional<RankTiming> timing;
  std::vector<double> allTimings;
  if (options.iters > 0) {
    std::vector<double> steps, exchanges, computes;
    for (unsigned i = 0; i < options.warmup + options.iters; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      mpi::resetExchangeSeconds();
      double start = MPI_Wtime();
      step();
      double seconds = MPI_Wtime() - start;
      if (i < options.warmup)
        continue;
      double exchange = mpi::exchangeSeconds();
      steps.push_back(seconds * 1e3);
      exchanges.push_back(exchange * 1e3);
      computes.push_back((seconds - exchange) * 1e3);
    }
    timing = RankTiming{median(steps), median(computes), median(exchanges)};
    double mine[3] = {timing->step, timing->compute, timing->exchange};
    allTimings.resize(worldRank == 0 ? 3 * size_t(worldSize) : 0);
    MPI_Gather(mine, 3, MPI_DOUBLE, allTimings.data(), 3, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
  }

  // Weight bytes per rank: the shards' full size (what the plan counts) and
  // what was allocated (rows capped by --max-rows).
  double mineBytes[2] = {0.0, 0.0};
  for (auto [t, table] : llvm::enumerate(program.info.tables)) {
    mineBytes[0] += double(table.stats.rows) * table.stats.dim * sizeof(float);
    mineBytes[1] +=
        double(data.allocatedRows[t]) * table.stats.dim * sizeof(float);
  }
  std::vector<double> bytes(worldRank == 0 ? 2 * size_t(worldSize) : 0);
  MPI_Gather(mineBytes, 2, MPI_DOUBLE, bytes.data(), 2, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  int shardCount = static_cast<int>(program.info.tables.size());
  std::vector<int> shardCounts(worldRank == 0 ? size_t(worldSize) : 0);
  MPI_Gather(&shardCount, 1, MPI_INT, shardCounts.data(), 1, MPI_INT, 0,
             MPI_COMM_WORLD);

  bool mismatch = comparison && comparison->mismatch();
  if (worldRank != 0) {
    MPI_Finalize();
    return 0;
  }

  std::vector<double> planGB = planWeightsGB(*sharded, devices);
  bool bytesMatchPlan = true;
  json::Array ranks;
  for (int d = 0; d < worldSize; ++d) {
    double gb = bytes[2 * d] / ::neuroshard::kBytesPerGB;
    bool matches =
        planGB[d] < 0 || std::fabs(gb - planGB[d]) <= 1e-9 * std::max(1.0, gb);
    bytesMatchPlan &= matches;
    json::Object rank{{"rank", d},
                      {"shards", shardCounts[d]},
                      {"weight_bytes", int64_t(bytes[2 * d])},
                      {"allocated_weight_bytes", int64_t(bytes[2 * d + 1])}};
    if (planGB[d] >= 0) {
      rank["plan_weights_gb"] = planGB[d];
      rank["matches_plan"] = matches;
    }
    if (timing)
      rank["timing_ms"] = json::Object{{"step", allTimings[3 * d]},
                                       {"compute", allTimings[3 * d + 1]},
                                       {"exchange", allTimings[3 * d + 2]}};
    ranks.push_back(std::move(rank));
  }

  json::Array resultRows = summarizeResults(results, whole.resultShapes);

  if (options.json) {
    json::Object report{{"module", path},
                        {"entry", whole.entry},
                        {"device", "cpu"},
                        {"seed", static_cast<int64_t>(options.seed)},
                        {"max_rows", options.maxRows},
                        {"backward", options.backward},
                        {"ranks", worldSize},
                        {"per_rank", std::move(ranks)},
                        {"results", std::move(resultRows)}};
    if (comparison)
      comparison->addTo(report);
    if (timing)
      report["timing_ms"] = json::Object{
          {"warmup", int64_t(options.warmup)},
          {"iters", int64_t(options.iters)},
          {"step", options.backward ? "forward+backward" : "forward"}};
    outs() << formatv("{0:2}", json::Value(std::move(report))) << "\n";
  } else {
    outs() << "@" << whole.entry << " on " << worldSize
           << " MPI ranks (cpu): " << results.size() << " results, "
           << whole.pairs.size() << " lookup inputs, " << whole.tables.size()
           << " tables, seed " << options.seed;
    if (options.maxRows > 0)
      outs() << ", at most " << options.maxRows << " rows per table";
    outs() << (options.backward ? ", forward + backward (SGD)\n"
                                : ", forward\n");
    printResults(outs(), resultRows);
    outs() << formatv("{0,-5} {1,7} {2,16} {3,16} {4,10} {5,11} {6,12}\n",
                      "rank", "shards", "weights (MiB)", "plan (MiB)",
                      "step ms", "compute ms", "exchange ms");
    for (int d = 0; d < worldSize; ++d) {
      std::string plan =
          planGB[d] < 0 ? "-" : formatv("{0:F3}", planGB[d] * 1024.0).str();
      std::string times[3] = {"-", "-", "-"};
      if (timing)
        for (int k = 0; k < 3; ++k)
          times[k] = formatv("{0:F3}", allTimings[3 * d + k]).str();
      outs() << formatv("{0,-5} {1,7} {2,16:F3} {3,16} {4,10} {5,11} {6,12}\n",
                        d, shardCounts[d], bytes[2 * d] / double(1 << 20), plan,
                        times[0], times[1], times[2]);
    }
    if (llvm::all_of(planGB, [](double gb) { return gb < 0; }))
      outs() << "no neuroshard.plan in the module to check the weights per "
                "rank against\n";
    else
      outs() << "weights per rank "
             << (bytesMatchPlan ? "equal the plan's per-device weights"
                                : "DIFFER from the plan's per-device weights")
             << "\n";
    if (comparison)
      comparison->print(outs());
    if (timing)
      outs() << formatv("{0} ms per rank: medians over {1} runs after {2} "
                        "warm-up; exchange includes waiting for other ranks\n",
                        options.backward ? "forward+backward" : "forward",
                        options.iters, options.warmup);
  }
  MPI_Finalize();
  if (mismatch || !bytesMatchPlan) {
    WithColor::error(errs(), "neuroshard-run")
        << (mismatch ? "results differ beyond the tolerance"
                     : "a rank's weights differ from the plan's memory")
        << "\n";
    return 1;
  }
  return 0;
}
