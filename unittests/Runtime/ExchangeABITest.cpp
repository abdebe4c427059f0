//===- ExchangeABITest.cpp - Bookkeeping of one rank's exchange -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Checks the batch slices, column blocks and MPI block offsets of
// ExchangeABI.h against hand-computed values, and simulates the exchange
// between all ranks of a job in one process: every rank's result must be
// its rows of every rank's columns, and the backward direction must return
// every rank's buffer gradient.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeABI.h"

#include <gtest/gtest.h>

#include <vector>

using namespace neuroshard::exchange_abi;

namespace {

ExchangeLayout layout(std::vector<int64_t> widths, std::vector<int64_t> batches,
                      int64_t rank) {
  ExchangeLayout l;
  l.widths = std::move(widths);
  l.batches = std::move(batches);
  l.rank = rank;
  return l;
}

TEST(ExchangeABI, RowsAndColumns) {
  // Three ranks with widths 48, 0, 64 and 10 bags split 4, 3, 3.
  ExchangeLayout l = layout({48, 0, 64}, {4, 3, 3}, 2);
  EXPECT_EQ(l.ranks(), 3);
  EXPECT_EQ(l.batch(), 10);
  EXPECT_EQ(l.totalWidth(), 112);
  EXPECT_EQ(l.rowBegin(0), 0);
  EXPECT_EQ(l.rowBegin(1), 4);
  EXPECT_EQ(l.rowBegin(2), 7);
  EXPECT_EQ(l.columnBegin(1), 48);
  EXPECT_EQ(l.columnBegin(2), 48);
  // Rank 2 sends rank 1 rows 4..7 of its 10 x 64 buffer...
  EXPECT_EQ(l.sendOffset(1), 4 * 64);
  EXPECT_EQ(l.sendCount(1), 3 * 64);
  // ...and receives rank 0's 3 x 48 block first, rank 2's 3 x 64 last.
  EXPECT_EQ(l.packedOffset(0), 0);
  EXPECT_EQ(l.packedCount(0), 3 * 48);
  EXPECT_EQ(l.packedCount(1), 0);
  EXPECT_EQ(l.packedOffset(2), 3 * 48);
  EXPECT_EQ(l.packedSize(), 3 * 112);
}

TEST(ExchangeABI, Checks) {
  EXPECT_EQ(checkExchangeLayout(layout({4, 4}, {2, 2}, 1)), "");
  EXPECT_EQ(checkExchangeLayout(layout({}, {}, 0)),
            "the exchange has no ranks");
  EXPECT_EQ(checkExchangeLayout(layout({4, 4}, {2}, 0)),
            "the exchange lists 2 widths but 1 batches");
  EXPECT_EQ(checkExchangeLayout(layout({4, 4}, {2, 2}, 2)),
            "rank 2 is not one of the 2 ranks of the exchange");
  EXPECT_EQ(checkExchangeLayout(layout({4, -4}, {2, 2}, 0)),
            "rank 1 has width -4 and batch 2; each must be in [0, 2^31)");
  EXPECT_NE(checkExchangeLayout(layout({int64_t(1) << 40, 4}, {2, 2}, 0)), "");
}

/// Value of column c of rank d's fused lookup, in bag b.
float value(int64_t d, int64_t b, int64_t c) {
  return float(d * 10000 + b * 100 + c);
}

TEST(ExchangeABI, ForwardAndBackwardBetweenAllRanks) {
  std::vector<int64_t> widths = {3, 0, 5, 2}, batches = {3, 2, 0, 2};
  int64_t ranks = 4, batch = 7, total = 10;
  std::vector<ExchangeLayout> layouts;
  std::vector<std::vector<float>> buffers;
  for (int64_t r = 0; r < ranks; ++r) {
    layouts.push_back(layout(widths, batches, r));
    std::vector<float> buffer(size_t(batch * widths[r]));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t c = 0; c < widths[r]; ++c)
        buffer[b * widths[r] + c] = value(r, b, c);
    buffers.push_back(std::move(buffer));
  }
  // Forward: what an all-to-all of these blocks delivers, then unpacking.
  for (int64_t r = 0; r < ranks; ++r) {
    const ExchangeLayout &me = layouts[r];
    std::vector<float> packed(size_t(me.packedSize()));
    for (int64_t d = 0; d < ranks; ++d) {
      const ExchangeLayout &sender = layouts[d];
      ASSERT_EQ(sender.sendCount(r), me.packedCount(d));
      std::copy_n(buffers[d].begin() + sender.sendOffset(r),
                  sender.sendCount(r), packed.begin() + me.packedOffset(d));
    }
    std::vector<float> result(size_t(batches[r] * total), -1.0f);
    unpackColumns(me, packed.data(), result.data());
    for (int64_t b = 0; b < batches[r]; ++b)
      for (int64_t d = 0, column = 0; d < ranks; column += widths[d++])
        for (int64_t c = 0; c < widths[d]; ++c)
          EXPECT_EQ(result[b * total + column + c],
                    value(d, me.rowBegin(r) + b, c))
              << "rank " << r << " bag " << b << " from rank " << d;

    // Backward: the result's gradient packed back into blocks returns to
    // each sender exactly the rows it sent.
    std::vector<float> repacked(packed.size(), -1.0f);
    packColumns(me, result.data(), repacked.data());
    EXPECT_EQ(repacked, packed) << "rank " << r;
  }
}

} // namespace
