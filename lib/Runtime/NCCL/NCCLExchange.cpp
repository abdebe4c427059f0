//===- NCCLExchange.cpp - The exchange over NCCL --------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA runtime API is linked statically: it opens the driver on its
// first call and reports a missing driver as an error of that call, so a
// program that links this file starts anywhere. NCCL does the same.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/NCCL/NCCLExchange.h"

#include "neuroshard/Runtime/ExchangeSchedule.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <dlfcn.h>

#include <climits>
#include <thread>

using namespace neuroshard;
using namespace neuroshard::nccl;
using exchange_abi::ExchangeLayout;
using exchange_abi::ExchangeSchedule;

namespace {

/// "call: cudaErrorName (description)" for a failed runtime call.
std::string cudaFailure(cudaError_t error, const std::string &call) {
  if (error == cudaSuccess)
    return "";
  return call + ": " + cudaGetErrorName(error) + " (" +
         cudaGetErrorString(error) + ")";
}

/// "call: NCCL's description (its last message)" for a failed NCCL call.
std::string ncclFailure(ncclResult_t result, const std::string &call,
                        ncclComm_t comm = nullptr) {
  if (result == ncclSuccess)
    return "";
  std::string message = call + ": " + ncclGetErrorString(result);
  const char *last = ncclGetLastError(comm);
  if (last && *last)
    message += std::string(" (") + last + ")";
  return message;
}

size_t bytes(size_t count) { return sizeof(float) * count; }

/// "no NVIDIA driver (...); " when the driver library cannot be loaded,
/// which the CUDA runtime reports only as a driver too old for it.
std::string missingDriver() {
  void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) {
    dlclose(driver);
    return "";
  }
  const char *why = dlerror();
  return std::string("no NVIDIA driver (") + (why ? why : "libcuda.so.1") +
         "); ";
}

} // namespace

std::string nccl::firstFailure(const std::string &why) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int mine = why.empty() ? INT_MAX : rank, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX)
    return "";
  std::string text = rank == first ? why : "";
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, first, MPI_COMM_WORLD);
  text.resize(static_cast<size_t>(length));
  MPI_Bcast(&text[0], length, MPI_CHAR, first, MPI_COMM_WORLD);
  return "rank " + std::to_string(first) + ": " + text;
}

//===----------------------------------------------------------------------===//
// DeviceArray
//===----------------------------------------------------------------------===//

DeviceArray::~DeviceArray() {
  if (pointer)
    cudaFree(pointer);
}

std::string DeviceArray::reserve(size_t count) {
  if (count <= capacity)
    return "";
  if (pointer)
    cudaFree(pointer);
  pointer = nullptr;
  capacity = 0;
  void *allocated = nullptr;
  std::string why =
      cudaFailure(cudaMalloc(&allocated, bytes(count)),
                  "cudaMalloc(" + std::to_string(bytes(count)) + " bytes)");
  if (!why.empty())
    return why;
  pointer = static_cast<float *>(allocated);
  capacity = count;
  return "";
}

std::string DeviceArray::upload(const float *host, size_t count,
                                Stream stream) {
  if (count == 0)
    return "";
  return cudaFailure(cudaMemcpyAsync(pointer, host, bytes(count),
                                     cudaMemcpyHostToDevice, stream),
                     "cudaMemcpyAsync(" + std::to_string(bytes(count)) +
                         " bytes to the device)");
}

std::string DeviceArray::download(float *host, size_t count,
                                  Stream stream) const {
  if (count == 0)
    return "";
  return cudaFailure(cudaMemcpyAsync(host, pointer, bytes(count),
                                     cudaMemcpyDeviceToHost, stream),
                     "cudaMemcpyAsync(" + std::to_string(bytes(count)) +
                         " bytes to the host)");
}

//===----------------------------------------------------------------------===//
// Communicator
//===----------------------------------------------------------------------===//

