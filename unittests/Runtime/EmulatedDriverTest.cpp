//===- EmulatedDriverTest.cpp - The CUDA driver whose device is the CPU ---===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Loads the emulated driver as NeuroShard's CUDA runtime loads a driver
// (dlopen, entry points by their versioned names) and checks what a tool
// cannot show: its memory checks, its refusals, and a kernel launched by
// hand with the parameters a host passes.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeCall.h"
#include "neuroshard/Runtime/KernelABI.h"

#include "gtest/gtest.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

namespace kernel_abi = ::neuroshard::kernel_abi;

namespace {

#define NEUROSHARD_TEST_STRINGIFY_EXPANDED(x) #x
#define NEUROSHARD_TEST_STRINGIFY(x) NEUROSHARD_TEST_STRINGIFY_EXPANDED(x)
#define NEUROSHARD_TEST_DRIVER_FUNCTIONS(X)                                    \
  X(cuInit)                                                                    \
  X(cuGetErrorName)                                                            \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGetAttribute)                                                      \
  X(cuModuleLoadData)                                                          \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemsetD32Async)                                                          \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventElapsedTime)                                                        \
  X(cuEventDestroy)

struct Driver {
#define NEUROSHARD_TEST_DECLARE(name) decltype(&::name) name = nullptr;
  NEUROSHARD_TEST_DRIVER_FUNCTIONS(NEUROSHARD_TEST_DECLARE)
#undef NEUROSHARD_TEST_DECLARE
  std::string error;
};

const Driver &driver() {
  static Driver loaded = [] {
    Driver d;
    void *handle = dlopen(NEUROSHARD_EMULATED_DRIVER, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      d.error = dlerror();
      return d;
    }
#define NEUROSHARD_TEST_RESOLVE(name)                                          \
  d.name = reinterpret_cast<decltype(&::name)>(                                \
      dlsym(handle, NEUROSHARD_TEST_STRINGIFY(name)));                         \
  if (!d.name)                                                                 \
    d.error += std::string("no ") + NEUROSHARD_TEST_STRINGIFY(name) + "; ";
    NEUROSHARD_TEST_DRIVER_FUNCTIONS(NEUROSHARD_TEST_RESOLVE)
#undef NEUROSHARD_TEST_RESOLVE
    if (d.error.empty() && d.cuInit(0) != CUDA_SUCCESS)
      d.error = "cuInit failed";
    return d;
  }();
  return loaded;
}

class EmulatedDriverTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_EQ(driver().error, ""); }
  const Driver &cu = driver();
};

/// A device buffer of `values`.
template <typename T> CUdeviceptr upload(const std::vector<T> &values) {
  const Driver &cu = driver();
  CUdeviceptr address = 0;
  EXPECT_EQ(cu.cuMemAlloc(&address, values.size() * sizeof(T)), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemcpyHtoD(address, values.data(), values.size() * sizeof(T)),
            CUDA_SUCCESS);
  return address;
}

template <typename T>
std::vector<T> download(CUdeviceptr address, size_t count) {
  std::vector<T> values(count);
  EXPECT_EQ(driver().cuMemcpyDtoH(values.data(), address, count * sizeof(T)),
            CUDA_SUCCESS);
  return values;
}

using Descriptor = ::neuroshard::exchange_abi::MemRefDescriptor<int64_t, 1>;

/// The descriptor of `count` elements at `address`.
Descriptor memref(CUdeviceptr address, int64_t count) {
  int64_t *data = reinterpret_cast<int64_t *>(address);
  return {data, data, 0, {count}, {1}};
}

/// Appends `d`'s fields to `params`, one launch parameter each, as a
/// lowered host passes a memref.
void appendParams(Descriptor &d, std::vector<void *> &params) {
  for (void *field :
       {static_cast<void *>(&d.allocated), static_cast<void *>(&d.aligned),
        static_cast<void *>(&d.offset), static_cast<void *>(&d.sizes[0]),
        static_cast<void *>(&d.strides[0])})
    params.push_back(field);
}

