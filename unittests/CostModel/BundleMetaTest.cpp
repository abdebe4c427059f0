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

#include <cmath>

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

TEST(BundleMetaTest, ReadsTheNodesOfTheCommModels) {
  Expected<BundleMeta> meta = parseBundleMeta("b", metaWith());
  ASSERT_TRUE(static_cast<bool>(meta)) << errorMessage(meta);
  EXPECT_EQ(meta->info.nodes, 1u);
  meta = parseBundleMeta("b", metaWith("nodes", 2));
  ASSERT_TRUE(static_cast<bool>(meta)) << errorMessage(meta);
  EXPECT_EQ(meta->info.nodes, 2u);
  meta = parseBundleMeta("b", metaWith("nodes", nullptr));
  ASSERT_TRUE(static_cast<bool>(meta)) << errorMessage(meta);
  EXPECT_EQ(meta->info.nodes, 1u);
  EXPECT_EQ(parseError(metaWith("nodes", 3)),
            std::string(kPrefix) +
                "\"nodes\": 2 devices do not split into 3 nodes of equal "
                "size");
  EXPECT_EQ(parseError(metaWith("nodes", "two")),
            std::string(kPrefix) +
                "\"nodes\" must be a positive integer, got \"two\"");
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
            "neural cost model bundle 'b': metadata 'b/meta.json': invalid "
            "JSON: JSON nests deeper than 256 levels (line 1, column 257)");
  EXPECT_NE(parseError(metaWith("version", 2))
                .find("version 2 is not "
                      "supported"),
            std::string::npos);
}

json::Value curve(std::initializer_list<json::Value> sizes,
                  std::initializer_list<json::Value> ratios) {
  return json::Object{{"reference_batch", 1024},
                      {"batch_sizes", json::Array(sizes)},
                      {"ratios", json::Array(ratios)}};
}

TEST(BundleMetaTest, BatchScalingFollowsTheMeasuredCurve) {
  Expected<BundleMeta> meta = parseBundleMeta(
      "b", metaWith("batch_scaling",
                    curve({256, 1024, 4096, 65536}, {0.5, 1.0, 5.0, 100.0})));
  ASSERT_TRUE(static_cast<bool>(meta)) << errorMessage(meta);
  // The measured points, exactly.
  EXPECT_DOUBLE_EQ(batchScaleFactor(*meta, 1024), 1.0);
  EXPECT_DOUBLE_EQ(batchScaleFactor(*meta, 256), 0.5);
  EXPECT_DOUBLE_EQ(batchScaleFactor(*meta, 4096), 5.0);
  EXPECT_DOUBLE_EQ(batchScaleFactor(*meta, 65536), 100.0);
  // Between points, linear in (log batch, log ratio): 2048 is half-way
  // from 1024 to 4096, so sqrt(5).
  EXPECT_NEAR(batchScaleFactor(*meta, 2048), std::sqrt(5.0), 1e-12);
  // Past the ends, along the end segments: from 256 to 1024 the ratio
  // doubles per factor 4, so 64 bags give 0.25; 4096 to 65536 is 20x per
  // 16x, so 2^20 bags give 2000.
  EXPECT_NEAR(batchScaleFactor(*meta, 64), 0.25, 1e-12);
  EXPECT_NEAR(batchScaleFactor(*meta, 1 << 20), 2000.0, 1e-9);

  // Without a curve, costs scale in proportion to the batch.
  Expected<BundleMeta> plain = parseBundleMeta("b", metaWith());
  ASSERT_TRUE(static_cast<bool>(plain));
  EXPECT_DOUBLE_EQ(batchScaleFactor(*plain, 65536), 64.0);
}

TEST(BundleMetaTest, RefusesCurvesThatCannotBeRight) {
  EXPECT_EQ(parseError(metaWith("batch_scaling",
                                curve({256, 1024, 4096}, {0.5, 1.0, 0.9}))),
            std::string(kPrefix) +
                "\"batch_scaling\": batch sizes must increase and ratios "
                "must not decrease, got 0.9 at 4096 after 1 at 1024");
  EXPECT_EQ(
      parseError(metaWith("batch_scaling", curve({256, 4096}, {0.5, 2.0}))),
      std::string(kPrefix) +
          "\"batch_scaling\" must include the bundle's batch_size 1024");
  EXPECT_EQ(
      parseError(metaWith("batch_scaling", curve({1024, 4096}, {1.5, 2.0}))),
      std::string(kPrefix) +
          "\"batch_scaling\": the ratio at the bundle's batch size 1024 "
          "must be 1, got 1.5");
  EXPECT_NE(
      parseError(metaWith("batch_scaling", curve({1024, 4096}, {1.0, -2.0})))
          .find("ratios positive numbers"),
      std::string::npos);
  EXPECT_NE(parseError(metaWith("batch_scaling", curve({1024, 4096}, {1.0})))
                .find("two lists of 1 to 64 numbers of the same length"),
            std::string::npos);
}

