//===- PlanIO.cpp - Task JSON in, plan JSON and tables out ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/PlanVerification.h"
#include "neuroshard/Planner/RecordedTimings.h"
#include "neuroshard/Support/FileIO.h"
#include "neuroshard/Support/JSONFields.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace llvm;

namespace neuroshard {

/// The "format" of writeTorchRecPlan's files.
static constexpr StringLiteral kTorchRecFormat = "neuroshard-torchrec-1";

Expected<std::vector<double>> parseMemoryGBList(StringRef list) {
  SmallVector<StringRef> fields;
  list.split(fields, ',');
  std::vector<double> capacities;
  for (StringRef field : fields) {
    double gb = 0.0;
    if (field.trim().getAsDouble(gb))
      return createStringError(
          inconvertibleErrorCode(),
          formatv("'{0}' is not a number of GB", field.trim()));
    if (RuleViolation v = checkCapacityGB(gb))
      return createStringError(inconvertibleErrorCode(),
                               formatv("'{0}': {1}", field.trim(), *v));
    capacities.push_back(gb);
  }
  return capacities;
}

//===----------------------------------------------------------------------===//
// Task input
//===----------------------------------------------------------------------===//

/// Reads the statistics of one feature from `fields` (a table or an entry
/// of its `features`): `pooling_factor`, and `access_hist` with its
/// `hist_batch_size` or else `zipf_alpha`.
static Error readFeatureStats(const JSONFields &fields, FeatureStats &stats,
                              HistogramSource &source) {
  const json::Value *field;
  if (Error err = fields.require("pooling_factor", field))
    return err;
  if (Error err =
          fields.readNumber("pooling_factor", *field, stats.poolingFactor))
    return err;
  if (Error err = fields.check(checkPoolingFactor(stats.poolingFactor)))
    return err;

  if (const json::Value *alpha = fields.find("zipf_alpha")) {
    if (fields.find("access_hist"))
      return fields.fail("give 'access_hist' or 'zipf_alpha', not both: the "
                         "skew only stands in for a missing histogram");
    if (Error err = fields.readNumber("zipf_alpha", *alpha, source.zipfAlpha))
      return err;
    return fields.check(checkZipfAlpha(source.zipfAlpha));
  }
  field = fields.find("access_hist");
  if (!field) {
    if (fields.find("hist_batch_size"))
      return fields.fail("'hist_batch_size' names the batch of an "
                         "'access_hist', which is not given");
    return Error::success();
  }
  const json::Array *hist = field->getAsArray();
  if (!hist)
    return fields.fail(formatv("'access_hist' must be an array of {0} "
                               "numbers, got {1}",
                               kNumAccessBins, *field));
  std::vector<double> bins;
  for (auto [bin, entry] : enumerate(*hist)) {
    std::optional<double> number = entry.getAsNumber();
    if (!number)
      return fields.fail(formatv(
          "'access_hist' bin {0} must be a number, got {1}", bin, entry));
    bins.push_back(*number);
  }
  if (Error err = fields.check(checkAccessHistogram(bins)))
    return err;
  source.given.emplace();
  llvm::copy(bins, source.given->begin());
  if (const json::Value *batch = fields.find("hist_batch_size")) {
    int64_t batchSize;
    if (Error err = fields.readInteger("hist_batch_size", *batch, batchSize))
      return err;
    if (batchSize <= 0)
      return fields.fail(
          formatv("'hist_batch_size' must be positive, got {0}", batchSize));
    source.batchSize = batchSize;
  }
  return Error::success();
}

static Expected<TableSpec> parseTable(const json::Value &value, size_t index,
                                      std::vector<HistogramSource> &sources) {
  std::string where = formatv("tables[{0}]", index).str();
  const json::Object *object = value.getAsObject();
  if (!object)
    return createStringError(inconvertibleErrorCode(),
                             where + ": expected an object");
  if (std::optional<StringRef> name = object->getString("name"))
    where += formatv(" ('{0}')", *name).str();
  JSONFields fields(*object, where);
  if (Error err = fields.checkKnown(
          {"name", "rows", "dim", "dtype", "pooling_factor", "access_hist",
           "hist_batch_size", "zipf_alpha", "features", "pinned_device",
           "no_split", "sharding_types"}))
    return std::move(err);

  TableSpec table;
  const json::Value *field;
  if (Error err = fields.require("name", field))
    return std::move(err);
  std::optional<StringRef> name = field->getAsString();
  if (!name || name->empty())
    return fields.fail(
        formatv("'name' must be a non-empty string, got {0}", *field));
  if (Error err = fields.check(checkTableName(*name)))
    return std::move(err);
  table.name = name->str();

  if (Error err = fields.require("rows", field))
    return std::move(err);
  if (Error err = fields.readInteger("rows", *field, table.rows))
    return std::move(err);
  if (Error err = fields.check(checkRows(table.rows)))
    return std::move(err);

  if (Error err = fields.require("dim", field))
    return std::move(err);
  if (Error err = fields.readInteger("dim", *field, table.dim))
    return std::move(err);
  if (Error err = fields.check(checkDim(table.dim)))
    return std::move(err);

  if (const json::Value *dtype = fields.find("dtype")) {
    std::optional<StringRef> text = dtype->getAsString();
    if (!text)
      return fields.fail(formatv("'dtype' must be a string, got {0}", *dtype));
    if (Error err = fields.check(checkElementType(*text)))
      return std::move(err);
    table.elementBytes = *elementTypeBytes(*text);
  }
  if (Error err = fields.check(
          checkTableBytes(table.rows, table.dim, table.elementBytes)))
    return std::move(err);

  if (const json::Value *features = fields.find("features")) {
    for (StringRef key :
         {"pooling_factor", "access_hist", "hist_batch_size", "zipf_alpha"})
      if (fields.find(key))
        return fields.fail(formatv("give '{0}' either for the table or per "
                                   "entry of 'features', not both",
                                   key));
    const json::Array *list = features->getAsArray();
    if (!list || list->empty())
      return fields.fail(formatv("'features' must be a non-empty array of "
                                 "objects, got {0}",
                                 *features));
    for (auto [f, entry] : enumerate(*list)) {
      std::string at = formatv("{0}: features[{1}]", fields.name(), f).str();
      const json::Object *object = entry.getAsObject();
      if (!object)
        return createStringError(inconvertibleErrorCode(),
                                 at + ": expected an object");
      JSONFields feature(*object, at);
      if (Error err =
              feature.checkKnown({"name", "pooling_factor", "access_hist",
                                  "hist_batch_size", "zipf_alpha"}))
        return std::move(err);
      if (const json::Value *name = feature.find("name");
          name && !name->getAsString())
        return feature.fail(formatv("'name' must be a string, got {0}", *name));
      FeatureStats stats;
      if (Error err = readFeatureStats(feature, stats, sources.emplace_back()))
        return std::move(err);
      if (f == 0) {
        table.poolingFactor = stats.poolingFactor;
        table.accessHist = stats.accessHist;
      } else {
        table.moreFeatures.push_back(stats);
      }
    }
  } else {
    FeatureStats stats;
    if (Error err = readFeatureStats(fields, stats, sources.emplace_back()))
      return std::move(err);
    table.poolingFactor = stats.poolingFactor;
    table.accessHist = stats.accessHist;
  }

  if (const json::Value *pinned = fields.find("pinned_device")) {
    int64_t device;
    if (Error err = fields.readInteger("pinned_device", *pinned, device))
      return std::move(err);
    // The device count is known only later (validateProblem checks it);
    // here the device must at least fit a topology.
    if (Error err = fields.check(checkPinnedDevice(device, kMaxDevices)))
      return std::move(err);
    table.pinnedDevice = static_cast<unsigned>(device);
  }
  if (const json::Value *noSplit = fields.find("no_split")) {
    std::optional<bool> flag = noSplit->getAsBoolean();
    if (!flag)
      return fields.fail(
          formatv("'no_split' must be true or false, got {0}", *noSplit));
    table.noSplit = *flag;
  }
  if (const json::Value *kinds = fields.find("sharding_types")) {
    const json::Array *names = kinds->getAsArray();
    if (!names || names->empty())
      return fields.fail(formatv("'sharding_types' must be a non-empty array "
                                 "of names ({0}), got {1}",
                                 shardingKindList(), *kinds));
    table.shardingKinds = 0;
    for (const json::Value &entry : *names) {
      std::optional<StringRef> name = entry.getAsString();
      std::optional<ShardingKind> kind =
          name ? parseShardingKind(*name) : std::nullopt;
      if (!kind)
        return fields.fail(formatv("'sharding_types' has {0}, not one of: {1}",
                                   entry, shardingKindList()));
      table.shardingKinds |= kindBit(*kind);
    }
  }
  return std::move(table);
}

/// The devices a task's "topology" describes. Each field is checked on its
/// own and against the others the object gives.
static Expected<TopologyDescription> parseTopology(const json::Value &value) {
  const json::Object *object = value.getAsObject();
  if (!object)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("task: 'topology' must be an object, got {0}", value));
  JSONFields fields(*object, "topology");
  if (Error err = fields.checkKnown(
          {"devices", "memory_gb", "nodes", "devices_per_node", "hbm_gbps",
           "intra_node_gbps", "inter_node_gbps", "device_kind"}))
    return std::move(err);
  TopologyDescription topology;
  auto readCount = [&](StringRef key, std::optional<unsigned> &out) -> Error {
    const json::Value *field = fields.find(key);
    if (!field)
      return Error::success();
    int64_t count;
    if (Error err = fields.readInteger(key, *field, count))
      return err;
    if (count < 1 || count > kMaxDevices)
      return fields.fail(formatv("'{0}' must be between 1 and {1}, got {2}",
                                 key, kMaxDevices, count));
    out = static_cast<unsigned>(count);
    return Error::success();
  };
  for (auto [key, out] :
       {std::make_pair("devices", &topology.devices),
        std::make_pair("nodes", &topology.nodes),
        std::make_pair("devices_per_node", &topology.devicesPerNode)})
    if (Error err = readCount(key, *out))
      return std::move(err);
  if (const json::Value *memory = fields.find("memory_gb")) {
    auto readCapacity = [&](const json::Value &entry) -> Error {
      double gb;
      if (Error err = fields.readNumber("memory_gb", entry, gb))
        return err;
      if (RuleViolation v = checkCapacityGB(gb))
        return fields.fail("'memory_gb': " + *v);
      topology.memoryGB.push_back(gb);
      return Error::success();
    };
    if (const json::Array *list = memory->getAsArray()) {
      if (list->empty())
        return fields.fail("'memory_gb' must be a number or a non-empty "
                           "list of numbers");
      for (const json::Value &entry : *list)
        if (Error err = readCapacity(entry))
          return std::move(err);
    } else if (Error err = readCapacity(*memory)) {
      return std::move(err);
    }
  }
  for (auto [key, out] :
       {std::make_pair("hbm_gbps", &topology.hbmGBps),
        std::make_pair("intra_node_gbps", &topology.intraNodeGBps),
        std::make_pair("inter_node_gbps", &topology.interNodeGBps)}) {
    const json::Value *field = fields.find(key);
    if (!field)
      continue;
    double gbps = 0.0;
    if (Error err = fields.readNumber(key, *field, gbps))
      return std::move(err);
    if (RuleViolation v = checkBandwidthGBps(gbps))
      return fields.fail(formatv("'{0}' {1}", key, *v));
    *out = gbps;
  }

