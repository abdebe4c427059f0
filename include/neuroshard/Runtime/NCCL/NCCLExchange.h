//===- NCCLExchange.h - The exchange over NCCL ------------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The exchange of ExchangeABI.h between GPUs, one MPI rank per GPU: the
// messages of exchange_abi::forwardSchedule/backwardSchedule as one group of
// ncclSend/ncclRecv on a CUDA stream, and the column blocks unpacked or
// packed with 2-D device-to-device copies on the same stream. The
// collectives of row pieces and replicas too: the reduce-scatter of partial
// sums (a group of ncclReduce), its all-gather (a group of ncclBroadcast),
// and the all-reduce of replicas' gradients (ncclAllReduce).
//
// The communicator is set up over MPI_COMM_WORLD (MPI must be initialised
// by the caller): rank 0 makes NCCL's unique id and broadcasts it, and each
// rank takes the GPU of its rank among the ranks of its node. Every
// failure comes back as a message naming the rank, the call and CUDA's or
// NCCL's error ("rank 1: ncclCommInitRank: unhandled system error (...)"),
// agreed between the ranks before anyone goes on, so that no rank waits for
// one that gave up. Nothing here needs an NVIDIA driver to load: a program
// started without one gets "no CUDA device: ...".
//
// This header needs neither CUDA's nor NCCL's headers: `Stream` is the type
// that both cudaStream_t and CUstream name.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_NCCL_NCCLEXCHANGE_H
#define NEUROSHARD_RUNTIME_NCCL_NCCLEXCHANGE_H

#include "neuroshard/Runtime/ExchangeABI.h"
#include "neuroshard/Runtime/ExchangeCall.h"

#include <cstddef>
#include <memory>
#include <string>

struct CUstream_st;
struct ncclComm;

namespace neuroshard {
namespace nccl {

/// A CUDA stream (cudaStream_t, CUstream).
using Stream = CUstream_st *;

/// Collective over MPI_COMM_WORLD: empty if `why` is empty on every rank,
/// else "rank R: <why of rank R>" for the lowest failing rank R, on every
/// rank.
std::string firstFailure(const std::string &why);

/// Floats in the memory of the current device, freed with the object.
class DeviceArray {
public:
  DeviceArray() = default;
  ~DeviceArray();
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;

  /// Room for at least `count` floats; reallocates (dropping the contents)
  /// only to grow.
  std::string reserve(size_t count);
  float *data() const { return pointer; }

  /// Copies on `stream`; the host side must stay valid until the stream
  /// has run them.
  std::string upload(const float *host, size_t count, Stream stream);
  std::string download(float *host, size_t count, Stream stream) const;

private:
  float *pointer = nullptr;
  size_t capacity = 0;
};

/// A rank's NCCL communicator on MPI_COMM_WORLD, its GPU and its stream.
class Communicator {
public:
  /// Collective: selects this rank's GPU (its rank among the ranks of its
  /// node; a node with fewer GPUs than ranks is refused) and sets up the
  /// communicator. Fails on every rank if it fails on one.
  static std::string open(std::unique_ptr<Communicator> &out);
  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  int rank() const { return jobRank; }
  int ranks() const { return jobRanks; }
  /// The CUDA device ordinal this rank runs on, and its name.
  int device() const { return deviceOrdinal; }
  const std::string &deviceName() const { return name; }
  /// A non-blocking stream of the rank's device, for callers without one.
  Stream stream() const { return ownStream; }

  /// Forward, enqueued on `stream`: `deviceBuffer` is this rank's B x W_rank
  /// fused lookup result, `deviceResult` receives its B_rank x sum(W) slice.
  /// Both are device memory. Returns why it could not be enqueued (a layout
  /// that does not describe this job, a failed call); errors of the
  /// transfer itself show in synchronize().
  std::string exchangeForward(const exchange_abi::ExchangeLayout &layout,
                              const float *deviceBuffer, float *deviceResult,
                              Stream stream);

  /// Backward: `deviceGradient` is the gradient of this rank's B_rank x
  /// sum(W) result; `deviceBufferGradient` receives the gradient of its
  /// B x W_rank buffer.
  std::string exchangeBackward(const exchange_abi::ExchangeLayout &layout,
                               const float *deviceGradient,
                               float *deviceBufferGradient, Stream stream);

  /// The same on host buffers, for the C entry points: uploads the input
  /// to the device, runs the exchange there and downloads the output, on
  /// this communicator's stream. Returns when the output is written.
  std::string
  exchangeForwardFromHost(const exchange_abi::ExchangeLayout &layout,
                          const float *buffer, float *result);
  std::string
  exchangeBackwardFromHost(const exchange_abi::ExchangeLayout &layout,
                           const float *gradient, float *bufferGradient);

  /// The reduce-scatter of row pieces' partial sums, enqueued on `stream`:
  /// `devicePartial` is this rank's B x W partial sums, `deviceOwn`
  /// receives its B_rank x W rows of their sum over the ranks (W is
  /// `layout`'s width of every rank; one ncclReduce per rank's rows, rooted
  /// at that rank, in one group, since the ranks' rows may differ in
  /// number).
  std::string reduceScatter(const exchange_abi::ExchangeLayout &layout,
                            const float *devicePartial, float *deviceOwn,
                            Stream stream);

