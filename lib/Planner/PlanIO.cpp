//===- PlanIO.cpp - Plans read from and written to files ------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/PlanReport.h"
#include "neuroshard/Sharding/HostTier.h"
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
/// TorchRec's sharding types that NeuroShard's own names do not cover: the
/// first is read as column pieces, the second refused by name.
static constexpr StringLiteral kTorchRecTableColumnWise = "table_column_wise";
/// TorchRec's compute kernels: the table in device memory, or in host
/// memory (UVM) behind a cache in device memory.
static constexpr StringLiteral kTorchRecFused = "fused";
static constexpr StringLiteral kTorchRecUVMCaching = "fused_uvm_caching";

/// A TorchRec table's kernel: "fused_uvm_caching" keeps it in host memory
/// behind a cache of 'cache_load_factor' of its rows (TorchRec's default,
/// 0.2, when the plan gives none), recorded in `plan`; the other kernels
/// keep it in device memory.
static Error readTorchRecKernel(const JSONFields &fields, unsigned table,
                                PlanFile &plan) {
  const json::Value *kernel = fields.find("compute_kernel");
  std::optional<StringRef> name = kernel ? kernel->getAsString() : std::nullopt;
  if (kernel && !name)
    return fields.fail(
        formatv("'compute_kernel' must be a string, got {0}", *kernel));
  const json::Value *factor = fields.find("cache_load_factor");
  if (name != std::optional<StringRef>(kTorchRecUVMCaching)) {
    if (factor)
      return fields.fail(formatv("gives 'cache_load_factor' but its "
                                 "'compute_kernel' is not \"{0}\"",
                                 kTorchRecUVMCaching));
    return Error::success();
  }
  double fraction = kTorchRecDefaultCacheLoadFactor;
  if (factor) {
    if (Error err = fields.readNumber("cache_load_factor", *factor, fraction))
      return err;
    if (Error err = fields.check(checkCacheFraction(fraction)))
      return err;
  }
  plan.cacheFractions[table] = fraction;
  return Error::success();
}
static constexpr StringLiteral kTorchRecGridShard = "grid_shard";

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
          {"algorithm",      "cost_model",     "warnings",
           "devices",        "nodes",          "devices_per_node",
           "device_kind",    "optimizer",      "reserved_fraction",
           "cost_ms",        "imbalance",      "per_device",
           "shards",         "sharding_types", "search",
           "exported_sets",  "verification",   "expected_slowest",
           "slowest_device", "per_table",      "tables_outside_ranges",
           "host_memory",    "lower_bound"}))
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
                                            "replica", "cache_rows"}))
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
    if (const json::Value *cache = shardFields.find("cache_rows")) {
      int64_t cacheRows = 0;
      if (Error err = shardFields.readInteger("cache_rows", *cache, cacheRows))
        return std::move(err);
      int64_t rows = shard.allRows() ? reader.rows(shard.table)
                                     : shard.rowEnd - shard.rowBegin;
      if (cacheRows < 1 || cacheRows > rows)
        return shardFields.fail(formatv(
            "'cache_rows' is {0} but the shard of table '{1}' has {2} rows: "
            "a cache holds from 1 row to all of its shard's",
            cacheRows, *name, rows));
      double &fraction = plan.cacheFractions[shard.table];
      fraction = TableSpec::widenCacheFraction(fraction, cacheRows, rows);
    }
    plan.plan.shards.push_back(shard);
  }
  return std::move(plan);
}

