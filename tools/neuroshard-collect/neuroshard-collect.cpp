//===- neuroshard-collect.cpp - Time the fused kernels on shard sets ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Measures compute-cost samples (docs/design.md §6): for every set of pool
// tables in a sets file, runs the project's own fused forward + backward-SGD
// kernels on the tables' generated index streams and prints one JSON line with
// the median time. The generic kernels are compiled once; a set is only
// run-time metadata, so thousands of sets cost no compilation. Between timed
// runs the last-level cache is flushed by writing a buffer larger than it.
// Every set of the file is read and admitted before the first is timed, and all
// of them are timed on one weight arena of the largest set's size.
//
// An entry of a set is a pool table id (the whole table) or a piece of one:
// its rows [first, end), looked up with its block of the whole table's index
// stream (each bag keeps its indices inside the rows, shifted to the piece's
// rows), as a row-sharded table's piece receives them; or its columns
// [first, end), looked up with the whole table's stream, as a column piece
// reads every index of its table (a plan's merged pieces, such as 48 of 64
// columns, have widths that no pool table has); or both.
//
//   pool.json:   {"tables": [{"id", "name", "rows", "dim",
//                              "pooling_factor", "access_hist": [17]}]}
//   sets.jsonl:  {"id": 17, "tables": [402, 1187, 95]}      (one per line)
//                {"id": 18, "tables": [402, {"table": 95, "rows": [0, 500]}]}
//                {"id": 19, "tables": [{"table": 95, "cols": [0, 48]}]}
//   stdout:      {"id": 17, "cost_ms": .., "min_ms": .., "max_ms": ..,
//                 "runs": N, "device": "cpu", "hardware": "..",
//                 "batch_size": B}
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/Arena.h"
#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/MemoryBudget.h"
#include "neuroshard/Sharding/TableRules.h"
#include "neuroshard/Support/FileIO.h"
#include "neuroshard/Support/HostInfo.h"
#include "neuroshard/Support/Statistics.h"
#include "neuroshard/Support/Version.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/LineIterator.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <thread>
#include <tuple>
#include <utility>

using namespace llvm;
using namespace ::neuroshard;
using namespace ::neuroshard::execution;
using namespace ::neuroshard::runtime;

static cl::OptionCategory category("neuroshard-collect options");
static cl::opt<std::string> poolPath("pool", cl::Required,
                                     cl::desc("Table pool (JSON)"),
                                     cl::cat(category));
static cl::opt<std::string> setsPath("sets", cl::Required,
                                     cl::desc("Shard sets (JSON Lines)"),
                                     cl::cat(category));
static cl::opt<std::string> device("device", cl::desc("cpu"), cl::init("cpu"),
                                   cl::cat(category));
static cl::opt<int64_t> batchSize("batch-size", cl::desc("Bags per lookup"),
                                  cl::init(4096), cl::cat(category));
static cl::opt<unsigned> warmup("warmup", cl::desc("Untimed runs per set"),
                                cl::init(3), cl::cat(category));
