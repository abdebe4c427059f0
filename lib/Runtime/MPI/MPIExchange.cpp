//===- MPIExchange.cpp - The exchange over MPI ----------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/MPI/MPIExchange.h"
#include "neuroshard/Runtime/ExchangeCall.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace neuroshard;
using exchange_abi::ExchangeLayout;

namespace {

double accumulatedSeconds = 0.0;
mpi::ExchangeBytes bytesMoved;

/// The job's ranks grouped into nodes of consecutive ranks, with the
/// communicators of the two phases of the exchange (NodeExchange): the
/// ranks of one node, and the peers of equal local rank in every node.
/// ranksPerNode 0: every rank on one node, and the exchange in one phase.
struct NodeGroups {
  int ranksPerNode = 0;
  MPI_Comm node = MPI_COMM_NULL, peers = MPI_COMM_NULL;
} groups;

/// The packed blocks of the last exchange, kept so that an exchange per
/// training step does not allocate (and clear) a buffer each time.
std::vector<float> &packingBuffer(const ExchangeLayout &layout) {
  static std::vector<float> packed;
  packed.resize(static_cast<size_t>(layout.packedSize()));
  return packed;
}

/// Counts and displacements of one MPI_Alltoallv, in elements.
struct Blocks {
  std::vector<int> sendCounts, sendOffsets, recvCounts, recvOffsets;
};

std::string checkJob(const ExchangeLayout &layout) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return exchange_abi::checkExchangeJob(layout, rank, size);
}

/// Fills `blocks` for the forward direction (swapped for backward); fails
/// when an offset or count does not fit MPI's int.
std::string forwardBlocks(const ExchangeLayout &layout, Blocks &blocks) {
  int64_t largest = std::max(layout.batch() * layout.widths[layout.rank],
                             layout.packedSize());
  if (largest > INT_MAX)
    return "the exchange moves blocks of up to " + std::to_string(largest) +
           " elements, more than MPI's int counts and offsets hold (" +
           std::to_string(INT_MAX) + ")";
  for (int64_t d = 0; d < layout.ranks(); ++d) {
    blocks.sendCounts.push_back(int(layout.sendCount(d)));
    blocks.sendOffsets.push_back(int(layout.sendOffset(d)));
    blocks.recvCounts.push_back(int(layout.packedCount(d)));
    blocks.recvOffsets.push_back(int(layout.packedOffset(d)));
  }
  return "";
}

/// Checks the layout against the job and fills the forward blocks.
std::string prepare(const ExchangeLayout &layout, Blocks &blocks) {
  std::string why = checkJob(layout);
  return why.empty() ? forwardBlocks(layout, blocks) : why;
}

/// `values` as MPI's int counts or offsets; fails, naming the largest,
/// when one does not fit.
std::string toInts(const std::vector<int64_t> &values, std::vector<int> &ints) {
  ints.clear();
  for (int64_t value : values) {
    if (value > INT_MAX)
      return "the exchange moves blocks of up to " + std::to_string(value) +
             " elements, more than MPI's int counts and offsets hold (" +
             std::to_string(INT_MAX) + ")";
    ints.push_back(int(value));
  }
  return "";
}

/// The counts and offsets of the two phases on nodes, as MPI's ints.
struct NodeBlocks {
  std::vector<int> interSendCounts, interSendOffsets, interRecvCounts,
      interRecvOffsets, intraSendCounts, intraSendOffsets, intraRecvCounts,
      intraRecvOffsets;
};

std::string prepareNodes(const ExchangeLayout &layout,
                         exchange_abi::NodeExchange &plan, NodeBlocks &blocks) {
  if (std::string why = checkJob(layout); !why.empty())
    return why;
  plan = exchange_abi::planNodeExchange(layout, groups.ranksPerNode);
  for (auto [values, ints] :
       {std::pair(&plan.interSendCounts, &blocks.interSendCounts),
        std::pair(&plan.interSendOffsets, &blocks.interSendOffsets),
        std::pair(&plan.interRecvCounts, &blocks.interRecvCounts),
        std::pair(&plan.interRecvOffsets, &blocks.interRecvOffsets),
        std::pair(&plan.intraSendCounts, &blocks.intraSendCounts),
        std::pair(&plan.intraSendOffsets, &blocks.intraSendOffsets),
        std::pair(&plan.intraRecvCounts, &blocks.intraRecvCounts),
        std::pair(&plan.intraRecvOffsets, &blocks.intraRecvOffsets)})
    if (std::string why = toInts(*values, *ints); !why.empty())
      return why;
  return "";
}

/// Bytes of the messages `counts` (elements) but the one at `self`.
double bytesToOthers(const std::vector<int64_t> &counts, int64_t self) {
  double bytes = 0.0;
  for (size_t i = 0; i < counts.size(); ++i)
    if (int64_t(i) != self)
      bytes += double(counts[i]) * sizeof(float);
  return bytes;
}

