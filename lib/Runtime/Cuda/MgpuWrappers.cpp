//===- MgpuWrappers.cpp - The mgpu* entry points of gpu-to-llvm code ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Host code lowered by MLIR's gpu-to-llvm calls these C functions (their
// signatures are fixed by that lowering and by the gpu.binary launch
// translation of MLIR 22). They run on the primary context of one device,
// chosen with mgpuSetDefaultDevice before the first call (default 0).
//
// The lowering gives them no way to return an error, so a failure is printed
// to stderr with the driver's error name and text, remembered for
// neuroshardCudaLastError(), and the call returns a null handle; later calls
// that receive a null handle do nothing instead of crashing.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/Cuda/CudaRuntime.h"

#include <cstdio>
#include <mutex>
#include <string>

using neuroshard::cuda::DevicePtr;
using neuroshard::cuda::ModuleFormat;
using neuroshard::cuda::Runtime;
using neuroshard::cuda::Status;

namespace {

/// The wrappers' state. It is never destroyed: gpu-to-llvm code unloads its
/// modules from the program's global destructors, which run after the
/// destructors of this library's statics, so a static here would be gone by
/// then.
struct State {
  std::mutex mutex;
  int defaultDevice = 0;
  std::unique_ptr<Runtime> runtime;
  std::string lastError;
};

State &state() {
  static State *instance = new State;
  return *instance;
}

/// Records and prints a failure; returns true if `status` is one.
bool failed(const Status &status, const char *entry) {
  if (status.ok())
    return false;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.lastError = std::string(entry) + ": " + status.message();
  std::fprintf(stderr, "neuroshard-cuda-runtime: %s\n", s.lastError.c_str());
  return true;
}

/// The runtime of the default device, opened on first use.
Runtime *runtime(const char *entry) {
  State &s = state();
  Status status;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.runtime)
      return s.runtime.get();
    status = Runtime::open(s.defaultDevice, s.runtime);
  }
  if (failed(status, entry))
    return nullptr;
  return s.runtime.get();
}

} // namespace

#define NEUROSHARD_MGPU_EXPORT extern "C" __attribute__((visibility("default")))

/// The last failure of an mgpu* call ("" if none), for hosts that want to
/// check after the fact.
NEUROSHARD_MGPU_EXPORT const char *neuroshardCudaLastError() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.lastError.c_str();
}

NEUROSHARD_MGPU_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.runtime && s.runtime->device().ordinal != device)
    s.runtime.reset();
  s.defaultDevice = device;
}

/// A cubin or fatbin image of `size` bytes.
NEUROSHARD_MGPU_EXPORT void *mgpuModuleLoad(void *data, size_t size) {
  Runtime *rt = runtime("mgpuModuleLoad");
  if (!rt || !data)
    return nullptr;
  const auto *bytes = static_cast<const unsigned char *>(data);
  ModuleFormat format = size >= 4 && bytes[0] == 0x7f ? ModuleFormat::Cubin
                                                      : ModuleFormat::Fatbin;
  void *module = nullptr;
  if (failed(rt->loadModule(data, size, format, module), "mgpuModuleLoad"))
    return nullptr;
  return module;
}

/// A NUL-terminated PTX string, compiled by the driver's JIT.
NEUROSHARD_MGPU_EXPORT void *mgpuModuleLoadJIT(void *data, int optLevel) {
  Runtime *rt = runtime("mgpuModuleLoadJIT");
  if (!rt || !data)
    return nullptr;
  void *module = nullptr;
  const char *text = static_cast<const char *>(data);
  int level = optLevel < 0 ? 0 : optLevel > 4 ? 4 : optLevel;
  if (failed(rt->loadModule(text, std::char_traits<char>::length(text),
                            ModuleFormat::Ptx, module, level),
             "mgpuModuleLoadJIT"))
    return nullptr;
  return module;
}

NEUROSHARD_MGPU_EXPORT void mgpuModuleUnload(void *module) {
  Runtime *rt = runtime("mgpuModuleUnload");
  if (rt && module)
    failed(rt->unloadModule(module), "mgpuModuleUnload");
}

NEUROSHARD_MGPU_EXPORT void *mgpuModuleGetFunction(void *module,
                                                   const char *name) {
  Runtime *rt = runtime("mgpuModuleGetFunction");
  if (!rt || !module || !name)
    return nullptr;
  void *function = nullptr;
  if (failed(rt->getFunction(module, name, function), "mgpuModuleGetFunction"))
    return nullptr;
  return function;
}

