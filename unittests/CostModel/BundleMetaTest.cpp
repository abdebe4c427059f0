//===- BundleMetaTest.cpp - Reading a bundle's meta.json ------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// parseBundleMeta needs no LibTorch, so these run in every build, the
// fuzzers' included. Each out-of-range case is a value that was once
// accepted and silently changed (BundleMetaFuzzer's seeds keep them).
//
//===----------------------------------------------------------------------===//

#include "BundleMeta.h"
#include "TestProblems.h"

#include "neuroshard/Support/FileIO.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::neural;
using namespace neuroshard::testing;

namespace {

/// A valid meta.json with comm models for 2 devices, `field` set to `value`
/// (or removed when `value` is absent).
std::string metaWith(StringRef field = "",
                     std::optional<json::Value> value = std::nullopt) {
  json::Array features{"rows", "dim", "pooling_factor"};
  for (int bin = 0; bin < 17; ++bin)
    features.push_back("bin_" + std::to_string(bin));
  json::Object meta{{"format", "neuroshard-cost-model-bundle"},
                    {"version", 1},
                    {"trained", true},
                    {"hardware", "AMD EPYC"},
                    {"batch_size", 1024},
                    {"dtype", "f32"},
                    {"feature_order", std::move(features)},
                    {"encoding_dim", 32},
                    {"devices", 2}};
  if (!field.empty()) {
    if (value)
      meta[field] = std::move(*value);
    else
      meta.erase(field);
  }
  std::string text;
  raw_string_ostream(text) << json::Value(std::move(meta));
  return text;
}

/// A valid meta.json with `field` written as `raw` JSON text (e.g. "4.0",
/// which json::Value would write as 4).
std::string metaWithRaw(StringRef field, StringRef raw) {
  std::string text = metaWith(field, "@raw@");
  size_t at = text.find("\"@raw@\"");
  return text.replace(at, 7, raw.str());
}

std::string parseError(const std::string &text) {
  Expected<BundleMeta> meta = parseBundleMeta("b", text);
  return errorMessage(meta);
}

const char *const kPrefix = "neural cost model bundle 'b': b/meta.json: ";

TEST(BundleMetaTest, ReadsTheFields) {
  Expected<BundleMeta> meta = parseBundleMeta("b", metaWith());
  ASSERT_TRUE(static_cast<bool>(meta)) << errorMessage(meta);
  EXPECT_EQ(meta->info.batchSize, 1024);
  EXPECT_EQ(meta->info.encodingDim, 32u);
  EXPECT_EQ(meta->info.devices, 2u);
  EXPECT_EQ(meta->elementBytes, 4u);
  EXPECT_EQ(meta->info.hardware, "AMD EPYC");

  Expected<BundleMeta> noComm =
      parseBundleMeta("b", metaWith("devices", nullptr));
  ASSERT_TRUE(static_cast<bool>(noComm)) << errorMessage(noComm);
  EXPECT_FALSE(noComm->info.devices.has_value());
}

TEST(BundleMetaTest, RefusesDeviceCountsOutOfRange) {
  // 2^32 + 2 used to wrap to 2 devices.
  EXPECT_EQ(parseError(metaWith("devices", int64_t(4294967298))),
            std::string(kPrefix) +
                "\"devices\": the device count must be between 1 and 65536, "
                "got 4294967298");
  EXPECT_EQ(parseError(metaWith("devices", 0)),
            std::string(kPrefix) +
                "\"devices\" must be a positive integer or null, got 0");
  EXPECT_EQ(parseError(metaWithRaw("devices", "2.0")),
            std::string(kPrefix) +
                "\"devices\" must be a positive integer or null, got 2");
}

TEST(BundleMetaTest, RefusesEncodingWidthsOutOfRange) {
  // 2^32 + 32 used to be truncated to 32.
  EXPECT_EQ(parseError(metaWith("encoding_dim", int64_t(4294967328))),
            std::string(kPrefix) +
                "encoding_dim must be at most 4096, got 4294967328");
  EXPECT_EQ(parseError(metaWith("encoding_dim", -1)),
            std::string(kPrefix) +
                "batch_size (1024) and encoding_dim (-1) must be positive");
}

TEST(BundleMetaTest, IntegerFieldsMustBeIntegers) {
  std::string required =
      std::string(kPrefix) +
      "\"trained\" (bool), \"hardware\", \"dtype\" (strings), \"batch_size\" "
      "and \"encoding_dim\" (integers) are required";
  EXPECT_EQ(parseError(metaWithRaw("batch_size", "1024.0")), required);
  EXPECT_EQ(parseError(metaWith("encoding_dim", 32.5)), required);
  EXPECT_EQ(parseError(metaWith("batch_size")), required);
  EXPECT_NE(parseError(metaWithRaw("version", "1e0"))
                .find("not a NeuroShard "
                      "cost-model bundle"),
            std::string::npos);
}

TEST(BundleMetaTest, RefusesDocumentsThatAreNotBundles) {
  EXPECT_EQ(parseError("[1, 2]"),
            std::string(kPrefix) + "expected a JSON object");
  EXPECT_EQ(parseError(std::string(300, '[')),
            std::string(kPrefix) + "malformed JSON: JSON nests deeper than "
                                   "256 levels (line 1, column 257)");
  EXPECT_NE(parseError(metaWith("version", 2))
                .find("version 2 is not "
                      "supported"),
            std::string::npos);
}

} // namespace
