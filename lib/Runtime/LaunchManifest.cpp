//===- LaunchManifest.cpp - Kernel launches from a manifest ---------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/LaunchManifest.h"
#include "neuroshard/Runtime/BagInputs.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <tuple>

namespace neuroshard {
namespace launch_manifest {

namespace abi = kernel_abi;

namespace {

constexpr int64_t kMaxInt = 9007199254740992LL; // 2^53, as the format had
/// The steepest power law a cached shard's lookups may follow, as a task's
/// `zipf_alpha` (with room for the rounding of a fitted one).
constexpr double kMaxSkew = 4.0;

/// Reads the fields of one record line, naming them `keyword.field` and the
/// line in errors.
class RecordReader {
public:
  RecordReader(std::istringstream &line, const abi::ManifestRecord &record,
               size_t lineNumber, std::string &error)
      : line(line), record(record), error(error),
        where("line " + std::to_string(lineNumber) + ": ") {}

  bool fail(const std::string &message) {
    error = where + message;
    return false;
  }

  /// Field `index` of the record as one word.
  bool word(int index, std::string &out) {
    if (line >> out)
      return true;
    return fail(std::string(record.keyword) + " has " + std::to_string(index) +
                " field(s); expected " + std::to_string(record.numFields) +
                fieldList());
  }

  /// Field `index` as an integer in [minimum, maximum].
  bool integer(int index, int64_t minimum, int64_t maximum, int64_t &out) {
    std::string text;
    if (!word(index, text))
      return false;
    std::istringstream in(text);
    long long value;
    if (!(in >> value) || in.peek() != EOF || value < minimum ||
        value > maximum)
      return fail(name(index) + " is " + text + "; expected an integer in " +
                  std::to_string(minimum) + " .. " + std::to_string(maximum));
    out = value;
    return true;
  }

  /// Field `index` as a finite number.
  bool number(int index, double &out) {
    std::string text;
    return word(index, text) && toNumber(name(index), text, out);
  }

  /// A number after the named fields (the histogram's bins), called `label`.
  bool trailingNumber(const std::string &label, double &out) {
    std::string text;
    if (!(line >> text))
      return fail(label + " is missing");
    return toNumber(label, text, out);
  }

  /// True when the line has no field left.
  bool done() {
    std::string extra;
    if (line >> extra)
      return fail(std::string(record.keyword) + " has a field too many: '" +
                  extra + "'" + fieldList());
    return true;
  }

  std::string name(int index) const {
    return std::string(record.keyword) + "." + record.fields[index];
  }

private:
  bool toNumber(const std::string &label, const std::string &text,
                double &out) {
    std::istringstream in(text);
    if (!(in >> out) || in.peek() != EOF || !std::isfinite(out))
      return fail(label + " is '" + text + "'; expected a finite number");
    return true;
  }

  std::string fieldList() const {
    std::string list = " (";
    for (int i = 0; i < record.numFields; ++i)
      list += (i ? " " : "") + std::string(record.fields[i]);
    return list + ")";
  }