NEUROSHARD_MGPU_EXPORT void
mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                 intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                 int32_t sharedBytes, void *stream, void **params, void **extra,
                 size_t paramsCount) {
  Runtime *rt = runtime("mgpuLaunchKernel");
  if (!rt)
    return;
  if (!function) {
    failed(Status::error("no kernel function (its module failed to load)"),
           "mgpuLaunchKernel");
    return;
  }
  (void)extra;
  (void)paramsCount;
  neuroshard::cuda::LaunchDims dims;
  dims.gridX = static_cast<unsigned>(gridX);
  dims.gridY = static_cast<unsigned>(gridY);
  dims.gridZ = static_cast<unsigned>(gridZ);
  dims.blockX = static_cast<unsigned>(blockX);
  dims.blockY = static_cast<unsigned>(blockY);
  dims.blockZ = static_cast<unsigned>(blockZ);
  dims.sharedBytes = static_cast<unsigned>(sharedBytes);
  failed(rt->launch(function, dims, stream, params), "mgpuLaunchKernel");
}

NEUROSHARD_MGPU_EXPORT void *mgpuStreamCreate() {
  Runtime *rt = runtime("mgpuStreamCreate");
  void *stream = nullptr;
  if (!rt || failed(rt->createStream(stream), "mgpuStreamCreate"))
    return nullptr;
  return stream;
}

NEUROSHARD_MGPU_EXPORT void mgpuStreamDestroy(void *stream) {
  Runtime *rt = runtime("mgpuStreamDestroy");
  if (rt && stream)
    failed(rt->destroyStream(stream), "mgpuStreamDestroy");
}

NEUROSHARD_MGPU_EXPORT void mgpuStreamSynchronize(void *stream) {
  Runtime *rt = runtime("mgpuStreamSynchronize");
  if (rt && stream)
    failed(rt->synchronizeStream(stream), "mgpuStreamSynchronize");
}

NEUROSHARD_MGPU_EXPORT void mgpuStreamWaitEvent(void *stream, void *event) {
  Runtime *rt = runtime("mgpuStreamWaitEvent");
  if (rt && stream && event)
    failed(rt->streamWaitEvent(stream, event), "mgpuStreamWaitEvent");
}

NEUROSHARD_MGPU_EXPORT void *mgpuEventCreate() {
  Runtime *rt = runtime("mgpuEventCreate");
  void *event = nullptr;
  if (!rt || failed(rt->createEvent(event), "mgpuEventCreate"))
    return nullptr;
  return event;
}

NEUROSHARD_MGPU_EXPORT void mgpuEventDestroy(void *event) {
  Runtime *rt = runtime("mgpuEventDestroy");
  if (rt && event)
    failed(rt->destroyEvent(event), "mgpuEventDestroy");
}

NEUROSHARD_MGPU_EXPORT void mgpuEventSynchronize(void *event) {
  Runtime *rt = runtime("mgpuEventSynchronize");
  if (rt && event)
    failed(rt->synchronizeEvent(event), "mgpuEventSynchronize");
}

NEUROSHARD_MGPU_EXPORT void mgpuEventRecord(void *event, void *stream) {
  Runtime *rt = runtime("mgpuEventRecord");
  if (rt && event)
    failed(rt->recordEvent(event, stream), "mgpuEventRecord");
}

/// Zero-sized buffers (an empty indices buffer) get no allocation.
NEUROSHARD_MGPU_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *stream,
                                          bool isHostShared) {
  (void)stream;
  Runtime *rt = runtime("mgpuMemAlloc");
  if (!rt || bytes == 0)
    return nullptr;
  DevicePtr ptr = 0;
  if (failed(rt->alloc(bytes, ptr, isHostShared), "mgpuMemAlloc"))
    return nullptr;
  return reinterpret_cast<void *>(ptr);
}

NEUROSHARD_MGPU_EXPORT void mgpuMemFree(void *ptr, void *stream) {
  (void)stream;
  Runtime *rt = runtime("mgpuMemFree");
  if (rt && ptr)
    failed(rt->free(reinterpret_cast<DevicePtr>(ptr)), "mgpuMemFree");
}

NEUROSHARD_MGPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes,
                                       void *stream) {
  Runtime *rt = runtime("mgpuMemcpy");
  if (rt && bytes != 0)
    failed(rt->copyAsync(dst, src, bytes, stream), "mgpuMemcpy");
}

NEUROSHARD_MGPU_EXPORT void mgpuMemset32(void *dst, unsigned int value,
                                         size_t count, void *stream) {
  Runtime *rt = runtime("mgpuMemset32");
  if (rt && count != 0)
    failed(rt->memset32Async(reinterpret_cast<DevicePtr>(dst), value, count,
                             stream),
           "mgpuMemset32");
}

NEUROSHARD_MGPU_EXPORT void mgpuMemset16(void *dst, unsigned short value,
                                         size_t count, void *stream) {
  Runtime *rt = runtime("mgpuMemset16");
  if (rt && count != 0)
    failed(rt->memset16Async(reinterpret_cast<DevicePtr>(dst), value, count,
                             stream),
           "mgpuMemset16");
}
