//===- CudaRuntime.cpp - NeuroShard's own CUDA driver runtime -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The driver is opened with dlopen and each entry point is resolved under the
// versioned name cuda.h maps it to (cuMemAlloc -> cuMemAlloc_v2), so the
// calls have exactly the ABI of the headers this file is compiled against.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/Cuda/CudaRuntime.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace neuroshard {
namespace cuda {

#define NEUROSHARD_STRINGIFY_EXPANDED(x) #x
#define NEUROSHARD_STRINGIFY(x) NEUROSHARD_STRINGIFY_EXPANDED(x)

// Every driver entry point the runtime uses.
#define NEUROSHARD_CUDA_DRIVER_FUNCTIONS(X)                                    \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemAllocManaged)                                                         \
  X(cuMemFree)                                                                 \
  X(cuMemHostAlloc)                                                            \
  X(cuMemHostGetDevicePointer)                                                 \
  X(cuMemFreeHost)                                                             \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyDtoD)                                                              \
  X(cuMemcpyAsync)                                                             \
  X(cuMemsetD32Async)                                                          \
  X(cuMemsetD16Async)                                                          \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)

namespace {

struct DriverApi {
#define NEUROSHARD_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;
  NEUROSHARD_CUDA_DRIVER_FUNCTIONS(NEUROSHARD_DECLARE_ENTRY)
#undef NEUROSHARD_DECLARE_ENTRY
};

/// The driver, loaded once per process; `loadError` says why not.
struct LoadedDriver {
  DriverApi api;
  std::string loadError;
};

LoadedDriver &driver() {
  static LoadedDriver loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const char *override = std::getenv("NEUROSHARD_CUDA_DRIVER");
    std::string path =
        override && *override ? std::string(override) : "libcuda.so.1";
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      loaded.loadError = "cannot load the CUDA driver '" + path +
                         "': " + (why ? why : "unknown error") +
                         " (is an NVIDIA driver installed?)";
      return;
    }
#define NEUROSHARD_RESOLVE_ENTRY(name)                                         \
  loaded.api.name = reinterpret_cast<decltype(&::name)>(                       \
      dlsym(handle, NEUROSHARD_STRINGIFY(name)));                              \
  if (!loaded.api.name) {                                                      \
    loaded.loadError = "the CUDA driver '" + path + "' has no entry point " +  \
                       NEUROSHARD_STRINGIFY(name) + " (driver too old?)";      \
    return;                                                                    \
  }
    NEUROSHARD_CUDA_DRIVER_FUNCTIONS(NEUROSHARD_RESOLVE_ENTRY)
#undef NEUROSHARD_RESOLVE_ENTRY
  });
  return loaded;
}

const DriverApi &api() { return driver().api; }

