//===- CudaKernelABI.h - How the CUDA kernels are launched ------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA side of KernelABI.h: how a host passes the arguments of the generic
// kernels of the `neuroshard_kernels` GPU module and which launch geometry
// they expect. The compiler's host lowering and the standalone CUDA runner
// both follow this header. Plain C++ with no dependency.
//
// Parameters. The kernels take the memref arguments of KernelABI.h. MLIR
// passes a memref to a kernel as its expanded descriptor, so a host that
// launches them by hand passes, in order:
//   memref<?xT>   : allocated pointer, aligned pointer, offset (i64),
//                   size (i64), stride (i64)                 (5 parameters)
//   memref<?x?xT> : allocated pointer, aligned pointer, offset (i64),
//                   size0, size1, stride0, stride1 (i64)     (7 parameters)
//   f32           : the value                                (1 parameter)
// The two pointers are the same device address and the offset is 0.
//
// Geometry. The y dimension of the grid walks the shards and the warps of the
// x dimension walk the bags, both with grid-stride loops, so any grid is
// correct; blockDim.x must be a multiple of 32 (a warp or sub-warps of it own
// whole bags) and blockDim.y = blockDim.z = 1.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_CUDA_CUDAKERNELABI_H
#define NEUROSHARD_RUNTIME_CUDA_CUDAKERNELABI_H

#include <cstdint>

namespace neuroshard {
namespace cuda_abi {

/// Symbol of the GPU module that holds the four kernels.
constexpr const char *kKernelModuleName = "neuroshard_kernels";

/// Threads per block of every launch.
constexpr int64_t kThreadsPerBlock = 256;
constexpr int64_t kWarpSize = 32;
/// Kernel parameters of a one- and a two-dimensional memref.
constexpr int kParamsPerMemRef1D = 5;
constexpr int kParamsPerMemRef2D = 7;
/// Parameters of the forward (6 memrefs) and backward (6 memrefs, lr) kernels.
constexpr int kForwardParams = 5 * kParamsPerMemRef1D + kParamsPerMemRef2D;
constexpr int kBackwardParams = kForwardParams + 1;

struct LaunchGeometry {
  int64_t gridX = 0, gridY = 0, blockX = kThreadsPerBlock;
};

/// One warp per bag for the widest shards; narrower shards pack several bags
/// into a warp and leave the surplus warps idle. Empty when there is nothing
/// to launch (no shard or no bag).
inline LaunchGeometry launchGeometry(int64_t numShards, int64_t batchSize) {
  LaunchGeometry geometry;
  if (numShards <= 0 || batchSize <= 0)
    return geometry;
  int64_t warpsPerBlock = kThreadsPerBlock / kWarpSize;
  int64_t blocks = (batchSize + warpsPerBlock - 1) / warpsPerBlock;
  // The grid's limits (2^31 - 1 in x, 65535 in y) only cap the parallelism:
  // the grid-stride loops cover the rest.
  geometry.gridX = blocks < 2147483647 ? blocks : 2147483647;
  geometry.gridY = numShards < 65535 ? numShards : 65535;
  return geometry;
}

} // namespace cuda_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_CUDA_CUDAKERNELABI_H
