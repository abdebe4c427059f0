//===- DistributedRun.cpp - A sharded module on one rank per device -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/DistributedRun.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Execution/CompiledModel.h"
#include "neuroshard/Runtime/MPI/MPIExchange.h"
#include "neuroshard/Support/Statistics.h"
#include "neuroshard/Support/Units.h"
#include "neuroshard/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
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
namespace ex = ::neuroshard::execution;
namespace mpi = ::neuroshard::mpi;
namespace inputs = ::neuroshard::inputs;

MPIJob::MPIJob() {
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    MPI_Init(nullptr, nullptr);
    initialized = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rankInWorld);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
}

MPIJob::~MPIJob() {
  if (initialized)
    MPI_Finalize();
}

bool DistributedRunResult::hasPlan() const {
  return llvm::any_of(perRank, [](const RankReport &rank) {
    return rank.planWeightsGB.has_value();
  });
}

bool DistributedRunResult::weightsMatchPlan() const {
  return llvm::all_of(perRank,
                      [](const RankReport &rank) { return rank.matchesPlan; });
}

namespace {

/// Every rank's flag, true if any rank's is.
bool anyRank(bool flag) {
  int local = flag ? 1 : 0, any = 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

/// The plan's weight bytes per device (GB), from the module's
/// neuroshard.plan; -1 for a device it does not list.
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

/// The gradients of the rank program's results, its rows [rowBegin,
/// rowBegin + rows) of each result of the sharded module: every column gets
/// the gradient a single-process run gives the table column it comes from
/// (`sources`, traceResultSources).
std::vector<std::vector<float>>
rankResultGradients(const ModelInfo &program,
                    const std::vector<std::vector<ResultSource>> &sources,
                    int64_t rowBegin, uint64_t seed) {
  std::vector<std::vector<float>> gradients;
  for (auto [r, pieces] : llvm::enumerate(sources)) {
    int64_t rows = program.resultShapes[r][0];
    int64_t cols = program.resultShapes[r][1];
    std::vector<float> gradient(static_cast<size_t>(rows * cols), 0.0f);
    for (const ResultSource &piece : pieces)
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t c = 0; c < piece.width; ++c)
          gradient[row * cols + piece.column + c] = lookupGradientValue(
              seed, piece.indicesArg, rowBegin + row, piece.tableColumn + c);
    gradients.push_back(std::move(gradient));
  }
  return gradients;
}

struct Program {
  OwningOpRef<ModuleOp> module;
  ModelInfo info;
  std::unique_ptr<CompiledModel> model;
};

/// One rank's run of a sharded module. Methods return an Error for a failure
/// every rank meets alike; abortJob ends a failure of this rank alone.
class RankRun {
public:
  RankRun(MLIRContext &context, const DistributedRunOptions &options)
      : context(context), options(options), path(options.modulePath) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }

  Expected<DistributedRunResult> run();

private:
  /// A failure of this rank alone: the others may already wait for it in a
  /// collective, so the whole job is aborted.
  [[noreturn]] void abortJob(const Twine &message) {
    // One write, so that the launcher's abort banner, which other processes
    // print meanwhile, cannot land inside the line.
    std::string line;
    raw_string_ostream os(line);
    WithColor::error(os, options.programName)
        << "rank " << rank << ": " << message << "\n";
    errs() << line;
    errs().flush();
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
  }

  /// Parses `path`: on every rank (`everyRank`, where a failure is every
  /// rank's), or on this one alone.
  Expected<OwningOpRef<ModuleOp>> parse(StringRef file, bool everyRank);
  Expected<ModelInfo> analyze(ModuleOp module, StringRef file, bool everyRank);
  /// Gathers every rank's `local` values to rank 0, in rank order.
  Expected<std::vector<float>> gatherToRoot(const std::vector<float> &local);
  /// Builds, analyses and compiles this rank's program from `sharded`.
  Expected<Program> buildProgram(ModuleOp sharded, const ModelInfo &whole);
  /// On rank 0, runs the original module on the same data and compares it
  /// with the gathered `results` and, with backward, `weights`.
  Error compare(ModuleOp sharded, const ModelInfo &whole,
                const std::vector<float> &weights,
                DistributedRunResult &result);

  MLIRContext &context;
  const DistributedRunOptions &options;
  const std::string &path;
  int rank = 0, size = 1;
  std::optional<json::Object> givenInputs;
};

