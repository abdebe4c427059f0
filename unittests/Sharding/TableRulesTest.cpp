//===- TableRulesTest.cpp - The rules tables and topologies obey ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/TableRules.h"
#include "neuroshard/Sharding/Problem.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace neuroshard;

namespace {

std::string violation(const RuleViolation &v) { return v ? *v : ""; }

std::vector<double> histogram(double first, double second) {
  std::vector<double> bins(kNumAccessBins, 0.0);
  bins[0] = first;
  bins[1] = second;
  return bins;
}

TEST(TableRulesTest, ElementTypes) {
  EXPECT_EQ(elementTypeBytes("f32"), 4u);
  EXPECT_EQ(elementTypeBytes("f16"), 2u);
  EXPECT_EQ(elementTypeBytes("bf16"), 2u);
  EXPECT_EQ(elementTypeBytes("f64"), std::nullopt);
  EXPECT_EQ(violation(checkElementType("bf16")), "");
  EXPECT_EQ(violation(checkElementType("i8")),
            "'dtype' must be one of f32, f16, bf16, got 'i8'");
}

TEST(TableRulesTest, RowsAndDim) {
  EXPECT_EQ(violation(checkRows(1)), "");
  EXPECT_EQ(violation(checkRows(0)), "'rows' must be positive, got 0");
  EXPECT_EQ(violation(checkRows(-5)), "'rows' must be positive, got -5");
  EXPECT_EQ(violation(checkDim(4)), "");
  EXPECT_EQ(violation(checkDim(256)), "");
  for (int64_t dim : {0, -4, 3, 6, 130})
    EXPECT_EQ(violation(checkDim(dim)),
              "'dim' must be a positive multiple of 4, got " +
                  std::to_string(dim));
}

TEST(TableRulesTest, TableBytesDoNotOverflow) {
  EXPECT_EQ(violation(checkTableBytes(1 << 20, 128, 4)), "");
  // 2^16 GB exactly is allowed, one more row is not.
  int64_t rows = (int64_t(1) << 46) / 128 / 4;
  EXPECT_EQ(violation(checkTableBytes(rows, 128, 4)), "");
  EXPECT_NE(violation(checkTableBytes(rows + 1, 128, 4)), "");
  // rows * dim * 4 wraps to 0 in 64 bits; the rule still sees the size.
  EXPECT_EQ(violation(checkTableBytes(int64_t(1) << 62, int64_t(1) << 60, 4)),
            "needs 1.98e+28 GB, more than the 65536 GB a table may have");
}

TEST(TableRulesTest, PoolingFactor) {
  EXPECT_EQ(violation(checkPoolingFactor(0.0)), "");
  EXPECT_EQ(violation(checkPoolingFactor(15.8)), "");
  EXPECT_EQ(violation(checkPoolingFactor(-1.0)),
            "'pooling_factor' must be a finite number >= 0, got -1");
  EXPECT_EQ(violation(checkPoolingFactor(std::nan(""))),
            "'pooling_factor' must be a finite number >= 0, got nan");
  EXPECT_EQ(violation(checkPoolingFactor(INFINITY)),
            "'pooling_factor' must be a finite number >= 0, got inf");
  EXPECT_EQ(violation(checkPoolingFactor(kMaxPoolingFactor)), "");
  EXPECT_EQ(violation(checkPoolingFactor(1e305)),
            "'pooling_factor' must be at most 1e+06, got 1e+305");
}

TEST(TableRulesTest, AccessHistogram) {
  EXPECT_EQ(violation(checkAccessHistogram(histogram(0.5, 0.5))), "");
  EXPECT_EQ(violation(checkAccessHistogram(histogram(0.0, 0.0))), "")
      << "all zero: a table never hit";
  // Within the tolerance of a histogram written with two decimals.
  EXPECT_EQ(violation(checkAccessHistogram(histogram(0.5, 0.505))), "");
  EXPECT_EQ(violation(checkAccessHistogram(histogram(0.5, 0.2))),
            "'access_hist' must sum to 1 (or be all zero for a table never "
            "hit), got 0.7");
  EXPECT_EQ(violation(checkAccessHistogram(histogram(1.5, -0.5))),
            "'access_hist' bin 1 must be a finite number >= 0, got -0.5");
  EXPECT_EQ(violation(checkAccessHistogram(histogram(std::nan(""), 1.0))),
            "'access_hist' bin 0 must be a finite number >= 0, got nan");
  EXPECT_EQ(violation(checkAccessHistogram({1.0})),
            "'access_hist' must have 17 bins, got 1");
}

TEST(TableRulesTest, DevicesAndCapacities) {
  EXPECT_EQ(violation(checkPinnedDevice(3, 4)), "");
  EXPECT_EQ(violation(checkPinnedDevice(4, 4)),
            "'pinned_device' is 4 but there are only 4 devices");
  EXPECT_EQ(violation(checkPinnedDevice(int64_t(1) << 32, 4)),
            "'pinned_device' is 4294967296 but there are only 4 devices");
  EXPECT_EQ(violation(checkPinnedDevice(1, 1)),
            "'pinned_device' is 1 but there is only 1 device");
  EXPECT_EQ(violation(checkPinnedDevice(-1, 4)),
            "'pinned_device' must be non-negative, got -1");
  EXPECT_EQ(violation(checkDeviceCount(1)), "");
  EXPECT_EQ(violation(checkDeviceCount(kMaxDevices)), "");
  EXPECT_EQ(violation(checkDeviceCount(kMaxDevices + 1)),
            "the device count must be between 1 and 65536, got 65537");
  EXPECT_EQ(violation(checkDeviceCount(0)),
            "the device count must be between 1 and 65536, got 0");
  EXPECT_EQ(violation(checkCapacityGB(16.0)), "");
  EXPECT_EQ(violation(checkCapacityGB(0.0)),
            "memory capacity must be a positive number of GB up to 1048576, "
            "got 0");
  EXPECT_EQ(violation(checkCapacityGB(std::nan(""))),
            "memory capacity must be a positive number of GB up to 1048576, "
            "got nan");
  EXPECT_NE(violation(checkCapacityGB(2e6)), "");
}

TEST(TableRulesTest, WholeTableChecksEveryRuleInOrder) {
  TableSpec table;
  table.name = "t";
  table.rows = 100;
  table.dim = 8;
  table.accessHist[0] = 1.0;
  EXPECT_EQ(violation(checkTable(table, 2)), "");
  table.pinnedDevice = 2;
  EXPECT_EQ(violation(checkTable(table, 2)),
            "'pinned_device' is 2 but there are only 2 devices");
  table.poolingFactor = -3;
  EXPECT_EQ(violation(checkTable(table, 2)),
            "'pooling_factor' must be a finite number >= 0, got -3");
  table.dim = 6;
  EXPECT_EQ(violation(checkTable(table, 2)),
            "'dim' must be a positive multiple of 4, got 6");
  table.elementBytes = 0;
  EXPECT_EQ(violation(checkTable(table, 2)),
            "the element size must be positive, got 0");
}

std::vector<double> hotHistogram(unsigned bin) {
  std::vector<double> bins(kNumAccessBins, 0.0);
  bins[bin] = 1.0;
  return bins;
}

TEST(TableRulesTest, HistogramMustFitTheBatch) {
  // Rows hit more than 2^15 times need more than 1024 x 28.5 lookups.
  std::vector<double> hot = histogram(0.99, 0.0);
  hot[16] = 0.01;
  EXPECT_EQ(violation(checkAccessHistogramForBatch(hot, 6713, 28.5, 1024)),
            "'access_hist' bin 16 (rows hit more than 32768 times) is 0.01, "
            "but a batch of 1024 bags with pooling factor 28.5 makes only "
            "29184 lookups");
  EXPECT_EQ(violation(checkAccessHistogramForBatch(hot, 6713, 28.5, 65536)),
            "");
  // Bin 3 holds rows hit 5 to 8 times.
  EXPECT_EQ(violation(checkAccessHistogramForBatch(hotHistogram(3), 10, 1, 4)),
            "'access_hist' bin 3 (rows hit 5 to 8 times) is 1, but a batch "
            "of 4 bags with pooling factor 1 makes only 4 lookups");
  EXPECT_EQ(violation(checkAccessHistogramForBatch(hotHistogram(3), 10, 1, 5)),
            "");
  // 100 rows, each hit at most twice, take at most 200 lookups.
  std::vector<double> cold = histogram(0.5, 0.5);
  EXPECT_EQ(violation(checkAccessHistogramForBatch(cold, 100, 16, 1024)),
            "'access_hist' lets the table's 100 rows take at most 150 lookups "
            "(at most 1.5 hits per distinct row), but a batch of 1024 bags "
            "with pooling factor 16 makes 16384; a histogram describes one "
            "batch of the task's batch size");
  EXPECT_EQ(violation(checkAccessHistogramForBatch(cold, 100, 1.5, 100)), "");
  // Within the tolerance of a rounded histogram.
  EXPECT_EQ(violation(checkAccessHistogramForBatch(cold, 100, 1.51, 100)), "");
  // A table never hit has no lookups.
  std::vector<double> zero(kNumAccessBins, 0.0);
  EXPECT_EQ(violation(checkAccessHistogramForBatch(zero, 10, 0.0, 1024)), "");
  EXPECT_EQ(violation(checkAccessHistogramForBatch(zero, 10, 2.0, 3)),
            "'access_hist' is all zero (a table never hit), but a batch of 3 "
            "bags with pooling factor 2 makes 6 lookups");
}

TEST(TableRulesTest, ProblemsCheckHistogramsAgainstTheirBatch) {
  TableSpec table;
  table.name = "cat";
  table.rows = 1000;
  table.dim = 16;
  table.poolingFactor = 1.0;
  table.accessHist[0] = 0.5;
  table.accessHist[1] = 0.5;
  Topology topology;
  topology.memoryGB = {16.0, 16.0};
  topology.batchSize = 1024;
  EXPECT_FALSE(static_cast<bool>(validateProblem({table}, topology)));
  topology.batchSize = 65536;
  llvm::Error err = validateProblem({table}, topology);
  EXPECT_EQ(llvm::toString(std::move(err)),
            "tables[0] ('cat'): 'access_hist' lets the table's 1000 rows take "
            "at most 1500 lookups (at most 1.5 hits per distinct row), but a "
            "batch of 65536 bags with pooling factor 1 makes 65536; a "
            "histogram describes one batch of the task's batch size");
}

} // namespace

