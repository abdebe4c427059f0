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
