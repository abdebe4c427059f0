//===- NeuralCostModel.cpp - Pre-trained neural cost model over LibTorch --===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The only translation unit that includes LibTorch. LibTorch reports errors
// by throwing, so this file is built with exceptions and every call into it
// goes through catchTorch(), which turns exceptions into llvm::Error.
//
// Speed: the search prices hundreds of thousands of shard sets. Because the
// compute model is a sum over shards, each distinct (table, width) is encoded
// once per prepare() and memoised; a batch of sets then costs one float sum
// per slice and a single call of the small head network.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/NeuralCostModel.h"
#include "neuroshard/Sharding/HostTier.h"

#include "BundleMeta.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/Support/HostInfo.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"

#include <ATen/Parallel.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <array>
#include <cmath>
#include <cstdlib>

using namespace llvm;
using namespace neuroshard::neural;

namespace neuroshard {

/// The part of a LibTorch error message a user needs, on one line. Errors
/// raised inside TorchScript code carry two tracebacks of the model's source;
/// the cause is their last line ("RuntimeError: ...").
static std::string conciseTorchMessage(StringRef message) {
  message = message.trim();
  // A TorchScript traceback ends with the error itself.
  if (message.contains("Traceback of TorchScript"))
    return message.substr(message.rfind('\n') + 1).trim().str();
  // A compile error of the file's code is followed by the source lines it
  // points at; keep the error and where it is, on one line.
  auto [first, rest] = message.split('\n');
  std::string concise = first.trim().rtrim(':').str();
  size_t at = rest.find("File \"");
  if (at != StringRef::npos)
    concise += " (" + rest.substr(at).split('\n').first.trim().str() + ")";
  return concise;
}

/// Runs `body` (which returns an llvm::Error), turning any exception it
/// throws into an error that starts with `context`.
template <typename Body>
static Error catchTorch(StringRef bundleDir, const Twine &context,
                        Body &&body) {
  std::string message;
  try {
    return body();
  } catch (const c10::Error &e) {
    // what() would append a C++ backtrace that means nothing to a user.
    message = e.what_without_backtrace();
  } catch (const std::exception &e) {
    message = e.what();
  }
  return bundleError(bundleDir, context + ": " + conciseTorchMessage(message));
}

static at::Tensor floatMatrix(float *data, int64_t rows, int64_t columns) {
  return torch::from_blob(data, {rows, columns}, torch::kFloat32);
}

/// Converts doubles to a float buffer that a tensor can borrow.
static float *toFloats(ArrayRef<double> values, std::vector<float> &buffer) {
  buffer.assign(values.begin(), values.end());
  return buffer.data();
}

/// Checks that `value` is a float tensor of exactly `shape`.
static Error checkOutput(StringRef bundleDir, StringRef what,
                         const c10::IValue &value, ArrayRef<int64_t> shape) {
  if (value.isTensor()) {
    const at::Tensor &tensor = value.toTensor();
    if (tensor.scalar_type() == torch::kFloat32 &&
        tensor.sizes().equals(c10::IntArrayRef(shape.data(), shape.size())))
      return Error::success();
    std::string got;
    raw_string_ostream os(got);
    os << "a " << c10::toString(tensor.scalar_type()) << " tensor of shape [";
    interleaveComma(tensor.sizes(), os);
    os << "]";
    return bundleError(
        bundleDir, formatv("{0} returned {1}, expected a "
                           "float32 tensor of shape [{2}]",
                           what, got, make_range(shape.begin(), shape.end())));
  }
  return bundleError(bundleDir, formatv("{0} returned a {1}, expected a "
                                        "tensor",
                                        what, value.tagKind()));
}

/// Copies a checked float32 output into `out`. A NaN or infinite cost would
/// silently derail the search, so it is an error naming the model.
static Error copyCosts(StringRef bundleDir, StringRef what,
                       const c10::IValue &value, MutableArrayRef<double> out) {
  at::Tensor tensor = value.toTensor().contiguous();
  const float *data = tensor.data_ptr<float>();
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(data[i]))
      return bundleError(bundleDir, formatv("{0} predicted {1} for input row "
                                            "{2}",
                                            what, data[i], i));
    out[i] = data[i];
  }
  return Error::success();
}

static Error sizeMismatch(StringRef bundleDir, StringRef what, size_t size,
                          size_t expected) {
  return bundleError(bundleDir, formatv("{0} has {1} values, expected {2}",
                                        what, size, expected));
}

/// The thread count for LibTorch's intra-op pool. The networks are tiny, so
/// one thread beats the pool's synchronisation; NEUROSHARD_TORCH_THREADS
/// overrides it.
static int torchThreads() {
  if (const char *env = std::getenv("NEUROSHARD_TORCH_THREADS")) {
    int threads = 0;
    if (!StringRef(env).getAsInteger(10, threads) && threads > 0)
      return threads;
  }
  return 1;
}

namespace {
/// LibTorch's intra-op thread count is one setting for the whole process. A
/// model uses torchThreads() while it lives and restores the program's count
/// when it goes, so that a program that also runs LibTorch itself (a Python
/// process that trains with torch) keeps its threads.
struct TorchThreadsScope {
  TorchThreadsScope() : previous(at::get_num_threads()) {
    at::set_num_threads(torchThreads());
  }
  ~TorchThreadsScope() { at::set_num_threads(previous); }
  TorchThreadsScope(const TorchThreadsScope &) = delete;
  TorchThreadsScope &operator=(const TorchThreadsScope &) = delete;
  int previous;
};
} // namespace