std::string Communicator::selectDevice() {
  // The ranks of this node, in rank order: local rank i takes GPU i.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, jobRank,
                      MPI_INFO_NULL, &node);
  int localRank = 0, localRanks = 1;
  MPI_Comm_rank(node, &localRank);
  MPI_Comm_size(node, &localRanks);
  MPI_Comm_free(&node);

  int devices = 0;
  if (std::string why =
          cudaFailure(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
      !why.empty())
    return "no CUDA device: " + missingDriver() + why;
  if (devices == 0)
    return "no CUDA device: the CUDA runtime finds none";
  // NCCL refuses two ranks on one GPU.
  if (localRanks > devices)
    return std::to_string(localRanks) +
           " ranks run on this node but it has only " +
           std::to_string(devices) +
           " CUDA device(s); start at most one rank per GPU";
  deviceOrdinal = localRank;
  if (std::string why = makeCurrent(); !why.empty())
    return why;
  cudaDeviceProp properties;
  if (std::string why =
          cudaFailure(cudaGetDeviceProperties(&properties, deviceOrdinal),
                      "cudaGetDeviceProperties");
      !why.empty())
    return why;
  name = properties.name;
  return "";
}

std::string Communicator::makeCurrent() {
  return cudaFailure(cudaSetDevice(deviceOrdinal),
                     "cudaSetDevice(" + std::to_string(deviceOrdinal) + ")");
}