TEST(TableRulesTest, ReservedFraction) {
  EXPECT_EQ(violation(checkReservedFraction(0.0)), "");
  EXPECT_EQ(violation(checkReservedFraction(0.15)), "");
  for (double bad :
       {1.0, -0.01, std::nan(""), std::numeric_limits<double>::infinity()})
    EXPECT_NE(violation(checkReservedFraction(bad)), "") << bad;
  EXPECT_EQ(violation(checkReservedFraction(1.0)),
            "the reserved memory must be a fraction in [0, 1) of each "
            "device, got 1");
}

TEST(TableRulesTest, MemoryCountsOptimizerStateAndReserve) {
  TableSpec table;
  table.name = "t";
  table.rows = 1000;
  table.dim = 64;
  table.elementBytes = 2; // f16 weights, fp32 state
  Topology topology = Topology::uniform(2, 1.0);
  EXPECT_EQ(topology.shardBytes(table, 32), 1000u * 32 * 2);
  topology.optimizer = Optimizer::Adagrad;
  EXPECT_EQ(topology.optimizerStateBytes(table, 32), 1000u * 32 * 4);
  topology.optimizer = Optimizer::Adam;
  EXPECT_EQ(topology.shardBytes(table, 32), 1000u * 32 * (2 + 8));
  // One accumulator per row of every shard, whatever its width.
  topology.optimizer = Optimizer::RowwiseAdagrad;
  EXPECT_EQ(topology.optimizerStateBytes(table, 4), 1000u * 4);
  EXPECT_EQ(topology.optimizerStateBytes(table, 64), 1000u * 4);

  EXPECT_EQ(topology.usableBytes(0), topology.memoryBytes(0));
  topology.reservedFraction = 0.25;
  EXPECT_EQ(topology.usableBytes(1), topology.memoryBytes(1) / 4 * 3);

  for (Optimizer optimizer : {Optimizer::SGD, Optimizer::Adagrad,
                              Optimizer::RowwiseAdagrad, Optimizer::Adam})
    EXPECT_EQ(parseOptimizer(optimizerName(optimizer)), optimizer);
  EXPECT_FALSE(parseOptimizer("Adam").has_value());
  EXPECT_EQ(optimizerNameList(), "sgd, adagrad, rowwise-adagrad, adam");
}

TEST(TableRulesTest, ProblemsCheckTheReserve) {
  TableSpec table;
  table.name = "t";
  table.rows = 10;
  table.dim = 4;
  table.accessHist[0] = 1.0;
  Topology topology = Topology::uniform(1, 1.0);
  topology.batchSize = 8;
  EXPECT_FALSE(static_cast<bool>(validateProblem({table}, topology)));
  topology.reservedFraction = 1.5;
  llvm::Error error = validateProblem({table}, topology);
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_EQ(llvm::toString(std::move(error)),
            "the reserved memory must be a fraction in [0, 1) of each device, "
            "got 1.5");
}
