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

/// Runs the exchange of `widths` and `batches` in nodes of `ranksPerNode`
/// through both phases, every rank's messages moved as its communicators
/// would move them, and checks every result against the rows it must hold;
/// then runs the backward and checks every buffer gradient.
void checkNodeExchange(const std::vector<int64_t> &widths,
                       const std::vector<int64_t> &batches,
                       int64_t ranksPerNode) {
  int64_t ranks = widths.size(), p = ranksPerNode;
  std::vector<ExchangeLayout> layouts;
  std::vector<NodeExchange> plans;
  std::vector<std::vector<float>> buffers;
  for (int64_t r = 0; r < ranks; ++r) {
    layouts.push_back(layout(widths, batches, r));
    ASSERT_EQ(checkRanksPerNode(layouts.back(), p), "");
    plans.push_back(planNodeExchange(layouts.back(), p));
    int64_t batch = layouts.back().batch();
    std::vector<float> buffer(size_t(batch * widths[r]));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t c = 0; c < widths[r]; ++c)
        buffer[b * widths[r] + c] = value(r, b, c);
    buffers.push_back(std::move(buffer));
  }
  auto peerInNode = [&](int64_t r, int64_t node) { return node * p + r % p; };
  auto rankOfNode = [&](int64_t r, int64_t local) { return r / p * p + local; };
  // Forward, between nodes: peer s sends this rank's node its rows.
  std::vector<std::vector<float>> gathered(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    const NodeExchange &me = plans[r];
    std::vector<float> staging(size_t(me.stagingSize));
    for (int64_t h = 0; h < ranks / p; ++h) {
      int64_t s = peerInNode(r, h);
      ASSERT_EQ(plans[s].interSendCounts[me.node], me.interRecvCounts[h]);
      std::copy_n(buffers[s].begin() + plans[s].interSendOffsets[me.node],
                  me.interRecvCounts[h],
                  staging.begin() + me.interRecvOffsets[h]);
    }
    gathered[r].resize(size_t(me.gatheredSize));
    gatherNodeRows(layouts[r], me, staging.data(), gathered[r].data());
    // The backward's inverse gives the staging buffer back.
    std::vector<float> restaged(staging.size(), -1.0f);
    scatterNodeRows(layouts[r], me, gathered[r].data(), restaged.data());
    EXPECT_EQ(restaged, staging) << "rank " << r;
  }
  // Forward, inside the node, and the result.
  int64_t total = layouts[0].totalWidth();
  std::vector<std::vector<float>> results(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    const NodeExchange &me = plans[r];
    std::vector<float> packed(size_t(me.packedSize));
    for (int64_t local = 0; local < p; ++local) {
      int64_t s = rankOfNode(r, local);
      ASSERT_EQ(plans[s].intraSendCounts[me.local], me.intraRecvCounts[local]);
      std::copy_n(gathered[s].begin() + plans[s].intraSendOffsets[me.local],
                  me.intraRecvCounts[local],
                  packed.begin() + me.intraRecvOffsets[local]);
    }
    results[r].assign(size_t(batches[r] * total), -1.0f);
    unpackNodeColumns(layouts[r], me, packed.data(), results[r].data());
    for (int64_t b = 0; b < batches[r]; ++b)
      for (int64_t d = 0, column = 0; d < ranks; column += widths[d++])
        for (int64_t c = 0; c < widths[d]; ++c)
          EXPECT_EQ(results[r][b * total + column + c],
                    value(d, layouts[r].rowBegin(r) + b, c))
              << "rank " << r << " bag " << b << " from rank " << d
              << " in nodes of " << p;
    std::vector<float> repacked(packed.size(), -1.0f);
    packNodeColumns(layouts[r], me, results[r].data(), repacked.data());
    EXPECT_EQ(repacked, packed) << "rank " << r;
  }
}

TEST(ExchangeABI, TwoPhasesOnNodesDeliverWhatOnePhaseDoes) {
  std::vector<int64_t> widths = {3, 0, 5, 2, 4, 1},
                       batches = {3, 2, 0, 2, 1, 4};
  for (int64_t p : {1, 2, 3, 6})
    checkNodeExchange(widths, batches, p);
  ExchangeLayout l = layout(widths, batches, 0);
  EXPECT_EQ(checkRanksPerNode(l, 4), "6 ranks do not fill whole nodes of 4 "
                                     "ranks");
  EXPECT_EQ(checkRanksPerNode(l, 0), "6 ranks do not fill whole nodes of 0 "
                                     "ranks");
}

// Rank 3 of 4 in nodes of 2 (node 1, local 1): hand-computed messages.
TEST(ExchangeABI, NodeExchangeCounts) {
  ExchangeLayout l = layout({2, 3, 4, 5}, {1, 2, 3, 4}, 3);
  NodeExchange plan = planNodeExchange(l, 2);
  EXPECT_EQ(plan.node, 1);
  EXPECT_EQ(plan.local, 1);
  // To node 0's peer (rank 1): node 0's 3 rows of rank 3's 5 columns; to
  // itself node 1's 7 rows.
  EXPECT_EQ(plan.interSendOffsets, (std::vector<int64_t>{0, 15}));
  EXPECT_EQ(plan.interSendCounts, (std::vector<int64_t>{15, 35}));
  // From rank 1 and from itself: node 1's 7 rows of 3 and of 5 columns.
  EXPECT_EQ(plan.interRecvCounts, (std::vector<int64_t>{21, 35}));
  EXPECT_EQ(plan.stagingSize, 56);
  // To rank 2 its 3 rows, to itself its 4, of the 8 staged columns; from
  // rank 2 the columns of ranks 0 and 2 (2 + 4), from itself 3 + 5.
  EXPECT_EQ(plan.intraSendCounts, (std::vector<int64_t>{24, 32}));
  EXPECT_EQ(plan.intraRecvCounts, (std::vector<int64_t>{24, 32}));
  EXPECT_EQ(plan.packedSize, 56);
}

} // namespace
