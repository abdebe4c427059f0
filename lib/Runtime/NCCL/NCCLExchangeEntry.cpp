//===- NCCLExchangeEntry.cpp - The exchange's C interface on NCCL ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The functions lowered host code calls for the exchange (both directions)
// when it is linked against libneuroshard_nccl_exchange.so. Their memrefs
// are host buffers: the CUDA host path downloads every kernel result to the
// host before the exchange sees it. Keeping the exchange's operands on the
// device needs the lowering to pass device memrefs, which it does not do
// yet.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/NCCL/NCCLExchange.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

using namespace neuroshard;
using namespace neuroshard::exchange_abi;

static_assert(
    std::is_same_v<decltype(&_mlir_ciface_neuroshard_exchange_f32),
                   ExchangeF32Function> &&
        std::is_same_v<decltype(&_mlir_ciface_neuroshard_exchange_gradient_f32),
                       ExchangeF32Function>,
    "the NCCL entry points must have the signature of the "
    "exchange's C interface");

namespace {

/// Prints `line` and ends the job: the other ranks may wait in the exchange
/// for this one.
[[noreturn]] void abortJob(const std::string &line) {
  std::fprintf(stderr, "neuroshard exchange: error: %s\n", line.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

/// The same for a failure every rank knows of: rank 0 says it, once, before
/// any rank ends the job.
[[noreturn]] void abortJobOnEveryRank(const std::string &line, int jobRank) {
  if (jobRank == 0) {
    std::fprintf(stderr, "neuroshard exchange: error: %s\n", line.c_str());
    std::fflush(stderr);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

/// One call of either direction. `input` and `output` are what it reads and
/// writes (host memory): forward the rank's buffer and its result, backward
/// the result's gradient and the buffer's gradient.
void exchange(bool forward, const MemRefDescriptor<float, 2> &input,
              MemRefDescriptor<float, 2> &output,
              const MemRefDescriptor<int64_t, 1> &widths,
              const MemRefDescriptor<int64_t, 1> &batches, int64_t rank) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    std::fprintf(stderr, "neuroshard exchange: error: MPI is not initialised; "
                         "the program must call MPI_Init before the "
                         "exchange\n");
    std::abort();
  }
  int jobRank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &jobRank);
  const MemRefDescriptor<float, 2> &buffer = forward ? input : output;
  const MemRefDescriptor<float, 2> &result = forward ? output : input;
  ExchangeLayout layout;
  std::string why =
      readExchangeCall(buffer, result, widths, batches, rank, layout);
  if (!why.empty())
    abortJob("rank " + std::to_string(jobRank) + ": " + why);
  nccl::Communicator *communicator = nullptr;
  why = nccl::processCommunicator(communicator);
  if (!why.empty())
    abortJobOnEveryRank(why, jobRank);
  const float *in = input.aligned + input.offset;
  float *out = output.aligned + output.offset;
  why = forward ? communicator->exchangeForwardFromHost(layout, in, out)
                : communicator->exchangeBackwardFromHost(layout, in, out);
  if (!why.empty())
    abortJob("rank " + std::to_string(jobRank) + ": " + why);
}

} // namespace

extern "C" void _mlir_ciface_neuroshard_exchange_f32(
    MemRefDescriptor<float, 2> *buffer, MemRefDescriptor<float, 2> *result,
    MemRefDescriptor<int64_t, 1> *widths, MemRefDescriptor<int64_t, 1> *batches,
    int64_t rank) {
  exchange(true, *buffer, *result, *widths, *batches, rank);
}

extern "C" void _mlir_ciface_neuroshard_exchange_gradient_f32(
    MemRefDescriptor<float, 2> *gradient,
    MemRefDescriptor<float, 2> *bufferGradient,
    MemRefDescriptor<int64_t, 1> *widths, MemRefDescriptor<int64_t, 1> *batches,
    int64_t rank) {
  exchange(false, *gradient, *bufferGradient, *widths, *batches, rank);
}
