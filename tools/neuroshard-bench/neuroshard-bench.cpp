//===- neuroshard-bench.cpp - Search quality and speed benchmark ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Generates synthetic DLRM-like sharding tasks (docs/design.md §6)
// deterministically, plans each with every algorithm and prints, per task set
// and algorithm, the number of valid plans, the mean plan cost, the mean ratio
// of the plan cost to NeuroShard's on the tasks both solved, and the mean and
// maximum search time. The default task sets are the paper's (T = 10..60 tables
// on 4 and 8 devices) plus T = 1000 tables on 64 devices.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/CostModel/InitCostModels.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Support/Version.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <random>

using namespace llvm;
using namespace neuroshard;

static cl::OptionCategory category("neuroshard-bench options");
static cl::list<unsigned> tableCounts("tables",
                                      cl::desc("Table counts of the task sets"),
                                      cl::CommaSeparated, cl::cat(category));
static cl::list<unsigned>
    deviceCounts("devices", cl::desc("Device counts of the task sets"),
                 cl::CommaSeparated, cl::cat(category));
static cl::opt<unsigned> tasksPerSet("tasks", cl::desc("Tasks per task set"),
                                     cl::init(10), cl::cat(category));
static cl::opt<double>
    memoryGB("memory-gb", cl::desc("Memory per device in GB (2^30 bytes)"),
             cl::init(4.0), cl::cat(category));
static cl::opt<unsigned>
    largeTasks("large-tasks",
               cl::desc("Tasks of 1000 tables on 64 devices (0: none)"),
               cl::init(1), cl::cat(category));
static cl::opt<double> largeMemoryGB(
    "large-memory-gb",
    cl::desc("Memory per device in GB (2^30 bytes) of the large tasks"),
    cl::init(8.0), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the task generator"),
                              cl::init(1), cl::cat(category));
static cl::opt<std::string>
    algorithmList("algorithms",
                  cl::desc("Comma list of algorithms (default: all)"),
                  cl::cat(category));
static cl::opt<bool>
    showErrors("show-errors",
               cl::desc("Print why each failed task failed (to stderr)"),
               cl::cat(category));
static cl::opt<std::string>
    costModelSpec("cost-model",
                  cl::desc("'analytical' or a neural cost model path"),
                  cl::init("analytical"), cl::cat(category));