static cl::opt<unsigned> iters("iters", cl::desc("Timed runs per set"),
                               cl::init(10), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the index streams"),
                              cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    maxRows("max-rows",
            cl::desc("Allocate at most this many rows per table (0: all)"),
            cl::init(0), cl::cat(category));
static cl::opt<unsigned>
    flushMB("flush-mb",
            cl::desc("Cache-flush buffer written before every timed run "
                     "(MiB; 0: no flush)"),
            cl::init(kDefaultFlushMB), cl::cat(category));
static cl::opt<int64_t> tableAlignment(
    "table-alignment",
    cl::desc("Align each table's base in the weight arena to this many "
             "floats (a power of two; default: a run's, 16 = 64 bytes)"),
    cl::init(kernel_abi::kArenaAlignment), cl::cat(category));
static cl::opt<float> learningRate("lr", cl::desc("SGD learning rate"),
                                   cl::init(0.01f), cl::cat(category));
static cl::opt<double> memoryLimitGB(
    "memory-limit-gb",
    cl::desc("Refuse a set whose weights, indices, offsets, outputs and "
             "flush buffer need more than this (GB, 2^30 bytes; default: the "
             "memory "
             "available)"),
    cl::init(0.0), cl::cat(category));

/// The largest batch: far above any collection's (4096 by default), and low
/// enough that offsets of i32 inputs stay countable.
constexpr int64_t kMaxBatchSize = int64_t(1) << 24;
/// The largest cache-flush buffer (MiB): last-level caches are far smaller.
constexpr unsigned kMaxFlushMB = 4096;
/// The largest --table-alignment (floats): a 4 KiB page.
constexpr int64_t kMaxTableAlignment = 1024;

namespace {

[[noreturn]] void fail(const Twine &message) {
  WithColor::error(errs(), "neuroshard-collect") << message << "\n";
  exit(1);
}

std::map<int64_t, inputs::TableStats> readPool(StringRef path) {
  auto parsed = readJSONFile(path, "pool");
  if (!parsed)
    fail(toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  const json::Array *tables = root ? root->getArray("tables") : nullptr;
  if (!tables)
    fail("pool '" + path + "' has no \"tables\" array");
  std::map<int64_t, inputs::TableStats> pool;
  for (const json::Value &value : *tables) {
    const json::Object *t = value.getAsObject();
    auto integer = [&](StringRef key) -> std::optional<int64_t> {
      const json::Value *field = t ? t->get(key) : nullptr;
      return field ? getInteger(*field) : std::nullopt;
    };
    auto id = integer("id");
    auto rows = integer("rows");
    auto dim = integer("dim");
    auto pooling = t ? t->getNumber("pooling_factor") : std::nullopt;
    const json::Array *hist = t ? t->getArray("access_hist") : nullptr;
    std::vector<double> bins;
    if (hist)
      for (const json::Value &bin : *hist)
        if (std::optional<double> number = bin.getAsNumber())
          bins.push_back(*number);
    if (!id || !rows || !dim || !pooling || !hist ||
        bins.size() != hist->size())
      fail("pool '" + path + "': table " + Twine(pool.size()) +
           " needs an integer id, rows and dim, a number pooling_factor and "
           "an access_hist of numbers");
    inputs::TableStats stats;
    auto name = t->getString("name");
    stats.name = name ? name->str() : "table" + std::to_string(*id);
    // The planner's rules, in its words: this data trains its cost model.
    RuleViolation broken = checkTableName(stats.name);
    for (auto rule : {checkRows(*rows), checkDim(*dim),
                      checkTableBytes(*rows, *dim, sizeof(float)),
                      checkPoolingFactor(*pooling), checkAccessHistogram(bins)})
      if (!broken)
        broken = rule;
    if (broken)
      fail("pool '" + path + "': table " + Twine(pool.size()) + " ('" +
           stats.name + "'): " + *broken);
    stats.rows = *rows;
    stats.dim = *dim;
    stats.poolingFactor = *pooling;
    llvm::copy(bins, stats.accessHist.begin());
    if (!pool.insert({*id, stats}).second)
      fail("pool '" + path + "': table id " + Twine(*id) + " appears twice");
  }
  return pool;
}

/// What an entry of a set must be, after "entry N".
constexpr const char *kEntryShape =
    " must be a pool table id or {\"table\": ID, \"rows\": [FIRST, END], "
    "\"cols\": [FIRST, END]} with rows, cols or both";

/// One entry of a set: a pool table, whole or its rows [rowBegin, rowEnd)
/// and columns [colBegin, colEnd).
struct SetEntry {
  int64_t table = 0;
  const inputs::TableStats *stats = nullptr;
  /// Whether the entry is a row piece (its rows a block of the table's).
  bool rowPiece = false;
  int64_t rowBegin = 0, rowEnd = 0;
  int64_t colBegin = 0, colEnd = 0;
  /// The first `kept` rows of the table are allocated (--max-rows); the
  /// entry holds rows [keptBegin, keptEnd) of them: a piece its share, at
  /// least one row.
  int64_t kept = 0, keptBegin = 0, keptEnd = 0;

  int64_t width() const { return colEnd - colBegin; }
};

/// Reads `[first, end]` of `object`'s `key` into `range`; false where the
/// key is absent, or not two integers (`malformed` then set).
bool readRange(const json::Object &object, StringRef key,
               std::pair<int64_t, int64_t> &range, bool &malformed) {
  const json::Value *field = object.get(key);
  if (!field)
    return false;
  const json::Array *pair = field->getAsArray();
  std::optional<int64_t> first, end;
  if (pair && pair->size() == 2) {
    first = getInteger((*pair)[0]);
    end = getInteger((*pair)[1]);
  }
  if (!first || !end) {
    malformed = true;
    return false;
  }
  range = {*first, *end};
  return true;
}

SetEntry readEntry(const json::Value &value,
                   const std::map<int64_t, inputs::TableStats> &pool,
                   const std::string &where, size_t position) {
  SetEntry entry;
  std::optional<int64_t> id = getInteger(value);
  std::pair<int64_t, int64_t> rows, cols;
  bool hasRows = false, hasCols = false;
  if (const json::Object *object = value.getAsObject()) {
    const json::Value *table = object->get("table");
    id = table ? getInteger(*table) : std::nullopt;
    bool malformed = false;
    hasRows = readRange(*object, "rows", rows, malformed);
    hasCols = readRange(*object, "cols", cols, malformed);
    if (malformed || (!hasRows && !hasCols) ||
        object->size() != 1 + size_t(hasRows) + size_t(hasCols))
      id.reset();
  }
  if (!id)
    fail(where + ": entry " + Twine(position) + kEntryShape);
  auto it = pool.find(*id);
  if (it == pool.end())
    fail(where + ": table " + Twine(*id) + " is not in the pool");
  entry.table = *id;
  entry.stats = &it->second;
  const inputs::TableStats &stats = *entry.stats;
  std::string named =
      (where + ": table " + Twine(*id) + " ('" + stats.name + "'): ").str();
  // The entry's range of `what` ("rows" or "cols"): the one given, else the
  // whole [0, limit); a range outside it or empty fails, naming `unit`.
  auto range = [&](StringRef what, bool given, std::pair<int64_t, int64_t> in,
                   int64_t limit, StringRef unit, StringRef bound) {
    std::pair<int64_t, int64_t> out =
        given ? in : std::pair<int64_t, int64_t>{0, limit};
    if (out.first < 0 || out.first >= out.second || out.second > limit)
      fail(named + what + " [" + Twine(out.first) + ", " + Twine(out.second) +
           ") are not a range of its " + Twine(limit) + " " + unit +
           " (0 <= first < end <= " + bound + ")");
    return out;
  };
  entry.rowPiece = hasRows;
  std::tie(entry.rowBegin, entry.rowEnd) =
      range("rows", hasRows, rows, stats.rows, "rows", "rows");
  std::tie(entry.colBegin, entry.colEnd) =
      range("cols", hasCols, cols, stats.dim, "columns", "dim");
  if (entry.width() % kColumnAlignment != 0)
    fail(named + "cols [" + Twine(entry.colBegin) + ", " + Twine(entry.colEnd) +
         ") are " + Twine(entry.width()) +
         " wide; a column piece's width must be a multiple of " +
         Twine(kColumnAlignment));
  int64_t tableRows = entry.stats->rows;
  entry.kept = maxRows > 0 ? std::min(tableRows, int64_t(maxRows)) : tableRows;
  entry.keptBegin = inputs::keptRow(entry.rowBegin, entry.kept, tableRows);
  entry.keptEnd = std::max(inputs::keptRow(entry.rowEnd, entry.kept, tableRows),
                           entry.keptBegin + 1);
  return entry;
}

/// A set of the sets file: its id and entries.
struct ParsedSet {
  int64_t id = 0;
  std::vector<SetEntry> entries;
};

/// The bytes of `entry`'s table's index stream at --batch-size: its indices
/// and offsets.
double streamSize(const SetEntry &entry) {
  return (double(batchSize) * entry.stats->poolingFactor + double(batchSize) +
          1.0) *
         sizeof(int64_t);
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  ::neuroshard::addVersionPrinter();
  ::neuroshard::addDocumentationHelp("cost-model.md");
  cl::ParseCommandLineOptions(
      argc, argv,
      "Time the fused forward + backward-SGD kernels on sets of pool tables\n");
  if (device != "cpu")
    fail("--device '" + device +
         "': this tool times the CPU kernels; GPU samples come from "
         "neuroshard-cuda-runner");
  if (batchSize < 1 || iters < 1 || maxRows < 0)
    fail("--batch-size and --iters must be positive and --max-rows >= 0");
  if (batchSize > kMaxBatchSize)
    fail("--batch-size must be at most " + Twine(kMaxBatchSize) + ", got " +
         Twine(batchSize));
  if (flushMB > kMaxFlushMB)
    fail("--flush-mb must be at most " + Twine(kMaxFlushMB) + ", got " +
         Twine(flushMB));
  if (!(memoryLimitGB >= 0.0) || !std::isfinite(memoryLimitGB))
    fail("--memory-limit-gb must be a number >= 0");
  if (tableAlignment < 1 || tableAlignment > kMaxTableAlignment ||
      (tableAlignment & (tableAlignment - 1)))
    fail("--table-alignment must be a power of two from 1 to " +
         Twine(kMaxTableAlignment) + " floats, got " + Twine(tableAlignment));

  std::map<int64_t, inputs::TableStats> pool = readPool(poolPath);
  auto setsBuffer = MemoryBuffer::getFile(setsPath);
  if (!setsBuffer)
    fail("cannot read sets '" + setsPath +
         "': " + setsBuffer.getError().message());

  auto compiled = CPUKernels::compile();
  if (!compiled)
    fail("compiling the kernels: " + toString(compiled.takeError()));
  std::unique_ptr<CPUKernels> kernels = std::move(*compiled);
  std::string hardware = hostCPUModel();
  double flushBytes = double(flushMB) * (1 << 20);
  MemoryNeed flushNeed;
  flushNeed.add("flush buffer", flushBytes);
  if (auto refused = admitMemory(flushNeed, memoryLimitGB * kBytesPerGB))
    fail("--flush-mb: the cache flush " + *refused);
  CacheFlusher flusher(static_cast<size_t>(flushBytes));

  // Every set is read and admitted before any is timed: a malformed line or
  // a set over the memory limit fails before the run has spent its time.
  std::vector<ParsedSet> parsed;
  // The index stream of every table the sets read so far (bytes): the
  // streams are generated once and kept for later sets.
  std::map<int64_t, double> streamBytes;
  int64_t arenaFloats = 0;
  // The most a set takes besides its weights (indices, offsets, outputs),
  // which it takes beside the arena of the largest set.
  double mostBesidesWeights = 0.0;
  for (line_iterator line(**setsBuffer, /*SkipBlanks=*/true); !line.is_at_end();
       ++line) {
    std::string where = (setsPath + ":" + Twine(line.line_number())).str();
    auto parsedLine = parseJSON(*line);
    if (!parsedLine)
      fail(where + ": " + toString(parsedLine.takeError()));
    const json::Object *object = parsedLine->getAsObject();
    const json::Value *idField = object ? object->get("id") : nullptr;
    auto id = idField ? getInteger(*idField) : std::nullopt;
    const json::Array *tables = object ? object->getArray("tables") : nullptr;
    if (!id || !tables || tables->empty())
      fail(where + ": expected {\"id\": N, \"tables\": [entries...]}");
    std::vector<SetEntry> entries;
    for (const json::Value &value : *tables)
      entries.push_back(readEntry(value, pool, where, entries.size()));

    // What the set takes while it is timed: its weights, the streams of the
    // sets before it, its own entries' streams with their blocks and packed
    // copies, its output and gradient, and the flush buffer.
    int64_t floats = 0;
    double indices = 0.0, width = 0.0;
    for (const auto &[table, bytes] : streamBytes)
      indices += bytes;
    for (const SetEntry &entry : entries) {
      // Laid out as CPUKernels::packInputs lays the set out.
      floats = kernel_abi::alignUp(floats, tableAlignment) +
               (entry.keptEnd - entry.keptBegin) * entry.width();
      width += double(entry.width());
      // The stream, the piece's block of it, and the set's packed copy.
      indices += (entry.rowPiece ? 3.0 : 2.0) * streamSize(entry);
    }
    double outputs = 2.0 * double(batchSize) * width * sizeof(float);
    MemoryNeed need;
    need.add("weights", double(floats) * sizeof(float));
    need.add("indices and offsets", indices);
    need.add("outputs", outputs);
    need.add("flush buffer", flushBytes);
    if (auto refused = admitMemory(need, memoryLimitGB * kBytesPerGB))
      fail(where + ": the set " + *refused +
           "; lower --batch-size or cap the rows with --max-rows");
    for (const SetEntry &entry : entries)
      streamBytes.try_emplace(entry.table, streamSize(entry));
    arenaFloats = std::max(arenaFloats, floats);
    mostBesidesWeights = std::max(mostBesidesWeights, indices + outputs);
    parsed.push_back({*id, std::move(entries)});
  }

  // Each set fits alone; timed on the largest set's arena, each must fit
  // beside it too.
  MemoryNeed run;
  run.add("weights of the largest set",
          double(arenaFloats) * double(sizeof(float)));
  run.add("indices, offsets and outputs of the set that takes the most",
          mostBesidesWeights);
  run.add("flush buffer", flushBytes);
  if (auto refused = admitMemory(run, memoryLimitGB * kBytesPerGB))
    fail(setsPath + ": timing the sets on one arena " + *refused +
         "; split the sets over several files, lower --batch-size or cap "
         "the rows with --max-rows");

  // One arena of zeros for every set, the largest set's size, mapped across
  // the cores before any set is timed: a set is packed at its start, and
  // the kernels' time does not depend on the weights' values. Grown from
  // set to set instead, the arena was copied, and its new pages zeroed and
  // then written again, at every larger set, which took most of a run's
  // time (docs/cost-model.md, "One arena per run").
  ZeroedArena arena(static_cast<size_t>(arenaFloats));
  arena.mapAll(std::max(1u, std::thread::hardware_concurrency()));
  PreparedSet set;
  std::map<int64_t, inputs::LookupInputs> streams;
  for (const ParsedSet &parsedSet : parsed) {
    const std::vector<SetEntry> &entries = parsedSet.entries;
    std::vector<KernelShard> shards;
    std::deque<inputs::LookupInputs> blocks;
    for (const SetEntry &entry : entries) {
      auto stream = streams.find(entry.table);
      if (stream == streams.end())
        stream =
            streams
                .insert({entry.table,
                         inputs::generateLookup(
                             *entry.stats, batchSize, seed,
                             static_cast<uint64_t>(entry.table), entry.kept)})
                .first;
      const inputs::LookupInputs *in = &stream->second;
      if (entry.rowPiece) {
        blocks.push_back(
            inputs::rowBlockInputs(*in, entry.keptBegin, entry.keptEnd));
        in = &blocks.back();
      }
      shards.push_back({nullptr, entry.keptEnd - entry.keptBegin, entry.width(),
                        kernel_abi::kSum, in});
    }
    int64_t used =
        CPUKernels::packInputs(set, shards, batchSize, seed,
                               /*indicesAreI32=*/false, tableAlignment);
    set.sharedWeights = MutableArrayRef<float>(arena.data(), size_t(used));

    Timing timing = timeRuns(
        warmup, iters,
        [&] {
          kernels->forward(set);
          kernels->backward(set, learningRate);
        },
        [&] { flusher.flush(); });
    json::Object result{{"id", parsedSet.id},
                        {"cost_ms", timing.median},
                        {"min_ms", timing.min},
                        {"max_ms", timing.max},
                        {"runs", static_cast<int64_t>(iters)},
                        {"device", "cpu"},
                        {"hardware", hardware},
                        {"batch_size", static_cast<int64_t>(batchSize)}};
    outs() << json::Value(std::move(result)) << "\n";
    outs().flush();
  }
  return 0;
}
