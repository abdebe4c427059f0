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
  std::string path = bundleFile(bundleDir, "meta.json");
  auto fail = [&](const Twine &message) {
    return bundleError(bundleDir, path + ": " + message);
  };
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail("cannot read: " + buffer.getError().message());
  Expected<json::Value> parsed = parseJSON((*buffer)->getBuffer());
  if (!parsed)
    return fail("malformed JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fail("expected a JSON object");

  std::optional<StringRef> format = root->getString("format");
  std::optional<int64_t> version = root->getInteger("version");
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
  std::optional<int64_t> batchSize = root->getInteger("batch_size");
  std::optional<int64_t> encodingDim = root->getInteger("encoding_dim");
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
    std::optional<int64_t> count = devices->getAsInteger();
    if (!count || *count <= 0)
      return fail(formatv("\"devices\" must be a positive integer or null, "
                          "got {0}",
                          *devices));
    info.devices = static_cast<unsigned>(*count);
  }

  if (const json::Object *heldOut = root->getObject("held_out"))
    meta.computeMape = heldOut->getNumber("compute_mape");
  return meta;
}

} // namespace neural
} // namespace neuroshard
