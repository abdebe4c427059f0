//===- InputGeneratorTest.cpp - Deterministic lookup inputs ---------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/InputGenerator.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>

using namespace neuroshard::inputs;

namespace {

TableStats skewedTable() {
  TableStats table;
  table.name = "user";
  table.rows = 200000;
  table.dim = 64;
  table.poolingFactor = 12.0;
  table.accessHist = {0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01, 0.02, 0,
                      0,    0,    0,    0,    0,    0,    0,    0};
  return table;
}

TEST(InputGenerator, IsDeterministicAndStreamsDiffer) {
  TableStats table = skewedTable();
  LookupInputs a = generateLookup(table, 512, 7, 0);
  LookupInputs b = generateLookup(table, 512, 7, 0);
  LookupInputs c = generateLookup(table, 512, 7, 1);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_NE(a.indices, c.indices);
}

TEST(InputGenerator, OffsetsAreWellFormedAndIndicesInRange) {
  TableStats table = skewedTable();
  LookupInputs in = generateLookup(table, 1024, 3, 0, /*rowLimit=*/5000);
  ASSERT_EQ(in.offsets.size(), 1025u);
  EXPECT_EQ(in.offsets.front(), 0);
  EXPECT_EQ(in.offsets.back(), static_cast<int64_t>(in.indices.size()));
  for (size_t b = 0; b + 1 < in.offsets.size(); ++b) {
    EXPECT_LE(in.offsets[b], in.offsets[b + 1]);
  }
  for (int64_t index : in.indices) {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, 5000);
  }
  // Mean bag length follows the pooling factor.
  double mean = double(in.indices.size()) / 1024.0;
  EXPECT_NEAR(mean, 12.0, 0.6);
}

TEST(InputGenerator, PoissonBagsIncludeEmptyBagsForSmallPooling) {
  TableStats table = skewedTable();
  table.poolingFactor = 1.0;
  LookupInputs in = generateLookup(table, 1024, 3, 0);
  int empty = 0;
  for (size_t b = 0; b + 1 < in.offsets.size(); ++b)
    empty += in.offsets[b] == in.offsets[b + 1];
  // P(0) = e^-1 ~ 0.37 of 1024 bags.
  EXPECT_GT(empty, 300);
  EXPECT_LT(empty, 460);
}

TEST(InputGenerator, HistogramOfTheStreamFollowsTheTable) {
  TableStats table = skewedTable();
  LookupInputs in = generateLookup(table, 4096, 11, 0);
  std::array<double, neuroshard::kNumAccessBins> hist =
      accessHistogram(in.indices);
  double sum = 0.0;
  for (unsigned j = 0; j < neuroshard::kNumAccessBins; ++j) {
    sum += hist[j];
    EXPECT_NEAR(hist[j], table.accessHist[j], 0.03) << "bin " << j;
  }
  EXPECT_NEAR(sum, 1.0, 1e-9);
}

// The assumption a row piece is priced by (pieceSpec, docs/cost-model.md):
// the rows of a table are in no order of how often they are hit, so a
// contiguous block of a fraction f of them receives a fraction f of the
// lookups, with the table's histogram. The generator scatters its hot rows
// with a random permutation, so the inputs every tool generates keep it on
// average; a batch that touches many distinct rows, as here, keeps it in
// every block (a few very hot rows would make the blocks' shares lumpy).
TEST(InputGenerator, RowBlocksReceiveTheirShareWithTheTablesHistogram) {
  TableStats table = skewedTable();
  LookupInputs in = generateLookup(table, 4096, 5, 0);
  std::array<double, neuroshard::kNumAccessBins> whole =
      accessHistogram(in.indices);
  for (int64_t pieces : {2, 3, 7}) {
    for (int64_t p = 0; p < pieces; ++p) {
      int64_t first = table.rows * p / pieces;
      int64_t end = table.rows * (p + 1) / pieces;
      LookupInputs block = rowBlockInputs(in, first, end);
      double share = double(end - first) / double(table.rows);
      EXPECT_NEAR(double(block.indices.size()) / double(in.indices.size()),
                  share, 0.08 * share)
          << "piece " << p << " of " << pieces;
      std::array<double, neuroshard::kNumAccessBins> hist =
          accessHistogram(block.indices);
      for (unsigned j = 0; j < neuroshard::kNumAccessBins; ++j)
        EXPECT_NEAR(hist[j], whole[j], 0.03)
            << "bin " << j << " of piece " << p << " of " << pieces;
    }
  }
}

