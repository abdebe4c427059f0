//===- neuroshard-collect.cpp - Time the fused kernels on shard sets ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Measures compute-cost samples (DESIGN §6): for every set of pool tables in
// a sets file, runs the project's own fused forward + backward-SGD kernels on
// the tables' generated index streams and prints one JSON line with the
// median time. The generic kernels are compiled once; a set is only run-time
// metadata, so thousands of sets cost no compilation. Between timed runs the
// last-level cache is flushed by writing a buffer larger than it.
//
//   pool.json:   {"tables": [{"id", "name", "rows", "dim",
//                              "pooling_factor", "access_hist": [17]}]}
//   sets.jsonl:  {"id": 17, "tables": [402, 1187, 95]}      (one per line)
//   stdout:      {"id": 17, "cost_ms": .., "min_ms": .., "max_ms": ..,
//                 "runs": N, "device": "cpu", "hardware": "..",
//                 "batch_size": B}
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/CPUKernels.h"
#include "neuroshard/Runtime/HostInfo.h"
#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/Statistics.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/LineIterator.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <map>

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
            cl::init(64), cl::cat(category));
static cl::opt<float> learningRate("lr", cl::desc("SGD learning rate"),
                                   cl::init(0.01f), cl::cat(category));

namespace {

[[noreturn]] void fail(const Twine &message) {
  WithColor::error(errs(), "neuroshard-collect") << message << "\n";
  exit(1);
}

std::map<int64_t, inputs::TableStats> readPool(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    fail("cannot read pool '" + path + "': " + buffer.getError().message());
  auto parsed = json::parse((*buffer)->getBuffer());
  if (!parsed)
    fail("pool '" + path + "' is not JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  const json::Array *tables = root ? root->getArray("tables") : nullptr;
  if (!tables)
    fail("pool '" + path + "' has no \"tables\" array");
  std::map<int64_t, inputs::TableStats> pool;
  for (const json::Value &value : *tables) {
    const json::Object *t = value.getAsObject();
    auto id = t ? t->getInteger("id") : std::nullopt;
    auto rows = t ? t->getInteger("rows") : std::nullopt;
    auto dim = t ? t->getInteger("dim") : std::nullopt;
    auto pooling = t ? t->getNumber("pooling_factor") : std::nullopt;
    const json::Array *hist = t ? t->getArray("access_hist") : nullptr;
    if (!id || !rows || !dim || !pooling || !hist ||
        hist->size() != kNumAccessBins || *rows <= 0 || *dim <= 0)
      fail("pool '" + path + "': table " + Twine(pool.size()) +
           " needs an id, positive rows and dim, pooling_factor and 17 "
           "access_hist bins");
    inputs::TableStats stats;
    auto name = t->getString("name");
    stats.name = name ? name->str() : "table" + std::to_string(*id);
    stats.rows = *rows;
    stats.dim = *dim;
    stats.poolingFactor = *pooling;
    for (unsigned j = 0; j < kNumAccessBins; ++j)
      stats.accessHist[j] = (*hist)[j].getAsNumber().value_or(0.0);
    if (!pool.insert({*id, stats}).second)
      fail("pool '" + path + "': table id " + Twine(*id) + " appears twice");
  }
  return pool;
}

/// Touches a buffer larger than the last-level cache.
struct CacheFlusher {
  explicit CacheFlusher(size_t bytes) : buffer(bytes / sizeof(int64_t), 0) {}
  void flush() {
    for (size_t i = 0; i < buffer.size(); i += 8)
      buffer[i] += 1;
  }
  std::vector<int64_t> buffer;
};

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Time the fused forward + backward-SGD kernels on sets of pool tables\n");
  if (device != "cpu")
    fail("--device '" + device +
         "': this tool times the CPU kernels; GPU samples come from "
         "neuroshard-cuda-runner");
  if (batchSize < 1 || iters < 1 || maxRows < 0)
    fail("--batch-size and --iters must be positive and --max-rows >= 0");

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
  CacheFlusher flusher(static_cast<size_t>(flushMB) << 20);

  // One arena for every set: only its size changes between sets, and the
  // kernels' timing does not depend on the weights' values.
  PreparedSet set;
  std::map<int64_t, inputs::LookupInputs> streams;
  for (line_iterator line(**setsBuffer, /*SkipBlanks=*/true); !line.is_at_end();
       ++line) {
    std::string where = (setsPath + ":" + Twine(line.line_number())).str();
    auto parsed = json::parse(*line);
    if (!parsed)
      fail(where + ": " + toString(parsed.takeError()));
    const json::Object *object = parsed->getAsObject();
    auto id = object ? object->getInteger("id") : std::nullopt;
    const json::Array *tables = object ? object->getArray("tables") : nullptr;
    if (!id || !tables || tables->empty())
      fail(where + ": expected {\"id\": N, \"tables\": [ids...]}");

    std::vector<KernelShard> shards;
    for (const json::Value &value : *tables) {
      auto tableId = value.getAsInteger();
      auto it = tableId ? pool.find(*tableId) : pool.end();
      if (it == pool.end())
        fail(where + ": table " +
             (tableId ? Twine(*tableId).str() : std::string("?")) +
             " is not in the pool");
      const inputs::TableStats &stats = it->second;
      int64_t rows =
          maxRows > 0 ? std::min(stats.rows, int64_t(maxRows)) : stats.rows;
      auto stream = streams.find(*tableId);
      if (stream == streams.end())
        stream =
            streams
                .insert({*tableId, inputs::generateLookup(
                                       stats, batchSize, seed,
                                       static_cast<uint64_t>(*tableId), rows)})
                .first;
      shards.push_back(
          {nullptr, rows, stats.dim, kernel_abi::kSum, &stream->second});
    }
    int64_t arena = CPUKernels::packInputs(set, shards, batchSize, seed);
    if (static_cast<size_t>(arena) > set.weights.size()) {
      size_t old = set.weights.size();
      set.weights.resize(static_cast<size_t>(arena));
      inputs::fillWeights(0x5eed, 1, 0, static_cast<int64_t>(arena - old),
                          set.weights.data() + old, 0);
    }

    Timing timing = timeRuns(
        warmup, iters,
        [&] {
          kernels->forward(set);
          kernels->backward(set, learningRate);
        },
        [&] { flusher.flush(); });
    json::Object result{{"id", *id},
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
