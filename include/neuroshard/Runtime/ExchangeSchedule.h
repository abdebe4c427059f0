//===- ExchangeSchedule.h - The exchange as messages and copies -*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// One rank's side of the exchange of ExchangeABI.h spelled out for a
// transport of point-to-point messages (NCCL's ncclSend/ncclRecv in one
// group): the message to and from every peer, and the 2-D copies between
// the packed blocks and the columns of the rank's result, which a device
// runs as strided copies (cudaMemcpy2DAsync) instead of a loop of rows.
//
// Every offset and count comes from ExchangeLayout; this header only
// arranges them. Counts are size_t, as NCCL's are. Plain C++ with no
// dependency, so that the schedule is checked without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_EXCHANGESCHEDULE_H
#define NEUROSHARD_RUNTIME_EXCHANGESCHEDULE_H

#include "neuroshard/Runtime/ExchangeABI.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace neuroshard {
namespace exchange_abi {

/// A message to or from rank `peer`: `count` floats at element `offset` of
/// the buffer it is sent from or received into.
struct PeerMessage {
  int64_t peer = 0;
  size_t offset = 0;
  size_t count = 0;
};

/// A copy of `rows` rows of `width` floats from rows `sourcePitch` floats
/// apart, starting at element `sourceOffset`, to rows `destinationPitch`
/// floats apart starting at `destinationOffset`. Every field counts
/// elements; cudaMemcpy2D takes bytes.
struct BlockCopy {
  size_t sourceOffset = 0, sourcePitch = 0;
  size_t destinationOffset = 0, destinationPitch = 0;
  size_t width = 0, rows = 0;
};

/// One direction of the exchange on one rank. Forward: the messages move
/// the rank's buffer into the packed blocks, then `copies` unpack the
/// blocks into the result's columns. Backward: `copies` first pack the
/// columns of the result's gradient into blocks, then the messages move
/// the blocks into the gradient of the rank's buffer. Empty messages and
/// copies (a width or a batch of 0) are left out; a peer leaves out the
/// matching message too, since both sides compute the same count.
struct ExchangeSchedule {
  std::vector<PeerMessage> sends, receives;
  std::vector<BlockCopy> copies;
};

/// Forward: sends from the B x W_rank buffer, receives into the packed
/// blocks (packedSize() floats), copies from the packed blocks into the
/// B_rank x sum(W) result. `layout` must pass checkExchangeLayout.
ExchangeSchedule forwardSchedule(const ExchangeLayout &layout);

/// Backward: copies from the B_rank x sum(W) gradient into the packed
/// blocks, sends from the packed blocks, receives into the B x W_rank
/// buffer gradient.
ExchangeSchedule backwardSchedule(const ExchangeLayout &layout);

/// Runs `copy` on host memory (what a device's 2-D copy does), for tests
/// and references.
void runBlockCopy(const BlockCopy &copy, const float *source,
                  float *destination);

} // namespace exchange_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_EXCHANGESCHEDULE_H