// A batch whose lookups fall on a few very hot rows (here about five rows
// hit 513 to 1024 times each) leaves the blocks' shares lumpy: whichever
// block holds a hot row receives its every hit.
TEST(InputGenerator, FewHotRowsMakeRowBlocksLumpy) {
  TableStats table = skewedTable();
  table.poolingFactor = 4.0;
  table.accessHist.fill(0.0);
  table.accessHist[10] = 1.0;
  LookupInputs in = generateLookup(table, 1024, 5, 0);
  double worst = 0.0;
  for (int64_t p = 0; p < 4; ++p) {
    LookupInputs block =
        rowBlockInputs(in, table.rows * p / 4, table.rows * (p + 1) / 4);
    double share =
        double(block.indices.size()) / double(in.indices.size()) / 0.25;
    worst = std::max(worst, std::abs(share - 1.0));
  }
  EXPECT_GT(worst, 0.5);
}

TEST(InputGenerator, KeptRowsKeepThePiecesShares) {
  EXPECT_EQ(keptRow(250, 1000, 1000), 250);
  EXPECT_EQ(keptRow(250, 100, 1000), 25);
  EXPECT_EQ(keptRow(1000, 100, 1000), 100);
  EXPECT_EQ(keptRow(333, 100, 1000), 33);
  // No overflow for rows near the largest table.
  int64_t huge = int64_t(5) << 40;
  EXPECT_EQ(keptRow(huge / 2, 1 << 20, huge), int64_t(1) << 19);
}

TEST(InputGenerator, UnusedTableHasOnlyEmptyBags) {
  TableStats table = skewedTable();
  table.accessHist.fill(0.0);
  LookupInputs in = generateLookup(table, 64, 1, 0);
  EXPECT_TRUE(in.indices.empty());
  EXPECT_EQ(in.offsets.back(), 0);
}

TEST(InputGenerator, AccessHistogramBins) {
  // Row 1 hit once (bin 0), row 2 twice (bin 1), row 3 three times (bin 2),
  // row 4 five times (bin 3).
  std::vector<int64_t> indices = {1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4};
  std::array<double, neuroshard::kNumAccessBins> hist =
      accessHistogram(indices);
  EXPECT_DOUBLE_EQ(hist[0], 0.25);
  EXPECT_DOUBLE_EQ(hist[1], 0.25);
  EXPECT_DOUBLE_EQ(hist[2], 0.25);
  EXPECT_DOUBLE_EQ(hist[3], 0.25);
}

TEST(InputGenerator, ZipfStreamsAreDeterministicAndSkewed) {
  std::vector<int64_t> a = zipfIndexStream(1000, 1.2, 5000, 4);
  ASSERT_EQ(a.size(), 5000u);
  EXPECT_EQ(a, zipfIndexStream(1000, 1.2, 5000, 4));
  EXPECT_NE(a, zipfIndexStream(1000, 1.2, 5000, 5));
  for (int64_t index : a) {
    EXPECT_GE(index, 0);
    EXPECT_LT(index, 1000);
  }
  // The table pool's streams are keyed by these values: pin a few.
  std::vector<int64_t> pinned = zipfIndexStream(5000, 1.3, 4, 9);
  EXPECT_EQ(pinned, (std::vector<int64_t>{1635, 1731, 390, 86}));
  // More skew, fewer distinct rows; skew 1 is the logarithmic case.
  auto distinct = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return std::unique(v.begin(), v.end()) - v.begin();
  };
  EXPECT_LT(distinct(zipfIndexStream(100000, 2.0, 20000, 1)) * 4,
            distinct(zipfIndexStream(100000, 0.0, 20000, 1)));
  EXPECT_EQ(zipfIndexStream(7, 1.0, 100, 2).size(), 100u);
  EXPECT_TRUE(zipfIndexStream(7, 1.0, 0, 2).empty());
}

TEST(InputGenerator, WeightsAreColumnKeyedSoShardsAgree) {
  uint64_t key = hashString("user");
  std::vector<float> whole(10 * 8), right(10 * 4);
  fillWeights(key, 10, 0, 8, whole.data(), 8);
  fillWeights(key, 10, 4, 4, right.data(), 4);
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(whole[r * 8 + 4 + c], right[r * 4 + c]);
  for (float v : whole) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  EXPECT_NE(weightValue(key, 0, 0), weightValue(key, 0, 1));
  EXPECT_NE(gradientValue(key, 0, 0), weightValue(key, 0, 0));
}

} // namespace
