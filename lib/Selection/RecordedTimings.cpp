//===- RecordedTimings.cpp - Candidates timed on another machine ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Selection/RecordedTimings.h"

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Sharding/HostTier.h"
#include "neuroshard/Support/FileIO.h"
#include "neuroshard/Support/JSONFields.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <limits>

using namespace llvm;

namespace neuroshard {

namespace abi = kernel_abi;

/// The format and version sets.json carries.
static constexpr const char *kSetsFormat = "neuroshard-verify-sets";
static constexpr int64_t kSetsVersion = 1;
/// What the manifest's run record gives besides the batch: threads per
/// block, the seed of the index streams (the CPU set timer's) and the
/// learning rate of the timed update (its value does not change the time).
static constexpr int64_t kThreadsPerBlock = 256;
static constexpr int64_t kStreamSeed = 1;
static constexpr double kLearningRate = 0.01;

static std::string joinPath(StringRef dir, StringRef name) {
  SmallString<256> path(dir);
  sys::path::append(path, name);
  return std::string(path);
}

RecordedSetTimer::SetKey setKey(ArrayRef<TableSpec> tables,
                                ArrayRef<ColumnSlice> slices) {
  RecordedSetTimer::SetKey key;
  for (const ColumnSlice &slice : slices) {
    const TableSpec &table = tables[slice.table];
    key.push_back({table.name, slice.colBegin, slice.colEnd, slice.rowBegin,
                   slice.rowEndIn(table)});
  }
  llvm::sort(key);
  return key;
}

/// "t3[0:64], t7, t9[rows 0:5000]".
static std::string describeKey(const RecordedSetTimer::SetKey &key) {
  std::vector<std::string> names;
  for (const RecordedSetTimer::SliceKey &slice : key)
    names.push_back(formatv("{0}[{1}:{2}, rows {3}:{4}]", slice.table,
                            slice.colBegin, slice.colEnd, slice.rowBegin,
                            slice.rowEnd)
                        .str());
  return join(names, ", ");
}

/// The launch that times set `set` among `numSets` on draw `draw`.
static int64_t launchOf(size_t set, size_t numSets, unsigned draw) {
  return int64_t(draw * numSets + set);
}

std::string setsManifest(ArrayRef<TableSpec> tables, int64_t batchSize,
                         ArrayRef<std::vector<ColumnSlice>> sets,
                         StringRef chip, unsigned draws) {
  std::string text;
  raw_string_ostream os(text);
  os << abi::kManifestMagic << " " << abi::kManifestVersion << "\n";
  os << abi::kModuleRecord.keyword << " " << kSetKernelsName << " cubin "
     << chip << "\n";
  os << abi::kKernelsRecord.keyword << " " << abi::kForwardI32 << " "
     << abi::kForwardI64 << " " << abi::kBackwardI32 << " " << abi::kBackwardI64
     << "\n";
  os << abi::kRunRecord.keyword << " " << kThreadsPerBlock << " " << batchSize
     << " " << kStreamSeed << " " << format("%g", kLearningRate) << "\n";
  // One manifest table, and one lookup of it, per (table, feature) some set
  // holds, named by position: the manifest reads names as single words.
  std::map<std::pair<unsigned, unsigned>, size_t> lookupOf;
  for (const std::vector<ColumnSlice> &set : sets)
    for (const ColumnSlice &slice : set)
      for (unsigned f = 0; f < tables[slice.table].numFeatures(); ++f)
        lookupOf.try_emplace({slice.table, f}, 0);
  size_t next = 0;
  // A shard of a host-memory table is timed behind its cache, its lookups
  // following the power law the planner priced the cache with: one per
  // lookup, fitted once.
  auto cached = [&](const ColumnSlice &slice) {
    return !slice.replica && tables[slice.table].inHostMemory();
  };
  std::vector<double> skewOf;
  for (auto &[key, lookup] : lookupOf) {
    const TableSpec &table = tables[key.first];
    FeatureStats feature = table.feature(key.second);
    lookup = next++;
    skewOf.push_back(
        table.inHostMemory()
            ? popularityLaw(feature.accessHist, table.rows,
                            double(batchSize) * table.totalPoolingFactor())
            : 0.0);
    os << abi::kTableRecord.keyword << " s" << lookup << " " << table.rows
       << " " << table.dim << " " << format("%.17g", feature.poolingFactor);
    for (double bin : feature.accessHist)
      os << " " << format("%.17g", bin);
    os << "\n";
  }
  // Lookup r x next + k reads table k's stream r.
  for (unsigned r = 0; r < draws; ++r)
    for (size_t k = 0; k < next; ++k)
      os << abi::kLookupRecord.keyword << " " << k << " " << r << "\n";
  for (unsigned r = 0; r < draws; ++r) {
    for (auto [s, set] : enumerate(sets)) {
      // i32 offsets address 2^31 - 1 indices: a set that may draw more than
      // that (its expected count with room for the draw's spread) takes i64.
      double indices = 0.0;
      for (const ColumnSlice &slice : set)
        indices += double(batchSize) *
                   tables[slice.table].totalPoolingFactor() *
                   slice.rowShare(tables[slice.table]);
      // A cached shard's locations reach host memory: i64 too.
      bool wide = 1.5 * indices > double(std::numeric_limits<int32_t>::max()) ||
                  any_of(set, cached);
      os << abi::kDeviceRecord.keyword << " " << launchOf(s, sets.size(), r)
         << (wide ? " i64" : " i32") << " 0 " << batchSize << "\n";
      for (const ColumnSlice &slice : set) {
        const TableSpec &table = tables[slice.table];
        int64_t rowEnd = slice.rowEndIn(table);
        bool inCache = cached(slice);
        int64_t cacheRows =
            inCache ? table.cacheRows(rowEnd - slice.rowBegin) : 0;
        for (unsigned f = 0; f < table.numFeatures(); ++f) {
          size_t lookup = lookupOf[{slice.table, f}];
          os << abi::kShardRecord.keyword << " " << r * next + lookup << " "
             << slice.colBegin << " " << slice.colEnd << " " << slice.rowBegin
             << " " << rowEnd << " " << cacheRows << " "
             << format("%.17g", inCache ? skewOf[lookup] : 0.0) << " sum\n";
        }
      }
    }
  }
  return text;
}

Expected<size_t> writeCandidateSets(StringRef dir, ArrayRef<TableSpec> tables,
                                    const Topology &topology, CostModel &model,
                                    const PlanResult &result, StringRef chip) {
  if (result.candidates.empty())
    return createStringError(inconvertibleErrorCode(),
                             "writing the candidates' sets needs the search's "
                             "candidates");
  CandidateSets distinct =
      distinctDeviceSets(result.candidates, topology.numDevices());
  if (std::error_code ec = sys::fs::create_directories(dir))
    return createStringError(ec, formatv("cannot create the directory '{0}' "
                                         "for the candidates' sets: {1}",
                                         dir, ec.message()));
  if (Error err = model.prepare(tables, topology))
    return std::move(err);
  std::vector<ArrayRef<ColumnSlice>> slices(distinct.sets.begin(),
                                            distinct.sets.end());
  std::vector<double> predictedMs(slices.size());
  if (Error err = model.predictCompute(slices, predictedMs))
    return std::move(err);
  if (Error err =
          writeOutputFile(joinPath(dir, kSetsFileName), [&](raw_ostream &os) {
            json::OStream json(os, 1);
            json.object([&] {
              json.attribute("format", kSetsFormat);
              json.attribute("version", kSetsVersion);
              json.attribute("batch_size", topology.batchSize);
              json.attribute("device_kind", topology.deviceKind);
              json.attribute("cost_model", model.name());
              json.attribute("candidates", int64_t(result.candidates.size()));
              json.attribute("draws", int64_t(kDefaultInputDraws));
              json.attributeArray("sets", [&] {
                for (auto [id, set] : enumerate(distinct.sets))
                  json.object([&] {
                    json.attribute("id", int64_t(id));
                    json.attributeArray("launches", [&] {
                      for (unsigned r = 0; r < kDefaultInputDraws; ++r)
                        json.value(launchOf(id, distinct.sets.size(), r));
                    });
                    json.attribute("predicted_ms", predictedMs[id]);
                    json.attributeArray("slices", [&] {
                      for (const RecordedSetTimer::SliceKey &slice :
                           setKey(tables, set))
                        json.object([&] {
                          json.attribute("table", slice.table);
                          json.attributeArray("columns", [&] {
                            json.value(slice.colBegin);
                            json.value(slice.colEnd);
                          });
                          json.attributeArray("rows", [&] {
                            json.value(slice.rowBegin);
                            json.value(slice.rowEnd);
                          });
                        });
                    });
                  });
              });
            });
            os << "\n";
          }))
    return std::move(err);
  if (Error err = writeOutputFile(
          joinPath(dir, kSetsManifestName), [&](raw_ostream &os) {
            os << setsManifest(tables, topology.batchSize, distinct.sets, chip);
          }))
    return std::move(err);
  return distinct.sets.size();
}

Expected<std::unique_ptr<RecordedSetTimer>>
RecordedSetTimer::load(StringRef dir) {
  std::unique_ptr<RecordedSetTimer> timer(new RecordedSetTimer());
  timer->dir = dir.str();
  std::string setsPath = joinPath(dir, kSetsFileName);
  Expected<json::Value> document = readJSONFile(setsPath, "sets");
  if (!document)
    return document.takeError();
  const json::Object *top = document->getAsObject();
  if (!top)
    return createStringError(inconvertibleErrorCode(),
                             formatv("sets '{0}': expected an object of "
                                     "--verify-export",
                                     setsPath));
  JSONFields fields{*top, formatv("sets '{0}'", setsPath).str()};
  std::string format;
  int64_t version = 0;
  if (Error err = fields.string("format", format))
    return std::move(err);
  if (format != kSetsFormat)
    return fields.fail(
        formatv("'format' is '{0}', expected '{1}'", format, kSetsFormat));
  if (Error err = fields.integer("version", version))
    return std::move(err);
  if (version != kSetsVersion)
    return fields.fail(formatv("version {0}; this planner reads version {1}",
                               version, kSetsVersion));
  if (Error err = fields.integer("batch_size", timer->batchSize, 1))
    return std::move(err);
  const json::Array *sets = top->getArray("sets");
  if (!sets)
    return fields.fail("'sets' must be an array");
  // Each set's key and launches, and the set of each launch.
  std::map<int64_t, std::pair<SetKey, std::vector<int64_t>>> setOf;
  std::map<int64_t, int64_t> launchSet;
  for (auto [i, value] : enumerate(*sets)) {
    std::string where = formatv("{0}, sets[{1}]", fields.name(), i).str();
    const json::Object *object = value.getAsObject();
    if (!object)
      return createStringError(inconvertibleErrorCode(),
                               where + ": expected an object");
    JSONFields set{*object, where};
    int64_t id = 0;
    if (Error err = set.integer("id", id))
      return std::move(err);
    const json::Array *launchArray = object->getArray("launches");
    if (!launchArray || launchArray->empty())
      return set.fail("'launches' must be a non-empty array of launch "
                      "numbers");
    std::vector<int64_t> launches;
    for (const json::Value &launch : *launchArray) {
      std::optional<int64_t> number = getInteger(launch);
      if (!number || *number < 0)
        return set.fail("'launches' must be a non-empty array of launch "
                        "numbers");
      launches.push_back(*number);
    }
    for (int64_t launch : launches)
      if (!launchSet.try_emplace(launch, id).second)
        return set.fail(formatv("launch {0} belongs to two sets", launch));
    const json::Array *slices = object->getArray("slices");
    if (!slices || slices->empty())
      return set.fail("'slices' must be a non-empty array");
    SetKey key;
    for (auto [j, sliceValue] : enumerate(*slices)) {
      std::string sliceWhere = formatv("{0}, slices[{1}]", where, j).str();
      const json::Object *sliceObject = sliceValue.getAsObject();
      if (!sliceObject)
        return createStringError(inconvertibleErrorCode(),
                                 sliceWhere + ": expected an object");
      JSONFields slice{*sliceObject, sliceWhere};
      SliceKey &entry = key.emplace_back();
      if (Error err = slice.string("table", entry.table))
        return std::move(err);
      if (Error err = slice.range("columns", entry.colBegin, entry.colEnd))
        return std::move(err);
      if (Error err = slice.range("rows", entry.rowBegin, entry.rowEnd))
        return std::move(err);
    }
    llvm::sort(key);
    if (!setOf.try_emplace(id, std::move(key), std::move(launches)).second)
      return set.fail(formatv("set {0} appears twice", id));
  }

  std::string samplesPath = joinPath(dir, kSetSamplesName);
  ErrorOr<std::unique_ptr<MemoryBuffer>> samples =
      MemoryBuffer::getFile(samplesPath, /*IsText=*/true);
  if (!samples)
    return createStringError(
        samples.getError(),
        formatv("cannot read the samples '{0}': {1}; time the sets of '{2}' "
                "with neuroshard-cuda-runner --manifest {2}/{3} --collect "
                "{0} (scripts/gpu/verify.sh run) first",
                samplesPath, samples.getError().message(), dir,
                kSetsManifestName));
  std::map<int64_t, RecordedRuns> runsOf;
  SmallVector<StringRef> lines;
  (*samples)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (auto [n, line] : enumerate(lines)) {
    std::string where =
        formatv("samples '{0}' line {1}", samplesPath, n + 1).str();
    Expected<json::Value> value = parseJSON(line);
    if (!value)
      return createStringError(inconvertibleErrorCode(),
                               where + ": " + toString(value.takeError()));
    const json::Object *object = value->getAsObject();
    if (!object)
      return createStringError(inconvertibleErrorCode(),
                               where + ": expected an object of the runner");
    JSONFields sample{*object, where};
    int64_t id = 0, batch = 0, runs = 0;
    RecordedRuns recorded;
    std::string hardware;
    if (Error err = sample.integer("id", id))
      return std::move(err);
    if (!launchSet.count(id))
      return sample.fail(formatv("launch {0} is not among the {1} launches "
                                 "of '{2}'",
                                 id, launchSet.size(), setsPath));
    if (runsOf.count(id))
      return sample.fail(formatv("launch {0} was timed twice", id));
    if (Error err = sample.integer("batch_size", batch, 1))
      return std::move(err);
    if (batch != timer->batchSize)
      return sample.fail(formatv("launch {0} was timed at batch {1}, but the "
                                 "sets are of batch {2}",
                                 id, batch, timer->batchSize));
    if (Error err = sample.number("cost_ms", recorded.medianMs))
      return std::move(err);
    if (Error err = sample.number("min_ms", recorded.minMs))
      return std::move(err);
    if (Error err = sample.number("max_ms", recorded.maxMs))
      return std::move(err);
    if (Error err = sample.integer("runs", runs, 1))
      return std::move(err);
    if (Error err = sample.string("hardware", hardware))
      return std::move(err);
    if (Error err = sample.string("device", timer->deviceName))
      return std::move(err);
    if (!timer->hardware.empty() && hardware != timer->hardware)
      return sample.fail(formatv("timed on '{0}', but the lines before on "
                                 "'{1}': the sets of one planning are timed "
                                 "on one kind of hardware",
                                 hardware, timer->hardware));
    timer->hardware = hardware;
    recorded.runs = unsigned(std::min<int64_t>(runs, 1 << 30));
    runsOf[id] = recorded;
  }
  // A set's time is the mean of its draws'.
  for (auto &[id, entry] : setOf) {
    auto &[key, launches] = entry;
    RecordedRuns set;
    set.minMs = std::numeric_limits<double>::infinity();
    for (int64_t launch : launches) {
      auto found = runsOf.find(launch);
      if (found == runsOf.end())
        return createStringError(
            inconvertibleErrorCode(),
            formatv("set {0} of '{1}' has no timing of its launch {2} in "
                    "'{3}' ({4} of {5} launches timed): run the runner's "
                    "collection again, it resumes",
                    id, setsPath, launch, samplesPath, runsOf.size(),
                    launchSet.size()));
      const RecordedRuns &draw = found->second;
      set.medianMs += draw.medianMs / double(launches.size());
      set.minMs = std::min(set.minMs, draw.minMs);
      set.maxMs = std::max(set.maxMs, draw.maxMs);
      set.runs += draw.runs;
    }
    timer->timings[key] = set;
  }
  return timer;
}

Error RecordedSetTimer::prepare(ArrayRef<TableSpec> tables, int64_t batch,
                                ArrayRef<std::vector<ColumnSlice>> sets) {
  if (batch != batchSize)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("the sets in '{0}' were timed at batch {1}, but the plan is "
                "for batch {2}",
                dir, batchSize, batch));
  prepared.clear();
  for (auto [i, set] : enumerate(sets)) {
    SetKey key = setKey(tables, set);
    auto found = timings.find(key);
    if (found == timings.end())
      return createStringError(
          inconvertibleErrorCode(),
          formatv("device set {0} of the candidates ({1}) is not among the "
                  "{2} sets timed in '{3}': plan with the task and options "
                  "that wrote them",
                  i, describeKey(key), timings.size(), dir));
    prepared.push_back(found->second);
  }
  return Error::success();
}

double RecordedSetTimer::time(size_t index, unsigned) {
  return prepared[index].medianMs;
}

std::optional<RecordedRuns> RecordedSetTimer::recorded(size_t index) const {
  return prepared[index];
}

} // namespace neuroshard
