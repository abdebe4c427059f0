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
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

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

Expected<BundleMeta> readBundleMeta(StringRef bundleDir) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(bundleFile(bundleDir, "meta.json"),
                            /*IsText=*/true);
  if (!buffer)
    return bundleError(bundleDir,
                       bundleFile(bundleDir, "meta.json") +
                           ": cannot read: " + buffer.getError().message());
  return parseBundleMeta(bundleDir, (*buffer)->getBuffer());
}

/// An integer field of `root`, written as an integer (4.0 is not one).
static std::optional<int64_t> integerField(const json::Object &root,
                                           StringRef key) {
  const json::Value *value = root.get(key);
  return value ? getInteger(*value) : std::nullopt;
}

Expected<BundleMeta> parseBundleMeta(StringRef bundleDir, StringRef text) {
  std::string path = bundleFile(bundleDir, "meta.json");
  auto fail = [&](const Twine &message) {
    return bundleError(bundleDir, path + ": " + message);
  };
  Expected<json::Value> parsed = parseJSON(text);
  if (!parsed)
    return fail("malformed JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
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

  if (const json::Object *heldOut = root->getObject("held_out"))
    meta.computeMape = heldOut->getNumber("compute_mape");
  return meta;
}

} // namespace neural
} // namespace neuroshard