struct NeuralCostModel::Impl {
  /// First, so that it is destroyed last.
  TorchThreadsScope threads;
  /// The graph executor runs the bundle's small networks as scripted: its
  /// optimizing passes take longer on their first calls than they save.
  torch::jit::GraphOptimizerEnabledGuard plain{false};
  BundleMeta meta;
  std::string name;
  torch::jit::Module compute;
  std::optional<torch::jit::Method> encode;
  std::optional<torch::jit::Method> head;
  /// compute.pt's optional spread(summed[S, H]) -> [S]: the standard
  /// deviation of the ensemble members' costs.
  std::optional<torch::jit::Method> spread;
  /// compute.pt's optional member_costs(summed[S, H]) -> [S, M]: each of
  /// the M ensemble members' costs. With it, one run of the members gives
  /// both head's mean and spread's deviation.
  std::optional<torch::jit::Method> memberCosts;
  /// Standard deviations added to every compute cost (setRiskMargin).
  double riskMargin = 0.0;
  std::optional<torch::jit::Module> commFw;
  std::optional<torch::jit::Module> commBw;

  // The prepared problem.
  bool prepared = false;
  std::vector<TableSpec> tables;
  unsigned numDevices = 0;
  int64_t batchSize = 0;
  /// Compute costs at the bundle's batch size times this are costs at the
  /// topology's (batchScaleFactor).
  double batchFactor = 1.0;
  /// What warnings() reports about the prepared problem, and every table
  /// of it outside the trained ranges.
  std::vector<std::string> warnings;
  std::vector<std::string> outsideTables;
  /// compareMachine(), from load().
  std::optional<std::string> machineWarning;
  /// Comm terms of bundles without comm models, and the index
  /// distribution of all.
  AnalyticalCostModel analyticalComm;
  /// The host traffic of host-memory tables' shards, which the network
  /// does not see: added to its compute (HostTier.h).
  HostTierPricer host;

  /// (table, width, piece rows: the row count of a row piece, -1 for every
  /// row, -2 for a replica) -> row of `encodings` (rows of encodingDim
  /// floats).
  DenseMap<std::tuple<unsigned, int64_t, int64_t>, uint32_t> encodingRows;
  std::vector<float> encodings;

  // Scratch buffers reused across calls to avoid allocations on the hot
  // path.
  std::vector<float> newFeatures;
  /// Feature rows of each new slice in newFeatures (a shared table's slice
  /// is encoded once per feature and the encodings summed).
  std::vector<unsigned> newGroups;
  std::vector<uint32_t> sliceRows;
  std::vector<float> summed;
  std::vector<double> spreads;
  /// One buffer per comm-model input (dim sums, straggler times).
  std::array<std::vector<float>, 2> commInputs;

  StringRef dir() const { return meta.info.path; }
  unsigned encodingDim() const { return meta.info.encodingDim; }
  void appendFeatures(const TableSpec &table, int64_t width);
  void forgetRowsFrom(size_t firstNew);
  Error encodeNewSlices(size_t firstNew);
  Error findRows(ArrayRef<ArrayRef<ColumnSlice>> sets);
  Error runHead(MutableArrayRef<double> costsMs);
  Error probe();
  void collectWarnings(const Topology &topology);
  /// The warning about the machine at hand if it is not the one the bundle
  /// was measured on; the machine does not change, so load() asks once.
  std::optional<std::string> compareMachine() const;
  /// The warning about a plan for device kind `kind` that the bundle does
  /// not describe: a GPU's bundle for CPU execution, a CPU's for GPUs, or
  /// another GPU than the named chip.
  std::optional<std::string> compareKind(StringRef kind) const;
  Error checkCommBatch(ArrayRef<double> dimSums,
                       MutableArrayRef<double> costsMs) const;
  Error runComm(torch::jit::Module &model, StringRef file,
                ArrayRef<ArrayRef<double>> inputs,
                MutableArrayRef<double> costsMs);
};

void NeuralCostModel::Impl::appendFeatures(const TableSpec &table,
                                           int64_t width) {
  // A column slice is priced as a table of the slice's width (docs/design.md
  // §3); a table several features look up, as one such table per feature, whose
  // encodings add up like those of the tables of a set.
  for (unsigned f = 0; f < table.numFeatures(); ++f) {
    FeatureStats stats = table.feature(f);
    newFeatures.push_back(static_cast<float>(table.rows));
    newFeatures.push_back(static_cast<float>(width));
    newFeatures.push_back(static_cast<float>(stats.poolingFactor));
    for (double bin : stats.accessHist)
      newFeatures.push_back(static_cast<float>(bin));
  }
  newGroups.push_back(table.numFeatures());
}

