//===- ModelData.cpp - The inputs and weights of a run --------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/ModelData.h"
#include "neuroshard/Support/FileIO.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>

using namespace ::neuroshard::execution;
namespace abi = ::neuroshard::kernel_abi;
namespace ex = ::neuroshard::execution;
namespace inputs = ::neuroshard::inputs;

/// Rows the indices of a table of `rows` rows range over.
static int64_t indexRows(int64_t rows, const DataOptions &options) {
  return options.maxRows > 0 ? std::min(rows, options.maxRows) : rows;
}

/// Rows of the piece of `table` the arena holds, below the cap.
static int64_t allocatedRows(const TableInfo &table,
                             const DataOptions &options) {
  int64_t end = std::min(table.rowEnd, indexRows(table.stats.rows, options));
  int64_t rows = std::max<int64_t>(end - table.rowBegin, 0);
  // A cache holds at most the rows of its shard the run allocates, and at
  // least one.
  return table.isCache() ? std::max<int64_t>(std::min(table.cacheRows, rows), 1)
                         : rows;
}

/// Elements between the rows of `table` in the arena: a cache's rows are
/// those of the piece that holds its shard.
static int64_t rowStride(const ModelInfo &info, const TableInfo &table) {
  return table.isCache() ? info.tables[table.cacheOf].stats.dim
                         : table.stats.dim;
}

/// The name of the table `pair`'s indices read.
static std::string pairTableName(const ModelInfo &info, const InputPair &pair) {
  return pair.table >= 0 ? info.tables[pair.table].stats.name
                         : pair.stats->name;
}

float ex::lookupGradientValue(uint64_t seed, unsigned indicesArg, int64_t bag,
                              int64_t column) {
  uint64_t key = inputs::mixSeed(seed ^ 0x6772616469656e74ULL, indicesArg);
  return inputs::gradientValue(key, bag, column);
}

/// Bags' lengths are Poisson with the pooling factor; a lookup never hit
/// (or without statistics) gets none.
static double expectedIndices(const inputs::TableStats *stats, int64_t batch) {
  double hits = 0.0;
  if (stats)
    for (double bin : stats->accessHist)
      hits += bin;
  return hits > 0.0 ? double(batch) * stats->poolingFactor : 0.0;
}

void ex::fillLookupGradient(const ModelInfo &info, const LookupInfo &lookup,
                            uint64_t seed, int64_t firstBag, int64_t bags,
                            float *out, int64_t rowStride,
                            llvm::ArrayRef<inputs::LookupInputs> pairInputs) {
  int64_t outColumn = 0;
  for (auto [s, shard] : llvm::enumerate(lookup.shards)) {
    unsigned indicesArg = info.pairs[shard.input].indicesArg;
    ShardReads reads = lookup.reads.empty() ? ShardReads() : lookup.reads[s];
    const int64_t *bagOffsets = nullptr;
    if (reads.wholeBagMean) {
      assert(shard.input < pairInputs.size() &&
             "a row piece of a mean lookup needs its bags' lengths");
      bagOffsets = pairInputs[shard.input].offsets.data();
    }
    for (int64_t b = 0; b < bags; ++b) {
      int64_t bag = firstBag + reads.firstBag + b;
      float divisor = 1.0f;
      if (bagOffsets)
        divisor =
            float(std::max<int64_t>(bagOffsets[bag + 1] - bagOffsets[bag], 1));
      for (int64_t c = 0; c < shard.width; ++c)
        out[b * rowStride + outColumn + c] =
            lookupGradientValue(seed, indicesArg, bag, shard.colBegin + c) /
            divisor;
    }
    outColumn += shard.width;
  }
}

::neuroshard::MemoryNeed ex::estimateMemory(const ModelInfo &info,
                                            const DataOptions &options) {
  // Every pair's indices and offsets are kept as i64 and as i32 copies.
  constexpr double kIndexBytes = sizeof(int64_t) + sizeof(int32_t);
  double weights = 0.0, indices = 0.0, offsets = 0.0, outputs = 0.0;
  for (const TableInfo &table : info.tables)
    weights += double(allocatedRows(table, options)) * rowStride(info, table) *
               sizeof(float);
  for (const InputPair &pair : info.pairs) {
    indices +=
        expectedIndices(inputStatistics(info, pair), pair.batch) * kIndexBytes;
    offsets += (double(pair.batch) + 1.0) * kIndexBytes;
  }
  // Each result and its gradient.
  for (const LookupInfo &lookup : info.lookups)
    outputs += 2.0 * double(lookup.batch) * lookup.width * sizeof(float);
  MemoryNeed need;
  need.add("weights", weights);
  need.add("indices", indices);
  need.add("offsets", offsets);
  need.add("outputs", outputs);
  return need;
}

