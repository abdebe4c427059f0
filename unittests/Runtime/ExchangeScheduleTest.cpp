//===- ExchangeScheduleTest.cpp - The exchange as messages and copies -----===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Checks the schedule the NCCL exchange runs, without a GPU: the 2-D copies
// of every rank cover each element of its result exactly once and do what
// exchange_abi's unpackColumns and packColumns do, every message has the
// count its peer expects, and a whole job simulated with the messages and
// copies moves every value where the exchange says.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
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

/// Jobs of 2 and 3 ranks with unequal widths and batches, one with a rank
/// of width 0 and one with a rank of batch 0.
std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> jobs() {
  return {{{96, 64}, {5, 3}},
          {{3, 7}, {1, 4}},
          {{48, 0, 64}, {4, 3, 3}},
          {{5, 2, 9}, {2, 0, 3}}};
}

TEST(ExchangeSchedule, HandComputed) {
  // Rank 1 of widths 96, 64 and batches 5, 3.
  ExchangeLayout l = layout({96, 64}, {5, 3}, 1);
  ExchangeSchedule forward = forwardSchedule(l);
  ASSERT_EQ(forward.sends.size(), 2u);
  EXPECT_EQ(forward.sends[0].peer, 0);
  EXPECT_EQ(forward.sends[0].offset, 0u);
  EXPECT_EQ(forward.sends[0].count, 5u * 64);
  EXPECT_EQ(forward.sends[1].offset, 5u * 64);
  EXPECT_EQ(forward.sends[1].count, 3u * 64);
  ASSERT_EQ(forward.receives.size(), 2u);
  EXPECT_EQ(forward.receives[0].count, 3u * 96);
  EXPECT_EQ(forward.receives[1].offset, 3u * 96);
  EXPECT_EQ(forward.receives[1].count, 3u * 64);
  ASSERT_EQ(forward.copies.size(), 2u);
  const BlockCopy &second = forward.copies[1];
  EXPECT_EQ(second.sourceOffset, 3u * 96);
  EXPECT_EQ(second.sourcePitch, 64u);
  EXPECT_EQ(second.destinationOffset, 96u);
  EXPECT_EQ(second.destinationPitch, 160u);
  EXPECT_EQ(second.width, 64u);
  EXPECT_EQ(second.rows, 3u);

  // Backward swaps the roles of the messages and of the copies' two sides.
  ExchangeSchedule backward = backwardSchedule(l);
  ASSERT_EQ(backward.sends.size(), 2u);
  EXPECT_EQ(backward.sends[1].offset, forward.receives[1].offset);
  EXPECT_EQ(backward.receives[1].count, forward.sends[1].count);
  ASSERT_EQ(backward.copies.size(), 2u);
  EXPECT_EQ(backward.copies[1].sourceOffset, 96u);
  EXPECT_EQ(backward.copies[1].sourcePitch, 160u);
  EXPECT_EQ(backward.copies[1].destinationOffset, 3u * 96);
  EXPECT_EQ(backward.copies[1].destinationPitch, 64u);
}

TEST(ExchangeSchedule, CopiesCoverTheResultOnceAndMatchUnpacking) {
  for (const auto &[widths, batches] : jobs())
    for (int64_t rank = 0; rank < int64_t(widths.size()); ++rank) {
      ExchangeLayout l = layout(widths, batches, rank);
      size_t resultSize = size_t(l.batches[rank] * l.totalWidth());
      std::vector<float> packed(size_t(l.packedSize()));
      for (size_t i = 0; i < packed.size(); ++i)
        packed[i] = float(i + 1);

      // Coverage: each copy adds 1 to the elements it writes.
      std::vector<int> writes(resultSize, 0);
      for (const BlockCopy &copy : forwardSchedule(l).copies) {
        EXPECT_GT(copy.width, 0u);
        EXPECT_GT(copy.rows, 0u);
        for (size_t row = 0; row < copy.rows; ++row)
          for (size_t c = 0; c < copy.width; ++c) {
            size_t at =
                copy.destinationOffset + row * copy.destinationPitch + c;
            ASSERT_LT(at, resultSize);
            ++writes[at];
          }
      }
      EXPECT_TRUE(std::all_of(writes.begin(), writes.end(),
                              [](int n) { return n == 1; }))
          << "rank " << rank << " of " << widths.size();

      std::vector<float> expected(resultSize, -1.0f), actual(resultSize, -1.0f);
      unpackColumns(l, packed.data(), expected.data());
      for (const BlockCopy &copy : forwardSchedule(l).copies)
        runBlockCopy(copy, packed.data(), actual.data());
      EXPECT_EQ(actual, expected) << "rank " << rank;

      std::vector<float> repacked(packed.size(), -1.0f),
          expectedPacked(packed.size(), -1.0f);
      packColumns(l, expected.data(), expectedPacked.data());
      for (const BlockCopy &copy : backwardSchedule(l).copies)
        runBlockCopy(copy, expected.data(), repacked.data());
      EXPECT_EQ(repacked, expectedPacked) << "rank " << rank;
      EXPECT_EQ(repacked, packed) << "rank " << rank;
    }
}