  if (const json::Value *kind = fields.find("device_kind")) {
    std::optional<StringRef> text = kind->getAsString();
    if (!text)
      return fields.fail(
          formatv("'device_kind' must be a string, got {0}", *kind));
    std::string lower = text->lower();
    if (RuleViolation v = checkDeviceKind(lower))
      return fields.fail("'device_kind': " + *v);
    topology.deviceKind = std::move(lower);
  }

  std::optional<unsigned> devices = topology.devices;
  if (devices && topology.memoryGB.size() > 1 &&
      topology.memoryGB.size() != *devices)
    return fields.fail(formatv("'memory_gb' lists {0} values but 'devices' "
                               "is {1}",
                               topology.memoryGB.size(), *devices));
  if (!devices && topology.memoryGB.size() > 1)
    devices = topology.memoryGB.size();
  if (topology.nodes && topology.devicesPerNode) {
    unsigned product = *topology.nodes * *topology.devicesPerNode;
    if (devices && product != *devices)
      return fields.fail(formatv("'nodes' x 'devices_per_node' must equal "
                                 "the device count: {0} x {1} is not {2}",
                                 *topology.nodes, *topology.devicesPerNode,
                                 *devices));
    devices = product;
  }
  if (devices) {
    if (topology.nodes)
      if (RuleViolation v = checkNodeCount(*topology.nodes, *devices))
        return fields.fail("'nodes': " + *v);
    if (topology.devicesPerNode)
      if (RuleViolation v =
              checkDevicesPerNode(*topology.devicesPerNode, *devices))
        return fields.fail("'devices_per_node': " + *v);
  }
  topology.devices = devices;
  return std::move(topology);
}