/// The staging, gathered and packed buffers of the last exchange on nodes.
struct NodeBuffers {
  std::vector<float> staging, gathered, packed;
  void resize(const exchange_abi::NodeExchange &plan) {
    staging.resize(size_t(plan.stagingSize));
    gathered.resize(size_t(plan.gatheredSize));
    packed.resize(size_t(plan.packedSize));
  }
};
NodeBuffers &nodeBuffers(const exchange_abi::NodeExchange &plan) {
  static NodeBuffers buffers;
  buffers.resize(plan);
  return buffers;
}

/// Forward on nodes: between the nodes, then inside each.
std::string exchangeForwardOnNodes(const ExchangeLayout &layout,
                                   const float *buffer, float *result) {
  exchange_abi::NodeExchange plan;
  NodeBlocks blocks;
  if (std::string why = prepareNodes(layout, plan, blocks); !why.empty())
    return why;
  NodeBuffers &buffers = nodeBuffers(plan);
  MPI_Alltoallv(buffer, blocks.interSendCounts.data(),
                blocks.interSendOffsets.data(), MPI_FLOAT,
                buffers.staging.data(), blocks.interRecvCounts.data(),
                blocks.interRecvOffsets.data(), MPI_FLOAT, groups.peers);
  exchange_abi::gatherNodeRows(layout, plan, buffers.staging.data(),
                               buffers.gathered.data());
  MPI_Alltoallv(buffers.gathered.data(), blocks.intraSendCounts.data(),
                blocks.intraSendOffsets.data(), MPI_FLOAT,
                buffers.packed.data(), blocks.intraRecvCounts.data(),
                blocks.intraRecvOffsets.data(), MPI_FLOAT, groups.node);
  exchange_abi::unpackNodeColumns(layout, plan, buffers.packed.data(), result);
  bytesMoved.interNode += bytesToOthers(plan.interSendCounts, plan.node);
  bytesMoved.intraNode += bytesToOthers(plan.intraSendCounts, plan.local);
  return "";
}

/// Backward on nodes: both phases in reverse, inside the node first.
std::string exchangeBackwardOnNodes(const ExchangeLayout &layout,
                                    const float *gradient,
                                    float *bufferGradient) {
  exchange_abi::NodeExchange plan;
  NodeBlocks blocks;
  if (std::string why = prepareNodes(layout, plan, blocks); !why.empty())
    return why;
  NodeBuffers &buffers = nodeBuffers(plan);
  exchange_abi::packNodeColumns(layout, plan, gradient, buffers.packed.data());
  MPI_Alltoallv(buffers.packed.data(), blocks.intraRecvCounts.data(),
                blocks.intraRecvOffsets.data(), MPI_FLOAT,
                buffers.gathered.data(), blocks.intraSendCounts.data(),
                blocks.intraSendOffsets.data(), MPI_FLOAT, groups.node);
  exchange_abi::scatterNodeRows(layout, plan, buffers.gathered.data(),
                                buffers.staging.data());
  MPI_Alltoallv(buffers.staging.data(), blocks.interRecvCounts.data(),
                blocks.interRecvOffsets.data(), MPI_FLOAT, bufferGradient,
                blocks.interSendCounts.data(), blocks.interSendOffsets.data(),
                MPI_FLOAT, groups.peers);
  bytesMoved.intraNode += bytesToOthers(plan.intraRecvCounts, plan.local);
  bytesMoved.interNode += bytesToOthers(plan.interRecvCounts, plan.node);
  return "";
}

/// Bytes this rank sends the other ranks in one phase over the whole job:
/// all inside one node.
void countFlatBytes(const ExchangeLayout &layout, const Blocks &blocks,
                    bool forward) {
  const std::vector<int> &counts =
      forward ? blocks.sendCounts : blocks.recvCounts;
  for (int64_t d = 0; d < layout.ranks(); ++d)
    if (d != layout.rank)
      bytesMoved.intraNode += double(counts[d]) * sizeof(float);
}

} // namespace

std::string mpi::groupRanksIntoNodes(int ranksPerNode) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (ranksPerNode < 0 || (ranksPerNode > 0 && size % ranksPerNode != 0))
    return std::to_string(size) + " ranks do not fill whole nodes of " +
           std::to_string(ranksPerNode) + " ranks";
  for (MPI_Comm *comm : {&groups.node, &groups.peers})
    if (*comm != MPI_COMM_NULL)
      MPI_Comm_free(comm);
  groups.ranksPerNode = 0;
  if (ranksPerNode == 0 || ranksPerNode == size)
    return "";
  MPI_Comm_split(MPI_COMM_WORLD, rank / ranksPerNode, rank % ranksPerNode,
                 &groups.node);
  MPI_Comm_split(MPI_COMM_WORLD, rank % ranksPerNode, rank / ranksPerNode,
                 &groups.peers);
  groups.ranksPerNode = ranksPerNode;
  return "";
}

