//===- KernelLaunches.cpp - Host launches of the embedding kernels --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The host side of the generic kernels (EmbeddingKernels.h): device
// buffers for a call's operands, the grid that covers its bags, the
// asynchronous launches of the lookup and bucketize kernels and the copies
// back, for --neuroshard-cuda-launch.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/EmbeddingKernels.h"

#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/RowCache.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

using namespace mlir;
using namespace mlir::neuroshard;

namespace abi = ::neuroshard::kernel_abi;

/// A device buffer like the host memref `host`, filled from it when
/// `upload`; `token` follows the copy.
static Value allocOnDevice(ImplicitLocOpBuilder &b, Value &token, Value host,
                           bool upload) {
  Type tokenType = gpu::AsyncTokenType::get(b.getContext());
  auto type = cast<MemRefType>(host.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(memref::DimOp::create(b, host, d));
  auto alloc = gpu::AllocOp::create(b, type, tokenType, ValueRange{token},
                                    sizes, ValueRange{}, /*hostShared=*/false);
  token = alloc.getAsyncToken();
  if (upload)
    token = gpu::MemcpyOp::create(b, tokenType, ValueRange{token},
                                  alloc.getMemref(), host)
                .getAsyncToken();
  return alloc.getMemref();
}

/// Device copies of the first `count` operands of `args` (memrefs), after
/// a fresh token, each uploaded unless `written` says the kernels write all
/// of it; `token` follows the copies.
static SmallVector<Value> deviceCopies(ImplicitLocOpBuilder &b, Value &token,
                                       ValueRange args, unsigned count,
                                       function_ref<bool(unsigned)> written) {
  Type tokenType = gpu::AsyncTokenType::get(b.getContext());
  token = gpu::WaitOp::create(b, tokenType, ValueRange{}).getAsyncToken();
  SmallVector<Value> deviceArgs;
  for (unsigned i = 0; i < count; ++i)
    deviceArgs.push_back(allocOnDevice(b, token, args[i], !written(i)));
  return deviceArgs;
}

/// Enough blocks of `perBlock` work items for `work` of them, within the
/// grid's x limit and at least one (the kernels' grid-stride loops run no
/// iteration when there is no work).
static Value gridFor(ImplicitLocOpBuilder &b, Value work, int64_t perBlock) {
  return arith::MaxUIOp::create(
      b,
      arith::MinUIOp::create(
          b,
          arith::CeilDivUIOp::create(
              b, work, arith::ConstantIndexOp::create(b, perBlock)),
          arith::ConstantIndexOp::create(b, abi::kMaxGridX)),
      arith::ConstantIndexOp::create(b, 1));
}

/// Launches `kernel` of the kernels module on a `gridX` x `gridY` grid of
/// kThreadsPerBlock-thread blocks after `token`; returns its token.
static Value launch(ImplicitLocOpBuilder &b, Value token, StringRef kernel,
                    Value gridX, Value gridY, ValueRange args) {
  Type tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value blockX = arith::ConstantIndexOp::create(b, abi::kThreadsPerBlock);
  auto symbol =
      SymbolRefAttr::get(b.getStringAttr(abi::kKernelModuleName),
                         {FlatSymbolRefAttr::get(b.getStringAttr(kernel))});
  return gpu::LaunchFuncOp::create(b, symbol,
                                   gpu::KernelDim3{gridX, gridY, one},
                                   gpu::KernelDim3{blockX, one, one},
                                   /*dynamicSharedMemorySize=*/Value(), args,
                                   tokenType, ValueRange{token})
      .getAsyncToken();
}

/// Copies `results` of `deviceArgs` back into `hostArgs`, frees every
/// device buffer and waits for the stream.
static void finishLaunches(ImplicitLocOpBuilder &b, Value token,
                           ValueRange hostArgs, ValueRange deviceArgs,
                           ArrayRef<unsigned> results) {
  Type tokenType = gpu::AsyncTokenType::get(b.getContext());
  for (unsigned result : results)
    token = gpu::MemcpyOp::create(b, tokenType, ValueRange{token},
                                  hostArgs[result], deviceArgs[result])
                .getAsyncToken();
  for (Value buffer : deviceArgs)
    if (isa<MemRefType>(buffer.getType()))
      token = gpu::DeallocOp::create(b, tokenType, ValueRange{token}, buffer)
                  .getAsyncToken();
  gpu::WaitOp::create(b, Type(), ValueRange{token});
}

void mlir::neuroshard::emitKernelLaunch(OpBuilder &builder, Location loc,
                                        StringRef kernelName, ValueRange args) {
  ImplicitLocOpBuilder b(loc, builder);
  bool isBackward = false;
  (void)isEmbeddingKernelName(kernelName, isBackward);
  // Device copies of the memrefs. The forward output needs no upload: the
  // kernel writes every element of it.
  constexpr unsigned kWeights = abi::kWeightsOperand, kOut = abi::kOutOperand,
                     kNumMemRefs = abi::kLearningRateOperand;
  Value token;
  SmallVector<Value> deviceArgs =
      deviceCopies(b, token, args, kNumMemRefs,
                   [&](unsigned i) { return i == kOut && !isBackward; });
  if (isBackward)
    deviceArgs.push_back(args[kNumMemRefs]);

  // abi::launchGeometry in IR, since the sizes are only known at run time.
  Value numShards = arith::DivUIOp::create(
      b, memref::DimOp::create(b, args[abi::kMetaOperand], 0),
      arith::ConstantIndexOp::create(b, abi::kShardFields));
  Value batch = memref::DimOp::create(b, args[kOut], 0);
  Value gridX = gridFor(b, batch, abi::kThreadsPerBlock / abi::kWarpSize);
  Value gridY = arith::MaxUIOp::create(
      b,
      arith::MinUIOp::create(b, numShards,
                             arith::ConstantIndexOp::create(b, abi::kMaxGridY)),
      arith::ConstantIndexOp::create(b, 1));
  token = launch(b, token, kernelName, gridX, gridY, deviceArgs);
  finishLaunches(b, token, args, deviceArgs, {isBackward ? kWeights : kOut});
}

void mlir::neuroshard::emitBucketizeLaunch(OpBuilder &builder, Location loc,
                                           StringRef callName,
                                           ValueRange args) {
  ImplicitLocOpBuilder b(loc, builder);
  // The outputs need no upload: count writes every block offset and the
  // caller reads only the indices that scatter writes.
  Value token;
  SmallVector<Value> deviceArgs =
      deviceCopies(b, token, args, abi::kBucketizeNumOperands, [](unsigned i) {
        return i == abi::kBlockOffsetsOperand || i == abi::kBlockIndicesOperand;
      });

  // abi::bucketizeGeometry in IR.
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value numBlocks = arith::SubIOp::create(
      b, memref::DimOp::create(b, args[abi::kRowsOperand], 0), one);
  Value numBags = arith::SubIOp::create(
      b, memref::DimOp::create(b, args[abi::kBucketOffsetsOperand], 0), one);
  int indexBits = callName == abi::kBucketizeI32 ? 32 : 64;
  for (abi::BucketizeStep step : abi::kBucketizeSteps) {
    Value work = numBags;
    if (step == abi::BucketizeStep::Scan)
      work = arith::MulIOp::create(
          b, numBlocks, arith::ConstantIndexOp::create(b, abi::kWarpSize));
    else if (step == abi::BucketizeStep::Count)
      work = arith::MaxUIOp::create(b, numBags, numBlocks);
    token = launch(b, token, abi::bucketizeKernelName(step, indexBits),
                   gridFor(b, work, abi::kThreadsPerBlock), one, deviceArgs);
  }
  finishLaunches(b, token, args, deviceArgs,
                 {abi::kBlockOffsetsOperand, abi::kBlockIndicesOperand});
}

void mlir::neuroshard::emitRowCacheFetchLaunch(OpBuilder &builder, Location loc,
                                               StringRef kernelName,
                                               ValueRange args) {
  ImplicitLocOpBuilder b(loc, builder);
  // The locations need no upload: the kernel writes every one of them.
  Value token;
  SmallVector<Value> deviceArgs =
      deviceCopies(b, token, args, abi::kRowCacheFlagsOperand, [](unsigned i) {
        return i == abi::kRowCacheLocationsOperand;
      });
  deviceArgs.push_back(args[abi::kRowCacheFlagsOperand]);

  // abi::rowCacheFetchGeometry in IR: the sets are in the host's state.
  Value sets = arith::IndexCastOp::create(
      b, b.getIndexType(),
      memref::LoadOp::create(b, args[abi::kRowCacheStateOperand],
                             ValueRange{arith::ConstantIndexOp::create(
                                 b, ::neuroshard::runtime::kRowCacheSets)}));
  Value warps = arith::MinUIOp::create(
      b, sets, arith::ConstantIndexOp::create(b, abi::kRowCacheFetchMaxWarps));
  Value gridX =
      gridFor(b,
              arith::MulIOp::create(
                  b, warps, arith::ConstantIndexOp::create(b, abi::kWarpSize)),
              abi::kThreadsPerBlock);
  token = launch(b, token, kernelName, gridX,
                 arith::ConstantIndexOp::create(b, 1), deviceArgs);
  finishLaunches(b, token, args, deviceArgs,
                 {abi::kRowCacheStateOperand, abi::kRowCacheWeightsOperand,
                  abi::kRowCacheLocationsOperand});
}