namespace {
/// Portable random numbers: std:: distributions differ between standard
/// libraries, so tasks are built from raw 64-bit draws.
class TaskRng {
public:
  explicit TaskRng(uint64_t seed) : engine(seed) {}
  double uniform() { return (engine() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {
    double u = 1.0 - uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * uniform());
  }
  uint64_t below(uint64_t n) { return engine() % n; }

private:
  std::mt19937_64 engine;
};

struct TaskSet {
  unsigned numTables;
  unsigned numDevices;
  unsigned numTasks;
  double memoryGB;
};

struct Tally {
  unsigned valid = 0;
  double costSum = 0.0;
  double timeSum = 0.0;
  double timeMax = 0.0;
  unsigned runs = 0;
  /// Sum and count of cost / NeuroShard's cost over tasks both solved.
  double ratioSum = 0.0;
  unsigned ratioCount = 0;
};
} // namespace

/// A table like those of the public DLRM traces: rows log-uniform over
/// 1e2..1e7, a dim from 4..128, heavy-tailed pooling with mean ~16, and an
/// access histogram around the traces' aggregate with a per-table skew.
static TableSpec syntheticTable(TaskRng &rng, unsigned id) {
  static constexpr int64_t dims[] = {4, 8, 16, 32, 64, 128};
  static constexpr double aggregateHist[kNumAccessBins] = {
      0.47,  0.15,  0.14,  0.11,   0.07,   0.03,   0.01,   0.005, 0.003,
      0.002, 0.001, 0.001, 0.0005, 0.0005, 0.0003, 0.0002, 0.0001};
  TableSpec table;
  table.name = formatv("t{0}", id);
  table.rows =
      std::llround(std::exp(rng.uniform(std::log(1e2), std::log(1e7))));
  table.dim = dims[rng.below(std::size(dims))];
  // Log-normal with sigma 1 and mean 16: exp(mu + sigma^2 / 2) = 16.
  table.poolingFactor =
      std::max(1.0, std::exp(std::log(16.0) - 0.5 + rng.normal()));
  double skew = rng.uniform(-0.6, 0.6), sum = 0.0;
  for (unsigned bin = 0; bin < kNumAccessBins; ++bin) {
    table.accessHist[bin] = aggregateHist[bin] * std::exp(skew * bin);
    sum += table.accessHist[bin];
  }
  for (double &bin : table.accessHist)
    bin /= sum;
  return table;
}

static std::vector<TableSpec> syntheticTask(const TaskSet &set, unsigned task) {
  // Each task has its own stream, so adding task sets changes no task.
  TaskRng rng(seed ^ (uint64_t(set.numTables) << 40) ^
              (uint64_t(set.numDevices) << 24) ^ task);
  std::vector<TableSpec> tables;
  for (unsigned t = 0; t < set.numTables; ++t)
    tables.push_back(syntheticTable(rng, t));
  return tables;
}

static Expected<std::vector<Algorithm>> selectedAlgorithms() {
  if (algorithmList.empty())
    return std::vector<Algorithm>(allAlgorithms().begin(),
                                  allAlgorithms().end());
  std::vector<Algorithm> algorithms;
  SmallVector<StringRef> names;
  SplitString(algorithmList, names, ",");
  for (StringRef name : names) {
    std::optional<Algorithm> algorithm = parseAlgorithm(name.trim());
    if (!algorithm)
      return createStringError(inconvertibleErrorCode(),
                               formatv("unknown algorithm '{0}' (expected one "
                                       "of: {1})",
                                       name.trim(), algorithmNameList()));
    algorithms.push_back(*algorithm);
  }
  return algorithms;
}

/// "-" for an empty mean, else the mean with `digits` decimals.
static std::string mean(double sum, unsigned count, int digits) {
  if (count == 0)
    return "-";
  return formatv("{0}", format("%.*f", digits, sum / count)).str();
}

static Error runTaskSet(const TaskSet &set, ArrayRef<Algorithm> algorithms) {
  Topology topology = Topology::uniform(set.numDevices, set.memoryGB);
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel(costModelSpec, topology);
  if (!model)
    return model.takeError();
  std::vector<Tally> tallies(algorithms.size());
  for (unsigned task = 0; task < set.numTasks; ++task) {
    std::vector<TableSpec> tables = syntheticTask(set, task);
    std::vector<std::optional<double>> costs;
    for (auto [algorithm, tally] : zip_equal(algorithms, tallies)) {
      SearchOptions options;
      options.algorithm = algorithm;
      options.seed = task;
      Expected<PlanResult> result =
          planSharding(tables, topology, options, **model);
      ++tally.runs;
      if (!result) {
        std::string message = toString(result.takeError());
        if (showErrors)
          errs() << formatv("T={0} N={1} task {2} {3}: {4}\n", set.numTables,
                            set.numDevices, task, algorithmName(algorithm),
                            message);
        costs.push_back(std::nullopt);
        continue;
      }
      if (Error err = validatePlan(tables, topology, result->plan))
        return err;
      ++tally.valid;
      tally.costSum += result->cost.maxMs;
      tally.timeSum += result->stats.timeMs;
      tally.timeMax = std::max(tally.timeMax, result->stats.timeMs);
      costs.push_back(result->cost.maxMs);
    }
    auto neuroShard = find(algorithms, Algorithm::NeuroShard);
    if (neuroShard == algorithms.end())
      continue;
    std::optional<double> reference = costs[neuroShard - algorithms.begin()];
    for (auto [cost, tally] : zip_equal(costs, tallies))
      if (cost && reference) {
        tally.ratioSum += *cost / *reference;
        ++tally.ratioCount;
      }
  }
  for (auto [algorithm, tally] : zip_equal(algorithms, tallies))
    outs() << formatv(
        "{0,5} {1,4} {2,6} {3,-19} {4,5}/{5,-3} {6,10} {7,10} "
        "{8,10} {9,10}\n",
        set.numTables, set.numDevices, format("%.1f", set.memoryGB),
        algorithmName(algorithm), tally.valid, tally.runs,
        mean(tally.costSum, tally.valid, 4),
        mean(tally.ratioSum, tally.ratioCount, 3),
        mean(tally.timeSum, tally.valid, 2), format("%.2f", tally.timeMax));
  outs().flush();
  return Error::success();
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  neuroshard::registerAvailableCostModels();
  cl::HideUnrelatedOptions(category);
  ::neuroshard::addVersionPrinter();
  ::neuroshard::addDocumentationHelp("results.md");
  cl::ParseCommandLineOptions(argc, argv,
                              "NeuroShard search benchmark on synthetic "
                              "DLRM-like tasks\n");
  Expected<std::vector<Algorithm>> algorithms = selectedAlgorithms();
  if (!algorithms) {
    WithColor::error(errs(), "neuroshard-bench")
        << toString(algorithms.takeError()) << "\n";
    return 1;
  }
  std::vector<unsigned> tableSizes(tableCounts.begin(), tableCounts.end());
  if (tableSizes.empty())
    tableSizes = {10, 20, 30, 40, 50, 60};
  std::vector<unsigned> deviceSizes(deviceCounts.begin(), deviceCounts.end());
  if (deviceSizes.empty())
    deviceSizes = {4, 8};
  std::vector<TaskSet> sets;
  for (unsigned n : deviceSizes)
    for (unsigned t : tableSizes)
      sets.push_back({t, n, tasksPerSet, memoryGB});
  if (largeTasks)
    sets.push_back({1000, 64, largeTasks, largeMemoryGB});

  outs() << formatv("{0,5} {1,4} {2,6} {3,-19} {4,9} {5,10} {6,10} {7,10} "
                    "{8,10}\n",
                    "T", "N", "GB/dev", "algorithm", "valid", "cost (ms)",
                    "vs neuro", "mean (ms)", "max (ms)");
  for (const TaskSet &set : sets)
    if (Error err = runTaskSet(set, *algorithms)) {
      WithColor::error(errs(), "neuroshard-bench")
          << toString(std::move(err)) << "\n";
      return 1;
    }
  return 0;
}
