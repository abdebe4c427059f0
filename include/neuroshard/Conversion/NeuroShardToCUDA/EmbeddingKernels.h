//===- EmbeddingKernels.h - The generic CUDA embedding kernels --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Builds the GPU module that holds the generic kernels of KernelABI.h as
// `gpu.func ... kernel` (the four embedding-bag kernels, and per index type
// the three steps of bucketization and the fetch through a row cache), and
// the host-side launches. The
// embedding-bag kernels read every shard's description from the metadata
// buffer at run time, so one compiled module serves any shard set.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_EMBEDDINGKERNELS_H
#define NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_EMBEDDINGKERNELS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::neuroshard {

/// The one inline PTX statement of the kernels: on sm_90 and later, the
/// backward kernel adds a 16-byte vector of updates with one
/// `red.global.add.v4.f32` (operands: the generic address as i64, then the
/// four floats), where older chips take four scalar atomics. Hosts that
/// execute the kernels elsewhere (the SIMT emulator) recognise it by this
/// text and its constraints.
inline constexpr const char *kVectorAtomicAddAsm =
    "{ .reg .b64 g; cvta.to.global.u64 g, $0; "
    "red.global.add.v4.f32 [g], {$1, $2, $3, $4}; }";
inline constexpr const char *kVectorAtomicAddConstraints =
    "l,f,f,f,f,~{memory}";

/// The PTX ISA version that `red.global.add.v4.f32` needs (8.1).
inline constexpr unsigned kVectorAtomicAddPtxVersion = 81;

/// True if kernels for `chip` ("sm_90", "sm_90a", ...) built with PTX
/// `features` can use `red.global.add.v4.f32`: the chip is sm_90 or later
/// and the features ask for PTX ISA 8.1 or later.
bool targetHasVectorAtomicAdd(StringRef chip, StringRef features);

/// The PTX features the kernels are built with: `features` as given, except
/// that on sm_90 and later a list that names no PTX version gets +ptx81, so
/// that the backward kernel can use vector atomics.
std::string kernelTargetFeatures(StringRef chip, StringRef features);

/// The address in bytes of element `position` of the 1-D f32 memref
/// `memref` (aligned pointer, descriptor offset and stride included), as an
/// index: what the vector atomic's inline PTX takes.
Value floatElementAddress(OpBuilder &b, Location loc, Value memref,
                          Value position);

/// The most rows of a bag the backward kernel can be asked to hold back.
inline constexpr int kMaxMergedRows = 8;

/// Builds `gpu.module @neuroshard_kernels [target]` with the forward and the
/// backward+SGD kernel, the bucketization kernels and the row cache fetch
/// for i32 and i64 indices, at the builder's insertion point. The backward
/// kernel uses vector atomics when `target` is an NVVM target for which
/// targetHasVectorAtomicAdd holds, and holds `mergedRows` rows of a bag
/// back to merge repeated indices (-1: as many as fit in registers, 3 with
/// i32 indices and 2 with i64; 0: one atomic per index).
gpu::GPUModuleOp buildEmbeddingKernelModule(OpBuilder &builder, Location loc,
                                            Attribute target,
                                            int mergedRows = -1);

/// True if `name` is one of the four kernel names of KernelABI.h; sets
/// `isBackward` accordingly.
bool isEmbeddingKernelName(StringRef name, bool &isBackward);

/// The operand types of a call of `kernelName`: KernelABI.h's operand list,
/// with the index type the name's suffix gives.
SmallVector<Type> embeddingKernelOperandTypes(MLIRContext *context,
                                              StringRef kernelName,
                                              bool isBackward);

/// True if `name` is a host call of bucketization (KernelABI.h's
/// kBucketizeI32 or kBucketizeI64).
bool isBucketizeCallName(StringRef name);

/// The operand types of a bucketization call `callName`: KernelABI.h's
/// kBucketizeOperands with the index type the name's suffix gives.
SmallVector<Type> bucketizeOperandTypes(MLIRContext *context,
                                        StringRef callName);

/// Emits the host side of one bucketization call `callName`: copies the
/// host memrefs `args` (rows, indices, offsets, block offsets, block
/// indices) to device buffers, launches the count, scan and scatter kernels
/// in order, copies both outputs back and frees the buffers; everything on
/// one stream, waited for before returning.
void emitBucketizeLaunch(OpBuilder &builder, Location loc, StringRef callName,
                         ValueRange args);

/// True if `name` is one of the row cache fetch kernels of KernelABI.h
/// (kRowCacheFetchKernelI32 or kRowCacheFetchKernelI64).
bool isRowCacheFetchKernelName(StringRef name);

/// The operand types of a call of the row cache fetch kernel `kernelName`:
/// KernelABI.h's kRowCacheFetchOperands with the index type of its suffix.
SmallVector<Type> rowCacheFetchOperandTypes(MLIRContext *context,
                                            StringRef kernelName);

/// Emits the host side of one row cache fetch: copies the cache's state,
/// the weight arena and the rows (`args`, in kRowCacheFetchOperands' order)
/// to device buffers, launches `kernelName` on a warp per set (up to
/// kRowCacheFetchMaxWarps), copies the state, the arena and the locations
/// back and frees the buffers; on one stream, waited for before returning.
void emitRowCacheFetchLaunch(OpBuilder &builder, Location loc,
                             StringRef kernelName, ValueRange args);

/// Emits the host side of one kernel call: copies the host memrefs `args`
/// (meta, layout, weights, indices, offsets, out or grad, then lr for the
/// backward kernel) to device buffers, launches `kernelName` of the kernels
/// module with the geometry of KernelABI.h, copies the results back
/// (the output after forward, the weights after backward) and frees the
/// buffers; everything on one stream, waited for before returning.
void emitKernelLaunch(OpBuilder &builder, Location loc, StringRef kernelName,
                      ValueRange args);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_EMBEDDINGKERNELS_H