Error NeuralCostModel::Impl::encodeNewSlices(size_t firstNew) {
  int64_t count = newFeatures.size() / kNumFeatures;
  Error err = catchTorch(dir(), "compute.pt: encode", [&]() -> Error {
    c10::IValue out =
        (*encode)({floatMatrix(newFeatures.data(), count, kNumFeatures)});
    if (Error err = checkOutput(dir(), "compute.pt: encode", out,
                                {count, encodingDim()}))
      return err;
    at::Tensor tensor = out.toTensor().contiguous();
    const float *data = tensor.data_ptr<float>();
    size_t dim = encodingDim();
    for (unsigned group : newGroups) {
      size_t at = encodings.size();
      encodings.insert(encodings.end(), data, data + dim);
      for (unsigned extra = 1; extra < group; ++extra)
        for (size_t k = 0; k < dim; ++k)
          encodings[at + k] += data[extra * dim + k];
      data += group * dim;
    }
    return Error::success();
  });
  if (err)
    forgetRowsFrom(firstNew);
  return err;
}

/// Drops the memo rows reserved by a batch that failed, so that the memo
/// only names rows that `encodings` holds.
void NeuralCostModel::Impl::forgetRowsFrom(size_t firstNew) {
  for (auto it = encodingRows.begin(), end = encodingRows.end(); it != end;) {
    auto current = it++;
    if (current->second >= firstNew)
      encodingRows.erase(current);
  }
}

Error NeuralCostModel::Impl::checkCommBatch(
    ArrayRef<double> dimSums, MutableArrayRef<double> costsMs) const {
  if (dimSums.size() % numDevices != 0)
    return bundleError(dir(), formatv("{0} dim sums are not a whole number "
                                      "of plans on {1} devices",
                                      dimSums.size(), numDevices));
  if (costsMs.size() != dimSums.size())
    return sizeMismatch(dir(), "the communication cost output", costsMs.size(),
                        dimSums.size());
  return Error::success();
}

/// Runs a comm model on K plans of N devices: inputs[i] is its i-th [K, N]
/// input (the first holds the dim sums) and costsMs receives its [K, N]
/// output.
Error NeuralCostModel::Impl::runComm(torch::jit::Module &model, StringRef file,
                                     ArrayRef<ArrayRef<double>> inputs,
                                     MutableArrayRef<double> costsMs) {
  ArrayRef<double> dimSums = inputs.front();
  if (Error err = checkCommBatch(dimSums, costsMs))
    return err;
  if (dimSums.empty())
    return Error::success();
  int64_t n = numDevices, plans = dimSums.size() / n;
  c10::InferenceMode guard;
  return catchTorch(dir(), file, [&]() -> Error {
    std::vector<c10::IValue> args;
    for (auto [input, buffer] : llvm::zip(inputs, commInputs))
      args.push_back(floatMatrix(toFloats(input, buffer), plans, n));
    c10::IValue out = model.forward(args);
    if (Error err = checkOutput(dir(), file, out, {plans, n}))
      return err;
    return copyCosts(dir(), file, out, costsMs);
  });
}

/// Loads a TorchScript file of the bundle in inference mode.
static Expected<torch::jit::Module> loadScript(StringRef bundleDir,
                                               StringRef file) {
  std::string path = bundleFile(bundleDir, file);
  if (!sys::fs::is_regular_file(path))
    return bundleError(bundleDir, path + " does not exist");
  torch::jit::Module module;
  if (Error err =
          catchTorch(bundleDir, path + " is not a readable TorchScript file",
                     [&]() -> Error {
                       module = torch::jit::load(path);
                       module.eval();
                       return Error::success();
                     }))
    return std::move(err);
  return module;
}

/// Runs each model once on zero inputs to check that its methods exist and
/// honour the shapes of the contract, so that a bad bundle fails at load
/// time rather than in the middle of a search.
Error NeuralCostModel::Impl::probe() {
  std::string computePath = bundleFile(dir(), "compute.pt");
  for (StringRef method : {"encode", "head"})
    if (!compute.find_method(method.str()))
      return bundleError(dir(), formatv("{0} has no method '{1}' (export it "
                                        "with @torch.jit.export)",
                                        computePath, method));
  encode = compute.get_method("encode");
  head = compute.get_method("head");
  if (compute.find_method("spread"))
    spread = compute.get_method("spread");

  int64_t h = encodingDim();
  c10::InferenceMode guard;
  if (Error err = catchTorch(
          dir(),
          formatv("{0}: encode(features[1, {1}]) failed; the model must "
                  "take the {1} features of meta.json's feature_order",
                  computePath, kNumFeatures),
          [&]() -> Error {
            return checkOutput(dir(), computePath + ": encode",
                               (*encode)({torch::zeros({1, kNumFeatures})}),
                               {1, h});
          }))
    return err;
  if (Error err = catchTorch(
          dir(), formatv("{0}: head(summed[1, {1}]) failed", computePath, h),
          [&]() -> Error {
            return checkOutput(dir(), computePath + ": head",
                               (*head)({torch::zeros({1, h})}), {1});
          }))
    return err;
  if (spread)
    if (Error err = catchTorch(
            dir(),
            formatv("{0}: spread(summed[1, {1}]) failed", computePath, h),
            [&]() -> Error {
              return checkOutput(dir(), computePath + ": spread",
                                 (*spread)({torch::zeros({1, h})}), {1});
            }))
      return err;
  // member_costs serves only to price mean and spread in one run; a bundle
  // whose method does not give one row per set is priced by the two.
  if (spread && compute.find_method("member_costs")) {
    torch::jit::Method method = compute.get_method("member_costs");
    bool fits = false;
    consumeError(catchTorch(dir(), "compute.pt: member_costs", [&]() -> Error {
      c10::IValue out = method({torch::zeros({1, h})});
      fits = out.isTensor() && out.toTensor().dim() == 2 &&
             out.toTensor().size(0) == 1 &&
             out.toTensor().scalar_type() == at::kFloat;
      return Error::success();
    }));
    if (fits)
      memberCosts = method;
  }

  if (!meta.info.devices)
    return Error::success();
  int64_t n = *meta.info.devices;
  std::string fwPath = bundleFile(dir(), "comm_fw.pt");
  std::string bwPath = bundleFile(dir(), "comm_bw.pt");
  std::string mismatch =
      formatv("does not take the {0} devices that meta.json names", n);
  if (Error err = catchTorch(dir(), bwPath + " " + mismatch, [&]() -> Error {
        return checkOutput(dir(), bwPath,
                           commBw->forward({torch::zeros({1, n})}), {1, n});
      }))
    return err;
  return catchTorch(dir(), fwPath + " " + mismatch, [&]() -> Error {
    return checkOutput(
        dir(), fwPath,
        commFw->forward({torch::zeros({1, n}), torch::zeros({1, n})}), {1, n});
  });
}

