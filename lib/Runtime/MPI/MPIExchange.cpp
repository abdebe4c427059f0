//===- MPIExchange.cpp - The exchange over MPI ----------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/MPI/MPIExchange.h"

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
  std::string why = exchange_abi::checkExchangeLayout(layout);
  if (!why.empty())
    return why;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (layout.ranks() != size)
    return "the exchange is between " + std::to_string(layout.ranks()) +
           " ranks but the job has " + std::to_string(size);
  if (layout.rank != rank)
    return "the program of rank " + std::to_string(layout.rank) +
           " runs on rank " + std::to_string(rank);
  return "";
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

} // namespace

std::string mpi::exchangeForward(const ExchangeLayout &layout,
                                 const float *buffer, float *result) {
  double start = MPI_Wtime();
  Blocks blocks;
  if (std::string why = prepare(layout, blocks); !why.empty())
    return why;
  std::vector<float> &packed = packingBuffer(layout);
  MPI_Alltoallv(buffer, blocks.sendCounts.data(), blocks.sendOffsets.data(),
                MPI_FLOAT, packed.data(), blocks.recvCounts.data(),
                blocks.recvOffsets.data(), MPI_FLOAT, MPI_COMM_WORLD);
  exchange_abi::unpackColumns(layout, packed.data(), result);
  accumulatedSeconds += MPI_Wtime() - start;
  return "";
}

std::string mpi::exchangeBackward(const ExchangeLayout &layout,
                                  const float *gradient,
                                  float *bufferGradient) {
  double start = MPI_Wtime();
  Blocks blocks;
  if (std::string why = prepare(layout, blocks); !why.empty())
    return why;
  std::vector<float> &packed = packingBuffer(layout);
  exchange_abi::packColumns(layout, gradient, packed.data());
  MPI_Alltoallv(packed.data(), blocks.recvCounts.data(),
                blocks.recvOffsets.data(), MPI_FLOAT, bufferGradient,
                blocks.sendCounts.data(), blocks.sendOffsets.data(), MPI_FLOAT,
                MPI_COMM_WORLD);
  accumulatedSeconds += MPI_Wtime() - start;
  return "";
}

double mpi::exchangeSeconds() { return accumulatedSeconds; }

void mpi::resetExchangeSeconds() { accumulatedSeconds = 0.0; }

namespace {

/// MLIR's descriptor of a memref of rank N (CRunnerUtils.h's layout).
template <typename T, int N> struct Descriptor {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

[[noreturn]] void abortJob(const std::string &why) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "neuroshard exchange: error: rank %d: %s\n", rank,
               why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

bool rowMajor(const Descriptor<float, 2> &d) {
  return d.strides[1] == 1 && (d.sizes[0] <= 1 || d.strides[0] == d.sizes[1]);
}

extern "C" void exchangeF32(Descriptor<float, 2> *buffer,
                            Descriptor<float, 2> *result,
                            Descriptor<int64_t, 1> *widths,
                            Descriptor<int64_t, 1> *batches, int64_t rank) {
  ExchangeLayout layout;
  for (int64_t i = 0; i < widths->sizes[0]; ++i)
    layout.widths.push_back(
        widths->aligned[widths->offset + i * widths->strides[0]]);
  for (int64_t i = 0; i < batches->sizes[0]; ++i)
    layout.batches.push_back(
        batches->aligned[batches->offset + i * batches->strides[0]]);
  layout.rank = rank;
  std::string why = exchange_abi::checkExchangeLayout(layout);
  if (why.empty() && (!rowMajor(*buffer) || !rowMajor(*result)))
    why = "the exchange's buffers are not row-major";
  if (why.empty() && (buffer->sizes[0] != layout.batch() ||
                      buffer->sizes[1] != layout.widths[rank] ||
                      result->sizes[0] != layout.batches[rank] ||
                      result->sizes[1] != layout.totalWidth()))
    why = "the exchange's buffers do not match its widths and batches";
  if (why.empty())
    why = mpi::exchangeForward(layout, buffer->aligned + buffer->offset,
                               result->aligned + result->offset);
  if (!why.empty())
    abortJob(why);
}

} // namespace

void *mpi::exchangeEntryPoint() {
  return reinterpret_cast<void *>(&exchangeF32);
}