  std::istringstream &line;
  const abi::ManifestRecord &record;
  std::string &error;
  std::string where;
};

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
  std::istringstream lines(text);
  std::string lineText;
  size_t lineNumber = 0;
  bool sawHeader = false, sawModule = false, sawKernels = false, sawRun = false;
  long long version = 0;
  const abi::ManifestRecord *records[] = {
      &abi::kModuleRecord, &abi::kKernelsRecord, &abi::kRunRecord,
      &abi::kTableRecord,  &abi::kLookupRecord,  &abi::kDeviceRecord,
      &abi::kShardRecord};
  while (std::getline(lines, lineText)) {
    ++lineNumber;
    std::istringstream line(lineText);
    std::string keyword;
    if (!(line >> keyword) || keyword[0] == '#')
      continue;
    auto fail = [&](const std::string &message) {
      error = "line " + std::to_string(lineNumber) + ": " + message;
      return false;
    };
    if (!sawHeader) {
      std::string rest;
      if (keyword != abi::kManifestMagic || !(line >> version) || line >> rest)
        return fail(std::string("expected '") + abi::kManifestMagic + " " +
                    std::to_string(abi::kManifestVersion) + "', not '" +
                    lineText + "'");
      if (version < abi::kOldestManifestVersion ||
          version > abi::kManifestVersion)
        return fail("version " + std::to_string(version) +
                    "; this runner reads versions " +
                    std::to_string(abi::kOldestManifestVersion) + " to " +
                    std::to_string(abi::kManifestVersion));
      sawHeader = true;
      continue;
    }
    const abi::ManifestRecord *record = nullptr;
    for (const abi::ManifestRecord *candidate : records)
      if (keyword == candidate->keyword)
        record = candidate;
    if (!record)
      return fail("unknown record '" + keyword + "'");
    if (record == &abi::kShardRecord && version < 5)
      record = version < 3 ? &abi::kShardRecordV2 : &abi::kShardRecordV4;
    if (record == &abi::kDeviceRecord && version < 4)
      record = &abi::kDeviceRecordV3;
    RecordReader read(line, *record, lineNumber, error);
    auto once = [&](bool &seen) {
      if (!seen)
        return seen = true;
      return read.fail(keyword + " appears twice");
    };

    if (record == &abi::kModuleRecord) {
      std::string module;
      if (!once(sawModule) || !read.word(0, module) ||
          !read.word(1, out.moduleFormat) || !read.word(2, out.chip) ||
          !read.done())
        return false;
      out.modulePath =
          module[0] == '/' || baseDir.empty() ? module : baseDir + "/" + module;
      if (out.moduleFormat != "cubin" && out.moduleFormat != "ptx" &&
          out.moduleFormat != "fatbin")
        return read.fail(read.name(1) + " is '" + out.moduleFormat +
                         "'; expected cubin, ptx or fatbin");
    } else if (record == &abi::kKernelsRecord) {
      if (!once(sawKernels) || !read.word(0, out.forwardI32) ||
          !read.word(1, out.forwardI64) || !read.word(2, out.backwardI32) ||
          !read.word(3, out.backwardI64) || !read.done())
        return false;
    } else if (record == &abi::kRunRecord) {
      int64_t seed;
      if (!once(sawRun) || !read.integer(0, 1, kMaxInt, out.threadsPerBlock) ||
          !read.integer(1, 1, 2147483647, out.batchSize) ||
          !read.integer(2, 0, kMaxInt, seed) || !read.number(3, out.lr) ||
          !read.done())
        return false;
      out.seed = static_cast<uint64_t>(seed);
      std::string problem = abi::blockSizeProblem(out.threadsPerBlock);
      if (!problem.empty())
        return read.fail(read.name(0) + ": " + problem);
    } else if (record == &abi::kTableRecord) {
      inputs::TableStats stats;
      if (!read.word(0, stats.name) ||
          !read.integer(1, 1, kMaxInt, stats.rows) ||
          !read.integer(2, 1, 1 << 20, stats.dim) ||
          !read.number(3, stats.poolingFactor))
        return false;
      if (stats.poolingFactor < 0)
        return read.fail(read.name(3) + " is negative");
      for (unsigned j = 0; j < kNumAccessBins; ++j) {
        std::string bin = "table.access_hist[" + std::to_string(j) + "]";
        if (!read.trailingNumber(bin, stats.accessHist[j]))
          return false;
        if (stats.accessHist[j] < 0)
          return read.fail(bin + " is negative");
      }
      if (!read.done())
        return false;
      out.tables.push_back(std::move(stats));
    } else if (record == &abi::kLookupRecord) {
      int64_t table, stream;
      if (!read.integer(0, 0, int64_t(out.tables.size()) - 1, table) ||
          !read.integer(1, 0, kMaxInt, stream) || !read.done())
        return false;
      out.lookups.push_back({size_t(table), uint64_t(stream)});
    } else if (record == &abi::kDeviceRecord ||
               record == &abi::kDeviceRecordV3) {
      LaunchSpec launch;
      std::string indexType;
      if (!read.integer(0, 0, 1 << 20, launch.device) ||
          !read.word(1, indexType))
        return false;
      if (record == &abi::kDeviceRecord) {
        if (!sawRun)
          return read.fail("device before the run record, whose batch its "
                           "bags are of");
        if (!read.integer(2, 0, out.batchSize - 1, launch.bagBegin) ||
            !read.integer(3, launch.bagBegin + 1, out.batchSize, launch.bagEnd))
          return false;
      }
      if (!read.done())
        return false;
      if (indexType != "i32" && indexType != "i64")
        return read.fail(read.name(1) + " is '" + indexType +
                         "'; expected i32 or i64");
      launch.index64 = indexType == "i64";
      out.launches.push_back(std::move(launch));
    } else {
      if (out.launches.empty())
        return read.fail("shard before any device");
      LaunchSpec &launch = out.launches.back();
      ShardSpec shard;
      int64_t lookup;
      std::string mode;
      bool withRows = record != &abi::kShardRecordV2;
      bool withCache = record == &abi::kShardRecord;
      int modeField = withCache ? 7 : withRows ? 5 : 3;
      if (!read.integer(0, 0, int64_t(out.lookups.size()) - 1, lookup) ||
          !read.integer(1, 0, kMaxInt, shard.colBegin) ||
          !read.integer(2, 0, kMaxInt, shard.colEnd))
        return false;
      const inputs::TableStats &table =
          out.tables[out.lookups[size_t(lookup)].table];
      shard.rowEnd = table.rows;
      if ((withRows && (!read.integer(3, 0, kMaxInt, shard.rowBegin) ||
                        !read.integer(4, 0, kMaxInt, shard.rowEnd))) ||
          (withCache && (!read.integer(5, 0, kMaxInt, shard.cacheRows) ||
                         !read.number(6, shard.skew))) ||
          !read.word(modeField, mode) || !read.done())
        return false;
      shard.lookup = size_t(lookup);
      if (shard.colBegin >= shard.colEnd || shard.colEnd > table.dim)
        return read.fail("shard covers columns " +
                         std::to_string(shard.colBegin) + " to " +
                         std::to_string(shard.colEnd) + " but table '" +
                         table.name + "' has dim " + std::to_string(table.dim));
      if (shard.rowBegin >= shard.rowEnd || shard.rowEnd > table.rows)
        return read.fail("shard covers rows " + std::to_string(shard.rowBegin) +
                         " to " + std::to_string(shard.rowEnd) +
                         " but table '" + table.name + "' has " +
                         std::to_string(table.rows) + " rows");
      if (shard.cacheRows > shard.rowEnd - shard.rowBegin)
        return read.fail("shard of rows " + std::to_string(shard.rowBegin) +
                         " to " + std::to_string(shard.rowEnd) + " of table '" +
                         table.name + "' has a cache of " +
                         std::to_string(shard.cacheRows) +
                         " rows but holds only " +
                         std::to_string(shard.rowEnd - shard.rowBegin));
      if (shard.skew < 0.0 || shard.skew > kMaxSkew + 1e-9)
        return read.fail(read.name(6) + " is " + std::to_string(shard.skew) +
                         "; expected a power law's exponent in [0, " +
                         std::to_string(int(kMaxSkew)) + "]");
      if (shard.isCached() && !launch.index64)
        return read.fail("device " + std::to_string(launch.device) +
                         " uses i32 indices but its shard of table '" +
                         table.name +
                         "' is cached: a fetch's locations reach host memory "
                         "and need i64");
      if (mode != "sum" && mode != "mean")
        return read.fail(read.name(modeField) + " is '" + mode +
                         "'; expected sum or mean");
      shard.mean = mode == "mean";
      if (shard.mean && shard.isRowPiece(table))
        return read.fail("shard of rows " + std::to_string(shard.rowBegin) +
                         " to " + std::to_string(shard.rowEnd) + " of table '" +
                         table.name +
                         "' pools with mean; a row piece pools with sum (the "
                         "mean divides by the whole bag after the pieces' "
                         "reduction)");
      if (!launch.index64 && table.rows > 2147483647)
        return read.fail("device " + std::to_string(launch.device) +
                         " uses i32 indices but table '" + table.name +
                         "' has " + std::to_string(table.rows) +
                         " rows, more than i32 can index");
      launch.shards.push_back(shard);
    }
  }