Expected<std::unique_ptr<NeuralCostModel>>
NeuralCostModel::load(StringRef bundleDir) {
  if (!sys::fs::is_directory(bundleDir))
    return bundleError(bundleDir, "no such directory (a bundle is a "
                                  "directory with compute.pt and meta.json)");
  auto impl = std::make_unique<Impl>();
  Expected<BundleMeta> meta = readBundleMeta(bundleDir);
  if (!meta)
    return meta.takeError();
  impl->meta = std::move(*meta);
  StringRef trimmed = bundleDir.rtrim(sys::path::get_separator());
  impl->name = sys::path::filename(trimmed.empty() ? bundleDir : trimmed).str();

  Expected<torch::jit::Module> compute = loadScript(bundleDir, "compute.pt");
  if (!compute)
    return compute.takeError();
  impl->compute = std::move(*compute);

  bool hasFw = sys::fs::exists(bundleFile(bundleDir, "comm_fw.pt"));
  bool hasBw = sys::fs::exists(bundleFile(bundleDir, "comm_bw.pt"));
  if (hasFw != hasBw)
    return bundleError(bundleDir,
                       formatv("has {0} but no {1}: comm models come in pairs",
                               hasFw ? "comm_fw.pt" : "comm_bw.pt",
                               hasFw ? "comm_bw.pt" : "comm_fw.pt"));
  if (hasFw != impl->meta.info.devices.has_value())
    return bundleError(
        bundleDir, hasFw
                       ? "has comm models but meta.json's \"devices\" is null"
                       : "meta.json names a device count but there are no comm "
                         "models (comm_fw.pt, comm_bw.pt)");
  if (hasFw) {
    Expected<torch::jit::Module> fw = loadScript(bundleDir, "comm_fw.pt");
    if (!fw)
      return fw.takeError();
    Expected<torch::jit::Module> bw = loadScript(bundleDir, "comm_bw.pt");
    if (!bw)
      return bw.takeError();
    impl->commFw = std::move(*fw);
    impl->commBw = std::move(*bw);
  }
  if (Error err = impl->probe())
    return std::move(err);
  impl->machineWarning = impl->compareMachine();
  return std::unique_ptr<NeuralCostModel>(new NeuralCostModel(std::move(impl)));
}