llvm::Expected<ModelData> ex::generateData(const ModelInfo &info,
                                           const DataOptions &options) {
  MemoryNeed need = estimateMemory(info, options);
  double weightBytes = need.parts.front().second;
  if (weightBytes > options.maxWeightBytes)
    return llvm::createStringError(
        "the weights of " + llvm::Twine(info.tables.size()) + " tables need " +
        formatGB(weightBytes) + ", more than the " +
        formatGB(options.maxWeightBytes) +
        " allowed; cap the rows per table with --max-rows");
  if (std::optional<std::string> refused =
          admitMemory(need, options.memoryLimitBytes))
    return llvm::createStringError(
        "the data of the run " + *refused +
        "; lower the batch size or the pooling factors, or cap the rows per "
        "table with --max-rows");

  // Admitted, so every size below is far from overflowing.
  ModelData data;
  int64_t elements = 0;
  for (const TableInfo &table : info.tables) {
    int64_t rows = allocatedRows(table, options);
    elements = abi::alignArenaOffset(elements);
    if (table.isCache()) {
      // After the tables, a whole number of rows from the piece that holds
      // the shard, so that one row stride addresses both (RowCache.h's
      // virtual table).
      int64_t holder = data.layout[table.cacheOf];
      int64_t stride = rowStride(info, table);
      elements = holder + (elements - holder + stride - 1) / stride * stride;
    }
    data.layout.push_back(elements);
    data.allocatedRows.push_back(rows);
    elements += rows * rowStride(info, table);
    if (!table.isCache())
      data.tableElements = elements;
  }
  data.weights.resize(static_cast<size_t>(elements));
  for (size_t t = 0; t < info.tables.size(); ++t) {
    if (info.tables[t].isCache())
      continue;
    const inputs::TableStats &stats = info.tables[t].stats;
    uint64_t key =
        inputs::mixSeed(options.seed, inputs::hashString(stats.name));
    inputs::fillWeights(key, data.allocatedRows[t], info.tables[t].columnBegin,
                        stats.dim, data.weights.data() + data.layout[t],
                        stats.dim, info.tables[t].rowBegin);
  }

  if (llvm::Error err = drawInputs(info, options, data))
    return std::move(err);
  return data;
}

