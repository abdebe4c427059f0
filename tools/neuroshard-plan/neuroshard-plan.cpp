//===- neuroshard-plan.cpp - Shard embedding tables from a JSON task ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Reads a task (tables as JSON), plans their sharding over the given devices
// with planSharding, and writes the plan as JSON or a readable table. Exits
// with 1 and a one-line reason on bad or infeasible input.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/CostModel/InitCostModels.h"
#include "neuroshard/Execution/SetTiming.h"
#include "neuroshard/Planner/HostTierChoice.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/PlanPlot.h"
#include "neuroshard/Planner/PlanReport.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Planner/TaskIO.h"
#include "neuroshard/Selection/PlanVerification.h"
#include "neuroshard/Support/FileIO.h"
#include "neuroshard/Support/Version.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace neuroshard;

static cl::OptionCategory category("neuroshard-plan options");

static cl::opt<std::string> inputPath(cl::Positional,
                                      cl::desc("<task.json> (- for stdin)"),
                                      cl::cat(category));
static cl::opt<unsigned>
    devices("devices",
            cl::desc("Number of devices (default: the task's topology, else "
                     "one per --memory-gb value when several are given, else "
                     "--nodes x 8)"),
            cl::cat(category));
static cl::opt<std::string> memoryGB(
    "memory-gb",
    cl::desc("Memory per device in GB (2^30 bytes): one value for "
             "all devices or a comma list, one per device (default: the "
             "task's, else 16 on one node and 80 on several)"),
    cl::cat(category));
static cl::opt<unsigned>
    nodes("nodes",
          cl::desc("Nodes of the cluster, of equal size; devices are numbered "
                   "node by node (default: the task's, else one node)"),
          cl::cat(category));
static cl::opt<unsigned> devicesPerNode(
    "devices-per-node",
    cl::desc("Devices per node, instead of --nodes (default: the task's)"),
    cl::cat(category));
// Defined before the option whose description refers to it: statics of one
// file are initialised in order.
static const std::string algorithmHelp =
    "Search algorithm: " + algorithmNameList();
static cl::opt<std::string> algorithm("algorithm", cl::desc(algorithmHelp),
                                      cl::init("neuroshard"),
                                      cl::cat(category));
static cl::opt<std::string> shardingTypes(
    "sharding-types",
    cl::desc("The sharding types plans may use, on top of each table's own "
             "'sharding_types': 'default' (every type for GPUs; table_wise "
             "and column_wise for CPU execution), 'all', or a comma list of "
             "table_wise, column_wise, row_wise, table_row_wise, "
             "data_parallel"),
    cl::init("default"), cl::cat(category));
static cl::opt<std::string>
    costModel("cost-model",
              cl::desc("'default' (the shipped trained model of the device "
                       "kind, or the analytical model without LibTorch), "
                       "'analytical', a shipped bundle's name, or the path "
                       "of a neural cost model"),
              cl::init("default"), cl::cat(category));
static cl::opt<double>
    costRisk("cost-risk",
             cl::desc("Standard deviations of the cost model's uncertainty "
                      "added to every compute cost it predicts, in [0, 10] "
                      "(models without an ensemble ignore it)"),
             cl::init(kDefaultRiskMargin), cl::cat(category));
static cl::opt<unsigned> beamWidth("beam-width",
                                   cl::desc("Beam search: states per level"),
                                   cl::init(SearchOptions().beamWidth),
                                   cl::cat(category));
static cl::opt<unsigned>
    candidates("candidates",
               cl::desc("Beam search: largest and most expensive shards "
                        "tried as splits"),
               cl::init(SearchOptions().candidates), cl::cat(category));
static cl::opt<unsigned> maxSteps("max-steps",
                                  cl::desc("Beam search: most levels (0: sized "
                                           "from the problem, stopping when "
                                           "levels bring no progress)"),
                                  cl::init(SearchOptions().maxSteps),
                                  cl::cat(category));
static cl::opt<unsigned> gridSteps("grid-steps",
                                   cl::desc("Grid search: dim thresholds"),
                                   cl::init(SearchOptions().gridSteps),
                                   cl::cat(category));
static cl::opt<double> thresholdMin("threshold-min",
                                    cl::desc("Grid search: lowest threshold"),
                                    cl::init(SearchOptions().thresholdMin),
                                    cl::cat(category));
static cl::opt<double> thresholdMax("threshold-max",
                                    cl::desc("Grid search: highest threshold"),
                                    cl::init(SearchOptions().thresholdMax),
                                    cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the random baseline"),
                              cl::init(SearchOptions().seed),
                              cl::cat(category));
