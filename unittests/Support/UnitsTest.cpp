//===- UnitsTest.cpp - Sizes in GB ----------------------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/Units.h"

#include "gtest/gtest.h"

using namespace neuroshard;

namespace {

TEST(FormatGBTest, ShowsThreeSignificantDigits) {
  EXPECT_EQ(formatGB(20.3 * kBytesPerGB), "20.3 GB");
  EXPECT_EQ(formatGB(16 * kBytesPerGB), "16.0 GB");
  EXPECT_EQ(formatGB(2.03 * kBytesPerGB), "2.03 GB");
  EXPECT_EQ(formatGB(0.6 * kBytesPerGB), "0.600 GB");
  EXPECT_EQ(formatGB(0), "0.00 GB");
  EXPECT_EQ(formatGB(2.03 * kBytesPerGB, 2), "2.0300 GB");
  EXPECT_EQ(formatGBPair(4.004 * kBytesPerGB, 4 * kBytesPerGB),
            std::make_pair(std::string("4.004 GB"), std::string("4.000 GB")));
  EXPECT_EQ(formatGBPair(4 * kBytesPerGB, 4 * kBytesPerGB),
            std::make_pair(std::string("4.00 GB"), std::string("4.00 GB")));
}

TEST(FormatGBTest, KeepsSizesNoMachineHasReadable) {
  // A GB is 2^30 bytes.
  EXPECT_EQ(kBytesPerGB, 1073741824.0);
  EXPECT_EQ(formatGB(160), "1.49e-07 GB");
  EXPECT_EQ(formatGB(1.98e28 * kBytesPerGB), "1.98e+28 GB");
  EXPECT_EQ(formatGB(9.9e8 * kBytesPerGB), "990000000.0 GB");
}

} // namespace
