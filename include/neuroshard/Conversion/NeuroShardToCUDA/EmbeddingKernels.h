//===- EmbeddingKernels.h - The generic CUDA embedding kernels --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Builds the GPU module that holds the four generic kernels of KernelABI.h as
// `gpu.func ... kernel`, and the host-side launch of one of them. The kernels
// read every shard's description from the metadata buffer at run time, so one
// compiled module serves any shard set.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_EMBEDDINGKERNELS_H
#define NEUROSHARD_CONVERSION_NEUROSHARDTOCUDA_EMBEDDINGKERNELS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::neuroshard {

/// Builds `gpu.module @neuroshard_kernels [target]` with the forward and the
/// backward+SGD kernel for i32 and i64 indices, at the builder's insertion
/// point.
gpu::GPUModuleOp buildEmbeddingKernelModule(OpBuilder &builder, Location loc,
                                            Attribute target);

/// True if `name` is one of the four kernel names of KernelABI.h; sets
/// `isBackward` accordingly.
bool isEmbeddingKernelName(StringRef name, bool &isBackward);

/// The operand types of a call of `kernelName`: KernelABI.h's operand list,
/// with the index type the name's suffix gives.
SmallVector<Type> embeddingKernelOperandTypes(MLIRContext *context,
                                              StringRef kernelName,
                                              bool isBackward);

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
