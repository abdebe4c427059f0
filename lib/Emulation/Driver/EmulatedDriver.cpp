//===- EmulatedDriver.cpp - A CUDA driver whose device is the CPU ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The entry points of the CUDA driver API that NeuroShard's CUDA runtime
// uses (CudaRuntime.cpp), answered on the host: memory is host memory,
// copies are memcpy, streams and events run in order, and a launch runs the
// kernel under warp emulation (KernelsOnHost.cpp). It knows NeuroShard's
// kernels only (KernelABI.h), generated in process by the same conversion
// the lowering uses; a module image is not read. Loaded in place of
// libcuda with NEUROSHARD_CUDA_DRIVER, it lets a whole lowered module
// (`neuroshard-run --device cuda`) and the CUDA runner run without a GPU.
//
// Memory is checked as a device would not check it: a copy, a memset or a
// kernel operand that reaches outside every allocation is refused with the
// call, the addresses and the sizes, so that host code that moves the wrong
// bytes fails here rather than on a GPU.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Emulation/SIMTEmulator.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "llvm/Support/Error.h"

#include <cuda.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace abi = ::neuroshard::kernel_abi;
namespace emu = ::neuroshard::emulation;

namespace {

/// A kernel's operands, in launch order.
struct Signature {
  std::vector<abi::KernelOperand> operands;
  /// Bytes of an `Index` element.
  size_t indexBytes = 8;
};

/// The signature of NeuroShard kernel `name`; false for any other name.
bool signatureOf(const std::string &name, Signature &signature) {
  auto indexBytes = [&](size_t &bytes) {
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "_i32") == 0)
      bytes = 4;
    else if (name.size() > 4 && name.compare(name.size() - 4, 4, "_i64") == 0)
      bytes = 8;
    else
      return false;
    return true;
  };
  if (!indexBytes(signature.indexBytes))
    return false;
  if (name == abi::kForwardI32 || name == abi::kForwardI64 ||
      name == abi::kBackwardI32 || name == abi::kBackwardI64) {
    bool backward = name == abi::kBackwardI32 || name == abi::kBackwardI64;
    signature.operands.assign(std::begin(abi::kKernelOperands),
                              std::begin(abi::kKernelOperands) +
                                  abi::numOperands(backward));
    return true;
  }
  for (abi::BucketizeStep step : abi::kBucketizeSteps)
    for (int bits : {32, 64})
      if (name == abi::bucketizeKernelName(step, bits)) {
        signature.operands.assign(std::begin(abi::kBucketizeOperands),
                                  std::end(abi::kBucketizeOperands));
        return true;
      }
  if (name == abi::kRowCacheFetchKernelI32 ||
      name == abi::kRowCacheFetchKernelI64) {
    signature.operands.assign(std::begin(abi::kRowCacheFetchOperands),
                              std::end(abi::kRowCacheFetchOperands));
    return true;
  }
  return false;
}

struct Function {
  std::string name;
  Signature signature;
};

struct Event {
  std::chrono::steady_clock::time_point time;
  bool recorded = false;
};

/// A handle the driver gives out: the one context and the one module are
/// static; each stream is its own.
struct Handle {
  const char *what;
};
Handle theContext{"context"}, theModule{"module"};

/// The driver's state, behind one lock: the API may be called from any
/// thread.
struct Driver {
  std::mutex mutex;
  std::atomic<bool> initialized{false};
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<emu::EmulatedKernels> kernels;
  std::map<std::string, std::unique_ptr<Function>> functions;
  /// Live allocations: start address to size.
  std::map<uintptr_t, size_t> allocations;
  uint64_t launches = 0;
};

Driver &driver() {
  static Driver *state = new Driver();
  return *state;
}

CUresult fail(CUresult result, const std::string &message) {
  std::fprintf(stderr, "neuroshard emulated CUDA driver: %s\n",
               message.c_str());
  std::fflush(stderr);
  return result;
}

std::string hex(uintptr_t address) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(address));
  return text;
}