TEST(ExchangeSchedule, MessagesPairUpBetweenPeers) {
  for (const auto &[widths, batches] : jobs()) {
    int64_t ranks = int64_t(widths.size());
    for (bool forward : {true, false}) {
      // (sender, receiver) -> count, as each side schedules it.
      std::map<std::pair<int64_t, int64_t>, size_t> sent, received;
      for (int64_t r = 0; r < ranks; ++r) {
        ExchangeLayout l = layout(widths, batches, r);
        ExchangeSchedule s = forward ? forwardSchedule(l) : backwardSchedule(l);
        for (const PeerMessage &m : s.sends) {
          EXPECT_GT(m.count, 0u);
          sent[{r, m.peer}] = m.count;
        }
        for (const PeerMessage &m : s.receives) {
          EXPECT_GT(m.count, 0u);
          received[{m.peer, r}] = m.count;
        }
      }
      EXPECT_EQ(sent, received) << (forward ? "forward" : "backward");
    }
  }
}

/// Value of column c of rank d's fused lookup, in bag b.
float value(int64_t d, int64_t b, int64_t c) {
  return float(d * 10000 + b * 100 + c);
}

TEST(ExchangeSchedule, SimulatedJobMovesEveryValue) {
  for (const auto &[widths, batches] : jobs()) {
    int64_t ranks = int64_t(widths.size());
    std::vector<ExchangeLayout> layouts;
    std::vector<std::vector<float>> buffers, packed, results;
    for (int64_t r = 0; r < ranks; ++r) {
      layouts.push_back(layout(widths, batches, r));
      const ExchangeLayout &l = layouts.back();
      std::vector<float> buffer(size_t(l.batch() * widths[r]));
      for (int64_t b = 0; b < l.batch(); ++b)
        for (int64_t c = 0; c < widths[r]; ++c)
          buffer[size_t(b * widths[r] + c)] = value(r, b, c);
      buffers.push_back(std::move(buffer));
      packed.emplace_back(size_t(l.packedSize()), -1.0f);
      results.emplace_back(size_t(batches[r] * l.totalWidth()), -1.0f);
    }
    // Forward: deliver each send to the receive its peer posted.
    for (int64_t r = 0; r < ranks; ++r)
      for (const PeerMessage &send : forwardSchedule(layouts[r]).sends)
        for (const PeerMessage &receive :
             forwardSchedule(layouts[send.peer]).receives)
          if (receive.peer == r)
            std::copy_n(buffers[r].begin() + send.offset, send.count,
                        packed[send.peer].begin() + receive.offset);
    for (int64_t r = 0; r < ranks; ++r) {
      for (const BlockCopy &copy : forwardSchedule(layouts[r]).copies)
        runBlockCopy(copy, packed[r].data(), results[r].data());
      int64_t total = layouts[r].totalWidth();
      for (int64_t b = 0; b < batches[r]; ++b)
        for (int64_t d = 0; d < ranks; ++d)
          for (int64_t c = 0; c < widths[d]; ++c)
            EXPECT_EQ(
                results[r][size_t(b * total + layouts[r].columnBegin(d) + c)],
                value(d, layouts[r].rowBegin(r) + b, c))
                << "rank " << r << " bag " << b << " from rank " << d;
    }

    // Backward with the results as gradients: every rank gets its buffer
    // back.
    std::vector<std::vector<float>> repacked, gradients;
    for (int64_t r = 0; r < ranks; ++r) {
      repacked.emplace_back(packed[r].size(), -1.0f);
      for (const BlockCopy &copy : backwardSchedule(layouts[r]).copies)
        runBlockCopy(copy, results[r].data(), repacked[r].data());
      gradients.emplace_back(buffers[r].size(), -1.0f);
    }
    for (int64_t r = 0; r < ranks; ++r)
      for (const PeerMessage &send : backwardSchedule(layouts[r]).sends)
        for (const PeerMessage &receive :
             backwardSchedule(layouts[send.peer]).receives)
          if (receive.peer == r)
            std::copy_n(repacked[r].begin() + send.offset, send.count,
                        gradients[send.peer].begin() + receive.offset);
    for (int64_t r = 0; r < ranks; ++r)
      EXPECT_EQ(gradients[r], buffers[r]) << "rank " << r;
  }
}

} // namespace
