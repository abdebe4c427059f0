//===- PlannerBindings.cpp - Tasks and the planner in Python --------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// plan() is neuroshard-plan as a function: the same task and plan readers,
// options, cost models, planSharding and pricePlan, and the same output (the
// plan JSON as a dict, the TorchRec plan as a dict, or the readable table as
// text). Tasks and plans given as Python objects go through the JSON
// readers, so that they are checked, and refused, in their words.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/Planner/HostTierChoice.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/PlanReport.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Planner/TaskIO.h"
#include "neuroshard/Selection/PlanVerification.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <pybind11/stl.h>

#include <limits>

namespace py = pybind11;
using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::python;

static NeuroShardError optionError(const Twine &message) {
  return NeuroShardError(message.str());
}

/// The text of a path given as a str or an os.PathLike.
static std::string pathText(const py::handle &path) {
  return py::module_::import("os").attr("fspath")(path).cast<std::string>();
}

static bool isPath(const py::handle &value) {
  return py::isinstance<py::str>(value) ||
         py::isinstance(value, py::module_::import("os").attr("PathLike"));
}

static std::string typeName(const py::handle &value) {
  return py::str(py::type::of(value).attr("__name__")).cast<std::string>();
}

/// `document` as JSON text; `what` names it in errors. NumPy numbers and
/// arrays are written as the numbers they hold.
static std::string toJSON(const py::handle &document, StringRef what) {
  std::string name = what.str();
  py::cpp_function plain([name](py::object value) -> py::object {
    if (py::hasattr(value, "tolist"))
      return value.attr("tolist")();
    throw py::type_error(formatv("a {0} holds numbers, strings, lists and "
                                 "dicts, not {1}",
                                 name, typeName(value))
                             .str());
  });
  return py::str(py::module_::import("json").attr("dumps")(
      document, py::arg("default") = plain));
}

/// A task from what plan() and the Task reader accept: a Task, the path of a
/// task file, a task object ({"tables": [...], "batch_size": B}) or a list of
/// tables.
static PlanningTask toTask(const py::handle &task) {
  if (py::isinstance<PlanningTask>(task))
    return task.cast<PlanningTask>();
  if (isPath(task))
    return unwrap(readTaskFile(pathText(task)));
  if (py::isinstance<py::dict>(task))
    return unwrap(parseTaskJSON(toJSON(task, "task")));
  if (py::isinstance<py::list>(task) || py::isinstance<py::tuple>(task))
    return unwrap(
        parseTaskJSON(toJSON(py::dict(py::arg("tables") = task), "task")));
  throw py::type_error(formatv("a task is a Task, the path of a task file, a "
                               "dict {{\"tables\": [...]} or a list of "
                               "tables, not {0}",
                               typeName(task))
                           .str());
}

/// A plan to price, of `tables`: the path of a plan file, or a plan as a
/// dict (the plan JSON or the TorchRec format, as plan() returns them).
static PlanFile toPlanFile(const py::handle &plan, ArrayRef<TableSpec> tables) {
  if (isPath(plan))
    return unwrap(readPlanFile(pathText(plan), tables));
  if (py::isinstance<py::dict>(plan))
    return unwrap(parsePlanJSON(toJSON(plan, "plan"), tables));
  throw py::type_error(formatv("a plan to price is the path of a plan file "
                               "or a plan dict, not {0}",
                               typeName(plan))
                           .str());
}

/// memory_gb as the comma list parseMemoryGBList reads: a number, a sequence
/// of numbers, or the list itself as text.
static std::string memoryList(const py::handle &memoryGB) {
  if (py::isinstance<py::str>(memoryGB))
    return memoryGB.cast<std::string>();
  auto number = [](const py::handle &value) {
    if (py::isinstance<py::bool_>(value) ||
        !(py::isinstance<py::int_>(value) ||
          py::isinstance<py::float_>(value) || py::hasattr(value, "__float__")))
      throw py::type_error(formatv("memory_gb: expected numbers of GB, got {0}",
                                   py::repr(value).cast<std::string>())
                               .str());
    return py::repr(py::float_(py::reinterpret_borrow<py::object>(value)))
        .cast<std::string>();
  };
  if (!py::isinstance<py::sequence>(memoryGB))
    return number(memoryGB);
  SmallVector<std::string> values;
  for (const py::handle &value : memoryGB.cast<py::sequence>())
    values.push_back(number(value));
  return join(values, ",");
}

