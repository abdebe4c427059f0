//===- ExchangeCallTest.cpp - A call of the exchange's C interface --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Checks how an exchange runtime reads the memref descriptors of one call of
// kExchangeF32's C interface, and what it refuses.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeCall.h"

#include <gtest/gtest.h>

#include <vector>

using namespace neuroshard::exchange_abi;

namespace {

/// Rank 1 of widths 3, 2 and batches 4, 1 as lowered code passes it: the
/// widths strided by 2 at offset 1, to check that strides are followed.
struct Call {
  std::vector<float> buffer = std::vector<float>(5 * 2);
  std::vector<float> result = std::vector<float>(1 * 5);
  std::vector<int64_t> widthStorage = {-1, 3, -1, 2};
  std::vector<int64_t> batchStorage = {4, 1};
  MemRefDescriptor<float, 2> bufferRef{
      buffer.data(), buffer.data(), 0, {5, 2}, {2, 1}};
  MemRefDescriptor<float, 2> resultRef{
      result.data(), result.data(), 0, {1, 5}, {5, 1}};
  MemRefDescriptor<int64_t, 1> widthsRef{
      widthStorage.data(), widthStorage.data(), 1, {2}, {2}};
  MemRefDescriptor<int64_t, 1> batchesRef{
      batchStorage.data(), batchStorage.data(), 0, {2}, {1}};

  std::string read(int64_t rank, ExchangeLayout &layout) {
    return readExchangeCall(bufferRef, resultRef, widthsRef, batchesRef, rank,
                            layout);
  }
};

TEST(ExchangeCall, ReadsTheLayout) {
  Call call;
  ExchangeLayout layout;
  EXPECT_EQ(call.read(1, layout), "");
  EXPECT_EQ(layout.widths, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(layout.batches, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(layout.rank, 1);
  EXPECT_EQ(checkExchangeJob(layout, 1, 2), "");
}

TEST(ExchangeCall, Refusals) {
  ExchangeLayout layout;
  Call wrongRank;
  EXPECT_EQ(wrongRank.read(2, layout),
            "rank 2 is not one of the 2 ranks of the exchange");
  Call strided;
  strided.bufferRef.strides[0] = 4;
  EXPECT_EQ(strided.read(1, layout),
            "the exchange's buffers are not row-major");
  Call small;
  small.resultRef.sizes[1] = 4;
  small.resultRef.strides[0] = 4;
  EXPECT_EQ(small.read(1, layout),
            "the exchange's buffers do not match its widths and batches");

  Call call;
  ASSERT_EQ(call.read(1, layout), "");
  EXPECT_EQ(checkExchangeJob(layout, 1, 3),
            "the exchange is between 2 ranks but the job has 3");
  EXPECT_EQ(checkExchangeJob(layout, 0, 2),
            "the program of rank 1 runs on rank 0");
}

} // namespace