/// "call: CUDA_ERROR_NAME (description)" for a failed driver call.
Status check(CUresult result, const std::string &call) {
  if (result == CUDA_SUCCESS)
    return Status();
  const char *name = nullptr, *text = nullptr;
  if (api().cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (api().cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    text = nullptr;
  // A stub or broken driver may not name its own errors: the codes that
  // mean "no usable driver or device" are spelled out here.
  if (!name) {
    switch (result) {
    case CUDA_ERROR_STUB_LIBRARY:
      name = "CUDA_ERROR_STUB_LIBRARY";
      text = "the CUDA toolkit's stub libcuda was loaded instead of the "
             "driver's";
      break;
    case CUDA_ERROR_NO_DEVICE:
      name = "CUDA_ERROR_NO_DEVICE";
      text = "no CUDA-capable device is detected";
      break;
    case CUDA_ERROR_NOT_INITIALIZED:
      name = "CUDA_ERROR_NOT_INITIALIZED";
      text = "the driver could not be initialised";
      break;
    case CUDA_ERROR_DEINITIALIZED:
      name = "CUDA_ERROR_DEINITIALIZED";
      text = "the driver is shutting down";
      break;
    default:
      break;
    }
  }
  std::string message = call + ": ";
  message += name ? name : "CUDA error " + std::to_string(result);
  if (text)
    message += std::string(" (") + text + ")";
  return Status::error(message, int(result));
}

} // namespace

bool parseModuleFormat(const std::string &text, ModuleFormat &format) {
  if (text == "cubin")
    format = ModuleFormat::Cubin;
  else if (text == "ptx")
    format = ModuleFormat::Ptx;
  else if (text == "fatbin")
    format = ModuleFormat::Fatbin;
  else
    return false;
  return true;
}

const char *moduleFormatName(ModuleFormat format) {
  switch (format) {
  case ModuleFormat::Cubin:
    return "cubin";
  case ModuleFormat::Ptx:
    return "ptx";
  case ModuleFormat::Fatbin:
    return "fatbin";
  }
  return "unknown";
}

Status Runtime::open(int ordinal, std::unique_ptr<Runtime> &out) {
  LoadedDriver &loaded = driver();
  if (!loaded.loadError.empty())
    return Status::error(loaded.loadError);
  const DriverApi &cu = loaded.api;
  Status status = check(cu.cuInit(0), "cuInit");
  if (!status.ok())
    return status;
  std::unique_ptr<Runtime> runtime(new Runtime());
  DeviceInfo &info = runtime->info;
  info.ordinal = ordinal;
  int count = 0;
  if (!(status = check(cu.cuDriverGetVersion(&info.driverVersion),
                       "cuDriverGetVersion"))
           .ok() ||
      !(status = check(cu.cuDeviceGetCount(&count), "cuDeviceGetCount")).ok())
    return status;
  if (ordinal < 0 || ordinal >= count)
    return Status::error("CUDA device " + std::to_string(ordinal) +
                         " requested but the driver reports " +
                         std::to_string(count) + " device(s)");
  CUdevice device;
  if (!(status = check(cu.cuDeviceGet(&device, ordinal), "cuDeviceGet")).ok())
    return status;
  runtime->deviceHandle = device;
  char name[256] = {0};
  size_t memory = 0;
  if (!(status = check(cu.cuDeviceGetName(name, sizeof(name) - 1, device),
                       "cuDeviceGetName"))
           .ok() ||
      !(status =
            check(cu.cuDeviceTotalMem(&memory, device), "cuDeviceTotalMem"))
           .ok() ||
      !(status =
            check(cu.cuDeviceGetAttribute(
                      &info.computeMajor,
                      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                  "cuDeviceGetAttribute"))
           .ok() ||
      !(status =
            check(cu.cuDeviceGetAttribute(
                      &info.computeMinor,
                      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                  "cuDeviceGetAttribute"))
           .ok() ||
      !(status = check(cu.cuDeviceGetAttribute(
                           &info.multiprocessors,
                           CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                       "cuDeviceGetAttribute"))
           .ok() ||
      !(status = check(
            cu.cuDeviceGetAttribute(&info.l2CacheBytes,
                                    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device),
            "cuDeviceGetAttribute"))
           .ok())
    return status;
  info.name = name;
  info.totalMemory = memory;
  CUcontext context = nullptr;
  if (!(status = check(cu.cuDevicePrimaryCtxRetain(&context, device),
                       "cuDevicePrimaryCtxRetain"))
           .ok())
    return status;
  runtime->context = context;
  if (!(status = runtime->makeCurrent()).ok())
    return status;
  out = std::move(runtime);
  return Status();
}

Runtime::~Runtime() {
  if (context)
    api().cuDevicePrimaryCtxRelease(deviceHandle);
}

Status Runtime::makeCurrent() {
  return check(api().cuCtxSetCurrent(static_cast<CUcontext>(context)),
               "cuCtxSetCurrent");
}

Status Runtime::loadModule(const void *image, size_t size, ModuleFormat format,
                           ModuleHandle &module, int ptxOptLevel) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  const auto *bytes = static_cast<const unsigned char *>(image);
  if (format == ModuleFormat::Cubin && (size < 4 || std::memcmp(bytes,
                                                                "\x7f"
                                                                "ELF",
                                                                4) != 0))
    return Status::error("the kernels image is not a cubin: it has no ELF "
                         "header (" +
                         std::to_string(size) + " bytes)");
  if (format == ModuleFormat::Fatbin &&
      (size < 4 || !(bytes[0] == 0x50 && bytes[1] == 0xed && bytes[2] == 0x55 &&
                     bytes[3] == 0xba)))
    return Status::error("the kernels image is not a fatbin: it does not "
                         "start with the fatbin magic number");
  CUmodule loadedModule = nullptr;
  if (format != ModuleFormat::Ptx) {
    status =
        check(api().cuModuleLoadData(&loadedModule, image), "cuModuleLoadData");
  } else {
    // The JIT needs a NUL-terminated string and reports errors in a log.
    std::string text(static_cast<const char *>(image), size);
    std::vector<char> log(8192, '\0');
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_OPTIMIZATION_LEVEL};
    void *values[] = {
        log.data(),
        reinterpret_cast<void *>(static_cast<uintptr_t>(log.size() - 1)),
        reinterpret_cast<void *>(static_cast<uintptr_t>(ptxOptLevel))};
    status = check(api().cuModuleLoadDataEx(&loadedModule, text.c_str(), 3,
                                            options, values),
                   "cuModuleLoadDataEx (PTX JIT)");
    if (!status.ok() && log[0] != '\0')
      status = Status::error(status.message() + ": " + log.data());
  }
  if (status.ok())
    module = loadedModule;
  return status;
}

Status Runtime::unloadModule(ModuleHandle module) {
  Status status = makeCurrent();
  if (status.ok())
    status = check(api().cuModuleUnload(static_cast<CUmodule>(module)),
                   "cuModuleUnload");
  // Code lowered by gpu-to-llvm unloads its modules from the program's
  // global destructors, which can run after the driver has shut down at
  // exit; the driver has released every module by then.
  if (status.code() == CUDA_ERROR_DEINITIALIZED)
    return Status();
  return status;
}

Status Runtime::getFunction(ModuleHandle module, const char *name,
                            FunctionHandle &function) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  CUfunction found = nullptr;
  status = check(
      api().cuModuleGetFunction(&found, static_cast<CUmodule>(module), name),
      std::string("cuModuleGetFunction('") + name + "')");
  if (status.ok())
    function = found;
  return status;
}

Status Runtime::launch(FunctionHandle function, const LaunchDims &dims,
                       StreamHandle stream, void **params) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  // A block larger than the kernel takes (its launch bounds, or the
  // registers it uses) fails with a bare CUDA_ERROR_INVALID_VALUE; say why.
  auto fn = static_cast<CUfunction>(function);
  int maxThreads = 0, registers = 0;
  uint64_t threads = uint64_t(dims.blockX) * dims.blockY * dims.blockZ;
  if (api().cuFuncGetAttribute(&maxThreads,
                               CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                               fn) == CUDA_SUCCESS &&
      maxThreads > 0 && threads > uint64_t(maxThreads)) {
    (void)api().cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    return Status::error(
        "cannot launch a block of " + std::to_string(threads) +
        " threads: the kernel takes at most " + std::to_string(maxThreads) +
        " threads per block (it uses " + std::to_string(registers) +
        " registers a thread; see its launch bounds)");
  }
  return check(
      api().cuLaunchKernel(static_cast<CUfunction>(function), dims.gridX,
                           dims.gridY, dims.gridZ, dims.blockX, dims.blockY,
                           dims.blockZ, dims.sharedBytes,
                           static_cast<CUstream>(stream), params, nullptr),
      "cuLaunchKernel(grid " + std::to_string(dims.gridX) + "x" +
          std::to_string(dims.gridY) + "x" + std::to_string(dims.gridZ) +
          ", block " + std::to_string(dims.blockX) + ")");
}