std::vector<TableSpec> tablesOfPlan(ArrayRef<TableSpec> tables,
                                    const PlanFile &plan) {
  std::vector<TableSpec> kept(tables.begin(), tables.end());
  for (auto [table, fraction] : plan.cacheFractions) {
    kept[table].cacheFraction = fraction;
    kept[table].shardingKinds &= ~kindBit(ShardingKind::DataParallel);
  }
  return kept;
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
    if (Error err =
            tableFields.checkKnown({"sharding_type", "compute_kernel",
                                    "cache_load_factor", "ranks", "shards"}))
      return std::move(err);
    Expected<unsigned> table = reader.table(tableFields, name);
    if (!table)
      return table.takeError();
    if (Error err = readTorchRecKernel(tableFields, *table, plan))
      return std::move(err);
    if (Error err = tableFields.require("sharding_type", field))
      return std::move(err);
    std::optional<StringRef> typeName = field->getAsString();
    std::optional<ShardingKind> type =
        typeName ? parseShardingKind(*typeName) : std::nullopt;
    // TorchRec's table-column-wise places column pieces on the devices of
    // one host: column pieces, wherever they are.
    if (typeName == std::optional<StringRef>(kTorchRecTableColumnWise))
      type = ShardingKind::ColumnWise;
    if (typeName == std::optional<StringRef>(kTorchRecGridShard))
      return tableFields.fail(formatv(
          "'sharding_type' is \"{0}\", which cuts the table into blocks of "
          "rows and columns at once; NeuroShard's plans split a table by "
          "columns or by rows, not both, so this plan cannot be priced or "
          "materialized: plan the table with another sharding type",
          kTorchRecGridShard));
    if (!type)
      return tableFields.fail(
          formatv("'sharding_type' is {0}, not one of: {1}, {2}", *field,
                  shardingKindList(), kTorchRecTableColumnWise));
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
    // TorchRec gives a rank without rows (a table of fewer rows than
    // ranks, split by rows) an empty shard; it holds nothing and is dropped.
    SmallVector<std::string> empty;
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
      if (pairs[1][0] == 0 || pairs[1][1] == 0) {
        empty.push_back(formatv("shards[{0}] (rows [{1}, {2}), columns "
                                "[{3}, {4}))",
                                index, pairs[0][0], pairs[0][0] + pairs[1][0],
                                pairs[0][1], pairs[0][1] + pairs[1][1]));
        continue;
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
    if (!empty.empty())
      plan.notes.push_back(
          formatv("{0}: dropped {1} empty shard{2}, which "
                  "hold{3} no rows or no columns: {4}",
                  where, empty.size(), empty.size() == 1 ? "" : "s",
                  empty.size() == 1 ? "s" : "", join(empty, ", "))
              .str());
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
  sortShards(plan->plan.shards);
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
          // A table in host memory is TorchRec's UVM table with an HBM cache.
          json.attribute("compute_kernel", table.inHostMemory()
                                               ? kTorchRecUVMCaching
                                               : kTorchRecFused);
          if (table.cacheFraction)
            writeNumber(json, "cache_load_factor", *table.cacheFraction);
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
        const TableSpec &table = tables[shard.table];
        if (table.inHostMemory())
          json.attribute("cache_rows", table.cacheRows(shard.numRows(table)));
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
    if (const std::optional<PlanLowerBound> &bound = result.lowerBound)
      json.attributeObject("lower_bound", [&] {
        writeNumber(json, "ms", bound->ms);
        writeNumber(json, "gap", bound->gap(result.cost.maxMs));
        writeNumber(json, "work_ms", bound->workMs);
        writeNumber(json, "piece_ms", bound->pieceMs);
        json.attribute("hardest_table", tables[bound->hardestTable].name);
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
    std::vector<ShardingKind> kinds = tableKinds(tables, topology, result.plan);
    json.attributeObject("sharding_types", [&] {
      for (auto [table, kind] : zip_equal(tables, kinds))
        json.attribute(table.name, shardingKindName(kind));
    });
    std::vector<uint64_t> tableBytes =
        tableMemoryBytes(tables, topology, result.plan);
    std::vector<HostTableUse> hostUses =
        hostTierUse(tables, topology, result.plan);
    std::vector<const HostTableUse *> hostUseOf(tables.size(), nullptr);
    for (const HostTableUse &use : hostUses)
      hostUseOf[use.table] = &use;
    json.attribute("slowest_device", slowestDevice(result.cost));
    json.attributeArray("per_table", [&] {
      for (auto [t, table] : enumerate(tables))
        json.object([&] {
          json.attribute("name", table.name);
          json.attribute("sharding_type", shardingKindName(kinds[t]));
          writeNumber(json, "memory_gb", tableBytes[t] / kBytesPerGB);
          if (result.tableComputeMs.size() == tables.size())
            writeNumber(json, "compute_ms", result.tableComputeMs[t]);
          // A table in host memory: its cache, what it keeps there and what
          // its caches are expected to serve.
          json.attribute("storage", table.inHostMemory() ? "host" : "device");
          if (const HostTableUse *use = hostUseOf[t]) {
            writeNumber(json, "cache_load_factor", *table.cacheFraction);
            writeNumber(json, "host_gb", use->hostBytes / kBytesPerGB);
            writeNumber(json, "expected_hit_rate", use->hitRate());
            writeNumber(json, "host_traffic_ms", use->hostMs);
          }
        });
    });
    std::vector<uint64_t> hostBytes =
        nodeHostMemoryBytes(tables, topology, result.plan);
    json.attributeObject("host_memory", [&] {
      writeNumber(json, "capacity_gb_per_node", topology.hostMemoryGB);
      writeNumber(json, "host_gbps", topology.hostBandwidthGBps);
      json.attributeArray("used_gb_per_node", [&] {
        for (uint64_t bytes : hostBytes)
          writeNumberValue(json, bytes / kBytesPerGB);
      });
    });
    if (!result.tablesOutsideRanges.empty())
      json.attributeArray("tables_outside_ranges", [&] {
        for (const std::string &table : result.tablesOutsideRanges)
          json.value(table);
      });
    json.attributeObject("search", [&] {
      writeNumber(json, "time_ms", result.stats.timeMs);
      json.attribute("cost_queries", int64_t(result.stats.costQueries));
      json.attribute("cache_hits", int64_t(result.stats.cacheHits));
      json.attribute("states_explored", int64_t(result.stats.statesExplored));
      json.attribute("moves_tried", int64_t(result.stats.movesTried));
      json.attribute("moves_taken", int64_t(result.stats.movesTaken));
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

} // namespace neuroshard