NeuralCostModel::NeuralCostModel(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

NeuralCostModel::~NeuralCostModel() = default;

StringRef NeuralCostModel::name() const { return impl->name; }

std::string NeuralCostModel::description() const {
  const BundleMeta &meta = impl->meta;
  const NeuralBundleInfo &info = meta.info;
  std::string text;
  raw_string_ostream os(text);
  if (info.trained)
    os << "neural cost model '" << impl->name << "' (measured on "
       << info.hardware;
  else
    os << "UNTRAINED neural cost model '" << impl->name
       << "' (random weights, for tests only";
  os << "; batch " << info.batchSize;
  if (meta.batchScaling)
    os << " (scaled over " << meta.batchScaling->batchSizes.front() << "-"
       << meta.batchScaling->batchSizes.back() << ")";
  os << ", " << info.dtype;
  if (meta.computeMape)
    os << formatv(", held-out compute MAPE {0:F1}%", *meta.computeMape * 100);
  if (meta.correctionBound)
    os << formatv("; physics prior corrected within {0}x",
                  format("%g", *meta.correctionBound));
  if (estimatesUncertainty())
    os << formatv("; {0}ensemble, priced at mean + {1} sd",
                  meta.ensemble ? formatv("{0}-member ", *meta.ensemble).str()
                                : std::string(),
                  format("%g", impl->riskMargin));
  if (info.devices && info.nodes > 1)
    os << "; comm: neural, " << *info.devices << " devices on " << info.nodes
       << " nodes)";
  else if (info.devices)
    os << "; comm: neural, " << *info.devices << " devices)";
  else
    os << "; comm: analytical)";
  return text;
}

std::optional<unsigned> NeuralCostModel::requiredDevices() const {
  return impl->meta.info.devices;
}

std::optional<unsigned> NeuralCostModel::requiredNodes() const {
  if (!impl->meta.info.devices)
    return std::nullopt;
  return impl->meta.info.nodes;
}

std::vector<std::string> NeuralCostModel::warnings() const {
  return impl->warnings;
}

std::vector<std::string> NeuralCostModel::tablesOutsideRanges() const {
  return impl->outsideTables;
}

bool NeuralCostModel::estimatesUncertainty() const {
  return impl->spread && impl->meta.ensemble.value_or(2) > 1;
}

void NeuralCostModel::setRiskMargin(double sigmas) {
  impl->riskMargin = estimatesUncertainty() ? sigmas : 0.0;
}

double NeuralCostModel::riskMargin() const { return impl->riskMargin; }

std::optional<ComputeError> NeuralCostModel::computeError() const {
  const BundleMeta &meta = impl->meta;
  if (!meta.info.trained)
    return std::nullopt;
  if (meta.computeLogErrorMean && meta.computeLogErrorSd)
    return ComputeError{*meta.computeLogErrorMean, *meta.computeLogErrorSd};
  if (meta.computeMape && std::isfinite(*meta.computeMape) &&
      *meta.computeMape >= 0.0)
    return ComputeError{
        0.0,
        std::min(kMaxLogError, *meta.computeMape * std::sqrt(numbers::pi / 2))};
  return std::nullopt;
}

/// "L2 1024 KiB, L3 32768 KiB".
static std::string
cachesText(ArrayRef<std::pair<std::string, int64_t>> caches) {
  std::string text;
  raw_string_ostream os(text);
  interleaveComma(caches, os, [&](const auto &cache) {
    os << cache.first << " " << cache.second << " KiB";
  });
  return text;
}

/// The tables outside the trained ranges, each with the values that are,
/// as "'big' (rows 100000000)".
static std::vector<std::string> outsideRanges(const BundleMeta &meta,
                                              ArrayRef<TableSpec> tables) {
  std::vector<std::string> named;
  for (const TableSpec &table : tables) {
    SmallVector<std::string> why;
    if (meta.rowsRange && !meta.rowsRange->contains(double(table.rows)))
      why.push_back(formatv("rows {0}", table.rows));
    if (meta.dimRange && !meta.dimRange->contains(double(table.dim)))
      why.push_back(formatv("dim {0}", table.dim));
    for (unsigned f = 0; f < table.numFeatures(); ++f) {
      double pooling = table.feature(f).poolingFactor;
      if (meta.poolingRange && !meta.poolingRange->contains(pooling))
        why.push_back(formatv("pooling factor {0}{1}", format("%g", pooling),
                              table.numFeatures() == 1
                                  ? std::string()
                                  : formatv(" (feature {0})", f).str()));
    }
    if (!why.empty())
      named.push_back(formatv("'{0}' ({1})", table.name, join(why, ", ")));
  }
  return named;
}

/// The first `limit` of `named`, and how many more there are.
static std::string firstNamed(ArrayRef<std::string> named, size_t limit) {
  std::string text = join(named.take_front(limit), ", ");
  if (named.size() > limit)
    text += formatv(" and {0} more", named.size() - limit).str();
  return text;
}

static std::string rangeText(StringRef what,
                             const std::optional<FeatureRange> &range) {
  if (!range)
    return "";
  return formatv("{0} {1}-{2}", what, format("%.10g", range->low),
                 format("%.10g", range->high));
}

void NeuralCostModel::Impl::collectWarnings(const Topology &topology) {
  warnings.clear();
  const NeuralBundleInfo &info = meta.info;
  int64_t batch = topology.batchSize;
  if (meta.batchScaling) {
    int64_t low = meta.batchScaling->batchSizes.front();
    int64_t high = meta.batchScaling->batchSizes.back();
    if (batch < low || batch > high)
      warnings.push_back(formatv(
          "batch size {0} is outside the batch sizes {1}-{2} that cost model "
          "'{3}' was measured at; its compute costs are extrapolated along "
          "the end of its batch-scaling curve",
          batch, low, high, name));
  } else if (batch != info.batchSize) {
    warnings.push_back(formatv(
        "cost model '{0}' was measured at batch size {1} only and has no "
        "batch-scaling curve; its compute costs are scaled in proportion to "
        "batch size {2} (python3 -m neuroshard.batch_scaling measures one)",
        name, info.batchSize, batch));
  }

  outsideTables = outsideRanges(meta, tables);
  size_t outside = outsideTables.size();
  std::string named = firstNamed(outsideTables, 5);
  if (outside) {
    SmallVector<std::string> ranges;
    for (std::string range :
         {rangeText("rows", meta.rowsRange), rangeText("dim", meta.dimRange),
          rangeText("pooling factor", meta.poolingRange)})
      if (!range.empty())
        ranges.push_back(range);
    bool one = outside == 1;
    std::string fate =
        meta.correctionBound
            ? formatv("fall{0} back towards the model's physics prior",
                      one ? "s" : "")
                  .str()
            : formatv("{0} extrapolated", one ? "is" : "are").str();
    warnings.push_back(formatv(
        "{0} table{1} outside the ranges cost model '{2}' was trained on "
        "({3}), so {4} compute cost{1} {5}: {6}",
        outside, one ? "" : "s", name, join(ranges, ", "),
        one ? "its" : "their", fate, named));
  }

  // A plan for GPUs is not about the machine that plans, so a CPU bundle
  // gets the kind's warning, not the machine's.
  if (std::optional<std::string> kindWarning = compareKind(topology.deviceKind))
    warnings.push_back(*kindWarning);
  else if (machineWarning)
    warnings.push_back(*machineWarning);
}

/// `text` in lower case with only its letters and digits ("NVIDIA H200" is
/// "nvidiah200").
static std::string alphanumeric(StringRef text) {
  std::string kept;
  for (char c : text)
    if (isAlnum(c))
      kept.push_back(toLower(c));
  return kept;
}

std::optional<std::string>
NeuralCostModel::Impl::compareKind(StringRef kind) const {
  const NeuralBundleInfo &info = meta.info;
  if (!info.trained)
    return std::nullopt;
  bool cpuPlan = isCPUDeviceKind(kind);
  if (meta.hostGPUModel && cpuPlan)
    return formatv("cost model '{0}' was measured on a GPU ('{1}') but the "
                   "plan is for device kind '{2}', CPU execution: its compute "
                   "costs describe GPU kernels; choose a CPU bundle (such as "
                   "'{3}') or a GPU device kind",
                   name, *meta.hostGPUModel, kind, defaultModelName(kind))
        .str();
  if (!meta.hostGPUModel && !cpuPlan)
    return formatv("cost model '{0}' was measured on a CPU ('{1}') but the "
                   "plan is for device kind '{2}': its compute costs describe "
                   "the CPU kernels, not a GPU's; choose a GPU bundle (such "
                   "as '{3}'), or device kind 'cpu' for a plan meant for CPU "
                   "execution",
                   name, meta.hostCPUModel.value_or(info.hardware), kind,
                   defaultModelName(kind))
        .str();
  if (meta.hostGPUModel && kind != "gpu" &&
      !StringRef(alphanumeric(*meta.hostGPUModel)).contains(alphanumeric(kind)))
    return formatv("cost model '{0}' was measured on the GPU '{1}' but the "
                   "plan is "
                   "for device kind '{2}': its compute costs describe the "
                   "other GPU; calibrate a model of that GPU with "
                   "scripts/gpu/calibrate.sh",
                   name, *meta.hostGPUModel, kind)
        .str();
  return std::nullopt;
}

std::optional<std::string> NeuralCostModel::Impl::compareMachine() const {
  const NeuralBundleInfo &info = meta.info;
  // Random weights describe no machine, and a GPU's bundle describes the
  // GPUs the plan is for, not the machine that plans.
  if (!info.trained || meta.hostGPUModel)
    return std::nullopt;
  std::string measured = meta.hostCPUModel.value_or(info.hardware);
  std::string here = hostCPUModel();
  std::string calibrate = "calibrate a model for this machine with python3 "
                          "-m neuroshard.calibrate";
  if (measured != here)
    return formatv("cost model '{0}' was measured on '{1}' but this machine "
                   "is '{2}': its compute costs describe the other machine; "
                   "{3}",
                   name, measured, here, calibrate)
        .str();
  // One model name can cover several generations of chips.
  CPUIdentity identity = hostCPUIdentity();
  CPUIdentity recorded{meta.hostCPUFamily, meta.hostCPUModelNumber,
                       meta.hostISA.value_or(std::vector<std::string>())};
  if (isOtherChip(recorded, meta.hostISA.has_value(), identity))
    return formatv(
               "cost model '{0}' was measured on '{1}' ({2}), but this "
               "machine's '{1}' is {3}: its compute costs describe the other "
               "chip; {4}",
               name, measured,
               describeCPUIdentity(recorded, meta.hostISA.has_value()),
               describeCPUIdentity(identity, true), calibrate)
        .str();
  if (meta.hostCachesKB.empty())
    return std::nullopt;
  std::vector<std::pair<std::string, int64_t>> caches = hostCachesKB();
  if (caches.empty() || caches == meta.hostCachesKB)
    return std::nullopt;
  return formatv("cost model '{0}' was measured on a '{1}' with caches {2}, "
                 "but this one has {3}: its compute costs may not hold here; "
                 "{4}",
                 name, measured, cachesText(meta.hostCachesKB),
                 cachesText(caches), calibrate)
      .str();
}

ModelProvenance NeuralCostModel::provenance() const {
  ModelProvenance provenance;
  provenance.bundlePath = impl->meta.info.path;
  provenance.measuredOnThisHost = impl->meta.info.trained &&
                                  !impl->meta.hostGPUModel &&
                                  !impl->machineWarning;
  if (impl->meta.info.trained)
    provenance.selectionNoise = impl->meta.selectionNoise;
  return provenance;
}

bool NeuralCostModel::coversRowPieces() const { return impl->meta.rowPieces; }

const NeuralBundleInfo &NeuralCostModel::info() const {
  return impl->meta.info;
}

size_t NeuralCostModel::numEncodedSlices() const {
  return impl->encodingRows.size();
}

Error NeuralCostModel::prepare(ArrayRef<TableSpec> tables,
                               const Topology &topology) {
  Impl &m = *impl;
  m.prepared = false;
  const NeuralBundleInfo &info = m.meta.info;
  if (info.devices && *info.devices != topology.numDevices())
    return bundleError(m.dir(),
                       formatv("the comm models were trained for {0} devices "
                               "but the topology has {1}",
                               *info.devices, topology.numDevices()));
  if (info.devices && info.nodes != topology.numNodes())
    return bundleError(m.dir(),
                       formatv("the comm models were measured on {0} node{1} "
                               "but the topology has {2}",
                               info.nodes, info.nodes == 1 ? "" : "s",
                               topology.numNodes()));
  for (const TableSpec &table : tables)
    if (table.elementBytes != m.meta.elementBytes)
      return bundleError(m.dir(),
                         formatv("table '{0}' has {1}-byte elements but the "
                                 "models were measured on {2} tables",
                                 table.name, table.elementBytes, info.dtype));
  // The analytical model prices the comm terms of bundles without comm
  // models, and the index distribution of every bundle.
  if (Error err = m.analyticalComm.prepare(tables, topology))
    return err;
  m.host.prepare(tables, topology);
  m.tables.assign(tables.begin(), tables.end());
  m.numDevices = topology.numDevices();
  m.batchSize = topology.batchSize;
  m.batchFactor = batchScaleFactor(m.meta, topology.batchSize);
  m.collectWarnings(topology);
  m.encodingRows.clear();
  m.encodings.clear();
  m.prepared = true;
  return Error::success();
}

static Error notPrepared(StringRef bundleDir) {
  return bundleError(bundleDir, "queried before prepare()");
}

/// Finds each slice's encoding row (sliceRows, in set order), encoding the
/// slices not seen since prepare() in one batch.
Error NeuralCostModel::Impl::findRows(ArrayRef<ArrayRef<ColumnSlice>> sets) {
  size_t firstNew = encodingRows.size();
  newFeatures.clear();
  newGroups.clear();
  sliceRows.clear();
  for (ArrayRef<ColumnSlice> set : sets) {
    for (const ColumnSlice &slice : set) {
      if (slice.table >= tables.size() || slice.width() <= 0 ||
          slice.width() > tables[slice.table].dim) {
        forgetRowsFrom(firstNew);
        return bundleError(dir(),
                           formatv("slice [{0}, {1}) of table {2} is not a "
                                   "column range of the {3} prepared tables",
                                   slice.colBegin, slice.colEnd, slice.table,
                                   tables.size()));
      }
      const TableSpec &table = tables[slice.table];
      int64_t pieceRows = slice.replica     ? -2
                          : slice.allRows() ? -1
                                            : slice.numRows(table);
      auto [it, inserted] = encodingRows.try_emplace(
          std::make_tuple(slice.table, slice.width(), pieceRows), 0);
      if (inserted) {
        it->second = encodingRows.size() - 1;
        appendFeatures(!slice.distributesRows()
                           ? table
                           : pieceSpec(table, slice, numDevices, batchSize),
                       slice.width());
      }
      sliceRows.push_back(it->second);
    }
  }
  if (newFeatures.empty())
    return Error::success();
  c10::InferenceMode guard;
  return encodeNewSlices(firstNew);
}

/// Runs the head network on the first `costsMs.size()` rows of `summed`.
Error NeuralCostModel::Impl::runHead(MutableArrayRef<double> costsMs) {
  int64_t numSets = costsMs.size();
  c10::InferenceMode guard;
  return catchTorch(dir(), "compute.pt: head", [&]() -> Error {
    at::Tensor input = floatMatrix(summed.data(), numSets, encodingDim());
    bool margin = riskMargin > 0.0 && spread;
    c10::IValue mean, deviation;
    if (margin && memberCosts) {
      // The members run once; their mean and deviation are head's and
      // spread's, computed by the same operations.
      at::Tensor members = (*memberCosts)({input}).toTensor();
      mean = members.mean(1);
      deviation =
          (members - members.mean(1, /*keepdim=*/true)).pow(2).mean(1).sqrt();
    } else {
      mean = (*head)({input});
      if (margin)
        deviation = (*spread)({input});
    }
    if (Error err = checkOutput(dir(), "compute.pt: head", mean, {numSets}))
      return err;
    if (Error err = copyCosts(dir(), "compute.pt: head", mean, costsMs))
      return err;
    if (margin) {
      if (Error err =
              checkOutput(dir(), "compute.pt: spread", deviation, {numSets}))
        return err;
      spreads.resize(numSets);
      if (Error err =
              copyCosts(dir(), "compute.pt: spread", deviation, spreads))
        return err;
      for (auto [cost, spreadMs] : zip_equal(costsMs, spreads))
        cost += riskMargin * spreadMs;
    }
    for (double &cost : costsMs)
      cost *= batchFactor;
    return Error::success();
  });
}

Error NeuralCostModel::predictCompute(ArrayRef<ArrayRef<ColumnSlice>> sets,
                                      MutableArrayRef<double> costsMs) {
  Impl &m = *impl;
  if (!m.prepared)
    return notPrepared(m.dir());
  if (costsMs.size() != sets.size())
    return sizeMismatch(m.dir(), "the compute cost output", costsMs.size(),
                        sets.size());
  if (sets.empty())
    return Error::success();
  if (Error err = m.findRows(sets))
    return err;

  // Sum in slice order, in float, as the Python forward's index_add_ does.
  unsigned h = m.encodingDim();
  m.summed.assign(sets.size() * h, 0.0f);
  const uint32_t *row = m.sliceRows.data();
  for (size_t s = 0; s < sets.size(); ++s) {
    float *sum = &m.summed[s * h];
    for (size_t i = 0, e = sets[s].size(); i < e; ++i, ++row) {
      const float *encoding = &m.encodings[size_t(*row) * h];
      for (unsigned j = 0; j < h; ++j)
        sum[j] += encoding[j];
    }
  }
  if (Error err = m.runHead(costsMs))
    return err;
  if (m.host.any())
    for (auto [set, cost] : zip_equal(sets, costsMs)) {
      double hostMs = 0.0;
      for (const ColumnSlice &slice : set)
        hostMs += m.host.ms(slice);
      cost += hostMs;
    }
  return Error::success();
}

/// A slice's term is its encoding, then its host traffic in ms.
unsigned NeuralCostModel::computeTermWidth() const {
  return impl->encodingDim() + 1;
}

Error NeuralCostModel::computeTerms(ArrayRef<ColumnSlice> slices,
                                    MutableArrayRef<double> terms) {
  Impl &m = *impl;
  if (!m.prepared)
    return notPrepared(m.dir());
  unsigned h = m.encodingDim(), width = h + 1;
  if (terms.size() != slices.size() * width)
    return sizeMismatch(m.dir(), "the slice terms", terms.size(),
                        slices.size() * width);
  if (slices.empty())
    return Error::success();
  if (Error err = m.findRows({slices}))
    return err;
  for (auto [i, row] : enumerate(m.sliceRows)) {
    const float *encoding = &m.encodings[size_t(row) * h];
    std::copy(encoding, encoding + h, terms.begin() + i * width);
    terms[i * width + h] = m.host.ms(slices[i]);
  }
  return Error::success();
}

void NeuralCostModel::addComputeTerm(ArrayRef<double> term,
                                     MutableArrayRef<double> sum) const {
  // Float arithmetic for the encoding, as predictCompute sums; every value
  // is a float. The host traffic adds up in double, as predictCompute's.
  size_t h = sum.size() - 1;
  for (size_t j = 0; j < h; ++j)
    sum[j] = static_cast<float>(sum[j]) + static_cast<float>(term[j]);
  sum[h] += term[h];
}

Error NeuralCostModel::predictComputeFromSums(ArrayRef<double> sums,
                                              MutableArrayRef<double> costsMs) {
  Impl &m = *impl;
  if (!m.prepared)
    return notPrepared(m.dir());
  unsigned h = m.encodingDim(), width = h + 1;
  if (sums.size() != costsMs.size() * width)
    return sizeMismatch(m.dir(), "the summed encodings", sums.size(),
                        costsMs.size() * width);
  if (costsMs.empty())
    return Error::success();
  m.summed.resize(costsMs.size() * h);
  for (size_t s = 0; s < costsMs.size(); ++s)
    std::copy(sums.begin() + s * width, sums.begin() + s * width + h,
              m.summed.begin() + s * h);
  if (Error err = m.runHead(costsMs))
    return err;
  for (size_t s = 0; s < costsMs.size(); ++s)
    costsMs[s] += sums[s * width + h];
  return Error::success();
}

/// The dim sums of `traffic`, the comm models' input.
static std::vector<double> dimSumsOf(ArrayRef<DeviceTraffic> traffic) {
  std::vector<double> dimSums;
  dimSums.reserve(traffic.size());
  for (const DeviceTraffic &device : traffic)
    dimSums.push_back(device.dimSum);
  return dimSums;
}

Error NeuralCostModel::predictBackwardComm(ArrayRef<DeviceTraffic> traffic,
                                           MutableArrayRef<double> costsMs) {
  Impl &m = *impl;
  if (!m.prepared)
    return notPrepared(m.dir());
  if (!m.commBw)
    return m.analyticalComm.predictBackwardComm(traffic, costsMs);
  if (Error err =
          m.runComm(*m.commBw, "comm_bw.pt", {dimSumsOf(traffic)}, costsMs))
    return err;
  // The comm model measured pooled exchanges; replicas' all-reduce is
  // priced analytically.
  for (auto [device, cost] : zip_equal(traffic, costsMs))
    cost += m.analyticalComm.gradientAllReduceMs(device.gradients);
  return Error::success();
}

Error NeuralCostModel::predictForwardComm(ArrayRef<DeviceTraffic> traffic,
                                          ArrayRef<double> stragglersMs,
                                          MutableArrayRef<double> costsMs) {
  Impl &m = *impl;
  if (!m.prepared)
    return notPrepared(m.dir());
  if (!m.commFw)
    return m.analyticalComm.predictForwardComm(traffic, stragglersMs, costsMs);
  if (stragglersMs.size() != traffic.size())
    return sizeMismatch(m.dir(), "the straggler times", stragglersMs.size(),
                        traffic.size());
  if (Error err = m.runComm(*m.commFw, "comm_fw.pt",
                            {dimSumsOf(traffic), stragglersMs}, costsMs))
    return err;
  for (auto [device, cost] : zip_equal(traffic, costsMs))
    cost += m.analyticalComm.indexDistributionMs(device.indices);
  return Error::success();
}

static Expected<std::unique_ptr<CostModel>>
loadNeuralCostModel(StringRef path) {
  Expected<std::unique_ptr<NeuralCostModel>> model =
      NeuralCostModel::load(path);
  if (!model)
    return model.takeError();
  return std::unique_ptr<CostModel>(std::move(*model));
}

void registerNeuralCostModelSupport() {
  registerNeuralCostModelLoader(loadNeuralCostModel);
}

} // namespace neuroshard