int mpi::ranksPerNode() {
  if (groups.ranksPerNode)
    return groups.ranksPerNode;
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

int mpi::sharedMemoryRanksPerNode() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm shared;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                      &shared);
  int sharedSize = 0, first = rank;
  MPI_Comm_size(shared, &sharedSize);
  // The lowest world rank on this machine.
  MPI_Allreduce(&rank, &first, 1, MPI_INT, MPI_MIN, shared);
  MPI_Comm_free(&shared);
  // Nodes of consecutive ranks, all of one size, or none.
  int regular = sharedSize > 0 && first == rank / sharedSize * sharedSize;
  int sizes[2] = {sharedSize, -sharedSize}, extremes[2];
  MPI_Allreduce(sizes, extremes, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int allRegular = 0;
  MPI_Allreduce(&regular, &allRegular, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!allRegular || extremes[0] != -extremes[1])
    return 0;
  return sharedSize;
}

std::string mpi::exchangeForward(const ExchangeLayout &layout,
                                 const float *buffer, float *result) {
  double start = MPI_Wtime();
  if (groups.ranksPerNode) {
    std::string why = exchangeForwardOnNodes(layout, buffer, result);
    accumulatedSeconds += MPI_Wtime() - start;
    return why;
  }
  Blocks blocks;
  if (std::string why = prepare(layout, blocks); !why.empty())
    return why;
  std::vector<float> &packed = packingBuffer(layout);
  MPI_Alltoallv(buffer, blocks.sendCounts.data(), blocks.sendOffsets.data(),
                MPI_FLOAT, packed.data(), blocks.recvCounts.data(),
                blocks.recvOffsets.data(), MPI_FLOAT, MPI_COMM_WORLD);
  exchange_abi::unpackColumns(layout, packed.data(), result);
  countFlatBytes(layout, blocks, /*forward=*/true);
  accumulatedSeconds += MPI_Wtime() - start;
  return "";
}

std::string mpi::exchangeBackward(const ExchangeLayout &layout,
                                  const float *gradient,
                                  float *bufferGradient) {
  double start = MPI_Wtime();
  if (groups.ranksPerNode) {
    std::string why = exchangeBackwardOnNodes(layout, gradient, bufferGradient);
    accumulatedSeconds += MPI_Wtime() - start;
    return why;
  }
  Blocks blocks;
  if (std::string why = prepare(layout, blocks); !why.empty())
    return why;
  std::vector<float> &packed = packingBuffer(layout);
  exchange_abi::packColumns(layout, gradient, packed.data());
  MPI_Alltoallv(packed.data(), blocks.recvCounts.data(),
                blocks.recvOffsets.data(), MPI_FLOAT, bufferGradient,
                blocks.sendCounts.data(), blocks.sendOffsets.data(), MPI_FLOAT,
                MPI_COMM_WORLD);
  countFlatBytes(layout, blocks, /*forward=*/false);
  accumulatedSeconds += MPI_Wtime() - start;
  return "";
}

double mpi::exchangeSeconds() { return accumulatedSeconds; }

mpi::ExchangeBytes mpi::exchangeBytes() { return bytesMoved; }

void mpi::resetExchangeStatistics() {
  accumulatedSeconds = 0.0;
  bytesMoved = ExchangeBytes();
}

namespace {

using exchange_abi::MemRefDescriptor;

[[noreturn]] void abortJob(const std::string &why) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "neuroshard exchange: error: rank %d: %s\n", rank,
               why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

extern "C" void exchangeF32(MemRefDescriptor<float, 2> *buffer,
                            MemRefDescriptor<float, 2> *result,
                            MemRefDescriptor<int64_t, 1> *widths,
                            MemRefDescriptor<int64_t, 1> *batches,
                            int64_t rank) {
  ExchangeLayout layout;
  std::string why = exchange_abi::readExchangeCall(*buffer, *result, *widths,
                                                   *batches, rank, layout);
  if (why.empty())
    why = mpi::exchangeForward(layout, buffer->aligned + buffer->offset,
                               result->aligned + result->offset);
  if (!why.empty())
    abortJob(why);
}

extern "C" void exchangeGradientF32(MemRefDescriptor<float, 2> *gradient,
                                    MemRefDescriptor<float, 2> *bufferGradient,
                                    MemRefDescriptor<int64_t, 1> *widths,
                                    MemRefDescriptor<int64_t, 1> *batches,
                                    int64_t rank) {
  // The same layout with the roles of the buffers swapped.
  ExchangeLayout layout;
  std::string why = exchange_abi::readExchangeCall(
      *bufferGradient, *gradient, *widths, *batches, rank, layout);
  if (why.empty())
    why =
        mpi::exchangeBackward(layout, gradient->aligned + gradient->offset,
                              bufferGradient->aligned + bufferGradient->offset);
  if (!why.empty())
    abortJob(why);
}

} // namespace

void *mpi::exchangeEntryPoint() {
  return reinterpret_cast<void *>(&exchangeF32);
}

void *mpi::exchangeGradientEntryPoint() {
  return reinterpret_cast<void *>(&exchangeGradientF32);
}
