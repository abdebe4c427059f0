//===- NCCLExchangeEntry.cpp - The exchange's C interface on NCCL ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The functions lowered host code calls for the exchange (both directions),
// the reduce-scatter of row pieces (both directions) and the update of
// replicas when it is linked against libneuroshard_nccl_exchange.so. Their
// memrefs are host buffers: the CUDA host path downloads every kernel result to
// the host before the exchange sees it. Keeping the exchange's operands on the
// device needs the lowering to pass device memrefs, which it does not do
// yet.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/NCCL/NCCLExchange.h"
#include "neuroshard/Runtime/ReplicaUpdate.h"

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
static_assert(
    std::is_same_v<decltype(&_mlir_ciface_neuroshard_reduce_scatter_f32),
                   ReduceScatterF32Function> &&
        std::is_same_v<
            decltype(&_mlir_ciface_neuroshard_reduce_scatter_gradient_f32),
            ReduceScatterF32Function> &&
        std::is_same_v<decltype(&_mlir_ciface_neuroshard_replica_sgd_i32),
                       ReplicaSGDFunction<int32_t>> &&
        std::is_same_v<decltype(&_mlir_ciface_neuroshard_replica_sgd_i64),
                       ReplicaSGDFunction<int64_t>>,
    "the NCCL entry points of row pieces and replicas must have the "
    "signatures of their C interfaces");

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

/// This process's rank in the job; MPI must be initialised.
int jobRankOrAbort() {
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
  return jobRank;
}

/// Ends the job naming this rank when `why` says why a call failed.
void abortOnFailure(const std::string &why, int jobRank) {
  if (!why.empty())
    abortJob("rank " + std::to_string(jobRank) + ": " + why);
}

/// The process's communicator, opened by the first call of any entry point;
/// a failure to open it ends the job on every rank.
nccl::Communicator &communicatorOrAbort(int jobRank) {
  nccl::Communicator *communicator = nullptr;
  std::string why = nccl::processCommunicator(communicator);
  if (!why.empty())
    abortJobOnEveryRank(why, jobRank);
  return *communicator;
}

/// One call of either direction. `input` and `output` are what it reads and
/// writes (host memory): forward the rank's buffer and its result, backward
/// the result's gradient and the buffer's gradient.
void exchange(bool forward, const MemRefDescriptor<float, 2> &input,
              MemRefDescriptor<float, 2> &output,
              const MemRefDescriptor<int64_t, 1> &widths,
              const MemRefDescriptor<int64_t, 1> &batches, int64_t rank) {
  int jobRank = jobRankOrAbort();
  const MemRefDescriptor<float, 2> &buffer = forward ? input : output;
  const MemRefDescriptor<float, 2> &result = forward ? output : input;
  ExchangeLayout layout;
  abortOnFailure(
      readExchangeCall(buffer, result, widths, batches, rank, layout), jobRank);
  nccl::Communicator &communicator = communicatorOrAbort(jobRank);
  const float *in = input.aligned + input.offset;
  float *out = output.aligned + output.offset;
  abortOnFailure(forward
                     ? communicator.exchangeForwardFromHost(layout, in, out)
                     : communicator.exchangeBackwardFromHost(layout, in, out),
                 jobRank);
}

/// One call of either side of the reduce-scatter: `whole` is the B x W
/// buffer (the partial sums, or the gradient of all of them), `own` the
/// rank's B_rank x W rows (their sum, or its gradient).
void reduceScatter(bool forward, MemRefDescriptor<float, 2> &whole,
                   MemRefDescriptor<float, 2> &own,
                   const MemRefDescriptor<int64_t, 1> &batches,
                   const MemRefDescriptor<int64_t, 1> &offsets, int64_t rank) {
  int jobRank = jobRankOrAbort();
  ExchangeLayout layout;
  std::vector<float> divisors;
  abortOnFailure(readReduceScatterCall(whole, own, batches, offsets, rank,
                                       layout, divisors),
                 jobRank);
  nccl::Communicator &communicator = communicatorOrAbort(jobRank);
  float *wholeData = whole.aligned + whole.offset;
  float *ownData = own.aligned + own.offset;
  int64_t width = whole.sizes[1];
  if (forward) {
    abortOnFailure(
        communicator.reduceScatterFromHost(layout, wholeData, ownData),
        jobRank);
    divideBags(divisors, width, ownData);
    return;
  }
  // The adjoint of the mean's division, then every rank's rows gathered.
  std::vector<float> scaled(ownData,
                            ownData + layout.batches[layout.rank] * width);
  divideBags(divisors, width, scaled.data());
  abortOnFailure(
      communicator.allGatherFromHost(layout, scaled.data(), wholeData),
      jobRank);
}

/// The replicas' update: the extents agreed over MPI (a few integers), the
/// gradients summed with ncclAllReduce.
template <typename Index>
void replicaSGD(MemRefDescriptor<int64_t, 1> *meta,
                MemRefDescriptor<int64_t, 1> *layout,
                MemRefDescriptor<float, 1> *weights,
                MemRefDescriptor<Index, 1> *indices,
                MemRefDescriptor<Index, 1> *offsets,
                MemRefDescriptor<float, 2> *gradient, float lr) {
  int jobRank = jobRankOrAbort();
  nccl::Communicator &communicator = communicatorOrAbort(jobRank);
  auto maxOverRanks = [](int64_t *values, size_t count) {
    MPI_Allreduce(MPI_IN_PLACE, values, int(count), MPI_INT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
  };
  auto sumOverRanks = [&](float *values, size_t count) {
    abortOnFailure(communicator.allReduceSumFromHost(values, count), jobRank);
  };
  updateReplicas(*meta, *layout, *weights, *indices, *offsets, *gradient, lr,
                 maxOverRanks, sumOverRanks);
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

extern "C" void _mlir_ciface_neuroshard_reduce_scatter_f32(
    MemRefDescriptor<float, 2> *partial, MemRefDescriptor<float, 2> *result,
    MemRefDescriptor<int64_t, 1> *batches,
    MemRefDescriptor<int64_t, 1> *offsets, int64_t rank) {
  reduceScatter(true, *partial, *result, *batches, *offsets, rank);
}

extern "C" void _mlir_ciface_neuroshard_reduce_scatter_gradient_f32(
    MemRefDescriptor<float, 2> *gradient, MemRefDescriptor<float, 2> *result,
    MemRefDescriptor<int64_t, 1> *batches,
    MemRefDescriptor<int64_t, 1> *offsets, int64_t rank) {
  reduceScatter(false, *result, *gradient, *batches, *offsets, rank);
}

extern "C" void _mlir_ciface_neuroshard_replica_sgd_i32(
    MemRefDescriptor<int64_t, 1> *meta, MemRefDescriptor<int64_t, 1> *layout,
    MemRefDescriptor<float, 1> *weights, MemRefDescriptor<int32_t, 1> *indices,
    MemRefDescriptor<int32_t, 1> *offsets, MemRefDescriptor<float, 2> *gradient,
    float lr) {
  replicaSGD(meta, layout, weights, indices, offsets, gradient, lr);
}

extern "C" void _mlir_ciface_neuroshard_replica_sgd_i64(
    MemRefDescriptor<int64_t, 1> *meta, MemRefDescriptor<int64_t, 1> *layout,
    MemRefDescriptor<float, 1> *weights, MemRefDescriptor<int64_t, 1> *indices,
    MemRefDescriptor<int64_t, 1> *offsets, MemRefDescriptor<float, 2> *gradient,
    float lr) {
  replicaSGD(meta, layout, weights, indices, offsets, gradient, lr);
}