/// The task `document` describes.
static Expected<PlanningTask> parseTask(const json::Value &document) {
  const json::Object *object = document.getAsObject();
  if (!object)
    return createStringError(inconvertibleErrorCode(),
                             "task: expected a JSON object at the top level");
  JSONFields fields(*object, "task");
  if (Error err = fields.checkKnown({"batch_size", "topology", "tables"}))
    return std::move(err);

  PlanningTask task;
  if (const json::Value *topology = fields.find("topology")) {
    Expected<TopologyDescription> parsed = parseTopology(*topology);
    if (!parsed)
      return parsed.takeError();
    task.topology = std::move(*parsed);
  }
  if (const json::Value *batch = fields.find("batch_size")) {
    int64_t batchSize;
    if (Error err = fields.readInteger("batch_size", *batch, batchSize))
      return std::move(err);
    if (batchSize <= 0)
      return fields.fail(
          formatv("'batch_size' must be positive, got {0}", batchSize));
    task.batchSize = batchSize;
  }
  const json::Value *field;
  if (Error err = fields.require("tables", field))
    return std::move(err);
  const json::Array *tables = field->getAsArray();
  if (!tables || tables->empty())
    return fields.fail("'tables' must be a non-empty array");
  for (auto [index, value] : enumerate(*tables)) {
    Expected<TableSpec> table =
        parseTable(value, index, task.histograms.emplace_back());
    if (!table)
      return table.takeError();
    task.tables.push_back(std::move(*table));
  }
  if (Error err = setHistogramBatch(
          task, task.batchSize.value_or(Topology().batchSize)))
    return std::move(err);
  return std::move(task);
}

Error setHistogramBatch(PlanningTask &task, int64_t batchSize) {
  if (batchSize == task.histogramBatch)
    return Error::success();
  for (auto [index, table] : enumerate(task.tables)) {
    for (unsigned f = 0; f < table.numFeatures(); ++f) {
      auto fail = [&](const Twine &message) {
        std::string where = formatv("tables[{0}] ('{1}')", index, table.name);
        if (table.numFeatures() > 1)
          where += formatv(": features[{0}]", f).str();
        return createStringError(inconvertibleErrorCode(),
                                 where + ": " + message);
      };
      const HistogramSource &source = task.histograms[index][f];
      FeatureStats stats = table.feature(f);
      if (!source.given) {
        stats.accessHist = expectedAccessHistogram(
            table.rows, double(batchSize) * stats.poolingFactor,
            source.zipfAlpha);
      } else {
        // A histogram names the batch it describes, or takes the task's;
        // it must be possible there before it is carried anywhere.
        int64_t from = source.batchSize.value_or(task.batchSize.value_or(0));
        if (from && from != batchSize) {
          if (RuleViolation v = checkAccessHistogramForBatch(
                  *source.given, table.rows, stats.poolingFactor, from))
            return fail(formatv("at its batch of {0} bags: {1}", from, *v));
          stats.accessHist = rescaleAccessHistogram(
              *source.given, table.rows, stats.poolingFactor, from, batchSize);
        } else {
          stats.accessHist = *source.given;
        }
      }
      if (f == 0)
        table.accessHist = stats.accessHist;
      else
        table.moreFeatures[f - 1] = stats;
    }
  }
  task.histogramBatch = batchSize;
  return Error::success();
}

Expected<PlanningTask> parseTaskJSON(StringRef text) {
  Expected<json::Value> document = parseJSON(text);
  if (!document)
    return createStringError(inconvertibleErrorCode(),
                             "task: invalid JSON: " +
                                 toString(document.takeError()));
  return parseTask(*document);
}

Expected<PlanningTask> readTaskFile(StringRef path) {
  Expected<json::Value> document = readJSONFile(path, "task");
  if (!document)
    return document.takeError();
  Expected<PlanningTask> task = parseTask(*document);
  if (!task)
    return createStringError(inconvertibleErrorCode(),
                             path + ": " + toString(task.takeError()));
  return task;
}

//===----------------------------------------------------------------------===//
// Plan input
//===----------------------------------------------------------------------===//

namespace {
/// Reads the shards of a plan file into a PlanFile, resolving table names.
class PlanReader {
public:
  explicit PlanReader(ArrayRef<TableSpec> tables) : tables(tables) {
    for (auto [index, table] : enumerate(tables))
      tableIndex.try_emplace(table.name, index);
  }

  int64_t rows(unsigned table) const { return tables[table].rows; }

  Error readDeviceCount(const JSONFields &fields, StringRef key,
                        PlanFile &plan) const {
    const json::Value *field;
    if (Error err = fields.require(key, field))
      return err;
    int64_t devices = 0;
    if (Error err = fields.readInteger(key, *field, devices))
      return err;
    if (RuleViolation v = checkDeviceCount(devices))
      return fields.fail(formatv("'{0}': {1}", key, *v));
    plan.devices = static_cast<unsigned>(devices);
    return Error::success();
  }

  /// The index of the table called `name`, or an error naming it.
  Expected<unsigned> table(const JSONFields &fields, StringRef name) const {
    auto it = tableIndex.find(name);
    if (it == tableIndex.end())
      return fields.fail(formatv("names table '{0}', which the task does not "
                                 "have",
                                 name));
    return it->second;
  }

  /// A device number of a shard: an integer in [0, devices).
  Error readDevice(const JSONFields &fields, StringRef key,
                   const json::Value &value, const PlanFile &plan,
                   unsigned &device) const {
    int64_t number;
    if (Error err = fields.readInteger(key, value, number))
      return err;
    return checkDevice(fields, key, number, plan, device);
  }

  Error checkDevice(const JSONFields &fields, StringRef key, int64_t number,
                    const PlanFile &plan, unsigned &device) const {
    if (number < 0 || number >= static_cast<int64_t>(plan.devices))
      return fields.fail(formatv("'{0}' is {1} but the plan has {2} devices",
                                 key, number, plan.devices));
    device = static_cast<unsigned>(number);
    return Error::success();
  }

private:
  ArrayRef<TableSpec> tables;
  StringMap<unsigned> tableIndex;
};
} // namespace