/// `value` as an unsigned option, or an error naming it.
static unsigned unsignedOption(StringRef name, int64_t value) {
  if (value < 0 || value > int64_t(std::numeric_limits<unsigned>::max()))
    throw optionError(formatv("{0}: expected a non-negative integer below "
                              "2^32, got {1}",
                              name, value));
  return static_cast<unsigned>(value);
}

namespace {
/// plan()'s options, as neuroshard-plan's command line gives them.
struct PlanOptions {
  TopologyOptions topology;
  std::string algorithm;
  std::string costModel;
  double costRisk = kDefaultRiskMargin;
  std::optional<int64_t> batchSize;
  std::string shardingTypes = "default";
  /// The search's numeric settings (makeSearchOptions takes the rest).
  SearchOptions search;
  VerifyRequest verify;
};
} // namespace

/// verify_top: "auto" (nullopt) or a count.
static std::optional<unsigned> verifyTopOption(const py::handle &value) {
  if (py::isinstance<py::str>(value) ||
      (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value))) {
    Expected<std::optional<unsigned>> count =
        parseVerifyTop(py::str(value).cast<std::string>());
    if (!count)
      throw optionError("verify_top: " + toString(count.takeError()));
    return *count;
  }
  throw py::type_error(formatv("verify_top: expected 'auto' or a count, not "
                               "{0}",
                               typeName(value))
                           .str());
}

/// A count option given as a Python int, if given.
static std::optional<unsigned> countOption(StringRef name,
                                           std::optional<int64_t> value) {
  if (!value)
    return std::nullopt;
  return unsignedOption(name, *value);
}

/// The topology of `options` for `task`, as neuroshard-plan builds it; a
/// plan to price gives the device count when nothing else does.
static Topology buildTopology(const PlanOptions &options,
                              const PlanningTask &task,
                              std::optional<unsigned> planDevices) {
  Topology topology =
      unwrap(makeTopology(options.topology, task.topology, "the task",
                          planDevices, pythonSpelling));
  if (options.batchSize)
    topology.batchSize = *options.batchSize;
  else if (task.batchSize)
    topology.batchSize = *task.batchSize;
  return topology;
}

enum class PlanFormat { JSON, Table, TorchRec };

static py::object plan(const py::handle &taskObject,
                       const py::handle &planToPrice, PlanOptions options,
                       const std::string &formatName, bool verbose) {
  std::optional<PlanFormat> format =
      StringSwitch<std::optional<PlanFormat>>(formatName)
          .Case("json", PlanFormat::JSON)
          .Case("table", PlanFormat::Table)
          .Case("torchrec", PlanFormat::TorchRec)
          .Default(std::nullopt);
  if (!format)
    throw optionError("format: expected 'json', 'table' or 'torchrec', got '" +
                      formatName + "'");
  if (verbose && *format != PlanFormat::Table)
    throw optionError("verbose adds a row per table to format='table'; the "
                      "JSON and TorchRec formats list every shard already");
  PlanningTask task = toTask(taskObject);
  std::optional<PlanFile> given;
  if (!planToPrice.is_none())
    given = toPlanFile(planToPrice, task.tables);
  Topology topology = buildTopology(
      options, task, given ? std::optional(given->devices) : std::nullopt);
  throwIfError(setHistogramBatch(task, topology.batchSize));
  Expected<ShardingKindSet> kinds = resolveShardingKinds(
      options.shardingTypes, topology.deviceKind, pythonSpelling);
  if (!kinds)
    throw optionError(toString(kinds.takeError()));
  options.search.shardingKinds = *kinds;
  SearchOptions search = unwrap(
      makeSearchOptions(options.algorithm, options.search, /*progress=*/false));
  if (given && options.verify.top.value_or(0))
    throw optionError("verify_top: a plan given with price is priced, not "
                      "chosen among candidates");
  if (given && options.verify.timedElsewhere())
    throw optionError(std::string(options.verify.exportDir.empty()
                                      ? "verify_timings"
                                      : "verify_export") +
                      ": a plan given with price is priced, not chosen among "
                      "candidates");
  if (std::optional<std::string> problem = checkRiskMargin(options.costRisk))
    throw optionError("cost_risk: " + *problem);

  std::string output;
  {
    // Loading a model and searching take no Python objects; an error unwinds
    // through `release`, which takes the interpreter back first.
    py::gil_scoped_release release;
    CostModelOptions modelOptions;
    modelOptions.riskMargin = options.costRisk;
    std::unique_ptr<CostModel> model =
        unwrap(createCostModel(options.costModel, topology, modelOptions));
    // A task too large for the devices keeps some tables in host memory.
    std::vector<TableSpec> tables = unwrap(
        tablesForPlanning(task.tables, topology, given ? &*given : nullptr));
    PlanResult result =
        unwrap(given ? pricePlan(tables, topology, *given, *model)
                     : planWithVerification(tables, topology, search, *model,
                                            options.verify, pythonSpelling));
    raw_string_ostream os(output);
    if (*format == PlanFormat::JSON)
      writePlanJSON(os, tables, topology, result);
    else if (*format == PlanFormat::TorchRec)
      writeTorchRecPlan(os, tables, topology, result);
    else
      printPlanTable(os, tables, topology, result, verbose,
                     /*withWarnings=*/true);
  }
  if (*format == PlanFormat::Table)
    return py::str(output);
  return py::module_::import("json").attr("loads")(output);
}