static cl::opt<std::string> verifyTop(
    "verify-top",
    cl::desc("Time the device sets of the K best distinct plans on this "
             "machine's CPU (the table-wise and the best baseline's among "
             "them, and besides them the other baselines' plans priced "
             "within 1.5x the best) and return another than the table-wise "
             "plan (else the "
             "model's best) only if it measures --verify-min-gain faster; for "
             "plans for CPU execution "
             "(--device-kind cpu). 'auto' (the default) "
             "verifies 4 where the cost model describes this machine, 0 "
             "never"),
    cl::value_desc("auto|K"), cl::init("auto"), cl::cat(category));
static cl::opt<double> verifySeconds(
    "verify-seconds",
    cl::desc("Seconds the timed rounds of --verify-top may take: the first "
             "always runs, a later one only where it ends within them; "
             "another plan replaces the table-wise plan only after 3 rounds "
             "(0: one round)"),
    cl::init(VerifyOptions().seconds), cl::cat(category));
static cl::opt<double> verifyMinGain(
    "verify-min-gain",
    cl::desc("How much faster than the table-wise plan (else the model's "
             "best), as a fraction, another candidate of --verify-top must "
             "measure to replace it (default 0.02; raise it on a noisy "
             "host)"),
    cl::init(VerifyOptions().minGain), cl::cat(category));
static cl::opt<double> verifySpreadFactor(
    "verify-spread-factor",
    cl::desc("Standard errors of its rounds' mean ratio (from the spread of "
             "the rounds' ratios) a candidate of --verify-top must gain "
             "beyond, besides --verify-min-gain, to replace the table-wise "
             "plan: a normal tail, shared among the candidates racing and "
             "read off Student's t for the spread's rounds (default 2; 0: "
             "--verify-min-gain alone, for a quiet host)"),
    cl::init(VerifyOptions().spreadFactor), cl::cat(category));