  /// Its backward, an all-gather: every rank's B_rank x W rows
  /// (`deviceOwn` on each) into the B x W `deviceWhole` (one
  /// ncclBroadcast per rank's rows, in one group).
  std::string allGather(const exchange_abi::ExchangeLayout &layout,
                        const float *deviceOwn, float *deviceWhole,
                        Stream stream);

  /// Sums `count` floats of `deviceValues` over the ranks into `deviceSum`
  /// (which may be the same buffer).
  std::string allReduceSum(const float *deviceValues, float *deviceSum,
                           size_t count, Stream stream);

  /// The three on host buffers, for the C entry points, as
  /// exchangeForwardFromHost; allReduceSumFromHost sums `values` in place.
  std::string reduceScatterFromHost(const exchange_abi::ExchangeLayout &layout,
                                    const float *partial, float *own);
  std::string allGatherFromHost(const exchange_abi::ExchangeLayout &layout,
                                const float *own, float *whole);
  std::string allReduceSumFromHost(float *values, size_t count);

  /// Waits until `stream` has run what was enqueued, and reports an error of
  /// the stream or an asynchronous error of the communicator (a peer that
  /// failed) instead of waiting for ever.
  std::string synchronize(Stream stream);

private:
  Communicator() = default;
  std::string selectDevice();
  std::string makeCurrent();
  std::string checkJob(const exchange_abi::ExchangeLayout &layout) const;
  /// Checks `layout` against the job, makes the device current and sizes
  /// the packing buffer: what both directions do first.
  std::string prepare(const exchange_abi::ExchangeLayout &layout);
  std::string exchangeFromHost(const exchange_abi::ExchangeLayout &layout,
                               bool forward, const float *input, float *output);
  /// Uploads `inputCount` floats of `input`, runs `collective` from the
  /// staged input to the staged output on this communicator's stream, and
  /// downloads `outputCount` floats into `output`.
  /// One NCCL group of call(d) for every rank d, after checking `layout`
  /// against the job.
  template <typename Call>
  std::string groupPerRank(const exchange_abi::ExchangeLayout &layout,
                           Call call);
  template <typename Collective>
  std::string runFromHost(const float *input, size_t inputCount, float *output,
                          size_t outputCount, Collective collective);

  int jobRank = 0, jobRanks = 0, deviceOrdinal = 0;
  std::string name;
  ncclComm *comm = nullptr;
  Stream ownStream = nullptr;
  /// Kept between calls, so that an exchange per training step does not
  /// allocate. Calls on different streams share them, so such calls must
  /// be ordered by the caller.
  DeviceArray packed, stagedInput, stagedOutput;
};

/// The communicator of this process, opened by the first call (collective
/// then) and kept until closeProcessCommunicator() or the end of the
/// process. The C entry point uses it.
std::string processCommunicator(Communicator *&out);

/// Destroys the process's communicator, for a program that ends MPI
/// itself; a later processCommunicator() opens a new one.
void closeProcessCommunicator();

} // namespace nccl
} // namespace neuroshard

/// kExchangeF32's C interface on NCCL, for lowered host code linked against
/// libneuroshard_nccl_exchange.so instead of the MPI runtime. Its memrefs
/// are host memory (the CUDA host path downloads every kernel result), so
/// it stages them through the device: upload, exchange, download. A failure
/// prints one line naming the rank and aborts the job (MPI_Abort).
extern "C" void _mlir_ciface_neuroshard_exchange_f32(
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *buffer,
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *result,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *widths,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *batches,
    int64_t rank);

/// The reduce-scatter of row pieces' partial sums
/// (`neuroshard_reduce_scatter_f32`) and its gradient, an all-gather
/// (`neuroshard_reduce_scatter_gradient_f32`), on host buffers staged
/// through the device, with the mean's division on the host; and the SGD
/// update of replicas (`neuroshard_replica_sgd_i32`/`_i64`), whose
/// gradients are summed with ncclAllReduce. A failure aborts the job as the
/// exchange's does.
extern "C" void _mlir_ciface_neuroshard_reduce_scatter_f32(
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *partial,
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *result,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *batches,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *offsets,
    int64_t rank);
extern "C" void _mlir_ciface_neuroshard_reduce_scatter_gradient_f32(
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *gradient,
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *result,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *batches,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *offsets,
    int64_t rank);
extern "C" void _mlir_ciface_neuroshard_replica_sgd_i32(
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *meta,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *layout,
    neuroshard::exchange_abi::MemRefDescriptor<float, 1> *weights,
    neuroshard::exchange_abi::MemRefDescriptor<int32_t, 1> *indices,
    neuroshard::exchange_abi::MemRefDescriptor<int32_t, 1> *offsets,
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *gradient, float lr);
extern "C" void _mlir_ciface_neuroshard_replica_sgd_i64(
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *meta,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *layout,
    neuroshard::exchange_abi::MemRefDescriptor<float, 1> *weights,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *indices,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *offsets,
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *gradient, float lr);

/// The backward direction's C interface (`neuroshard_exchange_gradient_f32`),
/// the same way: the gradient of the rank's B_rank x sum(W) result in, the
/// gradient of its B x W_rank buffer out, both host memory.
extern "C" void _mlir_ciface_neuroshard_exchange_gradient_f32(
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *gradient,
    neuroshard::exchange_abi::MemRefDescriptor<float, 2> *bufferGradient,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *widths,
    neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1> *batches,
    int64_t rank);

#endif // NEUROSHARD_RUNTIME_NCCL_NCCLEXCHANGE_H