TEST_F(EmulatedDriverTest, DescribesOneDevice) {
  int count = 0, major = 0, warp = 0;
  EXPECT_EQ(cu.cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(cu.cuDeviceGetAttribute(
                &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(cu.cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(warp, 32);
  EXPECT_EQ(cu.cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1),
            CUDA_ERROR_INVALID_DEVICE);
  const char *name = nullptr;
  EXPECT_EQ(cu.cuGetErrorName(CUDA_ERROR_NOT_FOUND, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_NOT_FOUND");
}

TEST_F(EmulatedDriverTest, CopiesStayInsideAllocations) {
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cu.cuMemAlloc(&buffer, 64), CUDA_SUCCESS);
  std::vector<char> host(128, 7);
  EXPECT_EQ(cu.cuMemcpyHtoD(buffer, host.data(), 64), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemcpyHtoD(buffer, host.data(), 65), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu.cuMemcpyDtoH(host.data(), buffer + 32, 40),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu.cuMemcpyDtoH(host.data(), buffer + 32, 32), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuMemsetD32Async(buffer, 0x01020304u, 16, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(download<uint32_t>(buffer, 16),
            std::vector<uint32_t>(16, 0x01020304u));
  EXPECT_EQ(cu.cuMemsetD32Async(buffer, 0, 17, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu.cuMemFree(buffer + 8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu.cuMemFree(buffer), CUDA_SUCCESS);
  // Freed memory is in no allocation; no memory is no allocation.
  EXPECT_EQ(cu.cuMemcpyHtoD(buffer, host.data(), 4), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr empty = 0;
  EXPECT_EQ(cu.cuMemAlloc(&empty, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(EmulatedDriverTest, EventsMeasureTime) {
  CUevent start = nullptr, end = nullptr;
  ASSERT_EQ(cu.cuEventCreate(&start, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuEventCreate(&end, 0), CUDA_SUCCESS);
  float ms = -1.0f;
  EXPECT_EQ(cu.cuEventElapsedTime(&ms, start, end), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cu.cuEventRecord(start, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuEventRecord(end, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuEventElapsedTime(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(cu.cuEventDestroy(start), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuEventDestroy(end), CUDA_SUCCESS);
}

// Two bags over rows [0, 5) and [5, 10): {1, 7, 3} and {9, 2}. Block 0
// receives {1, 3} and {2}, block 1 {7 - 5} and {9 - 5}.
TEST_F(EmulatedDriverTest, RunsTheBucketizationKernels) {
  CUmodule module = nullptr;
  const char image[] = "the image is not read";
  ASSERT_EQ(cu.cuModuleLoadData(&module, image), CUDA_SUCCESS);
  std::vector<int64_t> rows = {0, 5, 10}, indices = {1, 7, 3, 9, 2},
                       offsets = {0, 3, 5};
  int64_t blocks = 2, bags = 2;
  CUdeviceptr dRows = upload(rows), dIndices = upload(indices),
              dOffsets = upload(offsets),
              dBlockOffsets =
                  upload(std::vector<int64_t>(blocks * (bags + 1), -1)),
              dBlockIndices = upload(std::vector<int64_t>(indices.size(), -1));
  Descriptor operands[] = {
      memref(dRows, 3), memref(dIndices, 5), memref(dOffsets, 3),
      memref(dBlockOffsets, blocks * (bags + 1)), memref(dBlockIndices, 5)};
  std::vector<void *> params;
  for (Descriptor &operand : operands)
    appendParams(operand, params);
  for (kernel_abi::BucketizeStep step : kernel_abi::kBucketizeSteps) {
    CUfunction kernel = nullptr;
    ASSERT_EQ(
        cu.cuModuleGetFunction(
            &kernel, module, kernel_abi::bucketizeKernelName(step, 64).c_str()),
        CUDA_SUCCESS);
    kernel_abi::LaunchGeometry grid =
        kernel_abi::bucketizeGeometry(step, blocks, bags);
    ASSERT_EQ(cu.cuLaunchKernel(kernel, unsigned(grid.gridX),
                                unsigned(grid.gridY), 1, unsigned(grid.blockX),
                                1, 1, 0, nullptr, params.data(), nullptr),
              CUDA_SUCCESS);
  }
  EXPECT_EQ(download<int64_t>(dBlockOffsets, 6),
            (std::vector<int64_t>{0, 2, 3, 0, 1, 2}));
  EXPECT_EQ(download<int64_t>(dBlockIndices, 5),
            (std::vector<int64_t>{1, 3, 2, 2, 4}));

  // An operand that reaches past its buffer is refused before the kernel
  // runs, and so are a block the kernels do not take and a stranger's name.
  CUfunction count = nullptr, missing = nullptr;
  ASSERT_EQ(cu.cuModuleGetFunction(&count, module,
                                   kernel_abi::bucketizeKernelName(
                                       kernel_abi::BucketizeStep::Count, 64)
                                       .c_str()),
            CUDA_SUCCESS);
  operands[1].sizes[0] = 6;
  EXPECT_EQ(cu.cuLaunchKernel(count, 1, 1, 1, 256, 1, 1, 0, nullptr,
                              params.data(), nullptr),
            CUDA_ERROR_INVALID_VALUE);
  operands[1].sizes[0] = 5;
  EXPECT_EQ(cu.cuLaunchKernel(count, 1, 1, 1, 16, 16, 1, 0, nullptr,
                              params.data(), nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu.cuModuleGetFunction(&missing, module, "saxpy"),
            CUDA_ERROR_NOT_FOUND);
  for (CUdeviceptr buffer :
       {dRows, dIndices, dOffsets, dBlockOffsets, dBlockIndices})
    EXPECT_EQ(cu.cuMemFree(buffer), CUDA_SUCCESS);
}

} // namespace