/// A "held_out" object with the compute MAPE and the given log figures.
json::Value heldOut(std::optional<json::Value> mean,
                    std::optional<json::Value> sd) {
  json::Object held{{"compute_mape", 0.12}};
  if (mean)
    held["compute_log_error_mean"] = std::move(*mean);
  if (sd)
    held["compute_log_error_sd"] = std::move(*sd);
  return json::Value(std::move(held));
}

TEST(BundleMetaTest, ReadsTheHeldOutLogError) {
  Expected<BundleMeta> meta =
      parseBundleMeta("b", metaWith("held_out", heldOut(-0.03, 0.15)));
  ASSERT_TRUE(static_cast<bool>(meta)) << errorMessage(meta);
  EXPECT_DOUBLE_EQ(*meta->computeMape, 0.12);
  EXPECT_DOUBLE_EQ(*meta->computeLogErrorMean, -0.03);
  EXPECT_DOUBLE_EQ(*meta->computeLogErrorSd, 0.15);

  // Bundles calibrated before the log figures have the MAPE alone.
  Expected<BundleMeta> older = parseBundleMeta(
      "b", metaWith("held_out", heldOut(std::nullopt, std::nullopt)));
  ASSERT_TRUE(static_cast<bool>(older)) << errorMessage(older);
  EXPECT_DOUBLE_EQ(*older->computeMape, 0.12);
  EXPECT_FALSE(older->computeLogErrorMean.has_value());
  EXPECT_FALSE(older->computeLogErrorSd.has_value());
}

TEST(BundleMetaTest, RefusesLogErrorsThatCannotBeRight) {
  EXPECT_EQ(parseError(metaWith("held_out", heldOut(0.0, std::nullopt))),
            std::string(kPrefix) +
                "\"held_out\": \"compute_log_error_mean\" and "
                "\"compute_log_error_sd\" come together, but only the mean "
                "is given");
  EXPECT_EQ(parseError(metaWith("held_out", heldOut(std::nullopt, 0.1))),
            std::string(kPrefix) +
                "\"held_out\": \"compute_log_error_mean\" and "
                "\"compute_log_error_sd\" come together, but only the "
                "deviation is given");
  EXPECT_EQ(parseError(metaWith("held_out", heldOut(0.0, -0.1))),
            std::string(kPrefix) +
                "\"held_out\": \"compute_log_error_sd\" must be a number "
                "from 0 to 2, got -0.1");
  EXPECT_EQ(parseError(metaWith("held_out", heldOut(3.5, 0.1))),
            std::string(kPrefix) +
                "\"held_out\": \"compute_log_error_mean\" must be a number "
                "from -2 to 2, got 3.5");
  EXPECT_EQ(parseError(metaWith("held_out", heldOut("x", 0.1))),
            std::string(kPrefix) +
                "\"held_out\": \"compute_log_error_mean\" must be a number "
                "from -2 to 2, got \"x\"");
}

TEST(BundleMetaTest, ReadsTheSelectionNoise) {
  Expected<BundleMeta> meta = parseBundleMeta(
      "b", metaWith("selection_noise", json::Object{{"log_sd", 0.19},
                                                    {"comparisons", 31},
                                                    {"views", 3}}));
  ASSERT_TRUE(static_cast<bool>(meta)) << errorMessage(meta);
  ASSERT_TRUE(meta->selectionNoise.has_value());
  EXPECT_DOUBLE_EQ(meta->selectionNoise->logSd, 0.19);
  EXPECT_EQ(meta->selectionNoise->comparisons, 31u);

  // Bundles calibrated before it was measured have none.
  Expected<BundleMeta> older =
      parseBundleMeta("b", metaWith("selection_noise", nullptr));
  ASSERT_TRUE(static_cast<bool>(older)) << errorMessage(older);
  EXPECT_FALSE(older->selectionNoise.has_value());
}