Status Runtime::alloc(size_t bytes, DevicePtr &ptr, bool managed) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  CUdeviceptr address = 0;
  if (managed)
    status =
        check(api().cuMemAllocManaged(&address, bytes, CU_MEM_ATTACH_GLOBAL),
              "cuMemAllocManaged(" + std::to_string(bytes) + " bytes)");
  else
    status = check(api().cuMemAlloc(&address, bytes),
                   "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
  if (status.ok())
    ptr = address;
  return status;
}

Status Runtime::allocMappedHost(size_t bytes, void *&host, DevicePtr &device) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  void *memory = nullptr;
  status =
      check(api().cuMemHostAlloc(&memory, bytes, CU_MEMHOSTALLOC_DEVICEMAP),
            "cuMemHostAlloc(" + std::to_string(bytes) + " bytes, DEVICEMAP)");
  if (!status.ok())
    return status;
  CUdeviceptr address = 0;
  status = check(api().cuMemHostGetDevicePointer(&address, memory, 0),
                 "cuMemHostGetDevicePointer");
  if (!status.ok()) {
    api().cuMemFreeHost(memory);
    return status;
  }
  host = memory;
  device = address;
  return status;
}

Status Runtime::freeMappedHost(void *host) {
  Status status = makeCurrent();
  if (!status.ok() || !host)
    return status;
  return check(api().cuMemFreeHost(host), "cuMemFreeHost");
}