  auto missing = [&](const std::string &what) {
    error = what;
    return false;
  };
  if (!sawHeader)
    return missing(std::string("empty; expected '") + abi::kManifestMagic +
                   " " + std::to_string(abi::kManifestVersion) + "'");
  for (auto [seen, record] : {std::make_pair(sawModule, &abi::kModuleRecord),
                              std::make_pair(sawKernels, &abi::kKernelsRecord),
                              std::make_pair(sawRun, &abi::kRunRecord)})
    if (!seen)
      return missing(std::string("no ") + record->keyword + " record");
  if (out.tables.empty())
    return missing("no table records");
  if (out.lookups.empty())
    return missing("no lookup records");
  if (out.launches.empty())
    return missing("no device records: nothing to launch");
  for (const LaunchSpec &launch : out.launches)
    if (launch.shards.empty())
      return missing("device " + std::to_string(launch.device) +
                     " has no shard records");
  out.declaredBatchSize = out.batchSize;
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

bool readInputOverrides(const std::string &path, const Manifest &manifest,
                        InputOverrides &out, std::string &error) {
  std::ifstream file(path);
  if (!file) {
    error = "cannot read inputs '" + path + "'";
    return false;
  }
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string keyword, kind;
    if (!(words >> keyword))
      continue;
    long long lookup = -1;
    auto fail = [&](const std::string &why) {
      error =
          "inputs '" + path + "': line " + std::to_string(number) + ": " + why;
      return false;
    };
    if (keyword != "lookup" || !(words >> lookup >> kind) ||
        (kind != "offsets" && kind != "indices"))
      return fail("expected 'lookup K offsets|indices VALUES...'");
    if (lookup < 0 || size_t(lookup) >= manifest.lookups.size())
      return fail("lookup " + std::to_string(lookup) +
                  " but the manifest has " +
                  std::to_string(manifest.lookups.size()) + " lookup(s)");
    inputs::LookupInputs &in = out[size_t(lookup)];
    std::vector<int64_t> &values = kind == "offsets" ? in.offsets : in.indices;
    std::string word;
    while (words >> word) {
      char *end = nullptr;
      long long value = std::strtoll(word.c_str(), &end, 10);
      if (word.empty() || *end != '\0')
        return fail("'" + word + "' is not an integer");
      values.push_back(value);
    }
  }
  return true;
}

inputs::LookupInputs lookupInputs(const Manifest &manifest, size_t lookup,
                                  const InputOverrides &given,
                                  int64_t rowLimit) {
  auto found = given.find(lookup);
  if (found != given.end())
    return found->second;
  const LookupSpec &spec = manifest.lookups[lookup];
  return inputs::generateLookup(manifest.tables[spec.table], manifest.batchSize,
                                manifest.seed, spec.stream, rowLimit);
}

bool checkLaunchInputs(const Manifest &manifest, const InputOverrides &given,
                       long long launch, std::string &error) {
  // A lookup is checked once for each index type that reads it.
  std::map<std::pair<size_t, bool>, bool> checked;
  for (size_t k = 0; k < manifest.launches.size(); ++k) {
    if (launch >= 0 && size_t(launch) != k)
      continue;
    const LaunchSpec &spec = manifest.launches[k];
    for (const ShardSpec &shard : spec.shards) {
      if (!checked.emplace(std::make_pair(shard.lookup, spec.index64), true)
               .second)
        continue;
      const inputs::TableStats &table =
          manifest.tables[manifest.lookups[shard.lookup].table];
      inputs::LookupInputs in = lookupInputs(manifest, shard.lookup, given);
      std::string name = "launch " + std::to_string(k) + ", lookup " +
                         std::to_string(shard.lookup) + " (table " +
                         table.name + ")";
      error = abi::checkBagInputs(
          name, in.offsets.data(), int64_t(in.offsets.size()),
          in.indices.data(), int64_t(in.indices.size()), manifest.batchSize,
          table.rows, !spec.index64);
      if (!error.empty())
        return false;
    }
  }
  return true;
}

bool buildLaunch(const Manifest &manifest, size_t which,
                 const LaunchOptions &options, LaunchBuffers &out,
                 std::string &error) {
  static const InputOverrides none;
  const InputOverrides &given = options.given ? *options.given : none;
  const LaunchSpec &launch = manifest.launches[which];
  out = LaunchBuffers();
  // A replica's bags keep their share of a batch other than the written one.
  int64_t declared = manifest.declaredBatchSize > 0 ? manifest.declaredBatchSize
                                                    : manifest.batchSize;
  bool slice = launch.isBatchSlice(declared);
  out.bagBegin =
      slice ? inputs::keptRow(launch.bagBegin, manifest.batchSize, declared)
            : 0;
  int64_t bagEnd =
      slice ? inputs::keptRow(launch.bagEnd, manifest.batchSize, declared)
            : manifest.batchSize;
  out.batch = bagEnd - out.bagBegin;
  if (out.batch < 1) {
    error = "launch " + std::to_string(which) + " looks up bags " +
            std::to_string(launch.bagBegin) + " to " +
            std::to_string(launch.bagEnd) + " of " + std::to_string(declared) +
            ", none of them at a batch of " +
            std::to_string(manifest.batchSize);
    return false;
  }

  // The input pairs the launch reads: a lookup's inputs for a shard of every
  // row, or a row piece's block of them, each packed once.
  using RowRange = std::tuple<size_t, int64_t, int64_t>;
  std::map<size_t, inputs::LookupInputs> generated;
  std::deque<inputs::LookupInputs> blocks;
  std::vector<const inputs::LookupInputs *> pairs;
  std::map<RowRange, int64_t> pairOf, tableSlot;
  std::vector<abi::ShardDescriptor> shards;
  for (size_t s = 0; s < launch.shards.size(); ++s) {
    const ShardSpec &shard = launch.shards[s];
    const LookupSpec &lookup = manifest.lookups[shard.lookup];
    const inputs::TableStats &table = manifest.tables[lookup.table];
    int64_t kept = options.maxRows > 0 ? std::min(table.rows, options.maxRows)
                                       : table.rows;
    int64_t first = inputs::keptRow(shard.rowBegin, kept, table.rows);
    int64_t end = inputs::keptRow(shard.rowEnd, kept, table.rows);
    // A cached shard's pair is its own: its rows follow its power law.
    RowRange pairKey = shard.isCached()
                           ? RowRange{manifest.lookups.size() + s, first, end}
                           : RowRange{shard.lookup, first, end};
    auto [pair, inserted] = pairOf.try_emplace(pairKey, int64_t(pairs.size()));
    if (inserted) {
      // Each lookup once, cut to the launch's bags when it has a slice.
      auto found = generated.find(shard.lookup);
      if (found == generated.end()) {
        inputs::LookupInputs whole =
            lookupInputs(manifest, shard.lookup, given, options.maxRows);
        found =
            generated
                .emplace(shard.lookup, slice ? inputs::bagSliceInputs(
                                                   whole, out.bagBegin, bagEnd)
                                             : std::move(whole))
                .first;
      }
      const inputs::LookupInputs *in = &found->second;
      if (shard.isRowPiece(table)) {
        blocks.push_back(inputs::rowBlockInputs(*in, first, end));
        in = &blocks.back();
      }
      if (shard.isCached()) {
        // The bags keep their lengths; the rows are the power law's.
        CachedShard cache;
        cache.shard = s;
        cache.rows = end - first;
        cache.width = shard.width();
        cache.cacheRows = std::min(
            cache.rows,
            std::max<int64_t>(
                1, std::llround(double(shard.cacheRows) * double(cache.rows) /
                                double(shard.rowEnd - shard.rowBegin))));
        cache.count = int64_t(in->indices.size());
        cache.skew = shard.skew;
        cache.seed = inputs::mixSeed(
            inputs::mixSeed(
                inputs::mixSeed(manifest.seed, inputs::hashString(table.name)),
                lookup.stream),
            uint64_t(shard.rowBegin));
        cache.drawn = !given.count(shard.lookup);
        if (cache.drawn) {
          blocks.push_back(*in);
          blocks.back().indices = inputs::zipfIndexStream(
              cache.rows, cache.skew, cache.count, cache.seed);
          in = &blocks.back();
        }
        out.caches.push_back(cache);
      }
      pairs.push_back(in);
    }
    abi::ShardDescriptor descriptor;
    descriptor.width = shard.width();
    descriptor.mode = abi::poolingMode(shard.mean);
    descriptor.input = pair->second;
    auto addSlot = [&](int64_t rowStride) {
      out.layout.push_back(out.arenaSize);
      out.slotRows.push_back(end - first);
      out.slotRowBegin.push_back(first);
      out.arenaSize =
          abi::alignArenaOffset(out.arenaSize + (end - first) * rowStride);
      out.deviceLayout.push_back(out.deviceArenaSize);
      int64_t deviceRows =
          shard.isCached() ? out.caches.back().cacheRows : end - first;
      out.deviceArenaSize =
          abi::alignArenaOffset(out.deviceArenaSize + deviceRows * rowStride);
      return int64_t(out.layout.size()) - 1;
    };
    if (options.layout == WeightLayout::Shards || shard.isCached()) {
      descriptor.rowStride = shard.width();
      descriptor.table = addSlot(descriptor.rowStride);
    } else {
      // A table's column shards read one slot; each row piece has its own.
      auto [slot, added] =
          tableSlot.try_emplace({lookup.table, first, end}, int64_t(0));
      if (added)
        slot->second = addSlot(table.dim);
      descriptor.table = slot->second;
      descriptor.rowStride = table.dim;
      descriptor.colBegin = shard.colBegin;
    }
    shards.push_back(descriptor);
    if (shard.isCached())
      out.caches.back().slot = descriptor.table;
    std::string name = table.name + "[" + std::to_string(shard.colBegin) +
                       ".." + std::to_string(shard.colEnd) + ")";
    if (shard.isRowPiece(table))
      name += " rows " + std::to_string(shard.rowBegin) + ".." +
              std::to_string(shard.rowEnd);
    out.shardNames.push_back(std::move(name));
  }
  out.packed = abi::packShardSet<int64_t>(shards, pairs);
  for (CachedShard &cache : out.caches)
    cache.indexBegin =
        out.packed.layout
            .meta[cache.shard * abi::kShardFields + abi::kIndicesBase];
  if (!launch.index64 && out.packed.indices.size() > 2147483647) {
    error = "launch " + std::to_string(which) + " has " +
            std::to_string(out.packed.indices.size()) +
            " indices, more than i32 offsets can address";
    return false;
  }
  return true;
}

} // namespace launch_manifest
} // namespace neuroshard