/// The plan JSON of writePlanJSON.
static Expected<PlanFile> parseNeuroShardPlan(const json::Object &object,
                                              const PlanReader &reader) {
  JSONFields fields(object, "plan");
  if (Error err = fields.checkKnown(
          {"algorithm", "cost_model", "warnings", "devices", "nodes",
           "devices_per_node", "device_kind", "optimizer", "reserved_fraction",
           "cost_ms", "imbalance", "per_device", "shards", "sharding_types",
           "search", "exported_sets", "verification", "expected_slowest"}))
    return std::move(err);
  PlanFile plan;
  if (Error err = reader.readDeviceCount(fields, "devices", plan))
    return std::move(err);
  if (const json::Value *algorithm = fields.find("algorithm")) {
    std::optional<StringRef> name = algorithm->getAsString();
    if (!name)
      return fields.fail(
          formatv("'algorithm' must be a string, got {0}", *algorithm));
    plan.algorithm = parseAlgorithm(*name);
    if (!plan.algorithm && *name != "given")
      return fields.fail(formatv("'algorithm' is '{0}', which is not one of "
                                 "{1}, given",
                                 *name, algorithmNameList()));
  }
  const json::Value *field;
  if (Error err = fields.require("shards", field))
    return std::move(err);
  const json::Array *shards = field->getAsArray();
  if (!shards)
    return fields.fail(
        formatv("'shards' must be an array of objects, got {0}", *field));
  for (auto [index, entry] : enumerate(*shards)) {
    std::string where = formatv("plan: shards[{0}]", index).str();
    const json::Object *object = entry.getAsObject();
    if (!object)
      return createStringError(inconvertibleErrorCode(),
                               where + ": expected an object");
    JSONFields shardFields(*object, where);
    if (Error err = shardFields.checkKnown({"table", "col_begin", "col_end",
                                            "row_begin", "row_end", "device",
                                            "replica"}))
      return std::move(err);
    Shard shard;
    if (Error err = shardFields.require("table", field))
      return std::move(err);
    std::optional<StringRef> name = field->getAsString();
    if (!name)
      return shardFields.fail(
          formatv("'table' must be a string, got {0}", *field));
    Expected<unsigned> table = reader.table(shardFields, *name);
    if (!table)
      return table.takeError();
    shard.table = *table;
    for (auto [key, out] :
         {std::pair<StringRef, int64_t *>{"col_begin", &shard.colBegin},
          {"col_end", &shard.colEnd}}) {
      if (Error err = shardFields.require(key, field))
        return std::move(err);
      if (Error err = shardFields.readInteger(key, *field, *out))
        return std::move(err);
    }
    const json::Value *rowBegin = shardFields.find("row_begin");
    const json::Value *rowEnd = shardFields.find("row_end");
    if (bool(rowBegin) != bool(rowEnd))
      return shardFields.fail("gives one of 'row_begin' and 'row_end'; a row "
                              "range needs both");
    if (rowBegin) {
      if (Error err =
              shardFields.readInteger("row_begin", *rowBegin, shard.rowBegin))
        return std::move(err);
      if (Error err = shardFields.readInteger("row_end", *rowEnd, shard.rowEnd))
        return std::move(err);
      shard.setRows(shard.rowBegin, shard.rowEnd, reader.rows(shard.table));
    }
    if (const json::Value *replica = shardFields.find("replica")) {
      std::optional<bool> flag = replica->getAsBoolean();
      if (!flag)
        return shardFields.fail(
            formatv("'replica' must be true or false, got {0}", *replica));
      shard.replica = *flag;
    }
    if (Error err = shardFields.require("device", field))
      return std::move(err);
    if (Error err = reader.readDevice(shardFields, "device", *field, plan,
                                      shard.device))
      return std::move(err);
    plan.plan.shards.push_back(shard);
  }
  return std::move(plan);
}

