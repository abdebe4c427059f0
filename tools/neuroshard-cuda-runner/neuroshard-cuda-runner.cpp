//===- neuroshard-cuda-runner.cpp - Run the generic kernels on a GPU ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Loads the kernels object and the launch manifest that
// --neuroshard-export-cuda writes, generates every lookup's inputs with
// InputGenerator, runs forward and backward+SGD of each launch, checks both
// against a CPU reference and times them with CUDA events. The bandwidth mode
// measures one large lookup against a device-to-device copy; the host-cache
// mode one table in pinned host memory mapped into the device, read through
// device caches of several sizes (RowCache.h). The collection
// mode times every launch as one compute-cost sample of a GPU cost model
// (scripts/gpu/calibrate.sh). Needs only the CUDA driver at run time (no
// LLVM, no MLIR); usage in docs/lowering.md.
//
// Exit status: 0 success, 1 bad arguments, bad input or a CUDA error, 2 a
// result that does not match the reference.
//
//===----------------------------------------------------------------------===//

#include "Workload.h"

#include "neuroshard/Runtime/Cuda/CudaRuntime.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/RowCache.h"
#include "neuroshard/Support/Statistics.h"
#include "neuroshard/Support/Units.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace neuroshard;
using namespace neuroshard::launch_manifest;
using namespace neuroshard::runner;
using cuda::DevicePtr;
using cuda::Runtime;
using cuda::Status;

namespace {

const char *const kUsage =
    "usage: neuroshard-cuda-runner --manifest FILE [options]\n"
    "       neuroshard-cuda-runner --bandwidth --module FILE [options]\n"
    "       neuroshard-cuda-runner --host-cache C,C... --module FILE "
    "[options]\n"
    "       neuroshard-cuda-runner --validate FILE\n"
    "       neuroshard-cuda-runner --manifest FILE --collect SAMPLES "
    "[--emulate]\n"
    "\n"
    "  --manifest FILE       launch manifest from --neuroshard-export-cuda\n"
    "  --validate FILE       check a manifest and its kernels file, no GPU\n"
    "  --module FILE         kernels object (default: the manifest's)\n"
    "  --module-format F     cubin, ptx or fatbin (default: the manifest's,\n"
    "                        or the module file's extension)\n"
    "  --launch K            run only launch K of the manifest\n"
    "  --max-rows R          keep each table's first R rows (a row piece\n"
    "                        and a cache their share of them), so that a\n"
    "                        plan of tables larger than the machine runs\n"
    "  --cache-warmup N      steps that fill the device caches (of a\n"
    "                        manifest's launch, or --host-cache's) before\n"
    "                        they are timed and counted (default 50)\n"
    "  --layout L            shards (each shard its own block, default) or\n"
    "                        tables (whole tables, shards read a column "
    "range)\n"
    "  --bandwidth           one table, fixed pooling, uniform rows\n"
    "  --host-cache C,C...   one table (--rows, --dim) in pinned host memory\n"
    "                        mapped into the device, looked up (--batch-size,\n"
    "                        --pooling, Zipf --skew) through a device cache "
    "of\n"
    "                        each C rows: the fetch kernel then the forward,\n"
    "                        timed against the table in device memory, with\n"
    "                        the hit rate the cache reached\n"
    "  --skew S              host-cache Zipf exponent (default 1.05)\n"
    "  --batch-size B        bandwidth batch (default 65536)\n"
    "  --dim D               bandwidth dim (default 128)\n"
    "  --pooling P           bandwidth indices per bag (default 32)\n"
    "  --rows R              bandwidth table rows (default 1000000)\n"
    "  --index-type T        bandwidth index type i32 or i64 (default i32)\n"
    "  --warmup W            untimed runs before timing (default 5)\n"
    "  --iters N             timed runs (default 20)\n"
    "  --no-flush            do not flush the L2 cache before timed runs\n"
    "  --tolerance X         forward max relative error (default 1e-5)\n"
    "  --backward-tolerance X  backward max relative error (default 1e-4),\n"
    "                        on top of the rounding that float atomics in\n"
    "                        another order can add to a row updated n times\n"
    "  --inputs FILE         indices and offsets of some lookups instead of\n"
    "                        generated ones: lines 'lookup K offsets V...'\n"
    "                        and 'lookup K indices V...'\n"
    "  --trust-inputs        skip the input checks before launching (offsets\n"
    "                        from 0, non-decreasing, ending at the index\n"
    "                        count; indices in range; i32 within 2^31)\n"
    "  --collect FILE        time forward+backward+SGD of every launch (a\n"
    "                        shard set, its device number the set id) and\n"
    "                        append one JSON line per set to FILE; sets\n"
    "                        already in FILE are skipped, so a stopped\n"
    "                        collection resumes (no reference check)\n"
    "  --emulate             with --collect: time the CPU reference loops\n"
    "                        instead of the GPU (tests the collection\n"
    "                        without a GPU; its times are not a GPU's,\n"
    "                        its L2 is an H100's 50 MiB)\n"
    "  --threads N           threads generating inputs (default: all)\n"
    "  --gpu N               CUDA device ordinal (default 0)\n"
    "  --json FILE           also write the results as JSON\n";

struct Options {
  std::string manifest, validate, module, moduleFormat, json, inputs, collect;
  /// --host-cache: the cache sizes to time, in rows.
  std::vector<long long> hostCache;
  double skew = 1.05;
  bool bandwidth = false, flush = true, trustInputs = false, emulate = false;
  long long threads = 0;
  long long launch = -1;
  long long maxRows = 0;
  /// Training steps that fill a launch's caches before it is timed.
  long long cacheWarmup = 50;
  WeightLayout layout = WeightLayout::Shards;
  long long batch = 65536, dim = 128, pooling = 32, rows = 1000000;
  bool index64 = false;
  long long warmup = 5, iters = 20, gpu = 0;
  double tolerance = 1e-5, backwardTolerance = 1e-4;
};

int fail(const std::string &message) {
  std::fprintf(stderr, "neuroshard-cuda-runner: error: %s\n", message.c_str());
  return 1;
}

bool parseInteger(const std::string &flag, const std::string &text,
                  long long minimum, long long maximum, long long &out,
                  std::string &error) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < minimum ||
      value > maximum) {
    error = flag + " expects an integer in " + std::to_string(minimum) +
            " .. " + std::to_string(maximum) + ", got '" + text + "'";
    return false;
  }
  out = value;
  return true;
}

bool parseReal(const std::string &flag, const std::string &text, double &out,
               std::string &error) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 0) {
    error = flag + " expects a non-negative number, got '" + text + "'";
    return false;
  }
  out = value;
  return true;
}

