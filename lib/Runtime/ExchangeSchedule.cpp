//===- ExchangeSchedule.cpp - The exchange as messages and copies ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeSchedule.h"

#include <cstring>
#include <utility>

using namespace neuroshard::exchange_abi;

namespace {

/// The rank's buffer rows that go to each peer (forward sends, backward
/// receives).
std::vector<PeerMessage> bufferMessages(const ExchangeLayout &layout) {
  std::vector<PeerMessage> messages;
  for (int64_t d = 0; d < layout.ranks(); ++d)
    if (layout.sendCount(d) > 0)
      messages.push_back(
          {d, size_t(layout.sendOffset(d)), size_t(layout.sendCount(d))});
  return messages;
}

/// The packed block of each peer (forward receives, backward sends).
std::vector<PeerMessage> packedMessages(const ExchangeLayout &layout) {
  std::vector<PeerMessage> messages;
  for (int64_t d = 0; d < layout.ranks(); ++d)
    if (layout.packedCount(d) > 0)
      messages.push_back(
          {d, size_t(layout.packedOffset(d)), size_t(layout.packedCount(d))});
  return messages;
}

/// Packed block d (B_rank x W_d, contiguous) to columns columnBegin(d).. of
/// the row-major B_rank x sum(W) result.
std::vector<BlockCopy> unpackCopies(const ExchangeLayout &layout) {
  std::vector<BlockCopy> copies;
  size_t rows = size_t(layout.batches[layout.rank]);
  size_t pitch = size_t(layout.totalWidth());
  if (rows == 0)
    return copies;
  for (int64_t d = 0; d < layout.ranks(); ++d) {
    size_t width = size_t(layout.widths[d]);
    if (width == 0)
      continue;
    BlockCopy copy;
    copy.sourceOffset = size_t(layout.packedOffset(d));
    copy.sourcePitch = width;
    copy.destinationOffset = size_t(layout.columnBegin(d));
    copy.destinationPitch = pitch;
    copy.width = width;
    copy.rows = rows;
    copies.push_back(copy);
  }
  return copies;
}

} // namespace

ExchangeSchedule
neuroshard::exchange_abi::forwardSchedule(const ExchangeLayout &layout) {
  ExchangeSchedule schedule;
  schedule.sends = bufferMessages(layout);
  schedule.receives = packedMessages(layout);
  schedule.copies = unpackCopies(layout);
  return schedule;
}

ExchangeSchedule
neuroshard::exchange_abi::backwardSchedule(const ExchangeLayout &layout) {
  ExchangeSchedule schedule;
  schedule.sends = packedMessages(layout);
  schedule.receives = bufferMessages(layout);
  // Packing is unpacking with source and destination swapped.
  for (BlockCopy copy : unpackCopies(layout)) {
    std::swap(copy.sourceOffset, copy.destinationOffset);
    std::swap(copy.sourcePitch, copy.destinationPitch);
    schedule.copies.push_back(copy);
  }
  return schedule;
}

void neuroshard::exchange_abi::runBlockCopy(const BlockCopy &copy,
                                            const float *source,
                                            float *destination) {
  for (size_t row = 0; row < copy.rows; ++row)
    std::memcpy(destination + copy.destinationOffset +
                    row * copy.destinationPitch,
                source + copy.sourceOffset + row * copy.sourcePitch,
                sizeof(float) * copy.width);
}