/// The TorchRec format of writeTorchRecPlan.
static Expected<PlanFile> parseTorchRecPlan(const json::Object &object,
                                            const PlanReader &reader) {
  JSONFields fields(object, "TorchRec plan");
  if (Error err = fields.checkKnown(
          {"format", "world_size", "compute_device", "tables"}))
    return std::move(err);
  PlanFile plan;
  if (Error err = reader.readDeviceCount(fields, "world_size", plan))
    return std::move(err);
  const json::Value *field;
  if (Error err = fields.require("tables", field))
    return std::move(err);
  const json::Object *tables = field->getAsObject();
  if (!tables)
    return fields.fail(formatv("'tables' must be an object keyed by table "
                               "name, got {0}",
                               *field));
  // The object's order is not the file's; sort by name for stable errors.
  std::vector<StringRef> names;
  for (const auto &entry : *tables)
    names.push_back(entry.first);
  llvm::sort(names);
  for (StringRef name : names) {
    std::string where = formatv("TorchRec plan: table '{0}'", name).str();
    const json::Object *entry = tables->getObject(name);
    if (!entry)
      return createStringError(inconvertibleErrorCode(),
                               where + ": expected an object");
    JSONFields tableFields(*entry, where);
    if (Error err = tableFields.checkKnown(
            {"sharding_type", "compute_kernel", "ranks", "shards"}))
      return std::move(err);
    Expected<unsigned> table = reader.table(tableFields, name);
    if (!table)
      return table.takeError();
    if (Error err = tableFields.require("sharding_type", field))
      return std::move(err);
    std::optional<StringRef> typeName = field->getAsString();
    std::optional<ShardingKind> type =
        typeName ? parseShardingKind(*typeName) : std::nullopt;
    if (!type)
      return tableFields.fail(formatv("'sharding_type' is {0}, not one of: {1}",
                                      *field, shardingKindList()));
    bool replicated = *type == ShardingKind::DataParallel;
    if (Error err = tableFields.require("shards", field))
      return std::move(err);
    const json::Array *shards = field->getAsArray();
    if (!shards || shards->empty())
      return tableFields.fail(formatv(
          "'shards' must be a non-empty array of objects, got {0}", *field));
    const json::Array *ranks = nullptr;
    if (const json::Value *list = tableFields.find("ranks")) {
      ranks = list->getAsArray();
      if (!ranks || ranks->size() != shards->size())
        return tableFields.fail(formatv("'ranks' must list one rank per "
                                        "shard ({0}), got {1}",
                                        shards->size(), *list));
    }
    for (auto [index, value] : enumerate(*shards)) {
      std::string at = formatv("{0}: shards[{1}]", where, index).str();
      const json::Object *object = value.getAsObject();
      if (!object)
        return createStringError(inconvertibleErrorCode(),
                                 at + ": expected an object");
      JSONFields shardFields(*object, at);
      if (Error err = shardFields.checkKnown(
              {"shard_offsets", "shard_sizes", "placement"}))
        return std::move(err);
      // [row, column] pairs; rows must be the whole table.
      static constexpr StringLiteral kPairKeys[] = {"shard_offsets",
                                                    "shard_sizes"};
      int64_t pairs[2][2];
      for (auto [k, key] : enumerate(kPairKeys)) {
        if (Error err = shardFields.require(key, field))
          return std::move(err);
        const json::Array *pair = field->getAsArray();
        std::optional<int64_t> row, column;
        if (pair && pair->size() == 2) {
          row = getInteger((*pair)[0]);
          column = getInteger((*pair)[1]);
        }
        if (!row || !column)
          return shardFields.fail(formatv("'{0}' must be [row, column] "
                                          "integers, got {1}",
                                          key, *field));
        pairs[k][0] = *row;
        pairs[k][1] = *column;
      }
      int64_t rows = reader.rows(*table);
      bool rowPieces =
          *type == ShardingKind::RowWise || *type == ShardingKind::TableRowWise;
      if (!rowPieces && (pairs[0][0] != 0 || pairs[1][0] != rows))
        return shardFields.fail(formatv(
            "covers rows [{0}, {1}) of the table's {2}; the shards of a {3} "
            "table hold every row of their columns",
            pairs[0][0], pairs[0][0] + pairs[1][0], rows, *typeName));
      Shard shard;
      shard.table = *table;
      shard.colBegin = pairs[0][1];
      shard.colEnd = pairs[0][1] + pairs[1][1];
      shard.replica = replicated;
      shard.setRows(pairs[0][0], pairs[0][0] + pairs[1][0], rows);
      if (Error err = shardFields.require("placement", field))
        return std::move(err);
      // "rank:R/cuda:R": the rank is the device.
      std::optional<StringRef> placement = field->getAsString();
      int64_t rank = -1;
      if (!placement || !placement->starts_with("rank:") ||
          placement->drop_front(5).split('/').first.getAsInteger(10, rank))
        return shardFields.fail(formatv("'placement' must be "
                                        "\"rank:R/<device>\", got {0}",
                                        *field));
      if (Error err = reader.checkDevice(shardFields, "placement", rank, plan,
                                         shard.device))
        return std::move(err);
      if (ranks && getInteger((*ranks)[index]) != std::optional<int64_t>(rank))
        return shardFields.fail(formatv("is placed on rank {0} but 'ranks' "
                                        "lists {1} for it",
                                        rank, (*ranks)[index]));
      plan.plan.shards.push_back(shard);
    }
  }
  return std::move(plan);
}

/// The plan of `tables` that `document` describes.
static Expected<PlanFile> parsePlan(const json::Value &document,
                                    ArrayRef<TableSpec> tables) {
  const json::Object *object = document.getAsObject();
  if (!object)
    return createStringError(inconvertibleErrorCode(),
                             "plan: expected a JSON object at the top level");
  PlanReader reader(tables);
  Expected<PlanFile> plan = [&]() -> Expected<PlanFile> {
    if (const json::Value *format = object->get("format")) {
      if (format->getAsString() != std::optional<StringRef>(kTorchRecFormat))
        return createStringError(
            inconvertibleErrorCode(),
            formatv("plan: 'format' is {0}; the plan formats are NeuroShard's "
                    "plan JSON (no 'format') and \"{1}\"",
                    *format, kTorchRecFormat));
      return parseTorchRecPlan(*object, reader);
    }
    return parseNeuroShardPlan(*object, reader);
  }();
  if (!plan)
    return plan.takeError();
  llvm::sort(plan->plan.shards, [](const Shard &a, const Shard &b) {
    return a.slice() < b.slice();
  });
  return plan;
}

Expected<PlanFile> parsePlanJSON(StringRef text, ArrayRef<TableSpec> tables) {
  Expected<json::Value> document = parseJSON(text);
  if (!document)
    return createStringError(inconvertibleErrorCode(),
                             "plan: invalid JSON: " +
                                 toString(document.takeError()));
  return parsePlan(*document, tables);
}

Expected<PlanFile> readPlanFile(StringRef path, ArrayRef<TableSpec> tables) {
  Expected<json::Value> document = readJSONFile(path, "plan");
  if (!document)
    return document.takeError();
  Expected<PlanFile> plan = parsePlan(*document, tables);
  if (!plan)
    return createStringError(inconvertibleErrorCode(),
                             path + ": " + toString(plan.takeError()));
  plan->source = path.str();
  return plan;
}

Error validatePlanFile(ArrayRef<TableSpec> tables, const Topology &topology,
                       const PlanFile &plan) {
  StringRef source = plan.source.empty() ? "plan" : StringRef(plan.source);
  if (plan.devices != topology.numDevices())
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0}: the plan is for {1} devices but the topology has {2}",
                source, plan.devices, topology.numDevices()));
  if (Error err = validatePlan(tables, topology, plan.plan))
    return createStringError(inconvertibleErrorCode(),
                             source + ": " + toString(std::move(err)));
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Plan output
//===----------------------------------------------------------------------===//

/// Real numbers with 6 significant digits: enough to compare plans, and
/// free of the 17-digit noise of exact round-trip printing.
static void writeNumberValue(json::OStream &json, double value) {
  json.rawValue([&](raw_ostream &os) {
    os << format("%.6g", value == 0.0 ? 0.0 : value);
  });
}
static void writeNumber(json::OStream &json, StringRef key, double value) {
  json.attributeBegin(key);
  writeNumberValue(json, value);
  json.attributeEnd();
}