Expected<OwningOpRef<ModuleOp>> RankRun::parse(StringRef file, bool everyRank) {
  auto fail = [&](const Twine &message) -> Error {
    if (!everyRank)
      abortJob(message);
    return createStringError(message);
  };
  std::string message;
  auto buffer = openInputFile(file, &message);
  if (!buffer)
    return fail(message);
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), SMLoc());
  // Only rank 0 prints diagnostics: every rank parses the same file.
  std::optional<SourceMgrDiagnosticHandler> handler;
  std::optional<ScopedDiagnosticHandler> silence;
  if (rank == 0)
    handler.emplace(sourceMgr, &context);
  else
    silence.emplace(&context, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("cannot parse '" + file + "'");
  return module;
}

Expected<ModelInfo> RankRun::analyze(ModuleOp module, StringRef file,
                                     bool everyRank) {
  auto info = analyzeModel(module, options.entry);
  if (info)
    return std::move(*info);
  std::string message = (file + ": " + toString(info.takeError())).str();
  if (!everyRank)
    abortJob(message);
  return createStringError(message);
}

Expected<std::vector<float>>
RankRun::gatherToRoot(const std::vector<float> &local) {
  if (local.size() > size_t(INT_MAX))
    abortJob("cannot gather " + Twine(local.size()) +
             " values (more than MPI's int counts hold); lower the batch or "
             "cap the rows with --max-rows");
  int count = static_cast<int>(local.size());
  std::vector<int> counts(size), offsets(size);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int64_t total = 0;
  for (int d = 0; d < size; ++d) {
    offsets[d] = static_cast<int>(std::min<int64_t>(total, INT_MAX));
    total += counts[d];
  }
  bool tooMany = rank == 0 && total > INT_MAX;
  if (anyRank(tooMany))
    return createStringError(
        "cannot gather " + Twine(total) +
        " values to rank 0 (more than MPI's int counts hold); lower the "
        "batch or cap the rows with --max-rows");
  std::vector<float> all(rank == 0 ? size_t(total) : 0);
  MPI_Gatherv(local.data(), count, MPI_FLOAT, all.data(), counts.data(),
              offsets.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
  return all;
}

Expected<Program> RankRun::buildProgram(ModuleOp sharded,
                                        const ModelInfo &whole) {
  Program program;
  program.module = sharded.clone();
  {
    PassManager pm(&context);
    mlir::neuroshard::SPMDOptions rankOptions;
    rankOptions.rank = rank;
    pm.addPass(mlir::neuroshard::createSPMD(rankOptions));
    if (options.backward)
      pm.addPass(mlir::neuroshard::createSPMDBackward());
    if (failed(pm.run(*program.module)))
      abortJob(path + ": cannot build the program of rank " + Twine(rank));
  }
  Expected<ModelInfo> info =
      analyze(*program.module, path, /*everyRank=*/false);
  if (!info)
    return info.takeError();
  program.info = std::move(*info);
  // A rank divides its rows of a mean reduce-scatter by the bags' lengths
  // even where it holds no piece of the table: it needs those offsets too,
  // generated as the lookup's inputs are everywhere else.
  auto entry = program.module->lookupSymbol<func::FuncOp>(program.info.entry);
  for (const InputPair &pair : whole.pairs) {
    bool read = llvm::any_of(program.info.pairs, [&](const InputPair &mine) {
      return mine.offsetsArg == pair.offsetsArg;
    });
    if (read || !entry || entry.getArgument(pair.offsetsArg).use_empty())
      continue;
    const ::neuroshard::inputs::TableStats *stats =
        inputStatistics(whole, pair);
    if (!stats)
      return createStringError(
          path + ": table '" + whole.tables[pair.table].stats.name +
          "' has no pooling_factor and access_hist; inputs are generated "
          "from them");
    InputPair needed = pair;
    needed.table = -1;
    needed.stats = *stats;
    program.info.pairs.push_back(needed);
  }
  if (program.info.resultShapes.size() != whole.resultShapes.size())
    return createStringError(
        path + ": the program of rank " + Twine(rank) + " returns " +
        Twine(program.info.resultShapes.size()) + " results but @" +
        whole.entry + " returns " + Twine(whole.resultShapes.size()));
  CompileOptions compileOptions;
  for (auto &[name, address] : mpi::collectiveEntryPoints())
    compileOptions.hostSymbols.push_back({name, address});
  auto compiled =
      CompiledModel::compile(*program.module, program.info, compileOptions);
  if (!compiled)
    abortJob(path + ": " + toString(compiled.takeError()));
  program.model = std::move(*compiled);
  return std::move(program);
}

Error RankRun::compare(ModuleOp sharded, const ModelInfo &whole,
                       const std::vector<float> &weights,
                       DistributedRunResult &result) {
  std::string why;
  if (rank == 0) {
    // Rank 0 alone reads the original; the others wait for its verdict.
    Expected<OwningOpRef<ModuleOp>> original =
        parse(options.comparePath, /*everyRank=*/false);
    if (!original)
      return original.takeError();
    Expected<ModelInfo> info =
        analyze(**original, options.comparePath, /*everyRank=*/false);
    if (!info)
      return info.takeError();
    if (Error e = checkComparable(whole, *info))
      why = "cannot compare '" + path + "' with '" + options.comparePath +
            "': " + toString(std::move(e));
    auto model =
        why.empty()
            ? CompiledModel::compile(**original, *info, {})
            : Expected<std::unique_ptr<CompiledModel>>(createStringError(why));
    if (!model) {
      why = toString(model.takeError());
    } else {
      auto otherData = generateData(*info, options.data);
      if (!otherData)
        abortJob(options.comparePath + ": " + toString(otherData.takeError()));
      if (givenInputs)
        if (Error e = replaceInputs(*info, *otherData, *givenInputs))
          abortJob(options.inputsPath + ": " + toString(std::move(e)));
      std::vector<std::vector<float>> expected;
      if (Error e = (*model)->forward(*otherData, expected))
        abortJob("forward of '" + options.comparePath +
                 "': " + toString(std::move(e)));
      if (options.backward)
        if (Error e = (*model)->backward(*otherData, options.learningRate))
          abortJob("backward of '" + options.comparePath +
                   "': " + toString(std::move(e)));
      result.outputDiff = 0.0;
      for (size_t r = 0; r < result.results.size(); ++r)
        result.outputDiff = std::max(
            *result.outputDiff, ::neuroshard::runtime::maxRelativeDifference(
                                    expected[r], result.results[r]));
      if (options.backward) {
        // Every rank's shards back into the original's tables.
        std::vector<float> assembled(otherData->weights.size(), 0.0f);
        size_t next = 0;
        llvm::StringMap<size_t> ordinal;
        for (size_t t = 0; t < info->tables.size(); ++t)
          ordinal[info->tables[t].stats.name] = t;
        for (int64_t d = 0; d < size; ++d)
          for (mlir::neuroshard::DeviceShard shard :
               mlir::neuroshard::getDeviceShards(sharded, d)) {
            size_t t = ordinal.lookup(shard.table.getSymName());
            int64_t rowEnd =
                std::min(shard.rowEnd, otherData->allocatedRows[t]);
            int64_t dim = info->tables[t].stats.dim;
            for (int64_t r = shard.rowBegin; r < rowEnd; ++r)
              for (int64_t c = 0; c < shard.width(); ++c)
                assembled[otherData->layout[t] + r * dim + shard.colBegin + c] =
                    weights[next++];
          }
        result.weightDiff = ::neuroshard::runtime::maxRelativeDifference(
            otherData->weights, assembled);
      }
    }
  }
  if (anyRank(!why.empty()))
    return createStringError(why.empty()
                                 ? "rank 0 cannot compare '" + path +
                                       "' with '" + options.comparePath + "'"
                                 : why);
  return Error::success();
}

Expected<DistributedRunResult> RankRun::run() {
  DistributedRunResult result;
  result.rank = rank;
  result.ranks = size;

  // What every device does, read from the sharded module.
  Expected<OwningOpRef<ModuleOp>> parsed = parse(path, /*everyRank=*/true);
  if (!parsed)
    return parsed.takeError();
  OwningOpRef<ModuleOp> sharded = std::move(*parsed);
  auto topology = (*sharded)->getAttrOfType<mlir::neuroshard::TopologyAttr>(
      mlir::neuroshard::NeuroShardDialect::getTopologyAttrName());
  if (!topology)
    return createStringError(
        path + ": the module has no #neuroshard.topology; shard it with "
               "--neuroshard-shard first");
  int64_t devices = topology.getDevices();
  if (devices != size)
    return createStringError(path + ": the plan places shards on " +
                             Twine(devices) + " devices but the job has " +
                             Twine(size) + (size == 1 ? " rank" : " ranks") +
                             "; run it with one rank per device: mpirun -np " +
                             Twine(devices) + " neuroshard-run " + path +
                             " --distributed");
  // The nodes the exchange runs on: as asked, else the plan's, else the
  // machines'.
  int ranksPerNode = static_cast<int>(options.devicesPerNode);
  if (ranksPerNode == 0 && topology.getNodes() > 1)
    ranksPerNode = static_cast<int>(devices / topology.getNodes());
  if (ranksPerNode == 0)
    ranksPerNode = mpi::sharedMemoryRanksPerNode();
  if (std::string why = mpi::groupRanksIntoNodes(ranksPerNode); !why.empty())
    return createStringError("ranks per node: " + why);
  result.ranksPerNode = mpi::ranksPerNode();
  Expected<ModelInfo> analyzed = analyze(*sharded, path, /*everyRank=*/true);
  if (!analyzed)
    return analyzed.takeError();
  ModelInfo whole = std::move(*analyzed);
  for (const LookupInfo &lookup : whole.lookups)
    if (lookup.device < 0)
      return createStringError(
          path + ": @" + whole.entry +
          " has lookups of unsharded tables; shard the module with "
          "--neuroshard-shard before running it on several ranks");
  result.entry = whole.entry;
  result.lookupInputs = whole.pairs.size();
  result.tables = llvm::count_if(
      whole.tables, [](const TableInfo &table) { return !table.isCache(); });

  // This rank's program.
  Expected<Program> built = buildProgram(*sharded, whole);
  if (!built)
    return built.takeError();
  Program program = std::move(*built);

  // Data: this rank's shards and the inputs of its lookups.
  auto generated = generateData(program.info, options.data);
  if (!generated)
    abortJob(path + ": " + toString(generated.takeError()));
  ModelData data = std::move(*generated);
  if (!options.inputsPath.empty()) {
    auto read = readInputsFile(options.inputsPath);
    if (!read)
      return read.takeError();
    givenInputs = std::move(*read);
    if (Error e = replaceInputs(program.info, data, *givenInputs))
      abortJob(options.inputsPath + ": " + toString(std::move(e)));
  }
  if (!options.trustInputs)
    if (auto bad = findOutOfRangeIndex(program.info, data))
      abortJob(path + ": " + *bad);
  int64_t localIndices = 0, totalIndices = 0;
  for (const inputs::LookupInputs &in : data.inputs)
    localIndices += static_cast<int64_t>(in.indices.size());
  MPI_Allreduce(&localIndices, &totalIndices, 1, MPI_INT64_T, MPI_SUM,
                MPI_COMM_WORLD);
  if (totalIndices == 0 && !options.comparePath.empty())
    return createStringError(
        "every bag of @" + whole.entry +
        " is empty on every rank, so --compare would compare nothing; "
        "raise the tables' pooling_factor or give --inputs with indices");

  // One step: forward, then the program's backward function: the reverse
  // exchange of its results' gradients and the fused SGD update of the
  // rank's shards.
  std::vector<std::vector<float>> resultGradients;
  if (options.backward) {
    auto sources = traceResultSources(*sharded, whole);
    if (!sources)
      return createStringError(path + ": " + toString(sources.takeError()));
    // The rank's rows follow those of the ranks before it.
    int64_t rows = program.info.resultShapes.empty()
                       ? 0
                       : program.info.resultShapes.front()[0];
    int64_t rowBegin = 0;
    MPI_Exscan(&rows, &rowBegin, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
      rowBegin = 0;
    resultGradients = rankResultGradients(program.info, *sources, rowBegin,
                                          options.data.seed);
  }
  std::vector<std::vector<float>> outputs;
  mpi::resetExchangeStatistics();
  auto step = [&] {
    if (Error e = program.model->forward(data, outputs))
      abortJob("forward: " + toString(std::move(e)));
    if (!options.backward)
      return;
    if (Error e = program.model->backwardEntry(data, resultGradients,
                                               options.learningRate))
      abortJob("backward: " + toString(std::move(e)));
    // The rows the step updated in the caches of shards in host memory go
    // back to their shards.
    program.model->flushCaches();
  };
  step();
  mpi::ExchangeBytes stepBytes = mpi::exchangeBytes();

  // Results, whole, on rank 0.
  for (const std::vector<float> &output : outputs) {
    Expected<std::vector<float>> gathered = gatherToRoot(output);
    if (!gathered)
      return gathered.takeError();
    result.results.push_back(std::move(*gathered));
  }
  if (rank == 0)
    result.resultShapes = whole.resultShapes;

  // The check against the original module, run in one process on rank 0.
  if (!options.comparePath.empty()) {
    // Every shard's rows, without the arena's alignment gaps.
    std::vector<float> weights;
    if (options.backward) {
      std::vector<float> mine;
      for (size_t t = 0; t < program.info.tables.size(); ++t) {
        if (program.info.tables[t].isCache())
          continue;
        auto begin = data.weights.begin() + data.layout[t];
        mine.insert(mine.end(), begin,
                    begin + data.allocatedRows[t] *
                                program.info.tables[t].stats.dim);
      }
      Expected<std::vector<float>> gathered = gatherToRoot(mine);
      if (!gathered)
        return gathered.takeError();
      weights = std::move(*gathered);
    }
    if (Error e = compare(*sharded, whole, weights, result))
      return std::move(e);
  }

  // Timing: every iteration starts together, so the exchange includes the
  // wait for the slowest rank.
  std::optional<RankTiming> timing;
  std::vector<double> allTimings;
  if (options.iters > 0) {
    std::vector<double> steps, exchanges, computes;
    for (unsigned i = 0; i < options.warmup + options.iters; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      mpi::resetExchangeStatistics();
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
    timing =
        RankTiming{::neuroshard::median(steps), ::neuroshard::median(computes),
                   ::neuroshard::median(exchanges)};
    double mine[3] = {timing->step, timing->compute, timing->exchange};
    allTimings.resize(rank == 0 ? 3 * size_t(size) : 0);
    MPI_Gather(mine, 3, MPI_DOUBLE, allTimings.data(), 3, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
  }

  // Weight bytes per rank in device memory: the shards' full size, of a
  // shard in host memory its cache's (what the plan counts), and what was
  // allocated (rows capped by the data options).
  double mineBytes[4] = {0.0, 0.0, stepBytes.intraNode, stepBytes.interNode};
  const std::vector<TableInfo> &pieces = program.info.tables;
  for (auto [t, table] : llvm::enumerate(pieces)) {
    bool inHost = llvm::any_of(pieces, [&](const TableInfo &cache) {
      return cache.cacheOf == int64_t(t);
    });
    if (inHost)
      continue;
    int64_t rows = table.isCache() ? table.cacheRows : table.pieceRows();
    mineBytes[0] += double(rows) * table.stats.dim * sizeof(float);
    mineBytes[1] +=
        double(data.allocatedRows[t]) * table.stats.dim * sizeof(float);
  }
  std::vector<double> bytes(rank == 0 ? 4 * size_t(size) : 0);
  MPI_Gather(mineBytes, 4, MPI_DOUBLE, bytes.data(), 4, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  int shardCount = static_cast<int>(llvm::count_if(
      pieces, [](const TableInfo &piece) { return !piece.isCache(); }));
  std::vector<int> shardCounts(rank == 0 ? size_t(size) : 0);
  MPI_Gather(&shardCount, 1, MPI_INT, shardCounts.data(), 1, MPI_INT, 0,
             MPI_COMM_WORLD);
  if (rank != 0)
    return std::move(result);

  std::vector<double> planGB = planWeightsGB(*sharded, devices);
  for (int d = 0; d < size; ++d) {
    RankReport report;
    report.shards = shardCounts[d];
    report.weightBytes = bytes[4 * d];
    report.allocatedWeightBytes = bytes[4 * d + 1];
    report.intraNodeBytes = bytes[4 * d + 2];
    report.interNodeBytes = bytes[4 * d + 3];
    if (planGB[d] >= 0) {
      double gb = report.weightBytes / ::neuroshard::kBytesPerGB;
      report.planWeightsGB = planGB[d];
      report.matchesPlan =
          std::fabs(gb - planGB[d]) <= 1e-9 * std::max(1.0, gb);
    }
    if (timing)
      report.timing = RankTiming{allTimings[3 * d], allTimings[3 * d + 1],
                                 allTimings[3 * d + 2]};
    result.perRank.push_back(std::move(report));
  }
  return std::move(result);
}

} // namespace

Expected<DistributedRunResult>
ex::runDistributed(MLIRContext &context, const DistributedRunOptions &options) {
  return RankRun(context, options).run();
}
