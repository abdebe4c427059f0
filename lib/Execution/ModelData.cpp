//===- ModelData.cpp - The inputs and weights of a run --------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/ModelData.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ::neuroshard::execution;
namespace abi = ::neuroshard::kernel_abi;
namespace ex = ::neuroshard::execution;
namespace inputs = ::neuroshard::inputs;

llvm::Expected<ModelData> ex::generateData(const ModelInfo &info,
                                           const DataOptions &options) {
  ModelData data;
  uint64_t bytes = 0;
  for (const TableInfo &table : info.tables) {
    int64_t rows = table.stats.rows;
    if (options.maxRows > 0)
      rows = std::min(rows, options.maxRows);
    data.layout.push_back(static_cast<int64_t>(bytes / sizeof(float)));
    data.allocatedRows.push_back(rows);
    bytes += static_cast<uint64_t>(rows) * table.stats.dim * sizeof(float);
  }
  if (bytes > options.maxWeightBytes) {
    auto gib = [](uint64_t b) {
      return llvm::formatv("{0:F2}", double(b) / double(1ull << 30)).str();
    };
    return llvm::createStringError(
        "the weights of " + llvm::Twine(info.tables.size()) + " tables need " +
        gib(bytes) + " GiB, more than the " + gib(options.maxWeightBytes) +
        " GiB allowed; cap the rows per table with --max-rows");
  }
  data.weights.resize(bytes / sizeof(float));
  for (size_t t = 0; t < info.tables.size(); ++t) {
    const inputs::TableStats &stats = info.tables[t].stats;
    uint64_t key =
        inputs::mixSeed(options.seed, inputs::hashString(stats.name));
    inputs::fillWeights(key, data.allocatedRows[t], 0, stats.dim,
                        data.weights.data() + data.layout[t], stats.dim);
  }

  for (const InputPair &pair : info.pairs) {
    const TableInfo &table = info.tables[pair.table];
    if (!table.hasStatistics)
      return llvm::createStringError(
          "table '" + table.stats.name +
          "' has no pooling_factor and access_hist; inputs are "
          "generated from them");
    data.inputs.push_back(inputs::generateLookup(
        table.stats, pair.batch, options.seed, pair.indicesArg,
        data.allocatedRows[pair.table]));
    const inputs::LookupInputs &in = data.inputs.back();
    data.indices32.emplace_back(in.indices.begin(), in.indices.end());
    data.offsets32.emplace_back(in.offsets.begin(), in.offsets.end());
    if (pair.indicesAreI32 &&
        (in.offsets.back() > INT32_MAX ||
         data.allocatedRows[pair.table] > int64_t(INT32_MAX) + 1))
      return llvm::createStringError("the i32 inputs of table '" +
                                     table.stats.name +
                                     "' cannot hold its indices or offsets");
  }

  for (const LookupInfo &lookup : info.lookups) {
    std::vector<float> grad(static_cast<size_t>(lookup.batch * lookup.width));
    int64_t outColumn = 0;
    for (const abi::ShardDescriptor &shard : lookup.shards) {
      uint64_t key = inputs::mixSeed(options.seed ^ 0x6772616469656e74ULL,
                                     info.pairs[shard.input].indicesArg);
      for (int64_t b = 0; b < lookup.batch; ++b)
        for (int64_t c = 0; c < shard.width; ++c)
          grad[b * lookup.width + outColumn + c] =
              inputs::gradientValue(key, b, shard.colBegin + c);
      outColumn += shard.width;
    }
    data.gradients.push_back(std::move(grad));
  }
  return data;
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
      std::optional<int64_t> x = v.getAsInteger();
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
    int64_t rows = data.allocatedRows[pair.table];
    for (int64_t b = 0; b + 1 < static_cast<int64_t>(in.offsets.size()); ++b)
      for (int64_t k = in.offsets[b]; k < in.offsets[b + 1]; ++k)
        if (in.indices[k] < 0 || in.indices[k] >= rows)
          return "table '" + info.tables[pair.table].stats.name +
                 "' (argument #" + std::to_string(pair.indicesArg) + "), bag " +
                 std::to_string(b) + ": index " +
                 std::to_string(in.indices[k]) + " is outside [0, " +
                 std::to_string(rows) + ")";
  }
  return std::nullopt;
}