void writeTorchRecPlan(raw_ostream &os, ArrayRef<TableSpec> tables,
                       const Topology &topology, const PlanResult &result) {
  // Every table's shards in row, then column order.
  std::vector<std::vector<const Shard *>> byTable(tables.size());
  for (const Shard &shard : result.plan.shards)
    byTable[shard.table].push_back(&shard);
  for (std::vector<const Shard *> &shards : byTable)
    llvm::sort(shards, [](const Shard *a, const Shard *b) {
      return std::make_tuple(a->rowBegin, a->colBegin, a->device) <
             std::make_tuple(b->rowBegin, b->colBegin, b->device);
    });
  std::vector<ShardingKind> kinds = tableKinds(tables, topology, result.plan);
  json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("format", kTorchRecFormat);
    json.attribute("world_size", topology.numDevices());
    json.attribute("compute_device",
                   isCPUDeviceKind(topology.deviceKind) ? "cpu" : "cuda");
    json.attributeObject("tables", [&] {
      for (auto [t, table] : enumerate(tables)) {
        const std::vector<const Shard *> &shards = byTable[t];
        json.attributeObject(table.name, [&] {
          json.attribute("sharding_type", shardingKindName(kinds[t]));
          json.attribute("compute_kernel", "fused");
          json.attributeArray("ranks", [&] {
            for (const Shard *shard : shards)
              json.value(shard->device);
          });
          json.attributeArray("shards", [&] {
            for (const Shard *shard : shards)
              json.object([&] {
                json.attributeArray("shard_offsets", [&] {
                  json.value(shard->rowBegin);
                  json.value(shard->colBegin);
                });
                json.attributeArray("shard_sizes", [&] {
                  json.value(shard->numRows(table));
                  json.value(shard->width());
                });
                json.attribute(
                    "placement",
                    formatv("rank:{0}/cuda:{0}", shard->device).str());
              });
          });
        });
      }
    });
  });
  os << "\n";
}

std::vector<double> stragglerWaitMs(const PlanCost &cost) {
  double latest = 0.0;
  for (const DeviceCost &device : cost.devices)
    latest = std::max(latest, device.computeMs + device.bwCommMs);
  std::vector<double> waits;
  for (const DeviceCost &device : cost.devices)
    waits.push_back(
        std::min(device.fwCommMs,
                 std::max(0.0, latest - (device.computeMs + device.bwCommMs))));
  return waits;
}

Imbalance planImbalance(const PlanCost &cost) {
  std::vector<double> waits = stragglerWaitMs(cost);
  Imbalance imbalance;
  double busySum = 0.0, busyMax = 0.0, computeSum = 0.0, computeMax = 0.0;
  double busyMin = HUGE_VAL;
  for (auto [d, device] : enumerate(cost.devices)) {
    double busy = device.totalMs() - waits[d];
    busySum += busy;
    busyMin = std::min(busyMin, busy);
    computeSum += device.computeMs;
    computeMax = std::max(computeMax, device.computeMs);
    if (busy > busyMax) {
      busyMax = busy;
      imbalance.busiestDevice = d;
    }
  }
  double n = double(cost.devices.size());
  if (busySum > 0.0)
    imbalance.busy = busyMax / (busySum / n);
  if (computeSum > 0.0)
    imbalance.compute = computeMax / (computeSum / n);
  if (busyMax > 0.0)
    imbalance.busyOverLeast = busyMin > 0.0 ? busyMax / busyMin : HUGE_VAL;
  return imbalance;
}

/// "shards": one object per shard of `plan` (its table by name, its columns,
/// its rows where it is a row piece, whether it is a replica, its device).
static void writeShardsJSON(json::OStream &json, ArrayRef<TableSpec> tables,
                            const ShardingPlan &plan) {
  json.attributeArray("shards", [&] {
    for (const Shard &shard : plan.shards)
      json.object([&] {
        json.attribute("table", tables[shard.table].name);
        json.attribute("col_begin", shard.colBegin);
        json.attribute("col_end", shard.colEnd);
        if (!shard.allRows()) {
          json.attribute("row_begin", shard.rowBegin);
          json.attribute("row_end",
                         shard.slice().rowEndIn(tables[shard.table]));
        }
        if (shard.replica)
          json.attribute("replica", true);
        json.attribute("device", shard.device);
      });
  });
}