static cl::opt<std::string> verifyExport(
    "verify-export",
    cl::desc("Write the device sets of the --verify-top best candidates to "
             "this directory (sets.json and the neuroshard-cuda-runner "
             "manifest sets.txt) instead of timing them here, to time them "
             "on the GPU the plan is for; then plan again with "
             "--verify-timings"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> verifyTimings(
    "verify-timings",
    cl::desc("Choose among the --verify-top best candidates by the times "
             "recorded in this directory (written by --verify-export, the "
             "sets timed with neuroshard-cuda-runner --collect "
             "samples.jsonl), for any device kind"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> experience(
    "experience",
    cl::desc("JSON Lines file the verified device sets are appended to, for "
             "refining the cost model ('none': nowhere; default: "
             "experience.jsonl in the bundle's directory, for a bundle of "
             "your own)"),
    cl::value_desc("path"), cl::cat(category));
static cl::opt<int64_t>
    batchSize("batch-size",
              cl::desc("Global batch size (default: the task's batch_size, "
                       "else 65536)"),
              cl::cat(category));
static cl::opt<double>
    hbmGBps("hbm-gbps",
            cl::desc("Device memory bandwidth in GB/s (default: the task's, "
                     "else 897)"),
            cl::cat(category));
static cl::opt<double> intraNodeGBps(
    "intra-node-gbps",
    cl::desc("Bandwidth between the devices of a node in GB/s (default: "
             "the task's, else 600)"),
    cl::cat(category));
static cl::alias interconnectGBps(
    "interconnect-gbps",
    cl::desc("Alias for --intra-node-gbps (its name before nodes)"),
    cl::aliasopt(intraNodeGBps), cl::cat(category));
static cl::opt<double> interNodeGBps(
    "inter-node-gbps",
    cl::desc("Bandwidth from a device to the devices of other nodes in GB/s "
             "(default: the task's, else 50)"),
    cl::cat(category));
static cl::opt<double> hostMemoryGB(
    "host-memory-gb",
    cl::desc("Host memory of each node for the tables kept there "
             "('cache_load_factor', or chosen when the devices' memory is too "
             "small), in GB (default: the task's, else 2048: a DGX H100 "
             "node's)"),
    cl::cat(category));
static cl::opt<double> hostGBps(
    "host-gbps",
    cl::desc("Bandwidth between a device and its node's host memory in GB/s "
             "(default: the task's, else 32: PCIe, as TorchRec's planner "
             "prices it)"),
    cl::cat(category));
static cl::opt<std::string> deviceKind(
    "device-kind",
    cl::desc("What the devices are: gpu, cpu (a plan for CPU execution) or "
             "a chip such as h100; it chooses the default cost model "
             "(default: the task's, else gpu)"),
    cl::value_desc("kind"), cl::cat(category));
static cl::opt<std::string> optimizer(
    "optimizer",
    cl::desc("Optimizer whose state shares the devices with the weights: "
             "sgd (none), adagrad (one fp32 value per weight), "
             "rowwise-adagrad (one per row of each shard), adam (two per "
             "weight)"),
    cl::init("sgd"), cl::cat(category));
static cl::opt<double> reservedMemory(
    "reserved-memory",
    cl::desc("Fraction of every device's memory kept free of shards, in "
             "[0, 1) (TorchRec's planner reserves 0.15)"),
    cl::init(0.0), cl::cat(category));
enum class OutputFormat { JSON, Table, TorchRec };
static cl::opt<OutputFormat>
    outputFormat("format", cl::desc("Output format"),
                 cl::values(clEnumValN(OutputFormat::JSON, "json", "JSON"),
                            clEnumValN(OutputFormat::Table, "table",
                                       "readable per-device table"),
                            clEnumValN(OutputFormat::TorchRec, "torchrec",
                                       "TorchRec ParameterSharding fields per "
                                       "table (docs/planner.md)")),
                 cl::init(OutputFormat::JSON), cl::cat(category));
static cl::opt<bool>
    verbose("verbose",
            cl::desc("--format table: add one row per table (size, pooling "
                     "factor, where its columns are)"),
            cl::cat(category));
static cl::opt<bool> modelWarnings(
    "model-warnings",
    cl::desc("Print the cost model's warnings on stderr (default true); "
             "--model-warnings=false silences warnings already acknowledged "
             "(the JSON keeps them)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool>
    progress("progress",
             cl::desc("Print a line to stderr after each step of the search "
                      "(level, states priced, best cost, time)"),
             cl::cat(category));
static cl::opt<std::string> pricePath(
    "price",
    cl::desc("Price this plan (plan JSON, or --format torchrec output) with "
             "the cost model and topology instead of searching; it is "
             "checked and printed as a plan the search made"),
    cl::value_desc("plan.json"), cl::cat(category));
static cl::opt<std::string>
    outputPath("output",
               cl::desc("Output file (default: stdout); -o for short"),
               cl::value_desc("file"), cl::init("-"), cl::cat(category));
static cl::alias outputAlias("o", cl::desc("Alias for --output"),
                             cl::aliasopt(outputPath), cl::cat(category));
static cl::opt<std::string>
    plotPath("plot",
             cl::desc("Also draw the plan as an SVG picture: per-device time "
                      "and memory, split by table (docs/planner.md)"),
             cl::value_desc("file.svg"), cl::cat(category));

static Error optionError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// An option's value, if it was given.
template <typename T> static std::optional<T> given(const cl::opt<T> &option) {
  if (!option.getNumOccurrences())
    return std::nullopt;
  return option.getValue();
}

/// The topology the options describe over the task's; `planDevices`, the
/// device count of a plan to price, stands in for --devices when nothing
/// else gives the count.
static Expected<Topology> buildTopology(const PlanningTask &task,
                                        std::optional<unsigned> planDevices) {
  TopologyOptions options;
  options.devices = given(devices);
  options.memoryGB = given(memoryGB);
  options.nodes = given(nodes);
  options.devicesPerNode = given(devicesPerNode);
  options.hbmGBps = given(hbmGBps);
  options.intraNodeGBps = given(intraNodeGBps);
  options.interNodeGBps = given(interNodeGBps);
  options.hostMemoryGB = given(hostMemoryGB);
  options.hostGBps = given(hostGBps);
  options.deviceKind = given(deviceKind);
  options.optimizer = optimizer;
  options.reservedFraction = reservedMemory;
  Expected<Topology> topology = makeTopology(options, task.topology, "the task",
                                             planDevices, commandLineSpelling);
  if (!topology)
    return topology.takeError();
  if (batchSize.getNumOccurrences())
    topology->batchSize = batchSize;
  else if (task.batchSize)
    topology->batchSize = *task.batchSize;
  return topology;
}

static Expected<SearchOptions> buildSearchOptions(const Topology &topology) {
  SearchOptions values;
  values.beamWidth = beamWidth;
  values.candidates = candidates;
  values.maxSteps = maxSteps;
  values.gridSteps = gridSteps;
  values.thresholdMin = thresholdMin;
  values.thresholdMax = thresholdMax;
  values.seed = seed;
  Expected<ShardingKindSet> kinds = resolveShardingKinds(
      shardingTypes, topology.deviceKind, commandLineSpelling);
  if (!kinds)
    return optionError(toString(kinds.takeError()));
  values.shardingKinds = *kinds;
  Expected<SearchOptions> options =
      makeSearchOptions(algorithm, values, progress);
  if (!options)
    return optionError("--" + toString(options.takeError()));
  return options;
}

static Error run() {
  Expected<PlanningTask> task = readTaskFile(inputPath);
  if (!task)
    return task.takeError();
  std::optional<PlanFile> given;
  if (!pricePath.empty()) {
    Expected<PlanFile> plan = readPlanFile(pricePath, task->tables);
    if (!plan)
      return plan.takeError();
    given = std::move(*plan);
  }
  Expected<Topology> topology = buildTopology(
      *task, given ? std::optional(given->devices) : std::nullopt);
  if (!topology)
    return topology.takeError();
  if (Error err = setHistogramBatch(*task, topology->batchSize))
    return err;
  Expected<SearchOptions> options = buildSearchOptions(*topology);
  if (!options)
    return options.takeError();
  if (verbose && outputFormat != OutputFormat::Table)
    return optionError("--verbose adds a row per table to --format table; "
                       "the JSON and TorchRec formats list every shard "
                       "already");
  Expected<std::optional<unsigned>> verifyCount = parseVerifyTop(verifyTop);
  if (!verifyCount)
    return optionError("--verify-top: " + toString(verifyCount.takeError()));
  if (given && verifyCount->value_or(0))
    return optionError("--verify-top: a plan given with --price is priced, "
                       "not chosen among candidates");
  if (given && (!verifyExport.empty() || !verifyTimings.empty()))
    return optionError(
        formatv("--{0}: a plan given with --price is priced, "
                "not chosen among candidates",
                verifyExport.empty() ? "verify-timings" : "verify-export")
            .str());
  if (std::optional<std::string> problem = checkRiskMargin(costRisk))
    return optionError("--cost-risk: " + *problem);
  CostModelOptions modelOptions;
  modelOptions.riskMargin = costRisk;
  Expected<std::unique_ptr<CostModel>> model =
      createCostModel(costModel, *topology, modelOptions);
  if (!model)
    return model.takeError();
  // A task too large for the devices keeps some tables in host memory.
  Expected<std::vector<TableSpec>> planned =
      tablesForPlanning(task->tables, *topology, given ? &*given : nullptr);
  if (!planned)
    return planned.takeError();
  std::vector<TableSpec> tables = std::move(*planned);
  Expected<PlanResult> result = [&]() -> Expected<PlanResult> {
    if (given)
      return pricePlan(tables, *topology, *given, **model);
    VerifyRequest request;
    request.top = *verifyCount;
    request.options.seconds = verifySeconds;
    request.options.minGain = verifyMinGain;
    request.options.spreadFactor = verifySpreadFactor;
    request.experience = experience;
    request.exportDir = verifyExport;
    request.timingsDir = verifyTimings;
    return planWithVerification(tables, *topology, *options, **model, request,
                                commandLineSpelling);
  }();
  if (!result)
    return result.takeError();
  if (modelWarnings)
    for (const std::string &warning : result->warnings)
      WithColor::warning(errs(), "neuroshard-plan") << warning << "\n";

  if (!plotPath.empty())
    if (Error err = writeOutputFile(plotPath, [&](raw_ostream &os) {
          writePlanSVG(os, tables, *topology, *result);
        }))
      return err;
  return writeOutputFile(outputPath, [&](raw_ostream &os) {
    if (outputFormat == OutputFormat::JSON)
      writePlanJSON(os, tables, *topology, *result);
    else if (outputFormat == OutputFormat::TorchRec)
      writeTorchRecPlan(os, tables, *topology, *result);
    else
      printPlanTable(os, tables, *topology, *result, verbose);
  });
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  neuroshard::registerAvailableCostModels();
  neuroshard::execution::registerKernelSetTimer();
  cl::HideUnrelatedOptions(category);
  ::neuroshard::addVersionPrinter();
  ::neuroshard::addDocumentationHelp("planner.md");
  cl::ParseCommandLineOptions(argc, argv,
                              "NeuroShard embedding table sharding planner\n");
  // With no task named, say how to name one rather than wait on a terminal.
  if (inputPath.empty()) {
    errs() << "usage: neuroshard-plan [options] <task.json>\n"
              "  '-' reads the task from standard input; --help lists the "
              "options\n";
    return 1;
  }
  if (Error err = run()) {
    WithColor::error(errs(), "neuroshard-plan")
        << toString(std::move(err)) << "\n";
    return 1;
  }
  return 0;
}