llvm::Error ex::drawInputs(const ModelInfo &info, const DataOptions &options,
                           ModelData &data) {
  data.pairRows.clear();
  data.inputs.clear();
  data.indices32.clear();
  data.offsets32.clear();
  data.gradients.clear();
  ++data.inputsVersion;
  for (const InputPair &pair : info.pairs) {
    const inputs::TableStats *stats = inputStatistics(info, pair);
    if (!stats)
      return llvm::createStringError(
          "table '" + pairTableName(info, pair) +
          "' has no pooling_factor and access_hist; inputs are "
          "generated from them");
    // A pair's statistics carry its table's rows.
    int64_t rows = indexRows(stats->rows, options);
    data.pairRows.push_back(rows);
    data.inputs.push_back(inputs::generateLookup(
        *stats, pair.batch, options.seed, pair.indicesArg, rows));
    const inputs::LookupInputs &in = data.inputs.back();
    data.indices32.emplace_back(in.indices.begin(), in.indices.end());
    data.offsets32.emplace_back(in.offsets.begin(), in.offsets.end());
    if (pair.indicesAreI32 &&
        (in.offsets.back() > INT32_MAX || rows > int64_t(INT32_MAX) + 1))
      return llvm::createStringError("the i32 inputs of table '" +
                                     pairTableName(info, pair) +
                                     "' cannot hold its indices or offsets");
  }

  for (const LookupInfo &lookup : info.lookups) {
    std::vector<float> grad(static_cast<size_t>(lookup.batch * lookup.width));
    fillLookupGradient(info, lookup, options.seed, 0, lookup.batch, grad.data(),
                       lookup.width, data.inputs);
    data.gradients.push_back(std::move(grad));
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::json::Object> ex::readInputsFile(llvm::StringRef path) {
  llvm::Expected<llvm::json::Value> document =
      ::neuroshard::readJSONFile(path, "inputs");
  if (!document)
    return document.takeError();
  llvm::json::Object *arguments = document->getAsObject();
  if (!arguments)
    return llvm::createStringError(path +
                                   ": expected an object of argument arrays");
  return std::move(*arguments);
}

llvm::Error ex::replaceInputs(const ModelInfo &info, ModelData &data,
                              const llvm::json::Object &arguments) {
  auto read = [&](unsigned arg, bool i32,
                  std::vector<int64_t> &out) -> llvm::Error {
    const llvm::json::Array *values = arguments.getArray(std::to_string(arg));
    if (!values)
      return llvm::createStringError("no values for argument #" +
                                     llvm::Twine(arg) + " of @" + info.entry);
    out.clear();
    for (const llvm::json::Value &v : *values) {
      // 4.0 is a number, not an index: refused like the planner's integer
      // fields.
      std::optional<int64_t> x = getInteger(v);
      if (!x || (i32 && (*x < INT32_MIN || *x > INT32_MAX)))
        return llvm::createStringError("argument #" + llvm::Twine(arg) +
                                       " element " + llvm::Twine(out.size()) +
                                       " is not an " + (i32 ? "i32" : "i64") +
                                       " integer");
      out.push_back(*x);
    }
    return llvm::Error::success();
  };
  for (size_t p = 0; p < info.pairs.size(); ++p) {
    const InputPair &pair = info.pairs[p];
    inputs::LookupInputs in;
    if (llvm::Error e = read(pair.indicesArg, pair.indicesAreI32, in.indices))
      return e;
    if (llvm::Error e = read(pair.offsetsArg, pair.indicesAreI32, in.offsets))
      return e;
    std::string where = "offsets argument #" + std::to_string(pair.offsetsArg);
    if (static_cast<int64_t>(in.offsets.size()) != pair.batch + 1)
      return llvm::createStringError(
          where + " has " + llvm::Twine(in.offsets.size()) +
          " values; the batch of " + llvm::Twine(pair.batch) + " needs " +
          llvm::Twine(pair.batch + 1));
    if (in.offsets.front() != 0)
      return llvm::createStringError(where + " must start at 0, not " +
                                     llvm::Twine(in.offsets.front()));
    for (int64_t b = 0; b < pair.batch; ++b)
      if (in.offsets[b + 1] < in.offsets[b])
        return llvm::createStringError(where + " decreases at bag " +
                                       llvm::Twine(b) + ": " +
                                       llvm::Twine(in.offsets[b]) + " then " +
                                       llvm::Twine(in.offsets[b + 1]));
    if (in.offsets.back() != static_cast<int64_t>(in.indices.size()))
      return llvm::createStringError(
          where + " ends at " + llvm::Twine(in.offsets.back()) +
          " but indices argument #" + llvm::Twine(pair.indicesArg) + " has " +
          llvm::Twine(in.indices.size()) + " values");
    data.indices32[p].assign(in.indices.begin(), in.indices.end());
    data.offsets32[p].assign(in.offsets.begin(), in.offsets.end());
    data.inputs[p] = std::move(in);
  }
  return llvm::Error::success();
}

std::optional<std::string> ex::findOutOfRangeIndex(const ModelInfo &info,
                                                   const ModelData &data) {
  for (size_t p = 0; p < info.pairs.size(); ++p) {
    const InputPair &pair = info.pairs[p];
    const inputs::LookupInputs &in = data.inputs[p];
    int64_t rows = data.pairRows[p];
    for (int64_t b = 0; b + 1 < static_cast<int64_t>(in.offsets.size()); ++b)
      for (int64_t k = in.offsets[b]; k < in.offsets[b + 1]; ++k)
        if (in.indices[k] < 0 || in.indices[k] >= rows)
          return "table '" + pairTableName(info, pair) + "' (argument #" +
                 std::to_string(pair.indicesArg) + "), bag " +
                 std::to_string(b) + ", position " + std::to_string(k) +
                 ": index " + std::to_string(in.indices[k]) +
                 " is outside [0, " + std::to_string(rows) + ")";
  }
  return std::nullopt;
}
