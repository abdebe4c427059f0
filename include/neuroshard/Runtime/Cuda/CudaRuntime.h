//===- CudaRuntime.h - NeuroShard's own CUDA driver runtime -----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A small layer over the CUDA driver API: device and context, modules from
// cubin/PTX/fatbin bytes, launches, memory, streams and events. Debian's MLIR
// ships no CUDA runtime wrapper, so the mgpu* entry points that gpu-to-llvm
// code calls (MgpuWrappers.cpp) and the standalone runner both sit on this.
//
// The driver library is opened at run time (libcuda.so.1, or the file named
// by $NEUROSHARD_CUDA_DRIVER) rather than linked, so that every binary starts
// on a machine without an NVIDIA driver and reports that plainly instead of
// failing in the dynamic loader. Plain C++ without exceptions or LLVM: every
// call returns a Status whose message names the call and the driver's error.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_CUDA_CUDARUNTIME_H
#define NEUROSHARD_RUNTIME_CUDA_CUDARUNTIME_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace neuroshard {
namespace cuda {

/// Success, or a message such as
/// "cuMemAlloc(1073741824 bytes): CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
class Status {
public:
  Status() = default;
  /// A failure; `driverCode` is the CUresult of the driver call that
  /// failed, 0 when the failure is not a driver error.
  static Status error(std::string message, int driverCode = 0) {
    Status status;
    status.text = message.empty() ? "unknown CUDA error" : std::move(message);
    status.driverCode = driverCode;
    return status;
  }
  bool ok() const { return text.empty(); }
  const std::string &message() const { return text; }
  int code() const { return driverCode; }

private:
  std::string text;
  int driverCode = 0;
};

/// A device address.
using DevicePtr = uint64_t;
/// Opaque driver handles (CUmodule, CUfunction, CUstream, CUevent).
using ModuleHandle = void *;
using FunctionHandle = void *;
using StreamHandle = void *;
using EventHandle = void *;

enum class ModuleFormat { Cubin, Ptx, Fatbin };

/// Parses "cubin", "ptx" or "fatbin"; false for anything else.
bool parseModuleFormat(const std::string &text, ModuleFormat &format);
const char *moduleFormatName(ModuleFormat format);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
  /// Bytes of the L2 cache.
  int l2CacheBytes = 0;
  size_t totalMemory = 0;
  int driverVersion = 0;
};

struct LaunchDims {
  unsigned gridX = 1, gridY = 1, gridZ = 1;
  unsigned blockX = 1, blockY = 1, blockZ = 1;
  unsigned sharedBytes = 0;
};

/// One device's primary context and the operations on it. Every method makes
/// the context current on the calling thread first.
class Runtime {
public:
  /// Loads and initialises the driver and retains the primary context of
  /// device `ordinal`.
  static Status open(int ordinal, std::unique_ptr<Runtime> &out);
  ~Runtime();
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  const DeviceInfo &device() const { return info; }

  /// Loads a module. PTX is compiled by the driver's JIT at `ptxOptLevel`
  /// (0..4) and its log is part of the error; cubin and fatbin images are
  /// checked for their magic numbers first.
  Status loadModule(const void *image, size_t size, ModuleFormat format,
                    ModuleHandle &module, int ptxOptLevel = 4);
  Status unloadModule(ModuleHandle module);
  Status getFunction(ModuleHandle module, const char *name,
                     FunctionHandle &function);
  /// `params` holds one pointer per kernel parameter (cuLaunchKernel).
  Status launch(FunctionHandle function, const LaunchDims &dims,
                StreamHandle stream, void **params);

  Status alloc(size_t bytes, DevicePtr &ptr, bool managed = false);
  Status free(DevicePtr ptr);
  /// Pinned host memory mapped into the device's address space
  /// (cuMemHostAlloc with DEVICEMAP): the host writes it at `host`, kernels
  /// read and write it at `device`, across the host link.
  Status allocMappedHost(size_t bytes, void *&host, DevicePtr &device);
  Status freeMappedHost(void *host);
  Status copyToDevice(DevicePtr dst, const void *src, size_t bytes);
  Status copyToHost(void *dst, DevicePtr src, size_t bytes);
  Status copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes);
  /// Copy between any two addresses (unified addressing), on `stream`.
  Status copyAsync(void *dst, const void *src, size_t bytes,
                   StreamHandle stream);
  Status memset32Async(DevicePtr dst, uint32_t value, size_t count,
                       StreamHandle stream);
  Status memset16Async(DevicePtr dst, uint16_t value, size_t count,
                       StreamHandle stream);

  Status createStream(StreamHandle &stream);
  Status destroyStream(StreamHandle stream);
  Status synchronizeStream(StreamHandle stream);
  Status streamWaitEvent(StreamHandle stream, EventHandle event);
  Status synchronize();

  Status createEvent(EventHandle &event);
  Status destroyEvent(EventHandle event);
  Status recordEvent(EventHandle event, StreamHandle stream);
  Status synchronizeEvent(EventHandle event);
  /// Milliseconds between two recorded, completed events.
  Status elapsedMs(EventHandle start, EventHandle end, float &ms);

private:
  Runtime() = default;
  Status makeCurrent();

  DeviceInfo info;
  int deviceHandle = 0;
  void *context = nullptr;
};

} // namespace cuda
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_CUDA_CUDARUNTIME_H