TEST(BundleMetaTest, RefusesSelectionNoiseThatCannotBeRight) {
  auto noise = [](json::Value sd, json::Value comparisons) {
    return metaWith("selection_noise",
                    json::Object{{"log_sd", std::move(sd)},
                                 {"comparisons", std::move(comparisons)}});
  };
  EXPECT_EQ(parseError(metaWith("selection_noise", 0.2)),
            std::string(kPrefix) + "\"selection_noise\" must be an object");
  EXPECT_EQ(parseError(noise(-0.1, 10)),
            std::string(kPrefix) +
                "\"selection_noise\": \"log_sd\" must be a number from 0 "
                "to 2, got -0.1");
  EXPECT_EQ(parseError(noise("x", 10)),
            std::string(kPrefix) +
                "\"selection_noise\": \"log_sd\" must be a number from 0 "
                "to 2, got \"x\"");
  EXPECT_EQ(parseError(noise(0.1, 0)),
            std::string(kPrefix) +
                "\"selection_noise\": \"comparisons\" must be an integer "
                "from 1 to 1000000, got 0");
  EXPECT_EQ(parseError(noise(0.1, 2.5)),
            std::string(kPrefix) +
                "\"selection_noise\": \"comparisons\" must be an integer "
                "from 1 to 1000000, got 2.5");
  EXPECT_EQ(
      parseError(metaWith("selection_noise", json::Object{{"log_sd", 0.1}})),
      std::string(kPrefix) +
          "\"selection_noise\": \"comparisons\" must be an integer "
          "from 1 to 1000000, got none");
}

TEST(BundleMetaTest, ReadsHostAndTrainedRanges) {
  json::Object host{{"cpu_model", "AMD EPYC"},
                    {"cpu_family", 26},
                    {"isa", json::Array{"avx512f", "avx2"}},
                    {"caches_kb", json::Object{{"L3", 32768}, {"L2", 1024}}}};
  json::Object ranges{{"rows", json::Array{101, 9958481}},
                      {"dim", json::Array{4, 128}},
                      {"pooling_factor", json::Array{1.0, 95.16}}};
  std::string text = metaWith("host", std::move(host));
  Expected<json::Value> value = json::parse(text);
  ASSERT_TRUE(static_cast<bool>(value));
  (*value->getAsObject())["trained_ranges"] = std::move(ranges);
  std::string both;
  raw_string_ostream(both) << *value;
  Expected<BundleMeta> meta = parseBundleMeta("b", both);
  ASSERT_TRUE(static_cast<bool>(meta)) << errorMessage(meta);
  EXPECT_EQ(meta->hostCPUModel, "AMD EPYC");
  EXPECT_EQ(meta->hostCPUFamily, 26);
  EXPECT_FALSE(meta->hostCPUModelNumber.has_value());
  EXPECT_EQ(meta->hostISA, (std::vector<std::string>{"avx2", "avx512f"}));
  ASSERT_EQ(meta->hostCachesKB.size(), 2u);
  EXPECT_EQ(meta->hostCachesKB[0].first, "L2");
  EXPECT_EQ(meta->hostCachesKB[1].second, 32768);
  ASSERT_TRUE(meta->rowsRange.has_value());
  EXPECT_TRUE(meta->rowsRange->contains(6713));
  EXPECT_FALSE(meta->rowsRange->contains(1e8));
  EXPECT_FALSE(meta->dimRange->contains(256));
  EXPECT_TRUE(meta->poolingRange->contains(95.16));
  EXPECT_FALSE(meta->hostGPUModel.has_value());

  // A GPU's bundle names the GPU and its L2 instead of a CPU.
  Expected<BundleMeta> gpu = parseBundleMeta(
      "b", metaWith("host", json::Object{{"gpu_model", "NVIDIA H200"},
                                         {"l2_kb", 61440}}));
  ASSERT_TRUE(static_cast<bool>(gpu)) << errorMessage(gpu);
  EXPECT_EQ(gpu->hostGPUModel, "NVIDIA H200");
  EXPECT_EQ(gpu->hostGPUL2KB, 61440);
  EXPECT_FALSE(gpu->hostCPUModel.has_value());

  EXPECT_EQ(parseError(metaWith(
                "host", json::Object{{"cpu_model", "x"}, {"cpu_family", -1}})),
            std::string(kPrefix) + "\"host\": \"cpu_family\" must be a "
                                   "non-negative integer, got -1");
  EXPECT_EQ(parseError(
                metaWith("host", json::Object{{"cpu_model", "x"},
                                              {"isa", json::Array{"avx", 2}}})),
            std::string(kPrefix) + "\"host\": \"isa\" must be a list of "
                                   "instruction-set names, got [\"avx\",2]");
  EXPECT_EQ(parseError(metaWith("host", json::Object{{"cpu", "x"}})),
            std::string(kPrefix) +
                "\"host\" must be an object with a \"cpu_model\" string, "
                "or a \"gpu_model\" string and \"l2_kb\"");
  EXPECT_EQ(parseError(metaWith(
                "host", json::Object{{"gpu_model", "H"}, {"l2_kb", 0}})),
            std::string(kPrefix) + "\"host\": GPU 'H' needs a positive "
                                   "integer \"l2_kb\" (its L2 in KiB)");
  EXPECT_EQ(parseError(metaWith("trained_ranges",
                                json::Object{{"rows", json::Array{10, 1}}})),
            std::string(kPrefix) +
                "\"trained_ranges\": \"rows\" must be [low, high] with low "
                "<= high, got [10,1]");
}

} // namespace