void neuroshard::python::populatePlanner(py::module_ &m) {
  py::class_<TableSpec>(m, "Table",
                        "One table of a task, as the task reader read it.")
      .def_readonly("name", &TableSpec::name)
      .def_readonly("rows", &TableSpec::rows)
      .def_readonly("dim", &TableSpec::dim)
      .def_readonly("element_bytes", &TableSpec::elementBytes)
      .def_readonly("pooling_factor", &TableSpec::poolingFactor)
      .def_readonly("access_hist", &TableSpec::accessHist)
      .def_readonly("pinned_device", &TableSpec::pinnedDevice)
      .def_readonly("no_split", &TableSpec::noSplit)
      .def_property_readonly(
          "features",
          [](const TableSpec &table) {
            std::vector<std::pair<double, std::array<double, kNumAccessBins>>>
                features;
            for (unsigned i = 0; i < table.numFeatures(); ++i)
              features.emplace_back(table.feature(i).poolingFactor,
                                    table.feature(i).accessHist);
            return features;
          },
          "(pooling_factor, access_hist) of every feature that looks the "
          "table up, its own first.")
      .def_property_readonly("bytes", &TableSpec::bytes)
      .def("__repr__", [](const TableSpec &table) {
        return formatv("Table('{0}', rows={1}, dim={2})", table.name,
                       table.rows, table.dim)
            .str();
      });

  py::class_<PlanningTask>(m, "Task",
                           "A task: the tables to place and, if given, the "
                           "batch size (parse_task, read_task).")
      .def_readonly("tables", &PlanningTask::tables)
      .def_readonly("batch_size", &PlanningTask::batchSize)
      .def("__len__",
           [](const PlanningTask &task) { return task.tables.size(); })
      .def("__repr__", [](const PlanningTask &task) {
        return formatv("Task({0} tables, batch_size={1})", task.tables.size(),
                       task.batchSize ? std::to_string(*task.batchSize)
                                      : std::string("None"))
            .str();
      });

  m.def(
      "parse_task",
      [](const std::string &text) { return unwrap(parseTaskJSON(text)); },
      py::arg("text"),
      "The task in the JSON text `text` (docs/planner.md); NeuroShardError "
      "names the field, the table and the value at fault.");
  m.def(
      "read_task",
      [](const py::handle &path) {
        return unwrap(readTaskFile(pathText(path)));
      },
      py::arg("path"), "The task in the file `path` (parse_task).");
  std::vector<std::string> algorithms;
  for (Algorithm algorithm : allAlgorithms())
    algorithms.push_back(algorithmName(algorithm).str());
  m.attr("ALGORITHMS") = py::tuple(py::cast(algorithms));
  m.attr("DEFAULT_COST_MODEL") = kDefaultCostModel;
  m.attr("MODELS_DIR_VARIABLE") = kModelsDirVariable;
  m.def("default_model_search_path", &defaultModelSearchPath,
        "Where cost_model='default' looks for the shipped bundle, in order.");
  m.def(
      "find_default_model",
      [](const std::string &kind) {
        if (RuleViolation v = checkDeviceKind(kind))
          throw py::value_error("device_kind: " + *v);
        return findDefaultModel(kind);
      },
      py::arg("device_kind") = kDefaultDeviceKind,
      "The directory of the shipped default bundle for plans of device kind "
      "device_kind ('gpu', 'cpu' or a chip), or '' when it is in none of "
      "default_model_search_path().");
  m.attr("MAX_VERIFY_TOP") = kMaxKeepCandidates;
  m.attr("DEFAULT_VERIFY_TOP") = kDefaultVerifyTop;
  m.attr("DEFAULT_VERIFY_SECONDS") = VerifyOptions().seconds;
  m.attr("MAX_VERIFY_SECONDS") = kMaxVerifySeconds;
  m.attr("DEFAULT_VERIFY_MIN_GAIN") = VerifyOptions().minGain;
  m.attr("MAX_VERIFY_MIN_GAIN") = kMaxVerifyMinGain;
  m.attr("DEFAULT_VERIFY_SPREAD_FACTOR") = VerifyOptions().spreadFactor;
  m.attr("MAX_VERIFY_SPREAD_FACTOR") = kMaxVerifySpreadFactor;
  m.attr("DEFAULT_INPUT_DRAWS") = kDefaultInputDraws;
  m.def(
      "parse_verify_top",
      [](const py::handle &value) -> py::object {
        std::optional<unsigned> count = verifyTopOption(value);
        if (!count)
          return py::str("auto");
        return py::int_(*count);
      },
      py::arg("value"),
      "A verify_top value as plan() reads it: 'auto', or a count from 0 to "
      "MAX_VERIFY_TOP (as an int or its text); raises NeuroShardError "
      "naming the value otherwise.");
  m.def("neural_cost_models_built", &neuralCostModelsBuilt,
        "Whether this build has the LibTorch-backed neural cost model.");

  SearchOptions search;
  m.def(
      "plan",
      [](const py::handle &task, const py::handle &price,
         std::optional<int64_t> devices, const py::handle &memoryGB,
         std::optional<int64_t> nodes, std::optional<int64_t> devicesPerNode,
         std::string algorithm, const py::handle &costModel, double costRisk,
         std::optional<int64_t> batchSize, std::string optimizer,
         double reservedMemory, std::optional<double> hbmGBps,
         std::optional<double> intraNodeGBps,
         std::optional<double> interNodeGBps,
         std::optional<double> interconnectGBps,
         std::optional<double> hostMemoryGB, std::optional<double> hostGBps,
         std::optional<std::string> deviceKind, int64_t beamWidth,
         int64_t candidates, int64_t maxSteps, int64_t gridSteps,
         double thresholdMin, double thresholdMax, uint64_t seed,
         const py::handle &verifyTop, double verifySeconds,
         double verifyMinGain, double verifySpreadFactor,
         const py::handle &experience, const py::handle &verifyExport,
         const py::handle &verifyTimings, const std::string &shardingTypes,
         const std::string &format, bool verbose) {
        PlanOptions options;
        options.topology.devices = countOption("devices", devices);
        if (!memoryGB.is_none())
          options.topology.memoryGB = memoryList(memoryGB);
        options.topology.nodes = countOption("nodes", nodes);
        options.topology.devicesPerNode =
            countOption("devices_per_node", devicesPerNode);
        options.topology.hbmGBps = hbmGBps;
        if (intraNodeGBps && interconnectGBps)
          throw optionError("intra_node_gbps and interconnect_gbps (its "
                            "former name) were both given");
        options.topology.intraNodeGBps =
            intraNodeGBps ? intraNodeGBps : interconnectGBps;
        options.topology.interNodeGBps = interNodeGBps;
        options.topology.hostMemoryGB = hostMemoryGB;
        options.topology.hostGBps = hostGBps;
        options.topology.deviceKind = std::move(deviceKind);
        options.topology.optimizer = std::move(optimizer);
        options.topology.reservedFraction = reservedMemory;
        options.algorithm = std::move(algorithm);
        options.costModel = pathText(costModel);
        options.costRisk = costRisk;
        options.batchSize = batchSize;
        options.search.beamWidth = unsignedOption("beam_width", beamWidth);
        options.search.candidates = unsignedOption("candidates", candidates);
        options.search.maxSteps = unsignedOption("max_steps", maxSteps);
        options.search.gridSteps = unsignedOption("grid_steps", gridSteps);
        options.search.thresholdMin = thresholdMin;
        options.search.thresholdMax = thresholdMax;
        options.search.seed = seed;
        options.verify.top = verifyTopOption(verifyTop);
        options.verify.options.seconds = verifySeconds;
        options.verify.options.minGain = verifyMinGain;
        options.verify.options.spreadFactor = verifySpreadFactor;
        if (!experience.is_none())
          options.verify.experience = pathText(experience);
        if (!verifyExport.is_none())
          options.verify.exportDir = pathText(verifyExport);
        if (!verifyTimings.is_none())
          options.verify.timingsDir = pathText(verifyTimings);
        options.shardingTypes = shardingTypes;
        return plan(task, price, std::move(options), format, verbose);
      },
      py::arg("task"), py::kw_only(), py::arg("price") = py::none(),
      py::arg("devices") = py::none(), py::arg("memory_gb") = py::none(),
      py::arg("nodes") = py::none(), py::arg("devices_per_node") = py::none(),
      py::arg("algorithm") = "neuroshard",
      py::arg("cost_model") = kDefaultCostModel,
      py::arg("cost_risk") = kDefaultRiskMargin,
      py::arg("batch_size") = py::none(), py::arg("optimizer") = "sgd",
      py::arg("reserved_memory") = 0.0, py::arg("hbm_gbps") = py::none(),
      py::arg("intra_node_gbps") = py::none(),
      py::arg("inter_node_gbps") = py::none(),
      py::arg("interconnect_gbps") = py::none(),
      py::arg("host_memory_gb") = py::none(), py::arg("host_gbps") = py::none(),
      py::arg("device_kind") = py::none(),
      py::arg("beam_width") = search.beamWidth,
      py::arg("candidates") = search.candidates,
      py::arg("max_steps") = search.maxSteps,
      py::arg("grid_steps") = search.gridSteps,
      py::arg("threshold_min") = search.thresholdMin,
      py::arg("threshold_max") = search.thresholdMax,
      py::arg("seed") = search.seed, py::arg("verify_top") = "auto",
      py::arg("verify_seconds") = VerifyOptions().seconds,
      py::arg("verify_min_gain") = VerifyOptions().minGain,
      py::arg("verify_spread_factor") = VerifyOptions().spreadFactor,
      py::arg("experience") = py::none(), py::arg("verify_export") = py::none(),
      py::arg("verify_timings") = py::none(),
      py::arg("sharding_types") = "default", py::arg("format") = "json",
      py::arg("verbose") = false,
      R"(Plans the sharding of a task's tables, as neuroshard-plan does.

task: a Task, the path of a task file, a dict {"tables": [...],
"batch_size": B, "topology": {...}} or a list of table dicts
(docs/planner.md). The options are neuroshard-plan's, with '_' for '-', and
override the task's topology: price (a plan to price instead of searching:
the path of a plan file, or a plan dict in the plan JSON or the TorchRec
format), devices (default: the task's, else one per memory_gb value when
there are several, else the priced plan's, else nodes x 8), memory_gb (GB
per device: one number, or one per device; default 16 on one node, 80 on
several), nodes or devices_per_node (the cluster's shape; default one
node), device_kind ('gpu', 'cpu' or a chip such as 'h100'; default the
task's, else 'gpu'), algorithm, cost_model ('default': the shipped model of
the device kind; 'analytical', a shipped bundle's name or the path of a
neural bundle), cost_risk, batch_size (default: the task's, else 65536),
optimizer, reserved_memory, hbm_gbps, intra_node_gbps (interconnect_gbps is
its former name), inter_node_gbps, host_memory_gb and host_gbps (a node's
host memory for tables too large for the devices, and the link to it;
docs/planner.md, "Tables in host memory"), and the search's beam_width, candidates,
max_steps, grid_steps, threshold_min, threshold_max and seed. Measured
selection (docs/planner.md): verify_top ('auto', the default: 4 candidates
where the plan is for device_kind 'cpu' and the cost model describes this
machine; a count; 0 never), verify_seconds, verify_min_gain (how much
faster than the table-wise plan, as a fraction, another candidate must
measure to replace it; default 0.02), verify_spread_factor (the standard
errors of its rounds' mean ratio it must gain beyond besides that; default
2, 0 for a quiet host), and experience (the file the
timed sets are appended to; 'none' for nowhere; default: the bundle's
experience.jsonl, for a bundle of your own); for a GPU plan, verify_export
(a directory to write the candidates' device sets to, for timing with
neuroshard-cuda-runner where the GPU is) and verify_timings (that directory
once timed: the candidates are chosen by its times).

Returns what neuroshard-plan --format FORMAT writes: for 'json' the plan as
a dict (its "warnings" hold what the cost model cannot vouch for), for
'torchrec' the TorchRec plan as a dict, for 'table' the readable table (one
row per table too with verbose=True). Raises NeuroShardError, a ValueError,
with the planner's message for a bad task, plan or option and for a problem
with no valid plan.)");
}