void writePlanJSON(raw_ostream &os, ArrayRef<TableSpec> tables,
                   const Topology &topology, const PlanResult &result) {
  unsigned n = topology.numDevices();
  std::vector<double> waits = stragglerWaitMs(result.cost);
  std::vector<uint64_t> memory =
      deviceMemoryBytes(tables, topology, result.plan);
  std::vector<uint64_t> weights =
      deviceWeightBytes(tables, topology, result.plan);
  json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("algorithm", planOriginName(result));
    json.attribute("cost_model", result.costModelName);
    json.attributeArray("warnings", [&] {
      for (const std::string &warning : result.warnings)
        json.value(warning);
    });
    json.attribute("devices", n);
    json.attribute("nodes", topology.numNodes());
    json.attribute("devices_per_node", topology.nodeSize());
    json.attribute("device_kind", topology.deviceKind);
    json.attribute("optimizer", optimizerName(topology.optimizer));
    writeNumber(json, "reserved_fraction", topology.reservedFraction);
    writeNumber(json, "cost_ms", result.cost.maxMs);
    Imbalance imbalance = planImbalance(result.cost);
    json.attributeObject("imbalance", [&] {
      writeNumber(json, "busy_max_over_mean", imbalance.busy);
      if (std::isfinite(imbalance.busyOverLeast))
        writeNumber(json, "busy_max_over_min", imbalance.busyOverLeast);
      else
        json.attribute("busy_max_over_min", nullptr);
      writeNumber(json, "compute_max_over_mean", imbalance.compute);
      json.attribute("busiest_device", imbalance.busiestDevice);
    });
    if (const std::optional<ExpectedSlowest> &expected = result.expected)
      json.attributeObject("expected_slowest", [&] {
        writeNumber(json, "compute_ms", expected->computeMs);
        writeNumber(json, "predicted_ms", expected->predictedMs);
        writeNumber(json, "log_error_mean", expected->error.logMean);
        writeNumber(json, "log_error_sd", expected->error.logSd);
      });
    json.attributeArray("per_device", [&] {
      for (unsigned d = 0; d < n; ++d) {
        const DeviceCost &cost = result.cost.devices[d];
        json.object([&] {
          json.attribute("device", d);
          writeNumber(json, "memory_used_gb", memory[d] / kBytesPerGB);
          writeNumber(json, "weights_gb", weights[d] / kBytesPerGB);
          writeNumber(json, "capacity_gb", topology.memoryGB[d]);
          writeNumber(json, "usable_gb", topology.usableBytes(d) / kBytesPerGB);
          writeNumber(json, "compute_ms", cost.computeMs);
          writeNumber(json, "bw_comm_ms", cost.bwCommMs);
          writeNumber(json, "fw_comm_ms", cost.fwCommMs);
          writeNumber(json, "wait_ms", waits[d]);
          writeNumber(json, "busy_ms", cost.totalMs() - waits[d]);
          writeNumber(json, "total_ms", cost.totalMs());
          json.attributeArray("shards", [&] {
            for (auto [i, shard] : enumerate(result.plan.shards))
              if (shard.device == d)
                json.value(int64_t(i));
          });
        });
      }
    });
    writeShardsJSON(json, tables, result.plan);
    json.attributeObject("sharding_types", [&] {
      for (auto [table, kind] :
           zip_equal(tables, tableKinds(tables, topology, result.plan)))
        json.attribute(table.name, shardingKindName(kind));
    });
    json.attributeObject("search", [&] {
      writeNumber(json, "time_ms", result.stats.timeMs);
      json.attribute("cost_queries", int64_t(result.stats.costQueries));
      json.attribute("cache_hits", int64_t(result.stats.cacheHits));
      json.attribute("states_explored", int64_t(result.stats.statesExplored));
    });
    if (const std::optional<PlanResult::SetExport> &exported = result.exported)
      json.attributeObject("exported_sets", [&] {
        json.attribute("dir", exported->dir);
        json.attribute("sets", int64_t(exported->sets));
        json.attribute("candidates", int64_t(result.candidates.size()));
      });
    if (const std::optional<PlanVerification> &verification =
            result.verification)
      json.attributeObject("verification", [&] {
        json.attribute("host", verification->host);
        json.attribute("device", verification->device);
        json.attribute("sets", int64_t(verification->sets.size()));
        json.attribute("rounds", int64_t(verification->rounds));
        json.attribute("draws", int64_t(verification->draws));
        json.attribute("rounds_needed", int64_t(verification->roundsNeeded));
        json.attribute("budget_cut", verification->budgetCut);
        if (verification->budgetCut)
          writeNumber(json, "seconds_needed", verification->neededSeconds);
        writeNumber(json, "min_gain", verification->minGain);
        writeNumber(json, "round_spread", verification->roundSpread);
        json.attribute("spread_freedom", int64_t(verification->spreadFreedom));
        json.attribute("racing", int64_t(verification->racing));
        writeNumber(json, "selection_noise", verification->selectionNoise);
        json.attribute("selection_noise_comparisons",
                       int64_t(verification->selectionNoiseComparisons));
        writeNumber(json, "noise_gain", verification->noiseGain);
        writeNumber(json, "seconds", verification->seconds);
        if (verification->timings) {
          json.attribute("timings", int64_t(verification->timings));
          writeNumber(json, "timed_seconds", verification->timedSeconds);
        }
        json.attribute("chosen", int64_t(verification->chosen));
        json.attribute("incumbent", int64_t(verification->incumbent));
        if (!verification->experiencePath.empty())
          json.attribute("experience", verification->experiencePath);
        json.attributeArray("candidates", [&] {
          for (auto [c, candidate] : enumerate(verification->candidates))
            json.object([&] {
              json.attribute("origin", candidate.origin);
              writeNumber(json, "predicted_ms", candidate.predicted.maxMs);
              writeNumber(json, "measured_ms", candidate.measured.maxMs);
              writeNumber(json, "paired_ratio", candidate.pairedRatio);
              writeNumber(json, "mean_ratio", candidate.meanRatio);
              json.attribute("rounds", int64_t(candidate.rounds));
              json.attribute("rounds_faster", int64_t(candidate.roundsFaster));
              writeNumber(json, "required_gain", candidate.requiredGain);
              json.attributeArray("round_ratios", [&] {
                for (double ratio : candidate.roundRatios)
                  writeNumberValue(json, ratio);
              });
              json.attributeArray("measured_compute_ms", [&] {
                for (const DeviceCost &device : candidate.measured.devices)
                  writeNumberValue(json, device.computeMs);
              });
              // The candidate's plan, where the search's candidates are
              // still at hand (not for a verification read back from a
              // plan's annotation).
              if (result.candidates.size() == verification->candidates.size())
                writeShardsJSON(json, tables, result.candidates[c].plan);
            });
        });
      });
  });
  os << "\n";
}

/// Where a piece lies in its table: "" for the whole table, "[0:64]" for a
/// column slice, "[rows 0:5000]" for a row piece, "[rows 0:5000, 0:64]"
/// for both, " (replica)" for a replica.
static std::string pieceRange(const TableSpec &table, const Shard &shard) {
  if (shard.replica)
    return " (replica)";
  std::string columns =
      shard.width() == table.dim
          ? std::string()
          : formatv("{0}:{1}", shard.colBegin, shard.colEnd).str();
  if (shard.allRows())
    return columns.empty() ? columns : "[" + columns + "]";
  std::string rows =
      formatv("rows {0}:{1}", shard.rowBegin, shard.slice().rowEndIn(table))
          .str();
  return "[" + rows + (columns.empty() ? "" : ", " + columns) + "]";
}

/// "user", "user[0:64]", "user[rows 0:5000]", "user (replica)".
static std::string shardLabel(const TableSpec &table, const Shard &shard) {
  return table.name + pieceRange(table, shard);
}

