//===- Manifest.cpp - The launch manifest of neuroshard-cuda-runner -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "Json.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace neuroshard {
namespace runner {

namespace {

/// Reads typed fields of one JSON object, naming them by their path.
class Reader {
public:
  explicit Reader(std::string &error) : error(error) {}

  bool fail(const std::string &message) {
    error = message;
    return false;
  }

  const JsonValue *member(const JsonValue &object, const std::string &path,
                          const std::string &key) {
    const JsonValue *value = object.find(key);
    if (!value)
      fail(path + ": missing member '" + key + "'");
    return value;
  }

  bool object(const JsonValue &value, const std::string &path) {
    return value.kind == JsonValue::Kind::Object ||
           fail(path + " must be an object, not " + value.kindName());
  }

  bool array(const JsonValue &value, const std::string &path) {
    return value.kind == JsonValue::Kind::Array ||
           fail(path + " must be an array, not " + value.kindName());
  }

  bool string(const JsonValue &object, const std::string &path,
              const std::string &key, std::string &out) {
    const JsonValue *value = member(object, path, key);
    if (!value)
      return false;
    if (value->kind != JsonValue::Kind::String)
      return fail(path + "." + key + " must be a string, not " +
                  value->kindName());
    out = value->string;
    return true;
  }

  bool number(const JsonValue &object, const std::string &path,
              const std::string &key, double &out) {
    const JsonValue *value = member(object, path, key);
    if (!value)
      return false;
    if (value->kind != JsonValue::Kind::Number || !std::isfinite(value->number))
      return fail(path + "." + key + " must be a finite number, not " +
                  value->kindName());
    out = value->number;
    return true;
  }