bool parseArguments(int argc, char **argv, Options &options,
                    std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc) {
        error = flag + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    std::string text;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (flag == "--manifest") {
      if (!value(options.manifest))
        return false;
    } else if (flag == "--validate") {
      if (!value(options.validate))
        return false;
    } else if (flag == "--module") {
      if (!value(options.module))
        return false;
    } else if (flag == "--module-format") {
      cuda::ModuleFormat format;
      if (!value(options.moduleFormat))
        return false;
      if (!cuda::parseModuleFormat(options.moduleFormat, format)) {
        error = "--module-format expects cubin, ptx or fatbin, got '" +
                options.moduleFormat + "'";
        return false;
      }
    } else if (flag == "--json") {
      if (!value(options.json))
        return false;
    } else if (flag == "--collect") {
      if (!value(options.collect))
        return false;
    } else if (flag == "--emulate") {
      options.emulate = true;
    } else if (flag == "--inputs") {
      if (!value(options.inputs))
        return false;
    } else if (flag == "--trust-inputs") {
      options.trustInputs = true;
    } else if (flag == "--bandwidth") {
      options.bandwidth = true;
    } else if (flag == "--host-cache") {
      if (!value(text))
        return false;
      std::stringstream items(text);
      std::string item;
      while (std::getline(items, item, ',')) {
        long long rows = 0;
        if (!parseInteger(flag, item, 1, 1LL << 40, rows, error))
          return false;
        options.hostCache.push_back(rows);
      }
      if (options.hostCache.empty()) {
        error = "--host-cache expects cache sizes in rows, such as 1000,10000";
        return false;
      }
    } else if (flag == "--skew") {
      if (!value(text) || !parseReal(flag, text, options.skew, error))
        return false;
    } else if (flag == "--no-flush") {
      options.flush = false;
    } else if (flag == "--layout") {
      if (!value(text))
        return false;
      if (text != "shards" && text != "tables") {
        error = "--layout expects shards or tables, got '" + text + "'";
        return false;
      }
      options.layout =
          text == "shards" ? WeightLayout::Shards : WeightLayout::Tables;
    } else if (flag == "--index-type") {
      if (!value(text))
        return false;
      if (text != "i32" && text != "i64") {
        error = "--index-type expects i32 or i64, got '" + text + "'";
        return false;
      }
      options.index64 = text == "i64";
    } else if (flag == "--tolerance" || flag == "--backward-tolerance") {
      if (!value(text) ||
          !parseReal(flag, text,
                     flag == "--tolerance" ? options.tolerance
                                           : options.backwardTolerance,
                     error))
        return false;
    } else {
      struct IntegerFlag {
        const char *name;
        long long *target;
        long long minimum, maximum;
      } integers[] = {
          {"--launch", &options.launch, 0, 1LL << 30},
          {"--max-rows", &options.maxRows, 1, 1LL << 50},
          {"--cache-warmup", &options.cacheWarmup, 0, 1 << 20},
          {"--batch-size", &options.batch, 1, 2147483647LL},
          {"--dim", &options.dim, 1, 1 << 20},
          {"--pooling", &options.pooling, 0, 1 << 20},
          {"--rows", &options.rows, 1, 1LL << 40},
          {"--warmup", &options.warmup, 0, 1 << 20},
          {"--iters", &options.iters, 1, 1 << 20},
          {"--gpu", &options.gpu, 0, 1 << 20},
          {"--threads", &options.threads, 1, 1024},
      };
      bool known = false;
      for (const IntegerFlag &entry : integers) {
        if (flag != entry.name)
          continue;
        known = true;
        if (!value(text) || !parseInteger(flag, text, entry.minimum,
                                          entry.maximum, *entry.target, error))
          return false;
      }
      if (!known) {
        error = "unknown argument '" + flag + "' (see --help)";
        return false;
      }
    }
  }
  int modes = !options.manifest.empty() + !options.validate.empty() +
              int(options.bandwidth) + int(!options.hostCache.empty());
  if (modes != 1) {
    error = modes == 0 ? "give --manifest FILE, --bandwidth, --host-cache "
                         "C,C... or --validate FILE"
                       : "--manifest, --bandwidth, --host-cache and --validate "
                         "exclude each other";
    return false;
  }
  for (long long rows : options.hostCache)
    if (rows > options.rows) {
      error = "--host-cache " + std::to_string(rows) +
              " is more rows than the table's " + std::to_string(options.rows) +
              " (--rows)";
      return false;
    }
  if (!options.hostCache.empty() &&
      (options.module.empty() || !(options.skew > 0.0))) {
    error =
        options.module.empty()
            ? "--host-cache needs --module FILE (the kernels object)"
            : "--skew must be positive, got " + std::to_string(options.skew);
    return false;
  }
  if (!options.collect.empty() &&
      (options.manifest.empty() || options.launch >= 0 ||
       !options.inputs.empty() || !options.json.empty() ||
       options.layout != WeightLayout::Shards)) {
    error = "--collect needs --manifest and takes none of --launch, "
            "--inputs, --json and --layout";
    return false;
  }
  if (options.maxRows > 0 &&
      (options.manifest.empty() || !options.collect.empty())) {
    error = "--max-rows applies to --manifest runs without --collect";
    return false;
  }
  if (options.emulate && options.collect.empty()) {
    error = "--emulate emulates a collection; give --collect FILE";
    return false;
  }
  if (options.bandwidth && options.module.empty()) {
    error = "--bandwidth needs --module FILE (the kernels object)";
    return false;
  }
  if (options.bandwidth && options.batch * options.pooling > 2147483647LL &&
      !options.index64) {
    error = "--batch-size x --pooling exceeds what i32 offsets can address; "
            "use --index-type i64";
    return false;
  }
  return true;
}

