//===- MPIExchange.cpp - The exchange over MPI ----------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/MPI/MPIExchange.h"
#include "neuroshard/Runtime/ExchangeCall.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/ReplicaUpdate.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <utility>
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

/// Bytes this rank sends rank d in a collective: `elements[d]` floats,
/// counted inside or between nodes as the ranks are grouped.
void countSentBytes(const std::vector<int64_t> &elements) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (size_t d = 0; d < elements.size(); ++d) {
    if (static_cast<int>(d) == rank)
      continue;
    double bytes = double(elements[d]) * sizeof(float);
    bool sameNode =
        groups.ranksPerNode == 0 ||
        rank / groups.ranksPerNode == static_cast<int>(d) / groups.ranksPerNode;
    (sameNode ? bytesMoved.intraNode : bytesMoved.interNode) += bytes;
  }
}

/// A call of either side of the reduce-scatter, read and checked
/// (readReduceScatterCall, and the job it runs in): `whole` is the B x W
/// buffer (the partial sums or their gradient), `own` the rank's B_rank x W
/// slice. Aborts the job on a call that does not fit, or whose counts do
/// not fit MPI's int.
struct ScatterCall {
  ExchangeLayout layout;
  std::vector<int> counts, displacements;
  std::vector<float> divisors;
  int64_t width = 0;

  /// Divides each of the rank's bags in `rows` (B_rank x W) by its whole
  /// length under a mean: the mean after the sum, and its adjoint.
  void divideBags(float *rows) const {
    exchange_abi::divideBags(divisors, width, rows);
  }
};

ScatterCall readScatterCall(const MemRefDescriptor<float, 2> &whole,
                            const MemRefDescriptor<float, 2> &own,
                            const MemRefDescriptor<int64_t, 1> &batches,
                            const MemRefDescriptor<int64_t, 1> &offsets,
                            int64_t rank) {
  ScatterCall call;
  std::string why = exchange_abi::readReduceScatterCall(
      whole, own, batches, offsets, rank, call.layout, call.divisors);
  if (why.empty())
    why = checkJob(call.layout);
  call.width = whole.sizes[1];
  if (why.empty() && call.layout.batch() * call.width > INT_MAX)
    why = "a reduce-scatter of " + std::to_string(call.layout.batch()) + " x " +
          std::to_string(call.width) +
          " values needs more than MPI's int counts hold";
  if (!why.empty())
    abortJob(why);
  for (int64_t d = 0; d < call.layout.ranks(); ++d) {
    call.counts.push_back(
        static_cast<int>(call.layout.batches[d] * call.width));
    call.displacements.push_back(
        static_cast<int>(call.layout.rowBegin(d) * call.width));
  }
  return call;
}