  /// An integer in [minimum, maximum].
  bool integer(const JsonValue &object, const std::string &path,
               const std::string &key, int64_t minimum, int64_t maximum,
               int64_t &out) {
    double value;
    if (!number(object, path, key, value))
      return false;
    if (value != std::floor(value) || value < double(minimum) ||
        value > double(maximum)) {
      std::ostringstream os;
      os << path << "." << key << " is " << value << "; expected an integer in "
         << minimum << " .. " << maximum;
      return fail(os.str());
    }
    out = static_cast<int64_t>(value);
    return true;
  }

private:
  std::string &error;
};

constexpr int64_t kMaxInt = 9007199254740992LL; // 2^53: exact in a double

} // namespace

bool readFile(const std::string &path, std::string &contents,
              std::string &error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::ostringstream os;
  os << file.rdbuf();
  if (file.bad()) {
    error = "cannot read '" + path + "'";
    return false;
  }
  contents = os.str();
  return true;
}

bool parseManifest(const std::string &text, const std::string &baseDir,
                   Manifest &out, std::string &error) {
  JsonValue root;
  std::string jsonError;
  if (!parseJson(text, root, jsonError)) {
    error = "not valid JSON: " + jsonError;
    return false;
  }
  Reader read(error);
  if (!read.object(root, "the manifest"))
    return false;
  std::string format;
  int64_t version;
  if (!read.string(root, "manifest", "format", format))
    return false;
  if (format != "neuroshard-cuda-manifest")
    return read.fail("manifest.format is '" + format +
                     "'; expected 'neuroshard-cuda-manifest'");
  if (!read.integer(root, "manifest", "version", 0, kMaxInt, version))
    return false;
  if (version != 1)
    return read.fail("manifest.version is " + std::to_string(version) +
                     "; this runner reads version 1");

  std::string module;
  if (!read.string(root, "manifest", "module", module) ||
      !read.string(root, "manifest", "module_format", out.moduleFormat) ||
      !read.string(root, "manifest", "chip", out.chip))
    return false;
  if (module.empty())
    return read.fail("manifest.module is empty");
  out.modulePath =
      module[0] == '/' || baseDir.empty() ? module : baseDir + "/" + module;
  if (out.moduleFormat != "cubin" && out.moduleFormat != "ptx" &&
      out.moduleFormat != "fatbin")
    return read.fail("manifest.module_format is '" + out.moduleFormat +
                     "'; expected cubin, ptx or fatbin");

  const JsonValue *kernels = read.member(root, "manifest", "kernels");
  if (!kernels || !read.object(*kernels, "manifest.kernels") ||
      !read.string(*kernels, "manifest.kernels", "forward_i32",
                   out.forwardI32) ||
      !read.string(*kernels, "manifest.kernels", "forward_i64",
                   out.forwardI64) ||
      !read.string(*kernels, "manifest.kernels", "backward_i32",
                   out.backwardI32) ||
      !read.string(*kernels, "manifest.kernels", "backward_i64",
                   out.backwardI64))
    return false;

  int64_t seed;
  if (!read.integer(root, "manifest", "threads_per_block", 32, 1024,
                    out.threadsPerBlock) ||
      !read.integer(root, "manifest", "batch_size", 1, 2147483647,
                    out.batchSize) ||
      !read.integer(root, "manifest", "seed", 0, kMaxInt, seed) ||
      !read.number(root, "manifest", "lr", out.lr))
    return false;
  out.seed = static_cast<uint64_t>(seed);
  if (out.threadsPerBlock % 32 != 0)
    return read.fail("manifest.threads_per_block is " +
                     std::to_string(out.threadsPerBlock) +
                     "; it must be a multiple of 32 (whole warps)");

  const JsonValue *tables = read.member(root, "manifest", "tables");
  if (!tables || !read.array(*tables, "manifest.tables"))
    return false;
  if (tables->array.empty())
    return read.fail("manifest.tables is empty");
  for (size_t t = 0; t < tables->array.size(); ++t) {
    std::string path = "manifest.tables[" + std::to_string(t) + "]";
    const JsonValue &entry = tables->array[t];
    inputs::TableStats stats;
    if (!read.object(entry, path) ||
        !read.string(entry, path, "name", stats.name) ||
        !read.integer(entry, path, "rows", 1, kMaxInt, stats.rows) ||
        !read.integer(entry, path, "dim", 1, 1 << 20, stats.dim) ||
        !read.number(entry, path, "pooling_factor", stats.poolingFactor))
      return false;
    if (stats.poolingFactor < 0)
      return read.fail(path + ".pooling_factor is negative");
    const JsonValue *hist = read.member(entry, path, "access_hist");
    if (!hist || !read.array(*hist, path + ".access_hist"))
      return false;
    if (hist->array.size() != inputs::kNumHistogramBins)
      return read.fail(path + ".access_hist has " +
                       std::to_string(hist->array.size()) + " bins; expected " +
                       std::to_string(inputs::kNumHistogramBins));
    for (size_t j = 0; j < hist->array.size(); ++j) {
      const JsonValue &bin = hist->array[j];
      if (bin.kind != JsonValue::Kind::Number || !std::isfinite(bin.number) ||
          bin.number < 0)
        return read.fail(path + ".access_hist[" + std::to_string(j) +
                         "] must be a non-negative number");
      stats.accessHist[j] = bin.number;
    }
    out.tables.push_back(std::move(stats));
  }

  const JsonValue *lookups = read.member(root, "manifest", "lookups");
  if (!lookups || !read.array(*lookups, "manifest.lookups"))
    return false;
  for (size_t l = 0; l < lookups->array.size(); ++l) {
    std::string path = "manifest.lookups[" + std::to_string(l) + "]";
    const JsonValue &entry = lookups->array[l];
    int64_t table, stream;
    if (!read.object(entry, path) ||
        !read.integer(entry, path, "table", 0, int64_t(out.tables.size()) - 1,
                      table) ||
        !read.integer(entry, path, "stream", 0, kMaxInt, stream))
      return false;
    out.lookups.push_back({size_t(table), uint64_t(stream)});
  }

  if (out.lookups.empty())
    return read.fail("manifest.lookups is empty");

  const JsonValue *devices = read.member(root, "manifest", "devices");
  if (!devices || !read.array(*devices, "manifest.devices"))
    return false;
  if (devices->array.empty())
    return read.fail("manifest.devices is empty: nothing to launch");
  for (size_t d = 0; d < devices->array.size(); ++d) {
    std::string path = "manifest.devices[" + std::to_string(d) + "]";
    const JsonValue &entry = devices->array[d];
    LaunchSpec launch;
    std::string indexType;
    if (!read.object(entry, path) ||
        !read.integer(entry, path, "device", 0, 1 << 20, launch.device) ||
        !read.string(entry, path, "index_type", indexType))
      return false;
    if (indexType != "i32" && indexType != "i64")
      return read.fail(path + ".index_type is '" + indexType +
                       "'; expected i32 or i64");
    launch.index64 = indexType == "i64";
    const JsonValue *shards = read.member(entry, path, "shards");
    if (!shards || !read.array(*shards, path + ".shards"))
      return false;
    if (shards->array.empty())
      return read.fail(path + ".shards is empty");
    for (size_t s = 0; s < shards->array.size(); ++s) {
      std::string shardPath = path + ".shards[" + std::to_string(s) + "]";
      const JsonValue &item = shards->array[s];
      ShardSpec shard;
      int64_t lookup;
      std::string mode;
      if (!read.object(item, shardPath) ||
          !read.integer(item, shardPath, "lookup", 0,
                        int64_t(out.lookups.size()) - 1, lookup) ||
          !read.integer(item, shardPath, "col_begin", 0, kMaxInt,
                        shard.colBegin) ||
          !read.integer(item, shardPath, "col_end", 0, kMaxInt, shard.colEnd) ||
          !read.string(item, shardPath, "mode", mode))
        return false;
      shard.lookup = size_t(lookup);
      const inputs::TableStats &table =
          out.tables[out.lookups[shard.lookup].table];
      if (shard.colBegin >= shard.colEnd || shard.colEnd > table.dim)
        return read.fail(shardPath + " covers columns " +
                         std::to_string(shard.colBegin) + " to " +
                         std::to_string(shard.colEnd) + " but table '" +
                         table.name + "' has dim " + std::to_string(table.dim));
      if (mode != "sum" && mode != "mean")
        return read.fail(shardPath + ".mode is '" + mode +
                         "'; expected sum or mean");
      shard.mean = mode == "mean";
      if (!launch.index64 && table.rows > 2147483647)
        return read.fail(path + " uses i32 indices but table '" + table.name +
                         "' has " + std::to_string(table.rows) +
                         " rows, more than i32 can index");
      launch.shards.push_back(shard);
    }
    out.launches.push_back(std::move(launch));
  }
  return true;
}

bool loadManifest(const std::string &path, Manifest &out, std::string &error) {
  std::string text;
  if (!readFile(path, text, error)) {
    error = "manifest: " + error;
    return false;
  }
  size_t slash = path.find_last_of('/');
  std::string baseDir = slash == std::string::npos ? "" : path.substr(0, slash);
  if (!parseManifest(text, baseDir, out, error)) {
    error = "manifest '" + path + "': " + error;
    return false;
  }
  return true;
}

} // namespace runner
} // namespace neuroshard