/// Why [address, address + bytes) is not inside one live allocation; empty
/// if it is (or if `bytes` is 0).
std::string outsideAllocations(const Driver &state, uintptr_t address,
                               size_t bytes) {
  if (bytes == 0)
    return "";
  auto it = state.allocations.upper_bound(address);
  if (it != state.allocations.begin()) {
    --it;
    if (address >= it->first && address - it->first <= it->second &&
        bytes <= it->second - (address - it->first))
      return "";
    if (address >= it->first && address - it->first < it->second)
      return std::to_string(bytes) + " bytes at " + hex(address) +
             " run past the end of the allocation of " +
             std::to_string(it->second) + " bytes at " + hex(it->first);
  }
  return std::to_string(bytes) + " bytes at " + hex(address) +
         " are in no allocation";
}

CUresult checkInitialized() {
  return driver().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

/// Generates and compiles the kernels once.
CUresult loadKernels(Driver &state) {
  if (state.kernels)
    return CUDA_SUCCESS;
  mlir::DialectRegistry registry;
  registry.insert<mlir::neuroshard::NeuroShardDialect>();
  mlir::registerAllDialects(registry);
  state.context = std::make_unique<mlir::MLIRContext>(registry);
  auto kernels = emu::EmulatedKernels::compileGenerated(*state.context);
  if (!kernels)
    return fail(CUDA_ERROR_INVALID_IMAGE,
                "cannot generate the kernels to emulate: " +
                    llvm::toString(kernels.takeError()));
  state.kernels = std::move(*kernels);
  return CUDA_SUCCESS;
}

CUresult copy(void *dst, const void *src, size_t bytes, uintptr_t deviceDst,
              uintptr_t deviceSrc, const char *call) {
  Driver &state = driver();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  for (uintptr_t device : {deviceDst, deviceSrc}) {
    if (!device)
      continue;
    std::string why = outsideAllocations(state, device, bytes);
    if (!why.empty())
      return fail(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": " + why);
  }
  if (bytes)
    std::memmove(dst, src, bytes);
  return CUDA_SUCCESS;
}

template <typename Word>
CUresult fill(CUdeviceptr dst, Word value, size_t count, const char *call) {
  Driver &state = driver();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  std::string why = outsideAllocations(state, dst, count * sizeof(Word));
  if (!why.empty())
    return fail(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": " + why);
  Word *words = reinterpret_cast<Word *>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return CUDA_SUCCESS;
}

} // namespace

#define NEUROSHARD_DRIVER_ENTRY                                                \
  extern "C" __attribute__((visibility("default")))