/// The kernels object's format: explicit, else the manifest's, else the
/// file's extension.
bool resolveFormat(const Options &options, const std::string &fromManifest,
                   const std::string &path, cuda::ModuleFormat &format,
                   std::string &error) {
  std::string name = options.moduleFormat;
  if (name.empty() && options.module.empty())
    name = fromManifest;
  if (name.empty()) {
    size_t dot = path.find_last_of('.');
    name = dot == std::string::npos ? "" : path.substr(dot + 1);
  }
  if (!cuda::parseModuleFormat(name, format)) {
    error = "cannot tell the format of '" + path +
            "' from its extension; pass --module-format cubin|ptx|fatbin";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// GPU side
//===----------------------------------------------------------------------===//

/// A memref operand as the kernels take it, expanded (KernelABI.h).
struct MemRefParams {
  void *allocated = nullptr, *aligned = nullptr;
  int64_t offset = 0, sizes[2] = {0, 0}, strides[2] = {1, 1};
};

MemRefParams memref1D(DevicePtr ptr, int64_t size) {
  MemRefParams m;
  m.allocated = m.aligned = reinterpret_cast<void *>(ptr);
  m.sizes[0] = size;
  return m;
}

/// The parameters of a kernel launch, built from its operand list
/// (KernelABI.h): `memrefs[i]` for memref operand i, `scalar` for the one
/// scalar operand.
std::vector<void *> kernelParams(const kernel_abi::KernelOperand *operands,
                                 unsigned count, MemRefParams *memrefs,
                                 void *scalar) {
  std::vector<void *> params;
  for (unsigned i = 0; i < count; ++i) {
    int rank = operands[i].rank;
    if (rank == 0) {
      params.push_back(scalar);
      continue;
    }
    MemRefParams &m = memrefs[i];
    params.push_back(&m.allocated);
    params.push_back(&m.aligned);
    params.push_back(&m.offset);
    for (int d = 0; d < rank; ++d)
      params.push_back(&m.sizes[d]);
    for (int d = 0; d < rank; ++d)
      params.push_back(&m.strides[d]);
  }
  return params;
}

/// The launch dimensions of `geometry`.
cuda::LaunchDims launchDims(const kernel_abi::LaunchGeometry &geometry) {
  cuda::LaunchDims dims;
  dims.gridX = unsigned(geometry.gridX);
  dims.gridY = unsigned(geometry.gridY);
  dims.blockX = unsigned(geometry.blockX);
  return dims;
}

/// Where a cache's rows go in pinned host memory mapped at device address
/// `host`, so that they start a whole number of rows past the cache's slot
/// 0 at `slots`, and one base and stride reach both (the allocation has a
/// row to spare): the bytes to skip, and the location of the host's row 0
/// as the kernels count (RowCache::setHostRowZero).
struct HostRowsPlacement {
  int64_t skip = 0, hostRowZero = 0;
};
HostRowsPlacement placeHostRows(DevicePtr host, DevicePtr slots,
                                int64_t rowBytes) {
  int64_t distance = int64_t(host) - int64_t(slots);
  int64_t skip = ((-distance) % rowBytes + rowBytes) % rowBytes;
  return {skip, (distance + skip) / rowBytes};
}

/// Begins a step of `cache`, whose state is at `state` on the device (only
/// the step word changes on the host's side), and launches the generated
/// fetch of `count` rows at `rows`: locations to `locations`, rows filled
/// into the cache's slots in the arena `weights` of `weightFloats` floats.
Status launchFetch(Runtime &rt, cuda::FunctionHandle fetch,
                   runtime::RowCache &cache, DevicePtr state, DevicePtr weights,
                   int64_t weightFloats, DevicePtr rows, DevicePtr locations,
                   int64_t count, int64_t flags) {
  namespace abi = kernel_abi;
  std::vector<int64_t> &words = cache.state();
  cache.beginStep();
  Status status = rt.copyToDevice(state + runtime::kRowCacheStep * 8,
                                  &words[runtime::kRowCacheStep], 8);
  if (!status.ok())
    return status;
  MemRefParams memrefs[abi::kRowCacheFetchNumOperands];
  memrefs[abi::kRowCacheStateOperand] = memref1D(state, int64_t(words.size()));
  memrefs[abi::kRowCacheWeightsOperand] = memref1D(weights, weightFloats);
  memrefs[abi::kRowCacheRowsOperand] = memref1D(rows, count);
  memrefs[abi::kRowCacheLocationsOperand] = memref1D(locations, count);
  std::vector<void *> params =
      kernelParams(abi::kRowCacheFetchOperands, abi::kRowCacheFetchNumOperands,
                   memrefs, &flags);
  cuda::LaunchDims dims = launchDims(abi::rowCacheFetchGeometry(cache.sets()));
  return rt.launch(fetch, dims, nullptr, params.data());
}

/// Forgets what `cache`, whose state is at `state` on the device, counted
/// so far: the counts are header words, which alone cross.
Status clearCounts(Runtime &rt, runtime::RowCache &cache, DevicePtr state) {
  std::vector<int64_t> &words = cache.state();
  size_t headerBytes = runtime::kRowCacheHeaderWords * 8;
  Status status = rt.synchronize();
  if (status.ok())
    status = rt.copyToHost(words.data(), state, headerBytes);
  if (!status.ok())
    return status;
  std::fill(words.begin() + runtime::kRowCacheLookups,
            words.begin() + runtime::kRowCacheReadThrough + 1, 0);
  return rt.copyToDevice(state, words.data(), headerBytes);
}

/// Device copies of a workload and the launches of its two kernels. A
/// cached shard's rows are in pinned host memory mapped into the device,
/// its cache in the device arena; before the kernels read it, the fetch
/// kernel turns a draw of its rows into locations in its input pair.
class DeviceRun {
public:
  /// `draws`: the batches of each cached shard's rows that its fetches
  /// cycle through, each another sample of its power law.
  DeviceRun(Runtime &rt, const Workload &w, cuda::FunctionHandle forward,
            cuda::FunctionHandle backward, cuda::FunctionHandle fetch,
            int64_t threadsPerBlock, int draws = 1)
      : rt(rt), w(w), forward(forward), backward(backward), fetchKernel(fetch),
        threadsPerBlock(threadsPerBlock), numDraws(std::max(draws, 1)) {}
  ~DeviceRun() {
    for (DevicePtr ptr : owned)
      if (ptr)
        rt.free(ptr);
    for (DeviceCache &cache : caches)
      if (cache.host)
        rt.freeMappedHost(cache.host);
  }

  Status upload() {
    Status status;
    const void *indices = w.index64
                              ? static_cast<const void *>(w.indices64.data())
                              : w.indices32.data();
    const void *offsets = w.index64
                              ? static_cast<const void *>(w.offsets64.data())
                              : w.offsets32.data();
    size_t numOffsets = w.index64 ? w.offsets64.size() : w.offsets32.size();
    size_t gradFloats = size_t(w.batch * w.width);
    if (!(status = put(meta, w.meta.data(), w.meta.size() * 8)).ok() ||
        !(status =
              put(layout, w.deviceLayout.data(), w.deviceLayout.size() * 8))
             .ok() ||
        !(status = putOrFill(weights, deviceArena(),
                             size_t(w.deviceArenaFloats), kFillWeight))
             .ok() ||
        !(status =
              put(indicesBuf, indices, size_t(w.numIndices) * w.indexBytes()))
             .ok() ||
        !(status = put(offsetsBuf, offsets, numOffsets * w.indexBytes()))
             .ok() ||
        !(status = putOrFill(grad, w.grad, gradFloats, kFillGradient)).ok() ||
        !(status = put(out, nullptr, gradFloats * 4)).ok())
      return status;
    caches.resize(w.caches.size());
    for (size_t c = 0; c < caches.size() && status.ok(); ++c)
      status = setUpCache(w.caches[c], caches[c]);
    return status.ok() ? rt.synchronize() : status;
  }

  /// Puts the initial weights back (backward updates them), and empties
  /// the caches.
  Status resetWeights() {
    if (w.weights.empty())
      return Status();
    std::vector<float> arena = deviceArena();
    Status status = rt.copyToDevice(weights, arena.data(), arena.size() * 4);
    for (size_t c = 0; c < caches.size() && status.ok(); ++c)
      status = resetCache(w.caches[c], caches[c]);
    return status;
  }

  /// Fetches draw `draw` of every cached shard's rows (marking the slots
  /// dirty with `write`, for an update).
  Status fetch(int draw, bool write) {
    Status status;
    for (size_t c = 0; c < caches.size() && status.ok(); ++c) {
      const launch_manifest::CachedShard &spec = w.caches[c];
      status = launchFetch(rt, fetchKernel, *caches[c].cache, caches[c].state,
                           weights, w.deviceArenaFloats,
                           caches[c].draws[size_t(draw)],
                           indicesBuf + DevicePtr(spec.indexBegin * 8),
                           spec.count, write ? runtime::kRowCacheWrites : 0);
      caches[c].batchRows += caches[c].distinct[size_t(draw)];
    }
    return status;
  }

  Status launchForward() { return launch(forward, false); }
  Status launchBackward() { return launch(backward, true); }
  /// What a timed forward runs: the fetch of the next draw, then the
  /// forward.
  Status timedForward() {
    Status status = fetchNext(false);
    return status.ok() ? launchForward() : status;
  }
  /// One training step: the fetch of the next draw, the forward, then the
  /// backward with the SGD update.
  Status timedStep() {
    Status status = fetchNext(true);
    if (status.ok())
      status = launchForward();
    return status.ok() ? launchBackward() : status;
  }

  /// The forward's output, and the weights as the reference holds them:
  /// a cached shard's rows in host memory with its cache's dirty rows
  /// written back over them.
  Status download(std::vector<float> &output, std::vector<float> &weightsOut) {
    output.resize(size_t(w.batch * w.width));
    weightsOut.resize(w.weights.size());
    Status status = rt.synchronize();
    if (status.ok() && !output.empty())
      status = rt.copyToHost(output.data(), out, output.size() * 4);
    if (!status.ok() || weightsOut.empty())
      return status;
    if (caches.empty())
      return rt.copyToHost(weightsOut.data(), weights, weightsOut.size() * 4);
    std::vector<float> arena(size_t(w.deviceArenaFloats));
    if (!(status = rt.copyToHost(arena.data(), weights, arena.size() * 4))
             .ok() ||
        !(status = downloadStates()).ok())
      return status;
    copySlots(arena.data(), w.deviceLayout, w.deviceArenaFloats,
              weightsOut.data(), w.layout, w.arenaFloats);
    for (size_t c = 0; c < caches.size(); ++c) {
      const launch_manifest::CachedShard &spec = w.caches[c];
      float *rows = weightsOut.data() + w.layout[size_t(spec.slot)];
      std::copy(caches[c].hostRows, caches[c].hostRows + spec.rows * spec.width,
                rows);
      runtime::RowCacheStorage storage;
      storage.cache = arena.data() + w.deviceLayout[size_t(spec.slot)];
      storage.cacheStride = storage.hostStride = storage.width = spec.width;
      storage.host = rows;
      // Flushes a copy: the device's cache keeps its rows and dirty bits.
      runtime::RowCache copy = *caches[c].cache;
      copy.flush(storage);
    }
    return status;
  }

  /// Fills the caches with `steps` training steps, then forgets what they
  /// counted (their rows stay): what a timed run finds after the steps of
  /// training before it.
  Status warmCaches(long long steps) {
    if (caches.empty())
      return Status();
    Status status;
    for (long long i = 0; i < steps && status.ok(); ++i)
      status = timedStep();
    for (size_t c = 0; c < caches.size() && status.ok(); ++c) {
      status = clearCounts(rt, *caches[c].cache, caches[c].state);
      caches[c].batchRows = 0;
    }
    return status;
  }

  /// What each cache did since its counts were cleared.
  /// `batchRows`: per cache, the distinct rows of the batches it fetched
  /// meanwhile.
  Status cacheStats(std::vector<runtime::RowCacheStats> &stats,
                    std::vector<int64_t> &batchRows) {
    Status status = downloadStates();
    stats.clear();
    batchRows.clear();
    for (DeviceCache &cache : caches) {
      stats.push_back(cache.cache->stats());
      batchRows.push_back(cache.batchRows);
    }
    return status;
  }

private:
  /// What a workload built without values holds: small enough that SGD
  /// steps never overflow, the same everywhere since timing ignores them.
  static constexpr float kFillWeight = 0.01f, kFillGradient = 0.001f;

  /// Copies `values`, or fills `count` floats with `fill` when there are
  /// none.
  Status putOrFill(DevicePtr &ptr, const std::vector<float> &values,
                   size_t count, float fill) {
    if (!values.empty() || count == 0)
      return put(ptr, values.data(), values.size() * 4);
    Status status = put(ptr, nullptr, count * 4);
    uint32_t bits;
    std::memcpy(&bits, &fill, 4);
    return status.ok() ? rt.memset32Async(ptr, bits, count, nullptr) : status;
  }

  Status put(DevicePtr &ptr, const void *data, size_t bytes) {
    ptr = 0;
    if (bytes == 0)
      return Status();
    Status status = rt.alloc(bytes, ptr);
    if (!status.ok())
      return status;
    owned.push_back(ptr);
    return data ? rt.copyToDevice(ptr, data, bytes) : Status();
  }

  /// A cached shard on the device: its rows in mapped host memory, its
  /// cache's state (on the device, mirrored here) and its draws of rows.
  struct DeviceCache {
    void *host = nullptr;
    float *hostRows = nullptr;
    int64_t hostRowZero = 0;
    std::optional<runtime::RowCache> cache;
    DevicePtr state = 0;
    /// Per draw: its rows on the device, and how many distinct rows it has.
    std::vector<DevicePtr> draws;
    std::vector<int64_t> distinct;
    /// The distinct rows of the batches fetched since the counts were
    /// cleared.
    int64_t batchRows = 0;
  };

  /// Copies the slots of an arena laid out by `fromLayout` into one laid
  /// out by `toLayout`, except the cached shards' slots, whose sizes
  /// differ.
  void copySlots(const float *from, const std::vector<int64_t> &fromLayout,
                 int64_t fromFloats, float *to,
                 const std::vector<int64_t> &toLayout, int64_t toFloats) const {
    std::vector<bool> cached(fromLayout.size(), false);
    for (const launch_manifest::CachedShard &spec : w.caches)
      cached[size_t(spec.slot)] = true;
    for (size_t i = 0; i < fromLayout.size(); ++i) {
      if (cached[i])
        continue;
      auto end = [&](const std::vector<int64_t> &layout, int64_t floats) {
        return i + 1 < layout.size() ? layout[i + 1] : floats;
      };
      int64_t floats = std::min(end(fromLayout, fromFloats) - fromLayout[i],
                                end(toLayout, toFloats) - toLayout[i]);
      std::copy(from + fromLayout[i], from + fromLayout[i] + floats,
                to + toLayout[i]);
    }
  }

  /// The device arena's initial values: the reference's slots, caches
  /// empty (nothing for a workload without values).
  std::vector<float> deviceArena() const {
    if (w.weights.empty() || w.caches.empty())
      return w.weights;
    std::vector<float> arena(size_t(w.deviceArenaFloats), 0.0f);
    copySlots(w.weights.data(), w.layout, w.arenaFloats, arena.data(),
              w.deviceLayout, w.deviceArenaFloats);
    return arena;
  }

  Status setUpCache(const launch_manifest::CachedShard &spec,
                    DeviceCache &cache) {
    if (std::optional<std::string> problem =
            runtime::RowCache::check(spec.rows, spec.cacheRows))
      return Status::error(*problem);
    int64_t rowBytes = spec.width * 4;
    DevicePtr mapped = 0;
    Status status = rt.allocMappedHost(size_t(spec.rows * rowBytes + rowBytes),
                                       cache.host, mapped);
    if (!status.ok())
      return status;
    HostRowsPlacement placement = placeHostRows(
        mapped, weights + DevicePtr(w.deviceLayout[size_t(spec.slot)] * 4),
        rowBytes);
    cache.hostRows = reinterpret_cast<float *>(static_cast<char *>(cache.host) +
                                               placement.skip);
    cache.hostRowZero = placement.hostRowZero;
    if (!(status = resetCache(spec, cache)).ok())
      return status;
    for (int d = 0; d < numDraws && status.ok(); ++d) {
      std::vector<int64_t> rows =
          d == 0 || !spec.drawn
              ? std::vector<int64_t>(w.indices64.begin() + spec.indexBegin,
                                     w.indices64.begin() + spec.indexBegin +
                                         spec.count)
              : inputs::zipfIndexStream(spec.rows, spec.skew, spec.count,
                                        spec.seed, uint64_t(d));
      DevicePtr draw = 0;
      status = put(draw, rows.data(), rows.size() * 8);
      cache.draws.push_back(draw);
      std::sort(rows.begin(), rows.end());
      cache.distinct.push_back(
          int64_t(std::unique(rows.begin(), rows.end()) - rows.begin()));
    }
    return status;
  }

  /// Puts the shard's initial rows in host memory and an empty cache's
  /// state on the device.
  Status resetCache(const launch_manifest::CachedShard &spec,
                    DeviceCache &cache) {
    size_t floats = size_t(spec.rows * spec.width);
    if (w.weights.empty())
      std::fill(cache.hostRows, cache.hostRows + floats, kFillWeight);
    else
      std::copy(w.weights.data() + w.layout[size_t(spec.slot)],
                w.weights.data() + w.layout[size_t(spec.slot)] + floats,
                cache.hostRows);
    cache.cache.emplace(spec.rows, spec.cacheRows);
    cache.cache->setHostRowZero(cache.hostRowZero);
    cache.cache->setArenaAddress(w.deviceLayout[size_t(spec.slot)], spec.width,
                                 0, spec.width);
    std::optional<std::string> problem = cache.cache->checkLocations(64);
    if (problem)
      return Status::error(*problem);
    std::vector<int64_t> &words = cache.cache->state();
    if (!cache.state)
      return put(cache.state, words.data(), words.size() * 8);
    return rt.copyToDevice(cache.state, words.data(), words.size() * 8);
  }

  /// Reads every cache's state back into its mirror.
  Status downloadStates() {
    Status status = rt.synchronize();
    for (size_t c = 0; c < caches.size() && status.ok(); ++c) {
      std::vector<int64_t> &words = caches[c].cache->state();
      status = rt.copyToHost(words.data(), caches[c].state, words.size() * 8);
    }
    return status;
  }

  Status fetchNext(bool write) {
    if (caches.empty())
      return Status();
    nextDraw = (nextDraw + 1) % numDraws;
    return fetch(nextDraw, write);
  }

  Status launch(cuda::FunctionHandle function, bool isBackward) {
    namespace abi = kernel_abi;
    MemRefParams memrefs[abi::kMaxOperands];
    memrefs[abi::kMetaOperand] = memref1D(meta, int64_t(w.meta.size()));
    memrefs[abi::kLayoutOperand] =
        memref1D(layout, int64_t(w.deviceLayout.size()));
    memrefs[abi::kWeightsOperand] = memref1D(weights, w.deviceArenaFloats);
    memrefs[abi::kIndicesOperand] = memref1D(indicesBuf, w.numIndices);
    memrefs[abi::kOffsetsOperand] =
        memref1D(offsetsBuf,
                 int64_t(w.index64 ? w.offsets64.size() : w.offsets32.size()));
    MemRefParams &matrix = memrefs[abi::kOutOperand];
    matrix.allocated = matrix.aligned =
        reinterpret_cast<void *>(isBackward ? grad : out);
    matrix.sizes[0] = w.batch;
    matrix.sizes[1] = matrix.strides[0] = w.width;
    float lr = w.lr;
    std::vector<void *> params = kernelParams(
        abi::kKernelOperands, abi::numOperands(isBackward), memrefs, &lr);

    abi::LaunchGeometry geometry =
        abi::launchGeometry(w.numShards(), w.batch, threadsPerBlock);
    if (geometry.gridX == 0)
      return Status();
    std::string problem = abi::blockSizeProblem(geometry.blockX);
    if (!problem.empty())
      return Status::error("cannot launch: " + problem);
    cuda::LaunchDims dims = launchDims(geometry);
    return rt.launch(function, dims, nullptr, params.data());
  }

  Runtime &rt;
  const Workload &w;
  cuda::FunctionHandle forward, backward, fetchKernel;
  int64_t threadsPerBlock;
  DevicePtr meta = 0, layout = 0, weights = 0, indicesBuf = 0, offsetsBuf = 0,
            grad = 0, out = 0;
  std::vector<DevicePtr> owned;
  std::vector<DeviceCache> caches;
  int numDraws, nextDraw = 0;
};

struct Timing {
  double median = 0, minimum = 0, maximum = 0, stddev = 0;
};

/// Times `body` with events on the default stream: `warmup` untimed runs,
/// then `iters` timed ones, each after writing a buffer larger than the L2
/// cache when `flush` is set, so that no run starts with a warm cache.
Status timeRuns(Runtime &rt, const std::function<Status()> &body,
                long long warmup, long long iters, DevicePtr flush,
                size_t flushWords, Timing &timing) {
  Status status;
  for (long long i = 0; i < warmup; ++i)
    if (!(status = body()).ok())
      return status;
  cuda::EventHandle start = nullptr, end = nullptr;
  if (!(status = rt.createEvent(start)).ok() ||
      !(status = rt.createEvent(end)).ok())
    return status;
  std::vector<double> samples;
  for (long long i = 0; i < iters && status.ok(); ++i) {
    if (flush)
      status = rt.memset32Async(flush, uint32_t(i), flushWords, nullptr);
    float ms = 0;
    if (status.ok() && (status = rt.recordEvent(start, nullptr)).ok() &&
        (status = body()).ok() &&
        (status = rt.recordEvent(end, nullptr)).ok() &&
        (status = rt.synchronizeEvent(end)).ok() &&
        (status = rt.elapsedMs(start, end, ms)).ok())
      samples.push_back(ms);
  }
  rt.destroyEvent(start);
  rt.destroyEvent(end);
  if (!status.ok())
    return status;
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  timing.median = neuroshard::sortedMedian(samples);
  timing.minimum = samples.front();
  timing.maximum = samples.back();
  double mean = 0, square = 0;
  for (double s : samples)
    mean += s / double(n);
  for (double s : samples)
    square += (s - mean) * (s - mean) / double(n);
  timing.stddev = std::sqrt(square);
  return Status();
}

std::string formatTiming(const Timing &t) {
  char text[96];
  std::snprintf(text, sizeof(text), "%.4f [%.4f, %.4f]", t.median, t.minimum,
                t.maximum);
  return text;
}

std::string timingJson(const Timing &t) {
  char text[160];
  std::snprintf(text, sizeof(text),
                "{\"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, "
                "\"stddev_ms\": %.6f}",
                t.median, t.minimum, t.maximum, t.stddev);
  return text;
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The most batches of a cached shard's rows a run draws; runs beyond them
/// cycle through them again.
constexpr long long kMaxDraws = 64;

/// Result of checking one launch.
struct Checked {
  Comparison forward, backward;
  Timing forwardTime, stepTime;
  /// Per cached shard: what its cache did over the timed steps, and the
  /// distinct rows of the batches they fetched.
  std::vector<runtime::RowCacheStats> caches;
  std::vector<int64_t> batchRows;
};

/// Runs, checks and times one workload on the GPU (`fetch`: the row cache's
/// fetch kernel, for a workload with cached shards).
Status runWorkload(Runtime &rt, const Workload &w, cuda::FunctionHandle fwd,
                   cuda::FunctionHandle bwd, cuda::FunctionHandle fetch,
                   int64_t threadsPerBlock, const Options &options,
                   DevicePtr flush, size_t flushWords, Checked &checked) {
  // Draw 0 is checked; the caches warm up on the next draws, then each
  // timed run fetches another.
  long long runs = options.warmup + options.iters;
  DeviceRun run(
      rt, w, fwd, bwd, fetch, threadsPerBlock,
      int(std::min<long long>(1 + options.cacheWarmup + 2 * runs, kMaxDraws)));
  Status status = run.upload();
  std::vector<float> output, weights;
  // The cached shards' first draw is the reference's rows; the backward
  // updates them.
  if (!status.ok() || !(status = run.fetch(0, /*write=*/true)).ok() ||
      !(status = run.launchForward()).ok() ||
      !(status = run.download(output, weights)).ok())
    return status;
  checked.forward = compare(output, referenceForward(w), options.tolerance);
  if (!(status = run.launchBackward()).ok() ||
      !(status = run.download(output, weights)).ok())
    return status;
  std::vector<double> reorderBound;
  std::vector<float> want = referenceBackward(w, &reorderBound);
  checked.backward =
      compare(weights, want, options.backwardTolerance, &reorderBound);
  // Timed from here: the caches emptied, then filled by steps as a
  // training run fills them, their counts kept from the timed runs on.
  if (!(status = run.resetWeights()).ok() ||
      !(status = run.warmCaches(options.cacheWarmup)).ok() ||
      !(status = timeRuns(
            rt, [&] { return run.timedForward(); }, options.warmup,
            options.iters, flush, flushWords, checked.forwardTime))
           .ok() ||
      !(status = timeRuns(
            rt, [&] { return run.timedStep(); }, options.warmup, options.iters,
            flush, flushWords, checked.stepTime))
           .ok() ||
      !(status = run.cacheStats(checked.caches, checked.batchRows)).ok())
    return status;
  return run.resetWeights();
}

/// Where the worst element of a forward output lies.
std::string describeOutput(const Workload &w, size_t index) {
  int64_t bag = int64_t(index) / std::max<int64_t>(w.width, 1);
  int64_t column = int64_t(index) % std::max<int64_t>(w.width, 1);
  for (int64_t s = 0; s < w.numShards(); ++s) {
    int64_t begin = w.meta[size_t(s * 8 + 4)],
            width = w.meta[size_t(s * 8 + 3)];
    if (column >= begin && column < begin + width)
      return "bag " + std::to_string(bag) + ", shard " +
             w.shardNames[size_t(s)] + " column " +
             std::to_string(column - begin);
  }
  return "element " + std::to_string(index);
}

bool reportMismatch(const char *what, const Comparison &c, double tolerance,
                    const std::string &where) {
  if (c.mismatches == 0)
    return false;
  std::fprintf(stderr,
               "neuroshard-cuda-runner: %s mismatch: %zu element(s) above "
               "tolerance %g%s, relative error %.3g at %s\n",
               what, c.mismatches, tolerance,
               c.withSlack ? " plus the reordering bound of float atomics" : "",
               c.maxError, where.c_str());
  return true;
}

/// Prints a line per cached shard of `w`, what its cache did over the
/// timed steps (`checked`), and returns the same as a JSON field (nothing
/// without caches). A batch's rows the cache held are its distinct rows
/// less those filled or read in host memory (each lookup read there
/// counted as a row, so at worst too few): what the planner's expected
/// hit rate counts.
std::string reportCaches(const Workload &w, const Checked &checked) {
  if (checked.caches.empty())
    return "";
  std::string json = ", \"caches\": [";
  for (size_t c = 0; c < checked.caches.size(); ++c) {
    const launch_manifest::CachedShard &spec = w.caches[c];
    const runtime::RowCacheStats &s = checked.caches[c];
    double lookups = double(std::max<int64_t>(s.lookups, 1));
    double hits = double(s.hits) / lookups,
           inHost = double(s.readThrough) / lookups;
    int64_t batchRows = checked.batchRows[c];
    double rowHits =
        std::max(0.0, 1.0 - double(s.fills + s.readThrough) /
                                double(std::max<int64_t>(batchRows, 1)));
    std::printf("        cache of %s: %lld of %lld rows; hits %.1f%% of a "
                "batch's rows, %.1f%% of lookups; %.1f%% of lookups read in "
                "host memory, %lld filled, %lld written back\n",
                w.shardNames[spec.shard].c_str(), (long long)spec.cacheRows,
                (long long)spec.rows, 100.0 * rowHits, 100.0 * hits,
                100.0 * inHost, (long long)s.fills, (long long)s.writeBacks);
    char entry[640];
    std::snprintf(entry, sizeof(entry),
                  "%s{\"shard\": %s, \"cache_rows\": %lld, \"rows\": %lld, "
                  "\"lookups\": %lld, \"batch_rows\": %lld, "
                  "\"row_hit_rate\": %.5f, \"hit_rate\": %.5f, "
                  "\"read_in_host\": %.5f, \"fills\": %lld, "
                  "\"write_backs\": %lld}",
                  c ? ", " : "", jsonString(w.shardNames[spec.shard]).c_str(),
                  (long long)spec.cacheRows, (long long)spec.rows,
                  (long long)s.lookups, (long long)batchRows, rowHits, hits,
                  inHost, (long long)s.fills, (long long)s.writeBacks);
    json += entry;
  }
  return json + "]";
}

/// The manifest's kernels: forward and backward, for i32 and i64 indices,
/// and the row cache's fetch (i64) when a shard is cached.
struct Kernels {
  cuda::FunctionHandle forwardI32 = nullptr, forwardI64 = nullptr,
                       backwardI32 = nullptr, backwardI64 = nullptr,
                       fetch = nullptr;

  Status load(Runtime &rt, cuda::ModuleHandle module,
              const Manifest &manifest) {
    Status status;
    for (auto [name, handle] : {std::pair{&manifest.forwardI32, &forwardI32},
                                std::pair{&manifest.forwardI64, &forwardI64},
                                std::pair{&manifest.backwardI32, &backwardI32},
                                std::pair{&manifest.backwardI64, &backwardI64}})
      if (!(status = rt.getFunction(module, name->c_str(), *handle)).ok())
        return status;
    for (const LaunchSpec &launch : manifest.launches)
      for (const ShardSpec &shard : launch.shards)
        if (shard.isCached() && !fetch)
          if (!(status = rt.getFunction(
                    module, kernel_abi::kRowCacheFetchKernelI64, fetch))
                   .ok())
            return status;
    return status;
  }
  cuda::FunctionHandle forward(const LaunchSpec &launch) const {
    return launch.index64 ? forwardI64 : forwardI32;
  }
  cuda::FunctionHandle backward(const LaunchSpec &launch) const {
    return launch.index64 ? backwardI64 : backwardI32;
  }
};

int runManifest(const Options &options, Runtime &rt, cuda::ModuleHandle module,
                const Manifest &manifest, const InputOverrides &given,
                DevicePtr flush, size_t flushWords, std::string &json) {
  Kernels kernels;
  if (Status status = kernels.load(rt, module, manifest); !status.ok())
    return fail(status.message());
  std::printf("%-7s %-6s %-6s %-6s %-10s %-11s %-11s %-30s %-30s\n", "launch",
              "device", "shards", "width", "indices", "fwd err", "bwd err",
              "forward ms (median [min, max])",
              "fwd+bwd ms (median [min, max])");
  bool mismatch = false;
  json += "  \"launches\": [";
  for (size_t k = 0; k < manifest.launches.size(); ++k) {
    if (options.launch >= 0 && size_t(options.launch) != k)
      continue;
    Workload w;
    std::string error;
    if (!buildWorkload(manifest, k, options.layout, given, w, error,
                       /*withValues=*/true, options.maxRows))
      return fail(error);
    const LaunchSpec &launch = manifest.launches[k];
    Checked checked;
    Status status = runWorkload(
        rt, w, kernels.forward(launch), kernels.backward(launch), kernels.fetch,
        manifest.threadsPerBlock, options, flush, flushWords, checked);
    if (!status.ok())
      return fail("launch " + std::to_string(k) + ": " + status.message());
    std::printf(
        "%-7zu %-6lld %-6zu %-6lld %-10lld %-11.3g %-11.3g %-30s %-30s\n", k,
        (long long)launch.device, launch.shards.size(), (long long)w.width,
        (long long)w.numIndices, checked.forward.maxError,
        checked.backward.maxError, formatTiming(checked.forwardTime).c_str(),
        formatTiming(checked.stepTime).c_str());
    mismatch |= reportMismatch("forward", checked.forward, options.tolerance,
                               describeOutput(w, checked.forward.worst));
    mismatch |= reportMismatch(
        "backward", checked.backward, options.backwardTolerance,
        "weights element " + std::to_string(checked.backward.worst));
    char entry[256];
    std::snprintf(
        entry, sizeof(entry),
        "%s\n    {\"launch\": %zu, \"device\": %lld, \"shards\": %zu, "
        "\"width\": %lld, \"indices\": %lld, ",
        json.back() == '[' ? "" : ",", k, (long long)launch.device,
        launch.shards.size(), (long long)w.width, (long long)w.numIndices);
    json += entry;
    std::snprintf(entry, sizeof(entry),
                  "\"forward_max_rel_error\": %.6g, "
                  "\"backward_max_rel_error\": %.6g, ",
                  checked.forward.maxError, checked.backward.maxError);
    json += entry;
    json += "\"forward\": " + timingJson(checked.forwardTime) +
            ", \"forward_backward\": " + timingJson(checked.stepTime);
    json += reportCaches(w, checked) + "}";
  }
  json += "\n  ]\n";
  return mismatch ? 2 : 0;
}

int runBandwidth(const Options &options, Runtime &rt, cuda::ModuleHandle module,
                 DevicePtr flush, size_t flushWords, std::string &json) {
  cuda::FunctionHandle forward = nullptr, backward = nullptr;
  const char *forwardName =
      options.index64 ? kernel_abi::kForwardI64 : kernel_abi::kForwardI32;
  const char *backwardName =
      options.index64 ? kernel_abi::kBackwardI64 : kernel_abi::kBackwardI32;
  Status status = rt.getFunction(module, forwardName, forward);
  if (status.ok())
    status = rt.getFunction(module, backwardName, backward);
  if (!status.ok())
    return fail(status.message());
  std::printf("bandwidth: B=%lld dim=%lld pooling=%lld rows=%lld %s indices\n",
              options.batch, options.dim, options.pooling, options.rows,
              options.index64 ? "i64" : "i32");
  Workload w = bandwidthWorkload(options.batch, options.dim, options.pooling,
                                 options.rows, options.index64, 0, 0.01f);
  Checked checked;
  status = runWorkload(rt, w, forward, backward, nullptr,
                       kernel_abi::kThreadsPerBlock, options, flush, flushWords,
                       checked);
  if (!status.ok())
    return fail(status.message());

  // Bytes the forward kernel must move: the rows it reads, the indices and
  // offsets, the output it writes. Backward reads the gradient and reads
  // and writes every row again.
  double rowBytes = double(options.batch) * double(options.pooling) *
                    double(options.dim) * 4.0;
  double indexBytes =
      double(w.numIndices + options.batch + 1) * double(w.indexBytes());
  double outBytes = double(options.batch) * double(options.dim) * 4.0;
  double forwardBytes = rowBytes + indexBytes + outBytes;
  double stepBytes = forwardBytes + outBytes + 2.0 * rowBytes + indexBytes;
  double forwardGBs = forwardBytes / (checked.forwardTime.median * 1e6);
  double stepGBs = stepBytes / (checked.stepTime.median * 1e6);

  // The reference: a device-to-device copy of as many bytes as the rows
  // read (a copy reads and writes each byte).
  size_t copyBytes = size_t(rowBytes);
  DevicePtr src = 0, dst = 0;
  Timing copyTime;
  status = rt.alloc(copyBytes, src);
  if (status.ok())
    status = rt.alloc(copyBytes, dst);
  if (status.ok())
    status = timeRuns(
        rt, [&] { return rt.copyDeviceToDevice(dst, src, copyBytes); },
        options.warmup, options.iters, flush, flushWords, copyTime);
  if (src)
    rt.free(src);
  if (dst)
    rt.free(dst);
  if (!status.ok())
    return fail(status.message());
  double copyGBs = 2.0 * double(copyBytes) / (copyTime.median * 1e6);

  std::printf("%-24s %-30s %-10s %s\n", "", "ms (median [min, max])", "GB/s",
              "vs copy");
  std::printf("%-24s %-30s %-10.1f %.1f%%\n", "forward",
              formatTiming(checked.forwardTime).c_str(), forwardGBs,
              100.0 * forwardGBs / copyGBs);
  std::printf("%-24s %-30s %-10.1f %.1f%%\n", "forward+backward+SGD",
              formatTiming(checked.stepTime).c_str(), stepGBs,
              100.0 * stepGBs / copyGBs);
  std::printf("%-24s %-30s %-10.1f\n", "device-to-device copy",
              formatTiming(copyTime).c_str(), copyGBs);
  std::printf("max relative error: forward %.3g, backward %.3g\n",
              checked.forward.maxError, checked.backward.maxError);
  bool mismatch = reportMismatch("forward", checked.forward, options.tolerance,
                                 describeOutput(w, checked.forward.worst));
  mismatch |= reportMismatch(
      "backward", checked.backward, options.backwardTolerance,
      "weights element " + std::to_string(checked.backward.worst));

  char text[512];
  std::snprintf(text, sizeof(text),
                "  \"bandwidth\": {\"batch_size\": %lld, \"dim\": %lld, "
                "\"pooling\": %lld, \"rows\": %lld, \"forward_gb_s\": %.3f, "
                "\"forward_backward_gb_s\": %.3f, \"copy_gb_s\": %.3f, "
                "\"forward_vs_copy\": %.4f, ",
                options.batch, options.dim, options.pooling, options.rows,
                forwardGBs, stepGBs, copyGBs, forwardGBs / copyGBs);
  json += text;
  json += "\"forward\": " + timingJson(checked.forwardTime) +
          ", \"forward_backward\": " + timingJson(checked.stepTime) +
          ", \"copy\": " + timingJson(copyTime) + "}\n";
  return mismatch ? 2 : 0;
}

//===----------------------------------------------------------------------===//
// A table in host memory behind a device cache
//===----------------------------------------------------------------------===//

/// One table of --rows x --dim floats kept in pinned host memory mapped
/// into the device (RowCache.h's virtual table: the cache's slots, then at
/// the locations past them the host's rows), looked up by --batch-size bags
/// of --pooling Zipf indices through a device cache of each --host-cache
/// size: a step is the generated fetch kernel, then the forward kernel on
/// the locations. Checks the first step against the table, then times the
/// steps against the forward kernel on a copy of the table in device memory.
int runHostCache(const Options &options, Runtime &rt, cuda::ModuleHandle module,
                 DevicePtr flush, size_t flushWords, std::string &json) {
  namespace abi = kernel_abi;
  cuda::FunctionHandle forward = nullptr, fetch = nullptr;
  Status status = rt.getFunction(module, abi::kForwardI64, forward);
  if (status.ok())
    status = rt.getFunction(module, abi::kRowCacheFetchKernelI64, fetch);
  if (!status.ok())
    return fail(status.message());
  const int64_t rows = options.rows, dim = options.dim, batch = options.batch,
                pooling = options.pooling, lookups = batch * pooling;
  std::printf("host cache: rows=%lld dim=%lld B=%lld pooling=%lld Zipf %.3g, "
              "i64 indices\n",
              (long long)rows, (long long)dim, (long long)batch,
              (long long)pooling, options.skew);

  // Steps look up these draws in turn, so that each brings rows the cache
  // has not seen.
  const int kDraws = int(std::min<long long>(
      1 + options.cacheWarmup + options.warmup + options.iters, kMaxDraws));
  std::vector<inputs::LookupInputs> draws(static_cast<size_t>(kDraws));
  for (int d = 0; d < kDraws; ++d) {
    draws[d].indices =
        inputs::zipfIndexStream(rows, options.skew, lookups, 17, d);
    for (int64_t b = 0; b <= batch; ++b)
      draws[d].offsets.push_back(b * pooling);
  }
  auto weight = [&](int64_t r, int64_t c) {
    return float((r * 131 + c * 7) % 1009) * 1e-3f;
  };
  std::vector<float> table(size_t(rows * dim));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < dim; ++c)
      table[size_t(r * dim + c)] = weight(r, c);
  // The reference output of draw 0.
  std::vector<float> expected(size_t(batch * dim), 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = b * pooling; k < (b + 1) * pooling; ++k)
      for (int64_t c = 0; c < dim; ++c)
        expected[size_t(b * dim + c)] +=
            table[size_t(draws[0].indices[size_t(k)] * dim + c)];

  abi::ShardDescriptor shard;
  shard.rowStride = dim;
  shard.width = dim;
  std::vector<const inputs::LookupInputs *> pair = {&draws[0]};
  abi::PackedShardSet<int64_t> set = abi::packShardSet<int64_t>({shard}, pair);
  std::vector<int64_t> layout = {0};

  std::vector<DevicePtr> owned;
  auto put = [&](DevicePtr &ptr, const void *data, size_t bytes) {
    Status s = rt.alloc(bytes, ptr);
    if (s.ok())
      owned.push_back(ptr);
    return s.ok() && data ? rt.copyToDevice(ptr, data, bytes) : s;
  };
  DevicePtr meta = 0, layoutBuf = 0, offsets = 0, locations = 0, out = 0,
            deviceTable = 0;
  std::vector<DevicePtr> indices(kDraws, 0);
  void *host = nullptr;
  DevicePtr hostDevice = 0;
  size_t rowBytes = size_t(dim) * 4;
  auto release = [&]() {
    for (DevicePtr ptr : owned)
      rt.free(ptr);
    owned.clear();
    if (host)
      rt.freeMappedHost(host);
    host = nullptr;
  };
  if (!(status = put(meta, set.layout.meta.data(), set.layout.meta.size() * 8))
           .ok() ||
      !(status = put(layoutBuf, layout.data(), 8)).ok() ||
      !(status =
            put(offsets, draws[0].offsets.data(), draws[0].offsets.size() * 8))
           .ok() ||
      !(status = put(locations, nullptr, size_t(lookups) * 8)).ok() ||
      !(status = put(out, nullptr, size_t(batch * dim) * 4)).ok() ||
      !(status = put(deviceTable, table.data(), table.size() * 4)).ok() ||
      !(status =
            rt.allocMappedHost(table.size() * 4 + rowBytes, host, hostDevice))
           .ok()) {
    release();
    return fail(status.message());
  }
  for (int d = 0; d < kDraws && status.ok(); ++d)
    status = put(indices[d], draws[d].indices.data(), size_t(lookups) * 8);
  if (!status.ok()) {
    release();
    return fail(status.message());
  }

  auto launchForward = [&](DevicePtr weights, int64_t weightFloats,
                           DevicePtr rowsRead) {
    MemRefParams memrefs[abi::kMaxOperands];
    memrefs[abi::kMetaOperand] =
        memref1D(meta, int64_t(set.layout.meta.size()));
    memrefs[abi::kLayoutOperand] = memref1D(layoutBuf, 1);
    memrefs[abi::kWeightsOperand] = memref1D(weights, weightFloats);
    memrefs[abi::kIndicesOperand] = memref1D(rowsRead, lookups);
    memrefs[abi::kOffsetsOperand] = memref1D(offsets, batch + 1);
    MemRefParams &matrix = memrefs[abi::kOutOperand] = memref1D(out, batch);
    matrix.sizes[1] = matrix.strides[0] = dim;
    std::vector<void *> params = kernelParams(
        abi::kKernelOperands, abi::numOperands(false), memrefs, nullptr);
    cuda::LaunchDims dims = launchDims(abi::launchGeometry(1, batch));
    return rt.launch(forward, dims, nullptr, params.data());
  };

  // The table in device memory: what a cache saves the host link from.
  int draw = 0;
  Timing deviceTime;
  status = timeRuns(
      rt,
      [&] {
        draw = (draw + 1) % kDraws;
        return launchForward(deviceTable, rows * dim, indices[draw]);
      },
      options.warmup, options.iters, flush, flushWords, deviceTime);
  if (!status.ok()) {
    release();
    return fail(status.message());
  }

  std::printf("%-12s %-8s %-9s %-10s %-30s %s\n", "cache rows", "share",
              "hit rate", "in host", "step ms (median [min, max])",
              "vs device memory");
  std::printf("%-12s %-8s %-9s %-10s %-30s %s\n", "-", "-", "-", "-",
              formatTiming(deviceTime).c_str(), "1.00x");
  json += "  \"host_cache\": {\"rows\": " + std::to_string(rows) +
          ", \"dim\": " + std::to_string(dim) +
          ", \"batch_size\": " + std::to_string(batch) +
          ", \"pooling\": " + std::to_string(pooling) +
          ", \"skew\": " + std::to_string(options.skew) +
          ", \"device_memory\": " + timingJson(deviceTime) + ", \"caches\": [";
  bool mismatch = false;
  for (size_t i = 0; i < options.hostCache.size() && status.ok(); ++i) {
    int64_t slots = options.hostCache[i];
    DevicePtr cacheArena = 0, state = 0;
    if (!(status = put(cacheArena, nullptr, size_t(slots) * rowBytes)).ok())
      break;
    HostRowsPlacement placement =
        placeHostRows(hostDevice, cacheArena, int64_t(rowBytes));
    float *hostRows =
        reinterpret_cast<float *>(static_cast<char *>(host) + placement.skip);
    std::copy(table.begin(), table.end(), hostRows);
    runtime::RowCache cache(rows, slots);
    cache.setHostRowZero(placement.hostRowZero);
    cache.setArenaAddress(0, dim, 0, dim);
    std::vector<int64_t> &words = cache.state();
    if (!(status = put(state, words.data(), words.size() * 8)).ok())
      break;
    auto step = [&](int which) {
      Status s = launchFetch(rt, fetch, cache, state, cacheArena, slots * dim,
                             indices[which], locations, lookups, 0);
      return s.ok() ? launchForward(cacheArena, slots * dim, locations) : s;
    };
    // The first step against the table.
    std::vector<float> output(expected.size());
    double worst = 0.0;
    if ((status = step(0)).ok() && (status = rt.synchronize()).ok() &&
        (status = rt.copyToHost(output.data(), out, output.size() * 4)).ok())
      for (size_t e = 0; e < output.size(); ++e)
        worst =
            std::max(worst, double(std::fabs(output[e] - expected[e])) /
                                std::max(1.0, double(std::fabs(expected[e]))));
    if (!status.ok())
      break;
    bool wrong = worst > options.tolerance;
    mismatch |= wrong;
    // Timed once the steps have filled the cache, counted from then on.
    draw = 0;
    for (long long k = 0; k < options.cacheWarmup && status.ok(); ++k) {
      draw = (draw + 1) % kDraws;
      status = step(draw);
    }
    if (!status.ok() || !(status = clearCounts(rt, cache, state)).ok())
      break;
    Timing stepTime;
    if (!(status = timeRuns(
              rt,
              [&] {
                draw = (draw + 1) % kDraws;
                return step(draw);
              },
              options.warmup, options.iters, flush, flushWords, stepTime))
             .ok() ||
        !(status = rt.copyToHost(words.data(), state, words.size() * 8)).ok())
      break;
    runtime::RowCacheStats stats = cache.stats();
    double hitRate =
        double(stats.hits) / double(std::max<int64_t>(stats.lookups, 1));
    double inHost =
        double(stats.readThrough) / double(std::max<int64_t>(stats.lookups, 1));
    char share[32], rate[32], readInHost[32], ratio[32];
    std::snprintf(share, sizeof(share), "%.2f%%", 100.0 * slots / rows);
    std::snprintf(rate, sizeof(rate), "%.1f%%", 100.0 * hitRate);
    std::snprintf(readInHost, sizeof(readInHost), "%.1f%%", 100.0 * inHost);
    std::snprintf(ratio, sizeof(ratio), "%.2fx",
                  stepTime.median / deviceTime.median);
    std::printf("%-12lld %-8s %-9s %-10s %-30s %s%s\n", (long long)slots, share,
                rate, readInHost, formatTiming(stepTime).c_str(), ratio,
                wrong ? "  MISMATCH" : "");
    // What crossed the host link over the counted steps: the rows filled
    // and read in host memory (a forward writes none back).
    char entry[512];
    std::snprintf(entry, sizeof(entry),
                  "%s{\"cache_rows\": %lld, \"hit_rate\": %.5f, "
                  "\"read_in_host\": %.5f, \"max_relative_error\": %.3g, "
                  "\"steps\": %lld, \"lookups\": %lld, \"fills\": %lld, "
                  "\"read_through\": %lld, \"write_backs\": %lld, "
                  "\"row_bytes\": %lld, \"step\": ",
                  i ? ", " : "", (long long)slots, hitRate, inHost, worst,
                  options.warmup + options.iters, (long long)stats.lookups,
                  (long long)stats.fills, (long long)stats.readThrough,
                  (long long)stats.writeBacks, (long long)rowBytes);
    json += entry;
    json += timingJson(stepTime) + "}";
  }
  json += "]}\n";
  release();
  if (!status.ok())
    return fail(status.message());
  std::printf("first step against the table: %s\n",
              mismatch ? "MISMATCH" : "match");
  return mismatch ? 2 : 0;
}

//===----------------------------------------------------------------------===//
// Collection: one compute-cost sample per launch
//===----------------------------------------------------------------------===//

/// The set ids already in the samples file `path` (none if it does not
/// exist), so that a collection that was stopped resumes where it stopped.
/// A last line cut short by the stop is dropped from the file.
bool readCollected(const std::string &path, std::set<int64_t> &ids,
                   std::string &error) {
  std::ifstream file(path);
  if (!file)
    return true;
  std::vector<std::string> kept;
  bool dropped = false;
  std::string line;
  for (size_t number = 1; std::getline(file, line); ++number) {
    size_t key = line.find("\"id\": ");
    char *end = nullptr;
    long long id = key == std::string::npos
                       ? -1
                       : std::strtoll(line.c_str() + key + 6, &end, 10);
    bool complete = !line.empty() && line.back() == '}' && id >= 0 && end &&
                    (*end == ',' || *end == '}');
    if (!complete) {
      if (file.peek() != EOF) {
        error = "samples file '" + path + "' line " + std::to_string(number) +
                " is not a sample of this tool";
        return false;
      }
      dropped = true;
      continue;
    }
    if (!ids.insert(id).second) {
      error = "samples file '" + path + "' holds set " + std::to_string(id) +
              " twice (line " + std::to_string(number) + ")";
      return false;
    }
    kept.push_back(line);
  }
  file.close();
  if (dropped) {
    std::ofstream rewrite(path, std::ios::trunc);
    for (const std::string &keptLine : kept)
      rewrite << keptLine << '\n';
    if (!rewrite) {
      error = "cannot rewrite '" + path + "'";
      return false;
    }
  }
  return true;
}

/// The inputs of `lookups`, generated on `threads` threads: a table read by
/// many sets is generated once.
InputOverrides generateInputs(const Manifest &manifest,
                              const std::vector<size_t> &lookups,
                              unsigned threads) {
  std::vector<inputs::LookupInputs> generated(lookups.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k < lookups.size(); k = next++)
      generated[k] = lookupInputs(manifest, lookups[k], InputOverrides());
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &thread : pool)
    thread.join();
  InputOverrides out;
  for (size_t k = 0; k < lookups.size(); ++k)
    out.emplace(lookups[k], std::move(generated[k]));
  return out;
}

/// What the samples file says of the hardware that measured.
struct Measurer {
  std::string device, hardware;
  long long l2Bytes = 0;
};

/// Times forward + backward + SGD of one workload on the CPU reference
/// loops: the emulated collection, which tests everything but the GPU.
Timing timeReference(const Workload &w, long long warmup, long long iters) {
  std::vector<double> samples;
  for (long long i = 0; i < warmup + iters; ++i) {
    auto start = std::chrono::steady_clock::now();
    referenceForward(w);
    referenceBackward(w);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (i >= warmup)
      samples.push_back(ms);
  }
  std::sort(samples.begin(), samples.end());
  Timing timing;
  timing.median = neuroshard::sortedMedian(samples);
  timing.minimum = samples.front();
  timing.maximum = samples.back();
  return timing;
}

/// Runs every launch of the manifest whose set id (its device number) the
/// samples file does not hold yet and appends one line per set.
int runCollection(const Options &options, Runtime *rt,
                  cuda::ModuleHandle module, const Manifest &manifest,
                  const Measurer &measurer, DevicePtr flush,
                  size_t flushWords) {
  std::string error;
  std::set<int64_t> done;
  if (!readCollected(options.collect, done, error))
    return fail(error);
  std::set<int64_t> ids;
  std::vector<size_t> pending;
  std::set<size_t> lookupSet;
  for (size_t k = 0; k < manifest.launches.size(); ++k) {
    const LaunchSpec &launch = manifest.launches[k];
    if (!ids.insert(launch.device).second)
      return fail("the manifest holds set " + std::to_string(launch.device) +
                  " twice; a collection needs one launch per set id");
    if (done.count(launch.device))
      continue;
    pending.push_back(k);
    for (const ShardSpec &shard : launch.shards)
      lookupSet.insert(shard.lookup);
  }
  std::fprintf(
      stderr,
      "collect: %zu set(s) in the manifest, %zu already in '%s', "
      "%zu to measure on %s\n",
      manifest.launches.size(), manifest.launches.size() - pending.size(),
      options.collect.c_str(), pending.size(), measurer.hardware.c_str());
  if (pending.empty())
    return 0;

  unsigned threads = options.threads > 0
                         ? unsigned(options.threads)
                         : std::max(1u, std::thread::hardware_concurrency());
  auto started = std::chrono::steady_clock::now();
  InputOverrides cache = generateInputs(
      manifest, std::vector<size_t>(lookupSet.begin(), lookupSet.end()),
      threads);
  if (!options.trustInputs && !checkLaunchInputs(manifest, cache, -1, error))
    return fail("bad inputs: " + error);
  std::fprintf(
      stderr, "collect: inputs of %zu lookup(s) generated in %.1f s\n",
      lookupSet.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count());

  Kernels kernels;
  if (rt)
    if (Status status = kernels.load(*rt, module, manifest); !status.ok())
      return fail(status.message());
  FILE *out = std::fopen(options.collect.c_str(), "a");
  if (!out)
    return fail("cannot append to '" + options.collect +
                "': " + std::strerror(errno));
  size_t measured = 0;
  for (size_t k : pending) {
    const LaunchSpec &launch = manifest.launches[k];
    Workload w;
    if (!buildWorkload(manifest, k, WeightLayout::Shards, cache, w, error,
                       /*withValues=*/!rt)) {
      std::fclose(out);
      return fail("set " + std::to_string(launch.device) + ": " + error);
    }
    Timing step;
    if (rt) {
      DeviceRun run(*rt, w, kernels.forward(launch), kernels.backward(launch),
                    kernels.fetch, manifest.threadsPerBlock,
                    int(std::min<long long>(options.cacheWarmup +
                                                options.warmup + options.iters,
                                            kMaxDraws)));
      Status status = run.upload();
      if (status.ok())
        status = run.warmCaches(options.cacheWarmup);
      if (status.ok())
        status = timeRuns(
            *rt, [&] { return run.timedStep(); }, options.warmup, options.iters,
            flush, flushWords, step);
      if (!status.ok()) {
        std::fclose(out);
        double bytes = double(w.arenaFloats) * 4.0 +
                       double(w.numIndices) * double(w.indexBytes()) +
                       2.0 * double(w.batch * w.width) * 4.0;
        return fail("set " + std::to_string(launch.device) + " (" +
                    std::to_string(launch.shards.size()) + " table(s), " +
                    formatGB(bytes) + " on the device): " + status.message());
      }
    } else {
      step = timeReference(w, options.warmup, options.iters);
    }
    std::fprintf(
        out,
        "{\"id\": %lld, \"cost_ms\": %.6f, \"min_ms\": %.6f, "
        "\"max_ms\": %.6f, \"runs\": %lld, \"device\": %s, "
        "\"hardware\": %s, \"batch_size\": %lld, \"l2_bytes\": %lld, "
        "\"tables\": %zu, \"width\": %lld, \"indices\": %lld, "
        "\"index_type\": \"%s\"}\n",
        (long long)launch.device, step.median, step.minimum, step.maximum,
        options.iters, jsonString(measurer.device).c_str(),
        jsonString(measurer.hardware).c_str(), (long long)manifest.batchSize,
        measurer.l2Bytes, launch.shards.size(), (long long)w.width,
        (long long)w.numIndices, launch.index64 ? "i64" : "i32");
    std::fflush(out);
    if (++measured % 100 == 0 || measured == pending.size())
      std::fprintf(stderr, "collect: %zu of %zu set(s) measured (%.0f s)\n",
                   measured, pending.size(),
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - started)
                       .count());
  }
  if (std::fclose(out) != 0)
    return fail("cannot write '" + options.collect + "'");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  std::string error;
  if (!parseArguments(argc, argv, options, error))
    return fail(error);

  Manifest manifest;
  const std::string &manifestPath =
      options.validate.empty() ? options.manifest : options.validate;
  std::string modulePath = options.module;
  std::string manifestFormat;
  if (!manifestPath.empty()) {
    if (!loadManifest(manifestPath, manifest, error))
      return fail(error);
    if (options.launch >= 0 &&
        size_t(options.launch) >= manifest.launches.size())
      return fail("--launch " + std::to_string(options.launch) +
                  " but the manifest has " +
                  std::to_string(manifest.launches.size()) + " launch(es)");
    if (modulePath.empty())
      modulePath = manifest.modulePath;
    manifestFormat = manifest.moduleFormat;
  }
  if (options.emulate) {
    // The L2 of an H100, so that what trains on emulated samples sees a
    // GPU's cache.
    Measurer measurer{"cuda-emulated", "CPU reference loops (emulated)",
                      50LL << 20};
    return runCollection(options, nullptr, nullptr, manifest, measurer, 0, 0);
  }
  cuda::ModuleFormat format;
  if (!resolveFormat(options, manifestFormat, modulePath, format, error))
    return fail(error);
  std::string image;
  if (!readFile(modulePath, image, error))
    return fail("kernels object: " + error);
  if (image.empty())
    return fail("kernels object '" + modulePath + "' is empty");

  // The kernels trust their inputs, so they are checked before the driver
  // is even opened.
  InputOverrides given;
  if (!options.inputs.empty()) {
    if (manifestPath.empty())
      return fail("--inputs needs --manifest or --validate");
    if (!readInputOverrides(options.inputs, manifest, given, error))
      return fail(error);
  }
  if (!manifestPath.empty() && !options.trustInputs &&
      options.collect.empty() &&
      !checkLaunchInputs(manifest, given, options.launch, error))
    return fail("bad inputs: " + error + " (--trust-inputs skips this check)");

  if (!options.validate.empty()) {
    size_t shards = 0;
    for (const LaunchSpec &launch : manifest.launches)
      shards += launch.shards.size();
    std::printf("manifest '%s': %zu table(s), %zu lookup(s), %zu launch(es), "
                "%zu shard(s), batch %lld, %s kernels in '%s' (%zu bytes) "
                "for %s\n",
                options.validate.c_str(), manifest.tables.size(),
                manifest.lookups.size(), manifest.launches.size(), shards,
                (long long)manifest.batchSize, cuda::moduleFormatName(format),
                modulePath.c_str(), image.size(), manifest.chip.c_str());
    return 0;
  }

  std::unique_ptr<Runtime> rt;
  Status status = Runtime::open(int(options.gpu), rt);
  if (!status.ok())
    return fail(status.message());
  const cuda::DeviceInfo &device = rt->device();
  std::printf("device %d: %s (sm_%d%d, %d SMs, %s), driver %d\n",
              device.ordinal, device.name.c_str(), device.computeMajor,
              device.computeMinor, device.multiprocessors,
              formatGB(double(device.totalMemory)).c_str(),
              device.driverVersion);
  cuda::ModuleHandle module = nullptr;
  status = rt->loadModule(image.data(), image.size(), format, module);
  if (!status.ok())
    return fail("loading '" + modulePath + "': " + status.message());

  // 256 MiB is several times the L2 of current GPUs (50 MiB on an H100).
  size_t flushWords = options.flush ? (size_t(256) << 20) / 4 : 0;
  DevicePtr flush = 0;
  if (flushWords && !(status = rt->alloc(flushWords * 4, flush)).ok())
    return fail(status.message());

  if (!options.collect.empty()) {
    Measurer measurer{"cuda", device.name, device.l2CacheBytes};
    int result = runCollection(options, rt.get(), module, manifest, measurer,
                               flush, flushWords);
    if (flush)
      rt->free(flush);
    rt->unloadModule(module);
    return result;
  }
  std::string json = "{\n  \"device\": " + jsonString(device.name) + ",\n";
  int result = options.bandwidth
                   ? runBandwidth(options, *rt, module, flush, flushWords, json)
               : !options.hostCache.empty()
                   ? runHostCache(options, *rt, module, flush, flushWords, json)
                   : runManifest(options, *rt, module, manifest, given, flush,
                                 flushWords, json);
  if (flush)
    rt->free(flush);
  rt->unloadModule(module);
  if (result == 1)
    return result;
  json += "}\n";
  if (!options.json.empty()) {
    std::ofstream file(options.json);
    file << json;
    if (!file)
      return fail("cannot write '" + options.json + "'");
  }
  return result;
}
