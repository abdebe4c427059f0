//===- TaskIO.cpp - Reading planning tasks from JSON ----------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/TaskIO.h"
#include "neuroshard/Support/FileIO.h"
#include "neuroshard/Support/JSONFields.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace llvm;

namespace neuroshard {

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
           "no_split", "sharding_types", "cache_load_factor"}))
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
  if (const json::Value *cache = fields.find("cache_load_factor")) {
    double fraction = 0.0;
    if (Error err = fields.readNumber("cache_load_factor", *cache, fraction))
      return std::move(err);
    if (Error err = fields.check(checkCacheFraction(fraction)))
      return std::move(err);
    table.cacheFraction = fraction;
    // A replica on every device would keep the table once per device.
    table.shardingKinds &= ~kindBit(ShardingKind::DataParallel);
    if (table.shardingKinds == 0)
      return fields.fail("'cache_load_factor' keeps the table in host "
                         "memory, where it cannot be data_parallel, and "
                         "'sharding_types' allows nothing else");
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
           "intra_node_gbps", "inter_node_gbps", "host_memory_gb", "host_gbps",
           "device_kind"}))
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
        std::make_pair("inter_node_gbps", &topology.interNodeGBps),
        std::make_pair("host_gbps", &topology.hostGBps)}) {
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

  if (const json::Value *host = fields.find("host_memory_gb")) {
    double gb = 0.0;
    if (Error err = fields.readNumber("host_memory_gb", *host, gb))
      return std::move(err);
    if (RuleViolation v = checkHostMemoryGB(gb))
      return fields.fail("'host_memory_gb': " + *v);
    topology.hostMemoryGB = gb;
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

} // namespace neuroshard
