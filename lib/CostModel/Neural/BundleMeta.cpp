//===- BundleMeta.cpp - meta.json of a neural cost-model bundle -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The fields are those written by bundle_meta() in
// python/neuroshard/cost_model.py; docs/neural-cost-model.md lists them.
//
//===----------------------------------------------------------------------===//

#include "BundleMeta.h"
#include "neuroshard/Sharding/TableRules.h"
#include "neuroshard/Support/FileIO.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace llvm;

namespace neuroshard {
namespace neural {

static constexpr StringLiteral kBundleFormat = "neuroshard-cost-model-bundle";
static constexpr int64_t kBundleVersion = 1;

std::string bundleFile(StringRef bundleDir, StringRef file) {
  SmallString<256> path(bundleDir);
  sys::path::append(path, file);
  return std::string(path);
}

Error bundleError(StringRef bundleDir, const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           "neural cost model bundle '" + bundleDir +
                               "': " + message);
}

/// The feature names the C++ side computes, in order.
static std::string expectedFeatureName(unsigned index) {
  static constexpr StringLiteral kScalarFeatures[] = {"rows", "dim",
                                                      "pooling_factor"};
  if (index < 3)
    return std::string(kScalarFeatures[index]);
  return formatv("bin_{0}", index - 3).str();
}

static std::optional<unsigned> elementBytesOf(StringRef dtype) {
  return StringSwitch<std::optional<unsigned>>(dtype)
      .Cases({"f16", "bf16"}, 2)
      .Case("f32", 4)
      .Case("f64", 8)
      .Default(std::nullopt);
}

/// An integer field of `root`, written as an integer (4.0 is not one).
static std::optional<int64_t> integerField(const json::Object &root,
                                           StringRef key) {
  const json::Value *value = root.get(key);
  return value ? getInteger(*value) : std::nullopt;
}

/// A number as %g writes it (-0.1, not -0.10000000000000001), anything else
/// as JSON, for messages that quote a field's value.
static std::string valueText(const json::Value &value) {
  if (std::optional<double> number = value.getAsNumber())
    return formatv("{0}", format("%g", *number)).str();
  return formatv("{0}", value).str();
}

static Error metaError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// "batch_scaling": {"batch_sizes": [...], "ratios": [...], ...}: positive
/// increasing batch sizes that include the bundle's, with positive finite
/// ratios that do not decrease and are 1 at the bundle's batch size.
static Error readBatchScaling(const json::Object &root, BundleMeta &meta) {
  const json::Value *value = root.get("batch_scaling");
  if (!value || value->getAsNull())
    return Error::success();
  const json::Object *object = value->getAsObject();
  const json::Array *sizes = object ? object->getArray("batch_sizes") : nullptr;
  const json::Array *ratios = object ? object->getArray("ratios") : nullptr;
  if (!sizes || !ratios || sizes->empty() || sizes->size() != ratios->size() ||
      sizes->size() > 64)
    return metaError("\"batch_scaling\" must hold \"batch_sizes\" and "
                     "\"ratios\", two lists of 1 to 64 numbers of the same "
                     "length");
  BatchScaling curve;
  bool hasReference = false;
  for (auto [sizeValue, ratioValue] : llvm::zip(*sizes, *ratios)) {
    std::optional<int64_t> size = getInteger(sizeValue);
    std::optional<double> ratio = ratioValue.getAsNumber();
    if (!size || *size <= 0 || !ratio || !std::isfinite(*ratio) ||
        *ratio <= 0.0)
      return metaError(formatv("\"batch_scaling\": batch size {0} with "
                               "ratio {1}: batch sizes must be positive "
                               "integers and ratios positive numbers",
                               sizeValue, ratioValue));
    if (!curve.batchSizes.empty() &&
        (*size <= curve.batchSizes.back() || *ratio < curve.ratios.back()))
      return metaError(formatv(
          "\"batch_scaling\": batch sizes must increase and ratios must "
          "not decrease, got {0} at {1} after {2} at {3}",
          format("%g", *ratio), *size, format("%g", curve.ratios.back()),
          curve.batchSizes.back()));
    if (*size == meta.info.batchSize) {
      if (std::fabs(*ratio - 1.0) > 1e-9)
        return metaError(formatv("\"batch_scaling\": the ratio at the "
                                 "bundle's batch size {0} must be 1, got {1}",
                                 *size, format("%g", *ratio)));
      hasReference = true;
    }
    curve.batchSizes.push_back(*size);
    curve.ratios.push_back(*ratio);
  }
  if (!hasReference)
    return metaError(formatv("\"batch_scaling\" must include the bundle's "
                             "batch_size {0}",
                             meta.info.batchSize));
  meta.batchScaling = std::move(curve);
  return Error::success();
}

/// "host": {"cpu_model": "...", "caches_kb": {"L1d": 48, ...}, ...}, or of
/// a GPU {"gpu_model": "...", "l2_kb": n}.
static Error readHost(const json::Object &root, BundleMeta &meta) {
  const json::Value *value = root.get("host");
  if (!value || value->getAsNull())
    return Error::success();
  const json::Object *host = value->getAsObject();
  if (std::optional<StringRef> gpu =
          host ? host->getString("gpu_model") : std::nullopt) {
    const json::Value *l2 = host->get("l2_kb");
    std::optional<int64_t> kb = l2 ? getInteger(*l2) : std::nullopt;
    if (!kb || *kb <= 0)
      return metaError(formatv("\"host\": GPU '{0}' needs a positive "
                               "integer \"l2_kb\" (its L2 in KiB)",
                               *gpu));
    meta.hostGPUModel = gpu->str();
    meta.hostGPUL2KB = *kb;
    return Error::success();
  }
  std::optional<StringRef> cpu =
      host ? host->getString("cpu_model") : std::nullopt;
  if (!cpu)
    return metaError("\"host\" must be an object with a \"cpu_model\" "
                     "string, or a \"gpu_model\" string and \"l2_kb\"");
  meta.hostCPUModel = cpu->str();
  for (auto [key, field] :
       {std::make_pair("cpu_family", &meta.hostCPUFamily),
        std::make_pair("cpu_model_number", &meta.hostCPUModelNumber)}) {
    const json::Value *value = host->get(key);
    if (!value)
      continue;
    std::optional<int64_t> number = getInteger(*value);
    if (!number || *number < 0)
      return metaError(formatv("\"host\": \"{0}\" must be a non-negative "
                               "integer, got {1}",
                               key, *value));
    *field = *number;
  }
  if (const json::Value *isa = host->get("isa")) {
    const json::Array *flags = isa->getAsArray();
    std::vector<std::string> names;
    for (size_t i = 0; flags && i < flags->size(); ++i) {
      std::optional<StringRef> name = (*flags)[i].getAsString();
      if (!name)
        break;
      names.push_back(name->str());
    }
    if (!flags || names.size() != flags->size())
      return metaError(formatv("\"host\": \"isa\" must be a list of "
                               "instruction-set names, got {0}",
                               *isa));
    llvm::sort(names);
    meta.hostISA = std::move(names);
  }
  const json::Value *caches = host->get("caches_kb");
  if (!caches)
    return Error::success();
  const json::Object *byName = caches->getAsObject();
  if (!byName)
    return metaError("\"host\": \"caches_kb\" must map cache names to "
                     "sizes in KiB");
  for (const auto &[name, size] : *byName) {
    std::optional<int64_t> kb = getInteger(size);
    if (!kb || *kb <= 0)
      return metaError(formatv("\"host\": cache '{0}' must have a positive "
                               "integer size in KiB, got {1}",
                               name.str(), size));
    meta.hostCachesKB.emplace_back(name.str(), *kb);
  }
  llvm::sort(meta.hostCachesKB);
  return Error::success();
}

/// "trained_ranges": {"rows": [lo, hi], "dim": [lo, hi],
/// "pooling_factor": [lo, hi], ...}; each pair finite with lo <= hi.
static Error readTrainedRanges(const json::Object &root, BundleMeta &meta) {
  const json::Value *value = root.get("trained_ranges");
  if (!value || value->getAsNull())
    return Error::success();
  const json::Object *ranges = value->getAsObject();
  if (!ranges)
    return metaError("\"trained_ranges\" must be an object");
  for (auto [key, range] :
       {std::make_pair("rows", &meta.rowsRange),
        std::make_pair("dim", &meta.dimRange),
        std::make_pair("pooling_factor", &meta.poolingRange)}) {
    const json::Value *pair = ranges->get(key);
    if (!pair)
      continue;
    const json::Array *bounds = pair->getAsArray();
    std::optional<double> low, high;
    if (bounds && bounds->size() == 2) {
      low = (*bounds)[0].getAsNumber();
      high = (*bounds)[1].getAsNumber();
    }
    if (!low || !high || !std::isfinite(*low) || !std::isfinite(*high) ||
        *low > *high)
      return metaError(formatv("\"trained_ranges\": \"{0}\" must be "
                               "[low, high] with low <= high, got {1}",
                               key, *pair));
    *range = FeatureRange{*low, *high};
  }
  return Error::success();
}

/// "compute_model": {"form": ..., "correction_bound": b > 1,
/// "ensemble": n >= 1, ...}: a compute model that corrects a physics prior.
static Error readComputeModel(const json::Object &root, BundleMeta &meta) {
  const json::Value *value = root.get("compute_model");
  if (!value || value->getAsNull())
    return Error::success();
  const json::Object *model = value->getAsObject();
  if (!model)
    return metaError("\"compute_model\" must be an object");
  std::optional<double> bound = model->getNumber("correction_bound");
  std::optional<int64_t> members = integerField(*model, "ensemble");
  if (!bound || !std::isfinite(*bound) || *bound <= 1.0)
    return metaError("\"compute_model\": \"correction_bound\" must be a "
                     "finite number above 1");
  if (!members || *members < 1 || *members > kMaxEnsemble)
    return metaError(formatv("\"compute_model\": \"ensemble\" must be an "
                             "integer from 1 to {0}",
                             kMaxEnsemble));
  meta.correctionBound = *bound;
  meta.ensemble = static_cast<unsigned>(*members);
  return Error::success();
}

/// "held_out": {"compute_mape": m, "compute_log_error_mean": mu,
/// "compute_log_error_sd": sd, ...}, each optional; the log error's two
/// figures come together, |mu| and sd at most kMaxLogError (a factor of
/// e^2, far beyond any calibrated model) and sd not negative.
static Error readHeldOut(const json::Object &root, BundleMeta &meta) {
  const json::Object *heldOut = root.getObject("held_out");
  if (!heldOut)
    return Error::success();
  meta.computeMape = heldOut->getNumber("compute_mape");
  const json::Value *mean = heldOut->get("compute_log_error_mean");
  const json::Value *sd = heldOut->get("compute_log_error_sd");
  if (!mean && !sd)
    return Error::success();
  if (!mean || !sd)
    return metaError("\"held_out\": \"compute_log_error_mean\" and "
                     "\"compute_log_error_sd\" come together, but only " +
                     Twine(mean ? "the mean" : "the deviation") + " is given");
  std::optional<double> mu = mean->getAsNumber(), sigma = sd->getAsNumber();
  std::string bound = formatv("{0}", format("%g", kMaxLogError)).str();
  if (!mu || !std::isfinite(*mu) || std::fabs(*mu) > kMaxLogError)
    return metaError(formatv("\"held_out\": \"compute_log_error_mean\" must "
                             "be a number from -{0} to {0}, got {1}",
                             bound, valueText(*mean)));
  if (!sigma || !std::isfinite(*sigma) || *sigma < 0.0 || *sigma > kMaxLogError)
    return metaError(formatv("\"held_out\": \"compute_log_error_sd\" must be "
                             "a number from 0 to {0}, got {1}",
                             bound, valueText(*sd)));
  meta.computeLogErrorMean = *mu;
  meta.computeLogErrorSd = *sigma;
  return Error::success();
}

/// "selection_noise": {"log_sd": s, "comparisons": n, ...} (optional, other
/// fields free): s from 0 to kMaxLogError, n an integer from 1 to
/// kMaxSelectionComparisons.
static Error readSelectionNoise(const json::Object &root, BundleMeta &meta) {
  const json::Value *value = root.get("selection_noise");
  if (!value || value->getAsNull())
    return Error::success();
  const json::Object *noise = value->getAsObject();
  if (!noise)
    return metaError("\"selection_noise\" must be an object");
  // The value given, quoted in the message ("none" where absent).
  auto given = [&](StringRef key) {
    const json::Value *field = noise->get(key);
    return field ? valueText(*field) : std::string("none");
  };
  std::optional<double> sd = noise->getNumber("log_sd");
  if (!sd || !std::isfinite(*sd) || *sd < 0.0 || *sd > kMaxLogError)
    return metaError(formatv("\"selection_noise\": \"log_sd\" must be a "
                             "number from 0 to {0}, got {1}",
                             format("%g", kMaxLogError), given("log_sd")));
  std::optional<int64_t> comparisons = integerField(*noise, "comparisons");
  if (!comparisons || *comparisons < 1 ||
      *comparisons > kMaxSelectionComparisons)
    return metaError(formatv("\"selection_noise\": \"comparisons\" must be "
                             "an integer from 1 to {0}, got {1}",
                             kMaxSelectionComparisons, given("comparisons")));
  meta.selectionNoise =
      SelectionNoise{*sd, static_cast<unsigned>(*comparisons)};
  return Error::success();
}

/// Checks the parsed meta.json of the bundle at `bundleDir`.
static Expected<BundleMeta> checkBundleMeta(StringRef bundleDir,
                                            const json::Value &document) {
  std::string path = bundleFile(bundleDir, "meta.json");
  auto fail = [&](const Twine &message) {
    return bundleError(bundleDir, path + ": " + message);
  };
  const json::Object *root = document.getAsObject();
  if (!root)
    return fail("expected a JSON object");

  std::optional<StringRef> format = root->getString("format");
  std::optional<int64_t> version = integerField(*root, "version");
  if (!format || *format != kBundleFormat || !version)
    return fail(formatv("not a NeuroShard cost-model bundle (expected "
                        "\"format\": \"{0}\" and a \"version\")",
                        kBundleFormat));
  if (*version != kBundleVersion)
    return fail(formatv("bundle format version {0} is not supported (this "
                        "build reads version {1})",
                        *version, kBundleVersion));

  BundleMeta meta;
  NeuralBundleInfo &info = meta.info;
  info.path = bundleDir.str();
  std::optional<bool> trained = root->getBoolean("trained");
  std::optional<StringRef> hardware = root->getString("hardware");
  std::optional<StringRef> dtype = root->getString("dtype");
  std::optional<int64_t> batchSize = integerField(*root, "batch_size");
  std::optional<int64_t> encodingDim = integerField(*root, "encoding_dim");
  if (!trained || !hardware || !dtype || !batchSize || !encodingDim)
    return fail("\"trained\" (bool), \"hardware\", \"dtype\" (strings), "
                "\"batch_size\" and \"encoding_dim\" (integers) are required");
  info.trained = *trained;
  info.hardware = hardware->str();
  info.dtype = dtype->str();
  if (*batchSize <= 0 || *encodingDim <= 0)
    return fail(formatv("batch_size ({0}) and encoding_dim ({1}) must be "
                        "positive",
                        *batchSize, *encodingDim));
  if (*encodingDim > kMaxEncodingDim)
    return fail(formatv("encoding_dim must be at most {0}, got {1}",
                        kMaxEncodingDim, *encodingDim));
  info.batchSize = *batchSize;
  info.encodingDim = static_cast<unsigned>(*encodingDim);
  std::optional<unsigned> elementBytes = elementBytesOf(info.dtype);
  if (!elementBytes)
    return fail("unknown dtype '" + info.dtype +
                "' (expected f16, bf16, f32 or f64)");
  meta.elementBytes = *elementBytes;

  const json::Array *features = root->getArray("feature_order");
  if (!features)
    return fail("\"feature_order\" (a list of feature names) is required");
  if (features->size() != kNumFeatures)
    return fail(formatv("feature_order lists {0} features but NeuroShard "
                        "computes {1} (rows, dim, pooling_factor, "
                        "bin_0..bin_16)",
                        features->size(), kNumFeatures));
  for (unsigned i = 0; i < kNumFeatures; ++i) {
    std::optional<StringRef> name = (*features)[i].getAsString();
    std::string expected = expectedFeatureName(i);
    if (!name || *name != expected)
      return fail(formatv("feature {0} of feature_order is {1}, expected "
                          "'{2}'",
                          i, (*features)[i], expected));
  }

  const json::Value *devices = root->get("devices");
  if (devices && !devices->getAsNull()) {
    std::optional<int64_t> count = getInteger(*devices);
    if (!count || *count <= 0)
      return fail(formatv("\"devices\" must be a positive integer or null, "
                          "got {0}",
                          *devices));
    if (RuleViolation v = checkDeviceCount(*count))
      return fail("\"devices\": " + *v);
    info.devices = static_cast<unsigned>(*count);
  }
  // The nodes the comm models were measured on; without comm models
  // ("devices" null) there is nothing they describe.
  const json::Value *nodes = root->get("nodes");
  if (nodes && !nodes->getAsNull() && info.devices) {
    std::optional<int64_t> count = getInteger(*nodes);
    if (!count)
      return fail(
          formatv("\"nodes\" must be a positive integer, got {0}", *nodes));
    if (RuleViolation v = checkNodeCount(*count, *info.devices))
      return fail("\"nodes\": " + *v);
    info.nodes = static_cast<unsigned>(*count);
  }

  if (Error err = readHeldOut(*root, meta))
    return fail(toString(std::move(err)));
  if (Error err = readSelectionNoise(*root, meta))
    return fail(toString(std::move(err)));
  if (Error err = readBatchScaling(*root, meta))
    return fail(toString(std::move(err)));
  if (Error err = readHost(*root, meta))
    return fail(toString(std::move(err)));
  if (Error err = readTrainedRanges(*root, meta))
    return fail(toString(std::move(err)));
  if (Error err = readComputeModel(*root, meta))
    return fail(toString(std::move(err)));
  if (const json::Value *rowPieces = root->get("row_pieces")) {
    std::optional<bool> value = rowPieces->getAsBoolean();
    if (!value)
      return fail(
          formatv("\"row_pieces\" must be true or false, got {0}", *rowPieces));
    meta.rowPieces = *value;
  }
  return meta;
}

/// What readJSONFile's errors call a bundle's meta.json.
static constexpr StringLiteral kMetaRole = "metadata";

Expected<BundleMeta> readBundleMeta(StringRef bundleDir) {
  Expected<json::Value> document =
      readJSONFile(bundleFile(bundleDir, "meta.json"), kMetaRole);
  if (!document)
    return bundleError(bundleDir, toString(document.takeError()));
  return checkBundleMeta(bundleDir, *document);
}

Expected<BundleMeta> parseBundleMeta(StringRef bundleDir, StringRef text) {
  Expected<json::Value> document =
      parseJSONFile(text, bundleFile(bundleDir, "meta.json"), kMetaRole);
  if (!document)
    return bundleError(bundleDir, toString(document.takeError()));
  return checkBundleMeta(bundleDir, *document);
}

double batchScaleFactor(const BundleMeta &meta, int64_t batch) {
  double reference = double(meta.info.batchSize);
  if (!meta.batchScaling || meta.batchScaling->batchSizes.size() < 2)
    return double(batch) / reference;
  const BatchScaling &curve = *meta.batchScaling;
  size_t n = curve.batchSizes.size();
  double x = std::log(double(batch));
  // The segment [i, i + 1] that holds x, or the end segment nearest to it.
  size_t i = 0;
  while (i + 2 < n && x > std::log(double(curve.batchSizes[i + 1])))
    ++i;
  double x0 = std::log(double(curve.batchSizes[i]));
  double x1 = std::log(double(curve.batchSizes[i + 1]));
  double y0 = std::log(curve.ratios[i]), y1 = std::log(curve.ratios[i + 1]);
  return std::exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
}

} // namespace neural
} // namespace neuroshard