std::string Communicator::open(std::unique_ptr<Communicator> &out) {
  std::unique_ptr<Communicator> c(new Communicator());
  MPI_Comm_rank(MPI_COMM_WORLD, &c->jobRank);
  MPI_Comm_size(MPI_COMM_WORLD, &c->jobRanks);
  if (std::string why = firstFailure(c->selectDevice()); !why.empty())
    return why;

  ncclUniqueId id;
  std::string why;
  if (c->jobRank == 0)
    why = ncclFailure(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (why = firstFailure(why); !why.empty())
    return why;
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);

  // Every rank reaches ncclCommInitRank only when every rank could select
  // its GPU; a failure inside it on one rank alone may still leave the
  // others waiting there, which only aborting the job ends.
  ncclComm_t comm = nullptr;
  why = ncclFailure(ncclCommInitRank(&comm, c->jobRanks, id, c->jobRank),
                    "ncclCommInitRank");
  c->comm = comm;
  if (why.empty())
    why = cudaFailure(
        cudaStreamCreateWithFlags(&c->ownStream, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  if (why = firstFailure(why); !why.empty()) {
    // The other ranks are not going to use theirs: no need to wait for them.
    if (c->comm)
      ncclCommAbort(c->comm);
    c->comm = nullptr;
    return why;
  }
  out = std::move(c);
  return "";
}

Communicator::~Communicator() {
  if (comm)
    ncclCommDestroy(comm);
  if (ownStream)
    cudaStreamDestroy(ownStream);
}

std::string Communicator::checkJob(const ExchangeLayout &layout) const {
  return exchange_abi::checkExchangeJob(layout, jobRank, jobRanks);
}

namespace {

/// The messages of `schedule` as one NCCL group: sends from `sendBase`,
/// receives into `receiveBase`.
std::string runMessages(const ExchangeSchedule &schedule, const float *sendBase,
                        float *receiveBase, ncclComm_t comm, Stream stream) {
  std::string why = ncclFailure(ncclGroupStart(), "ncclGroupStart");
  if (!why.empty())
    return why;
  // The group is closed even after a failed call, so that NCCL drops it.
  for (const exchange_abi::PeerMessage &m : schedule.sends)
    if (why.empty())
      why = ncclFailure(ncclSend(sendBase + m.offset, m.count, ncclFloat32,
                                 int(m.peer), comm, stream),
                        "ncclSend(" + std::to_string(m.count) +
                            " floats to rank " + std::to_string(m.peer) + ")",
                        comm);
  for (const exchange_abi::PeerMessage &m : schedule.receives)
    if (why.empty())
      why = ncclFailure(ncclRecv(receiveBase + m.offset, m.count, ncclFloat32,
                                 int(m.peer), comm, stream),
                        "ncclRecv(" + std::to_string(m.count) +
                            " floats from rank " + std::to_string(m.peer) + ")",
                        comm);
  std::string end = ncclFailure(ncclGroupEnd(), "ncclGroupEnd", comm);
  return why.empty() ? end : why;
}

/// The 2-D copies of `schedule` from `source` to `destination` (device
/// memory both).
std::string runCopies(const ExchangeSchedule &schedule, const float *source,
                      float *destination, Stream stream) {
  for (const exchange_abi::BlockCopy &copy : schedule.copies)
    if (std::string why = cudaFailure(
            cudaMemcpy2DAsync(destination + copy.destinationOffset,
                              bytes(copy.destinationPitch),
                              source + copy.sourceOffset,
                              bytes(copy.sourcePitch), bytes(copy.width),
                              copy.rows, cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpy2DAsync(" + std::to_string(copy.rows) + " rows of " +
                std::to_string(copy.width) + " floats)");
        !why.empty())
      return why;
  return "";
}

} // namespace

std::string Communicator::prepare(const ExchangeLayout &layout) {
  std::string why = checkJob(layout);
  if (why.empty())
    why = makeCurrent();
  if (why.empty())
    why = packed.reserve(size_t(layout.packedSize()));
  return why;
}

std::string Communicator::exchangeForward(const ExchangeLayout &layout,
                                          const float *deviceBuffer,
                                          float *deviceResult, Stream stream) {
  if (std::string why = prepare(layout); !why.empty())
    return why;
  ExchangeSchedule schedule = exchange_abi::forwardSchedule(layout);
  std::string why =
      runMessages(schedule, deviceBuffer, packed.data(), comm, stream);
  return why.empty() ? runCopies(schedule, packed.data(), deviceResult, stream)
                     : why;
}

std::string Communicator::exchangeBackward(const ExchangeLayout &layout,
                                           const float *deviceGradient,
                                           float *deviceBufferGradient,
                                           Stream stream) {
  if (std::string why = prepare(layout); !why.empty())
    return why;
  ExchangeSchedule schedule = exchange_abi::backwardSchedule(layout);
  std::string why = runCopies(schedule, deviceGradient, packed.data(), stream);
  return why.empty() ? runMessages(schedule, packed.data(),
                                   deviceBufferGradient, comm, stream)
                     : why;
}

template <typename Collective>
std::string Communicator::runFromHost(const float *input, size_t inputCount,
                                      float *output, size_t outputCount,
                                      Collective collective) {
  std::string why = makeCurrent();
  if (why.empty())
    why = stagedInput.reserve(inputCount);
  if (why.empty())
    why = stagedOutput.reserve(outputCount);
  if (why.empty())
    why = stagedInput.upload(input, inputCount, ownStream);
  if (why.empty())
    why = collective(stagedInput.data(), stagedOutput.data());
  if (why.empty())
    why = stagedOutput.download(output, outputCount, ownStream);
  if (why.empty())
    why = synchronize(ownStream);
  return why;
}

std::string Communicator::exchangeFromHost(const ExchangeLayout &layout,
                                           bool forward, const float *input,
                                           float *output) {
  if (std::string why = checkJob(layout); !why.empty())
    return why;
  // The B x W_rank buffer (or its gradient) and the B_rank x sum(W) result
  // (or its gradient).
  size_t bufferCount = size_t(layout.batch() * layout.widths[layout.rank]);
  size_t resultCount =
      size_t(layout.batches[layout.rank] * layout.totalWidth());
  return runFromHost(
      input, forward ? bufferCount : resultCount, output,
      forward ? resultCount : bufferCount, [&](const float *in, float *out) {
        return forward ? exchangeForward(layout, in, out, ownStream)
                       : exchangeBackward(layout, in, out, ownStream);
      });
}

/// Floats of rank d's rows of a B x W buffer of `layout` (every rank W
/// columns), and where they start.
static size_t rowsCount(const ExchangeLayout &layout, int64_t d) {
  return size_t(layout.batches[d] * layout.widths[d]);
}
static size_t rowsOffset(const ExchangeLayout &layout, int64_t d) {
  return size_t(layout.rowBegin(d) * layout.widths[d]);
}

/// One NCCL group of `call(d)` for every rank d of `layout`, after the
/// checks every collective makes; the group is closed even after a failed
/// call, so that NCCL drops it.
template <typename Call>
std::string Communicator::groupPerRank(const ExchangeLayout &layout,
                                       Call call) {
  if (std::string why = checkJob(layout); !why.empty())
    return why;
  if (std::string why = makeCurrent(); !why.empty())
    return why;
  std::string why = ncclFailure(ncclGroupStart(), "ncclGroupStart");
  if (!why.empty())
    return why;
  for (int64_t d = 0; d < layout.ranks() && why.empty(); ++d)
    why = call(d);
  std::string end = ncclFailure(ncclGroupEnd(), "ncclGroupEnd", comm);
  return why.empty() ? end : why;
}

std::string Communicator::reduceScatter(const ExchangeLayout &layout,
                                        const float *devicePartial,
                                        float *deviceOwn, Stream stream) {
  // Rank d's rows summed into rank d's buffer; the others' receive buffer
  // is not written (NCCL reads it only at the root).
  return groupPerRank(layout, [&](int64_t d) {
    size_t count = rowsCount(layout, d);
    return ncclFailure(ncclReduce(devicePartial + rowsOffset(layout, d),
                                  deviceOwn, count, ncclFloat32, ncclSum,
                                  int(d), comm, stream),
                       "ncclReduce(" + std::to_string(count) +
                           " floats to rank " + std::to_string(d) + ")",
                       comm);
  });
}

std::string Communicator::allGather(const ExchangeLayout &layout,
                                    const float *deviceOwn, float *deviceWhole,
                                    Stream stream) {
  return groupPerRank(layout, [&](int64_t d) {
    size_t count = rowsCount(layout, d);
    return ncclFailure(ncclBroadcast(deviceOwn,
                                     deviceWhole + rowsOffset(layout, d), count,
                                     ncclFloat32, int(d), comm, stream),
                       "ncclBroadcast(" + std::to_string(count) +
                           " floats from rank " + std::to_string(d) + ")",
                       comm);
  });
}

std::string Communicator::allReduceSum(const float *deviceValues,
                                       float *deviceSum, size_t count,
                                       Stream stream) {
  if (std::string why = makeCurrent(); !why.empty())
    return why;
  return ncclFailure(ncclAllReduce(deviceValues, deviceSum, count, ncclFloat32,
                                   ncclSum, comm, stream),
                     "ncclAllReduce(" + std::to_string(count) + " floats)",
                     comm);
}

std::string Communicator::reduceScatterFromHost(const ExchangeLayout &layout,
                                                const float *partial,
                                                float *own) {
  if (std::string why = checkJob(layout); !why.empty())
    return why;
  return runFromHost(partial, size_t(layout.batch() * layout.widths[0]), own,
                     rowsCount(layout, layout.rank),
                     [&](const float *in, float *out) {
                       return reduceScatter(layout, in, out, ownStream);
                     });
}

std::string Communicator::allGatherFromHost(const ExchangeLayout &layout,
                                            const float *own, float *whole) {
  if (std::string why = checkJob(layout); !why.empty())
    return why;
  return runFromHost(own, rowsCount(layout, layout.rank), whole,
                     size_t(layout.batch() * layout.widths[0]),
                     [&](const float *in, float *out) {
                       return allGather(layout, in, out, ownStream);
                     });
}

std::string Communicator::allReduceSumFromHost(float *values, size_t count) {
  return runFromHost(values, count, values, count,
                     [&](const float *in, float *out) {
                       return allReduceSum(in, out, count, ownStream);
                     });
}

std::string Communicator::exchangeForwardFromHost(const ExchangeLayout &layout,
                                                  const float *buffer,
                                                  float *result) {
  return exchangeFromHost(layout, true, buffer, result);
}

std::string Communicator::exchangeBackwardFromHost(const ExchangeLayout &layout,
                                                   const float *gradient,
                                                   float *bufferGradient) {
  return exchangeFromHost(layout, false, gradient, bufferGradient);
}

std::string Communicator::synchronize(Stream stream) {
  if (std::string why = makeCurrent(); !why.empty())
    return why;
  // Polled rather than cudaStreamSynchronize: a peer that failed leaves
  // this rank's receives pending for ever, and only the communicator's
  // asynchronous error says so.
  for (;;) {
    cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess)
      return "";
    if (state != cudaErrorNotReady)
      return cudaFailure(state, "cudaStreamQuery");
    ncclResult_t error = ncclSuccess;
    std::string why = ncclFailure(ncclCommGetAsyncError(comm, &error),
                                  "ncclCommGetAsyncError", comm);
    if (why.empty() && error != ncclSuccess && error != ncclInProgress)
      why = ncclFailure(error, "the exchange (asynchronous NCCL error)", comm);
    if (!why.empty())
      return why;
    std::this_thread::yield();
  }
}

namespace {

// Never destroyed at exit: destructors then may run after MPI_Finalize or
// the CUDA runtime's own teardown.
Communicator *openedCommunicator = nullptr;
std::string openFailure;

} // namespace

std::string nccl::processCommunicator(Communicator *&out) {
  if (!openedCommunicator && openFailure.empty()) {
    std::unique_ptr<Communicator> opened;
    openFailure = Communicator::open(opened);
    openedCommunicator = opened.release();
  }
  out = openedCommunicator;
  return openFailure;
}

void nccl::closeProcessCommunicator() {
  delete openedCommunicator;
  openedCommunicator = nullptr;
  openFailure.clear();
}