NEUROSHARD_DRIVER_ENTRY CUresult cuInit(unsigned int flags) {
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(driver().mutex);
  driver().initialized = true;
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuDriverGetVersion(int *version) {
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

namespace {
/// The results this driver gives, with their names and texts.
struct ErrorText {
  CUresult code;
  const char *name, *text;
};
#define NEUROSHARD_ERROR(code, text)                                           \
  { code, #code, text }
constexpr ErrorText kErrors[] = {
    NEUROSHARD_ERROR(CUDA_SUCCESS, "no error"),
    NEUROSHARD_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    NEUROSHARD_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    NEUROSHARD_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    NEUROSHARD_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    NEUROSHARD_ERROR(CUDA_ERROR_INVALID_IMAGE,
                     "device kernel image is invalid"),
    NEUROSHARD_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    NEUROSHARD_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    NEUROSHARD_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    NEUROSHARD_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    NEUROSHARD_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
};
#undef NEUROSHARD_ERROR

/// `error`'s entry of kErrors, or null.
const ErrorText *errorText(CUresult error) {
  for (const ErrorText &entry : kErrors)
    if (entry.code == error)
      return &entry;
  return nullptr;
}
} // namespace

NEUROSHARD_DRIVER_ENTRY CUresult cuGetErrorName(CUresult error,
                                                const char **name) {
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *entry = errorText(error);
  *name = entry ? entry->name : nullptr;
  return entry ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuGetErrorString(CUresult error,
                                                  const char **text) {
  if (!text)
    return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *entry = errorText(error);
  *text = entry ? entry->text : nullptr;
  return entry ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuDeviceGetCount(int *count) {
  if (CUresult r = checkInitialized())
    return r;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (CUresult r = checkInitialized())
    return r;
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuDeviceGetName(char *name, int length,
                                                 CUdevice device) {
  if (CUresult r = checkInitialized())
    return r;
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!name || length <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, size_t(length), "%s",
                "NeuroShard warp emulator (the host's CPU)");
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuDeviceGetAttribute(int *value,
                                                      CUdevice_attribute what,
                                                      CUdevice device) {
  if (CUresult r = checkInitialized())
    return r;
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  switch (what) {
  // The kernels are generated for sm_90 and emulated with its warp rules.
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = int(std::max(1u, std::thread::hardware_concurrency()));
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    *value = int(abi::kWarpSize);
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = int(abi::kMaxThreadsPerBlock);
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    *value = 0;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_NOT_SUPPORTED;
  }
}

NEUROSHARD_DRIVER_ENTRY CUresult cuDeviceTotalMem(size_t *bytes,
                                                  CUdevice device) {
  if (CUresult r = checkInitialized())
    return r;
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  long pages = sysconf(_SC_PHYS_PAGES), pageBytes = sysconf(_SC_PAGESIZE);
  *bytes = pages > 0 && pageBytes > 0 ? size_t(pages) * size_t(pageBytes) : 0;
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuDevicePrimaryCtxRetain(CUcontext *context,
                                                          CUdevice device) {
  if (CUresult r = checkInitialized())
    return r;
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!context)
    return CUDA_ERROR_INVALID_VALUE;
  *context = reinterpret_cast<CUcontext>(&theContext);
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  return device == 0 ? checkInitialized() : CUDA_ERROR_INVALID_DEVICE;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuCtxSetCurrent(CUcontext context) {
  if (CUresult r = checkInitialized())
    return r;
  return !context || context == reinterpret_cast<CUcontext>(&theContext)
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_HANDLE;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuCtxSynchronize() {
  return checkInitialized();
}

NEUROSHARD_DRIVER_ENTRY CUresult cuModuleLoadData(CUmodule *module,
                                                  const void *image) {
  Driver &state = driver();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = loadKernels(state))
    return r;
  *module = reinterpret_cast<CUmodule>(&theModule);
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuModuleLoadDataEx(CUmodule *module,
                                                    const void *image,
                                                    unsigned int,
                                                    CUjit_option *, void **) {
  return cuModuleLoadData(module, image);
}

NEUROSHARD_DRIVER_ENTRY CUresult cuModuleUnload(CUmodule module) {
  if (CUresult r = checkInitialized())
    return r;
  return module == reinterpret_cast<CUmodule>(&theModule)
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_HANDLE;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuModuleGetFunction(CUfunction *function,
                                                     CUmodule module,
                                                     const char *name) {
  Driver &state = driver();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!function || !name)
    return CUDA_ERROR_INVALID_VALUE;
  if (module != reinterpret_cast<CUmodule>(&theModule))
    return CUDA_ERROR_INVALID_HANDLE;
  std::unique_ptr<Function> &slot = state.functions[name];
  if (!slot) {
    Signature signature;
    if (!signatureOf(name, signature)) {
      state.functions.erase(name);
      return fail(CUDA_ERROR_NOT_FOUND,
                  std::string("no kernel '") + name +
                      "' among NeuroShard's kernels (KernelABI.h)");
    }
    slot = std::make_unique<Function>(Function{name, std::move(signature)});
  }
  *function = reinterpret_cast<CUfunction>(slot.get());
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuFuncGetAttribute(int *value,
                                                    CUfunction_attribute what,
                                                    CUfunction function) {
  if (CUresult r = checkInitialized())
    return r;
  if (!value || !function)
    return CUDA_ERROR_INVALID_VALUE;
  if (what != CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    return CUDA_ERROR_NOT_SUPPORTED;
  *value = int(abi::kMaxThreadsPerBlock);
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuLaunchKernel(
    CUfunction function, unsigned int gridX, unsigned int gridY,
    unsigned int gridZ, unsigned int blockX, unsigned int blockY,
    unsigned int blockZ, unsigned int, CUstream, void **params, void **extra) {
  Driver &state = driver();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!function || !params || extra)
    return CUDA_ERROR_INVALID_VALUE;
  const Function &kernel = *reinterpret_cast<const Function *>(function);
  if (gridZ != 1 || blockY != 1 || blockZ != 1 || gridX == 0 || gridY == 0 ||
      blockX == 0)
    return fail(CUDA_ERROR_INVALID_VALUE,
                kernel.name +
                    ": the kernels take a grid of x by y blocks of "
                    "x threads, not " +
                    std::to_string(gridX) + "x" + std::to_string(gridY) + "x" +
                    std::to_string(gridZ) + " blocks of " +
                    std::to_string(blockX) + "x" + std::to_string(blockY) +
                    "x" + std::to_string(blockZ));
  // Each memref operand arrives as its descriptor's fields, one parameter
  // each (allocated and aligned pointers, offset, sizes, strides); a
  // scalar as itself.
  const std::vector<abi::KernelOperand> &operands = kernel.signature.operands;
  std::vector<std::array<int64_t, 7>> descriptors(operands.size());
  std::vector<void *> descriptorAddresses(operands.size());
  std::vector<void *> arguments(operands.size());
  size_t param = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const abi::KernelOperand &operand = operands[i];
    if (operand.rank == 0) {
      arguments[i] = params[param++];
      continue;
    }
    int fields = abi::launchParams(operand);
    for (int f = 0; f < fields; ++f)
      std::memcpy(&descriptors[i][f], params[param++], sizeof(int64_t));
    // What the kernel may touch: sizes times strides from the aligned
    // pointer plus offset, which must lie in one allocation.
    size_t element = operand.element == abi::ElementKind::Index
                         ? kernel.signature.indexBytes
                         : (operand.element == abi::ElementKind::F32 ? 4 : 8);
    int64_t extent = 1;
    bool empty = false;
    for (int d = 0; d < operand.rank; ++d) {
      int64_t size = descriptors[i][3 + d];
      int64_t stride = descriptors[i][3 + operand.rank + d];
      if (size < 0 || stride < 0)
        return fail(CUDA_ERROR_INVALID_VALUE,
                    kernel.name + ": operand '" + operand.name +
                        "' has a negative size or stride");
      empty |= size == 0;
      extent += (size - 1) * stride;
    }
    if (!empty) {
      uintptr_t start =
          uintptr_t(descriptors[i][1]) + uintptr_t(descriptors[i][2]) * element;
      std::string why =
          outsideAllocations(state, start, size_t(extent) * element);
      if (!why.empty())
        return fail(CUDA_ERROR_INVALID_VALUE,
                    kernel.name + ": operand '" + operand.name + "': " + why);
    }
    descriptorAddresses[i] = descriptors[i].data();
    arguments[i] = &descriptorAddresses[i];
  }
  emu::LaunchConfig config;
  config.gridX = gridX;
  config.gridY = gridY;
  config.blockX = blockX;
  config.seed = ++state.launches;
  if (llvm::Error error = state.kernels->launchPacked(
          kernel.name, arguments.data(), config, nullptr))
    return fail(CUDA_ERROR_LAUNCH_FAILED,
                kernel.name + ": " + llvm::toString(std::move(error)));
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemAlloc(CUdeviceptr *address,
                                            size_t bytes) {
  Driver &state = driver();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!address || bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  // 256-byte aligned, as cudaMalloc's memory is.
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  state.allocations[reinterpret_cast<uintptr_t>(memory)] = bytes;
  *address = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemAllocManaged(CUdeviceptr *address,
                                                   size_t bytes, unsigned int) {
  return cuMemAlloc(address, bytes);
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemFree(CUdeviceptr address) {
  Driver &state = driver();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!address)
    return CUDA_SUCCESS;
  auto it = state.allocations.find(uintptr_t(address));
  if (it == state.allocations.end())
    return fail(CUDA_ERROR_INVALID_VALUE,
                "cuMemFree: " + hex(uintptr_t(address)) +
                    " is not the start of an allocation");
  state.allocations.erase(it);
  std::free(reinterpret_cast<void *>(address));
  return CUDA_SUCCESS;
}

// Pinned host memory is host memory, and its device address the same.
NEUROSHARD_DRIVER_ENTRY CUresult cuMemHostAlloc(void **host, size_t bytes,
                                                unsigned int) {
  CUdeviceptr address = 0;
  CUresult result = cuMemAlloc(&address, bytes);
  if (result == CUDA_SUCCESS)
    *host = reinterpret_cast<void *>(address);
  return result;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemHostGetDevicePointer(CUdeviceptr *device,
                                                           void *host,
                                                           unsigned int) {
  Driver &state = driver();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!device || !state.allocations.count(uintptr_t(host)))
    return fail(CUDA_ERROR_INVALID_VALUE,
                "cuMemHostGetDevicePointer: " + hex(uintptr_t(host)) +
                    " is not the start of a host allocation");
  *device = reinterpret_cast<CUdeviceptr>(host);
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemFreeHost(void *host) {
  return cuMemFree(reinterpret_cast<CUdeviceptr>(host));
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src,
                                              size_t bytes) {
  return copy(reinterpret_cast<void *>(dst), src, bytes, uintptr_t(dst), 0,
              "cuMemcpyHtoD");
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src,
                                              size_t bytes) {
  return copy(dst, reinterpret_cast<const void *>(src), bytes, 0,
              uintptr_t(src), "cuMemcpyDtoH");
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src,
                                              size_t bytes) {
  return copy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
              bytes, uintptr_t(dst), uintptr_t(src), "cuMemcpyDtoD");
}

// Unified addressing: either side may be host memory, so neither is
// checked against the allocations.
NEUROSHARD_DRIVER_ENTRY CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                               size_t bytes, CUstream) {
  return copy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
              bytes, 0, 0, "cuMemcpyAsync");
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemsetD32Async(CUdeviceptr dst,
                                                  unsigned int value,
                                                  size_t count, CUstream) {
  return fill<uint32_t>(dst, value, count, "cuMemsetD32Async");
}

NEUROSHARD_DRIVER_ENTRY CUresult cuMemsetD16Async(CUdeviceptr dst,
                                                  unsigned short value,
                                                  size_t count, CUstream) {
  return fill<uint16_t>(dst, value, count, "cuMemsetD16Async");
}

NEUROSHARD_DRIVER_ENTRY CUresult cuStreamCreate(CUstream *stream,
                                                unsigned int) {
  if (CUresult r = checkInitialized())
    return r;
  if (!stream)
    return CUDA_ERROR_INVALID_VALUE;
  *stream = reinterpret_cast<CUstream>(new Handle{"stream"});
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuStreamDestroy(CUstream stream) {
  if (CUresult r = checkInitialized())
    return r;
  if (!stream)
    return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Handle *>(stream);
  return CUDA_SUCCESS;
}

// Every call runs when it is made, so streams and events are always done.
NEUROSHARD_DRIVER_ENTRY CUresult cuStreamSynchronize(CUstream) {
  return checkInitialized();
}

NEUROSHARD_DRIVER_ENTRY CUresult cuStreamWaitEvent(CUstream, CUevent event,
                                                   unsigned int) {
  if (CUresult r = checkInitialized())
    return r;
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuEventCreate(CUevent *event, unsigned int) {
  if (CUresult r = checkInitialized())
    return r;
  if (!event)
    return CUDA_ERROR_INVALID_VALUE;
  *event = reinterpret_cast<CUevent>(new Event());
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuEventDestroy(CUevent event) {
  if (CUresult r = checkInitialized())
    return r;
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Event *>(event);
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuEventRecord(CUevent event, CUstream) {
  if (CUresult r = checkInitialized())
    return r;
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  Event &recorded = *reinterpret_cast<Event *>(event);
  recorded.time = std::chrono::steady_clock::now();
  recorded.recorded = true;
  return CUDA_SUCCESS;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuEventSynchronize(CUevent event) {
  if (CUresult r = checkInitialized())
    return r;
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

NEUROSHARD_DRIVER_ENTRY CUresult cuEventElapsedTime(float *ms, CUevent start,
                                                    CUevent end) {
  if (CUresult r = checkInitialized())
    return r;
  if (!ms || !start || !end)
    return CUDA_ERROR_INVALID_VALUE;
  const Event &a = *reinterpret_cast<const Event *>(start);
  const Event &b = *reinterpret_cast<const Event *>(end);
  if (!a.recorded || !b.recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(b.time - a.time).count();
  return CUDA_SUCCESS;
}