void printPlanTable(raw_ostream &os, ArrayRef<TableSpec> tables,
                    const Topology &topology, const PlanResult &result,
                    bool perTable, bool withWarnings) {
  unsigned n = topology.numDevices();
  std::vector<uint64_t> memory =
      deviceMemoryBytes(tables, topology, result.plan);
  std::string nodes = topology.numNodes() > 1
                          ? formatv(" ({0} nodes of {1})", topology.numNodes(),
                                    topology.nodeSize())
                                .str()
                          : std::string();
  os << formatv("NeuroShard plan: {0} on {1} devices{2}, cost {3} ms\n",
                planOriginName(result), n, nodes,
                format("%.4f", result.cost.maxMs));
  os << "cost model: " << result.costModelDescription << "\n";
  if (topology.optimizer != Optimizer::SGD || topology.reservedFraction > 0)
    os << formatv("memory: weights and {0} state; {1}% of each device "
                  "reserved, so {2}% usable\n",
                  optimizerName(topology.optimizer),
                  format("%g", 100.0 * topology.reservedFraction),
                  format("%g", 100.0 * (1.0 - topology.reservedFraction)));
  if (withWarnings)
    for (const std::string &warning : result.warnings)
      os << "warning: " << warning << "\n";
  os << "\n";
  os << formatv("{0,6}  {1,-23}  {2,12}  {3,12}  {4,12}  {5,10}  {6,12}  "
                "{7}\n",
                "device", "memory used (GB)", "compute (ms)", "bw comm (ms)",
                "fw comm (ms)", "wait (ms)", "total (ms)", "shards");
  std::vector<double> waits = stragglerWaitMs(result.cost);
  Imbalance imbalance = planImbalance(result.cost);
  double usedGB = 0.0, capacityGB = 0.0;
  for (unsigned d = 0; d < n; ++d) {
    const DeviceCost &cost = result.cost.devices[d];
    SmallVector<std::string> labels;
    for (const Shard &shard : result.plan.shards)
      if (shard.device == d)
        labels.push_back(shardLabel(tables[shard.table], shard));
    double used = memory[d] / kBytesPerGB,
           capacity = topology.usableBytes(d) / kBytesPerGB;
    std::string memoryText = formatv(
        "{0} / {1} ({2}%)", format("%.2f", used), format("%.2f", capacity),
        format("%.0f", capacity > 0 ? 100.0 * used / capacity : 0.0));
    bool busiest = d == imbalance.busiestDevice;
    os << formatv("{0,6}  {1,-23}  {2,12}  {3,12}  {4,12}  {5,10}  {6,12}  "
                  "{7}\n",
                  d, memoryText, format("%.4f", cost.computeMs),
                  format("%.4f", cost.bwCommMs),
                  format("%.4f", cost.fwCommMs - waits[d]),
                  format("%.4f", waits[d]),
                  format("%.4f%s", cost.totalMs(), busiest ? "*" : " "),
                  join(labels, ", "));
    usedGB += used;
    capacityGB += capacity;
  }
  std::string least = std::isfinite(imbalance.busyOverLeast)
                          ? formatv("{0} x the least busy",
                                    format("%.3f", imbalance.busyOverLeast))
                                .str()
                          : std::string("while a device is idle");
  os << formatv(
      "\nimbalance: the busiest device (*) works {0} x the mean device and "
      "{1} (compute and its own exchange; {2} x the mean in compute alone); "
      "the others wait for it. memory: {3} of {4} GB used ({5}%)\n",
      format("%.3f", imbalance.busy), least, format("%.3f", imbalance.compute),
      format("%.2f", usedGB), format("%.2f", capacityGB),
      format("%.0f", capacityGB > 0 ? 100.0 * usedGB / capacityGB : 0.0));
  if (const std::optional<ExpectedSlowest> &expected = result.expected)
    os << formatv(
        "expected slowest device: {0} ms of compute, {1} x the "
        "largest prediction, if each device strays from its "
        "prediction as the model does on held-out sets (log error "
        "mean {2}, sd {3})\n",
        format("%.4f", expected->computeMs),
        format("%.3f", expected->predictedMs > 0
                           ? expected->computeMs / expected->predictedMs
                           : 1.0),
        format("%+.3f", expected->error.logMean),
        format("%.3f", expected->error.logSd));
  if (perTable) {
    os << formatv("\n{0,-24}  {1,12}  {2,5}  {3,9}  {4,8}  {5}\n", "table",
                  "rows", "dim", "size (GB)", "pooling", "placement");
    for (auto [t, table] : enumerate(tables)) {
      SmallVector<std::string> places;
      bool replicated = false;
      for (const Shard &shard : result.plan.shards)
        if (shard.table == t) {
          replicated |= shard.replica;
          std::string range = pieceRange(table, shard);
          places.push_back(range.empty()
                               ? formatv("device {0}", shard.device).str()
                               : formatv("{0} on device {1}",
                                         StringRef(range).ltrim(), shard.device)
                                     .str());
        }
      if (replicated) {
        places.clear();
        places.push_back("a replica on every device (data_parallel)");
      }
      os << formatv("{0,-24}  {1,12}  {2,5}  {3,9}  {4,8}  {5}\n", table.name,
                    table.rows, table.dim,
                    format("%.3f", table.bytes() / kBytesPerGB),
                    format("%.2f", table.poolingFactor), join(places, ", "));
    }
  }
  const SearchStats &stats = result.stats;
  if (!result.searched) {
    os << formatv("\n* busiest device. priced in {0} ms\n",
                  format("%.1f", stats.timeMs));
    return;
  }
  os << formatv("\n* busiest device. search: {0} ms, {1} cost queries ({2} "
                "cache hits), {3} model calls, {4} states explored, {5} "
                "greedy runs\n",
                format("%.1f", stats.timeMs), stats.costQueries,
                stats.cacheHits, stats.modelCalls, stats.statesExplored,
                stats.greedyRuns);
  if (const std::optional<PlanResult::SetExport> &exported = result.exported)
    os << formatv("\nnot verified yet: the {0} candidates' {1} distinct "
                  "device sets were written to '{2}'; time them where the "
                  "plan runs (neuroshard-cuda-runner --manifest {2}/{3} "
                  "--collect {2}/{4}, with the kernels {2}/{5}), then plan "
                  "again with the same options and --verify-timings {2}\n",
                  result.candidates.size(), exported->sets, exported->dir,
                  kSetsManifestName, kSetSamplesName, kSetKernelsName);
  if (!result.verification)
    return;
  const PlanVerification &verification = *result.verification;
  std::string onDraws;
  if (verification.draws > 1)
    onDraws = formatv(" on {0} draws of the inputs", verification.draws);
  os << formatv("\nverified on '{0}': {1} device sets timed in {2} round{3}"
                "{4}, {5} s\n",
                verification.host, verification.sets.size(),
                verification.rounds, verification.rounds == 1 ? "" : "s",
                onDraws, format("%.1f", verification.seconds));
  os << formatv("  {0,-9}  {1,-22}  {2,14}  {3,13}  {4,15}  {5,6}  {6,6}\n",
                "candidate", "origin", "predicted (ms)", "measured (ms)",
                formatv("vs. candidate {0}", verification.incumbent + 1),
                "median", "rounds");
  for (auto [i, candidate] : enumerate(verification.candidates))
    os << formatv("{0} {1,-9}  {2,-22}  {3,14}  {4,13}  {5,15}  {6,6}  {7,6}\n",
                  i == verification.chosen ? ">" : " ", i + 1, candidate.origin,
                  format("%.4f", candidate.predicted.maxMs),
                  format("%.4f", candidate.measured.maxMs),
                  format("%.3f", candidate.meanRatio),
                  format("%.3f", candidate.pairedRatio), candidate.rounds);
  os << describeVerification(verification) << "\n";
  if (!verification.experiencePath.empty())
    os << formatv("the {0} sets were appended to '{1}'\n",
                  verification.sets.size(), verification.experiencePath);
}

} // namespace neuroshard