Status Runtime::free(DevicePtr ptr) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuMemFree(ptr), "cuMemFree");
}

Status Runtime::copyToDevice(DevicePtr dst, const void *src, size_t bytes) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuMemcpyHtoD(dst, src, bytes),
               "cuMemcpyHtoD(" + std::to_string(bytes) + " bytes)");
}

Status Runtime::copyToHost(void *dst, DevicePtr src, size_t bytes) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuMemcpyDtoH(dst, src, bytes),
               "cuMemcpyDtoH(" + std::to_string(bytes) + " bytes)");
}

Status Runtime::copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuMemcpyDtoD(dst, src, bytes),
               "cuMemcpyDtoD(" + std::to_string(bytes) + " bytes)");
}

Status Runtime::copyAsync(void *dst, const void *src, size_t bytes,
                          StreamHandle stream) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                   reinterpret_cast<CUdeviceptr>(src), bytes,
                                   static_cast<CUstream>(stream)),
               "cuMemcpyAsync(" + std::to_string(bytes) + " bytes)");
}

Status Runtime::memset32Async(DevicePtr dst, uint32_t value, size_t count,
                              StreamHandle stream) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(
      api().cuMemsetD32Async(dst, value, count, static_cast<CUstream>(stream)),
      "cuMemsetD32Async(" + std::to_string(count) + " words)");
}

Status Runtime::memset16Async(DevicePtr dst, uint16_t value, size_t count,
                              StreamHandle stream) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(
      api().cuMemsetD16Async(dst, value, count, static_cast<CUstream>(stream)),
      "cuMemsetD16Async(" + std::to_string(count) + " halves)");
}

Status Runtime::createStream(StreamHandle &stream) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  CUstream created = nullptr;
  status = check(api().cuStreamCreate(&created, CU_STREAM_NON_BLOCKING),
                 "cuStreamCreate");
  if (status.ok())
    stream = created;
  return status;
}

Status Runtime::destroyStream(StreamHandle stream) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuStreamDestroy(static_cast<CUstream>(stream)),
               "cuStreamDestroy");
}

Status Runtime::synchronizeStream(StreamHandle stream) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuStreamSynchronize(static_cast<CUstream>(stream)),
               "cuStreamSynchronize");
}

Status Runtime::streamWaitEvent(StreamHandle stream, EventHandle event) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuStreamWaitEvent(static_cast<CUstream>(stream),
                                       static_cast<CUevent>(event), 0),
               "cuStreamWaitEvent");
}

Status Runtime::synchronize() {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuCtxSynchronize(), "cuCtxSynchronize");
}

Status Runtime::createEvent(EventHandle &event) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  CUevent created = nullptr;
  status =
      check(api().cuEventCreate(&created, CU_EVENT_DEFAULT), "cuEventCreate");
  if (status.ok())
    event = created;
  return status;
}

Status Runtime::destroyEvent(EventHandle event) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuEventDestroy(static_cast<CUevent>(event)),
               "cuEventDestroy");
}

Status Runtime::recordEvent(EventHandle event, StreamHandle stream) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuEventRecord(static_cast<CUevent>(event),
                                   static_cast<CUstream>(stream)),
               "cuEventRecord");
}

Status Runtime::synchronizeEvent(EventHandle event) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuEventSynchronize(static_cast<CUevent>(event)),
               "cuEventSynchronize");
}

Status Runtime::elapsedMs(EventHandle start, EventHandle end, float &ms) {
  Status status = makeCurrent();
  if (!status.ok())
    return status;
  return check(api().cuEventElapsedTime(&ms, static_cast<CUevent>(start),
                                        static_cast<CUevent>(end)),
               "cuEventElapsedTime");
}

} // namespace cuda
} // namespace neuroshard