extern "C" void reduceScatterF32(MemRefDescriptor<float, 2> *partial,
                                 MemRefDescriptor<float, 2> *result,
                                 MemRefDescriptor<int64_t, 1> *batches,
                                 MemRefDescriptor<int64_t, 1> *offsets,
                                 int64_t rank) {
  double start = MPI_Wtime();
  ScatterCall call =
      readScatterCall(*partial, *result, *batches, *offsets, rank);
  float *out = result->aligned + result->offset;
  MPI_Reduce_scatter(partial->aligned + partial->offset, out,
                     call.counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  call.divideBags(out);
  countSentBytes(std::vector<int64_t>(call.counts.begin(), call.counts.end()));
  accumulatedSeconds += MPI_Wtime() - start;
}

extern "C" void reduceScatterGradientF32(MemRefDescriptor<float, 2> *gradient,
                                         MemRefDescriptor<float, 2> *result,
                                         MemRefDescriptor<int64_t, 1> *batches,
                                         MemRefDescriptor<int64_t, 1> *offsets,
                                         int64_t rank) {
  double start = MPI_Wtime();
  ScatterCall call =
      readScatterCall(*result, *gradient, *batches, *offsets, rank);
  // The adjoint of the mean's division, then every rank's rows gathered.
  const float *in = gradient->aligned + gradient->offset;
  std::vector<float> scaled(in, in + call.counts[rank]);
  call.divideBags(scaled.data());
  MPI_Allgatherv(scaled.data(), call.counts[rank], MPI_FLOAT,
                 result->aligned + result->offset, call.counts.data(),
                 call.displacements.data(), MPI_FLOAT, MPI_COMM_WORLD);
  countSentBytes(std::vector<int64_t>(call.counts.size(), call.counts[rank]));
  accumulatedSeconds += MPI_Wtime() - start;
}

/// The SGD update of replicas (exchange_abi::updateReplicas): the extents
/// and the gradients summed over the job with MPI_Allreduce.
template <typename Index>
void replicaSGD(MemRefDescriptor<int64_t, 1> *meta,
                MemRefDescriptor<int64_t, 1> *layout,
                MemRefDescriptor<float, 1> *weights,
                MemRefDescriptor<Index, 1> *indices,
                MemRefDescriptor<Index, 1> *offsets,
                MemRefDescriptor<float, 2> *gradient, float lr) {
  double start = MPI_Wtime();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto maxOverRanks = [](int64_t *values, size_t count) {
    MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_INT64_T,
                  MPI_MAX, MPI_COMM_WORLD);
  };
  auto sumOverRanks = [&](float *values, size_t count) {
    if (count > size_t(INT_MAX))
      abortJob("the gradient of a replica's " + std::to_string(count) +
               " values needs more than MPI's int counts hold");
    MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
    // A ring all-reduce sends about twice the buffer.
    countSentBytes(
        std::vector<int64_t>(size, size > 1 ? 2 * int64_t(count) / size : 0));
  };
  exchange_abi::updateReplicas(*meta, *layout, *weights, *indices, *offsets,
                               *gradient, lr, maxOverRanks, sumOverRanks);
  accumulatedSeconds += MPI_Wtime() - start;
}

extern "C" void replicaSGDI32(MemRefDescriptor<int64_t, 1> *meta,
                              MemRefDescriptor<int64_t, 1> *layout,
                              MemRefDescriptor<float, 1> *weights,
                              MemRefDescriptor<int32_t, 1> *indices,
                              MemRefDescriptor<int32_t, 1> *offsets,
                              MemRefDescriptor<float, 2> *gradient, float lr) {
  replicaSGD(meta, layout, weights, indices, offsets, gradient, lr);
}

extern "C" void replicaSGDI64(MemRefDescriptor<int64_t, 1> *meta,
                              MemRefDescriptor<int64_t, 1> *layout,
                              MemRefDescriptor<float, 1> *weights,
                              MemRefDescriptor<int64_t, 1> *indices,
                              MemRefDescriptor<int64_t, 1> *offsets,
                              MemRefDescriptor<float, 2> *gradient, float lr) {
  replicaSGD(meta, layout, weights, indices, offsets, gradient, lr);
}

} // namespace

std::vector<std::pair<std::string, void *>> mpi::collectiveEntryPoints() {
  auto entry = [](const char *name, void *address) {
    return std::make_pair(std::string("_mlir_ciface_") + name, address);
  };
  return {
      entry(exchange_abi::kExchangeF32, exchangeEntryPoint()),
      entry(exchange_abi::kExchangeGradientF32, exchangeGradientEntryPoint()),
      entry(exchange_abi::kReduceScatterF32,
            reinterpret_cast<void *>(&reduceScatterF32)),
      entry(exchange_abi::kReduceScatterGradientF32,
            reinterpret_cast<void *>(&reduceScatterGradientF32)),
      entry(exchange_abi::kReplicaSGDI32,
            reinterpret_cast<void *>(&replicaSGDI32)),
      entry(exchange_abi::kReplicaSGDI64,
            reinterpret_cast<void *>(&replicaSGDI64)),
  };
}

void *mpi::exchangeEntryPoint() {
  return reinterpret_cast<void *>(&exchangeF32);
}

void *mpi::exchangeGradientEntryPoint() {
  return reinterpret_cast<void *>(&exchangeGradientF32);
}
