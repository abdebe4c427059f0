//===- JIT.h - Lowering and JIT compilation of modules ----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Lowers a module with `--neuroshard-to-cpu` (or, for a CUDA GPU,
// `--neuroshard-cuda-pipeline`), JIT-compiles its host code with MLIR's
// ExecutionEngine, and calls the generic kernels of KernelABI.h with
// arguments placed by the ABI's operand list. compileForHost is the one
// place that sets up LLVM's JIT; the warp emulation's kernels are compiled
// through it too.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_EXECUTION_JIT_H
#define NEUROSHARD_EXECUTION_JIT_H

#include "neuroshard/Runtime/KernelABI.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace neuroshard {
namespace execution {

/// Where a compiled model runs.
enum class Target { CPU, CUDA };

struct CompileOptions {
  Target target = Target::CPU;
  /// CUDA: the architecture the kernels are compiled for.
  std::string cudaChip = "sm_90";
  /// CUDA: the shared library with the mgpu* entry points the lowered host
  /// code calls (NeuroShard's libneuroshard_cuda_runtime.so).
  std::string cudaRuntimeLibrary;
  /// Functions of this process the lowered code may call, by symbol (for
  /// instance the exchange runtime of a rank's program).
  std::vector<std::pair<std::string, void *>> hostSymbols;
};

/// Lowers `module` in place for `options.target` and JIT-compiles its host
/// code with compileForHost. Errors carry the diagnostics of a failing
/// lowering.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
lowerAndCompile(mlir::ModuleOp module, const CompileOptions &options = {});

/// What compileForHost links a module with.
struct HostCompileOptions {
  /// Shared libraries whose functions the code calls.
  std::vector<std::string> sharedLibraries;
  /// Functions of this process the code calls, by symbol.
  std::vector<std::pair<std::string, void *>> hostSymbols;
};

/// Translates `module`, already in the LLVM dialect, to LLVM IR and
/// JIT-compiles it with MLIR's ExecutionEngine at LLVM -O3 for the host CPU
/// and its features (AVX-512 where the host has it).
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
compileForHost(mlir::ModuleOp module, const HostCompileOptions &options);

/// Collects the diagnostics that a step (a pass pipeline, a translation)
/// reports while it lives, as one message of "location: diagnostic" lines.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext *context);
  std::string messages;

private:
  mlir::ScopedDiagnosticHandler handler;
};

/// A function with a C interface (`llvm.emit_c_interface`), called through
/// ExecutionEngine's packed wrapper: element i of the argument array points
/// at argument i.
using PackedFunction = void (*)(void **);

/// The packed wrapper of the C interface of `name`.
llvm::Expected<PackedFunction> lookupPacked(mlir::ExecutionEngine &engine,
                                            llvm::StringRef name);

template <typename T> using MemRef1D = StridedMemRefType<T, 1>;
using MemRef2D = StridedMemRefType<float, 2>;

/// A descriptor of the elements of a contiguous container.
template <typename Container>
MemRef1D<typename Container::value_type> memref1D(Container &elements) {
  MemRef1D<typename Container::value_type> d;
  d.basePtr = d.data = elements.data();
  d.offset = 0;
  d.sizes[0] = static_cast<int64_t>(elements.size());
  d.strides[0] = 1;
  return d;
}

/// A descriptor of a row-major `rows x cols` matrix at `data`.
MemRef2D memref2D(float *data, int64_t rows, int64_t cols);

/// The operands of one generic kernel call, with indices of type `Index`.
/// `out` is the forward output or the backward gradient; `lr` is only read
/// by the backward kernel.
template <typename Index> struct KernelOperands {
  MemRef1D<int64_t> meta, layout;
  MemRef1D<float> weights;
  MemRef1D<Index> indices, offsets;
  MemRef2D out;
  float lr = 0;
};

/// The argument array of a packed call of a generic kernel: operands in the
/// order of kernel_abi::kKernelOperands. The C interface takes a memref as a
/// pointer to its descriptor and a scalar by value, so a memref's argument
/// points at its slot in `descriptors` (which must outlive the call).
template <typename Index> struct PackedKernelArguments {
  void *descriptors[kernel_abi::kMaxOperands];
  void *arguments[kernel_abi::kMaxOperands];

  explicit PackedKernelArguments(KernelOperands<Index> &operands) {
    namespace abi = kernel_abi;
    descriptors[abi::kMetaOperand] = &operands.meta;
    descriptors[abi::kLayoutOperand] = &operands.layout;
    descriptors[abi::kWeightsOperand] = &operands.weights;
    descriptors[abi::kIndicesOperand] = &operands.indices;
    descriptors[abi::kOffsetsOperand] = &operands.offsets;
    descriptors[abi::kOutOperand] = &operands.out;
    descriptors[abi::kLearningRateOperand] = &operands.lr;
    for (unsigned i = 0; i < abi::kMaxOperands; ++i)
      arguments[i] = abi::kKernelOperands[i].rank == 0
                         ? descriptors[i]
                         : static_cast<void *>(&descriptors[i]);
  }
  PackedKernelArguments(const PackedKernelArguments &) = delete;
  PackedKernelArguments &operator=(const PackedKernelArguments &) = delete;
};

/// Calls `kernel` (the forward or backward kernel, `isBackward`) with the
/// arguments in the order of kernel_abi::kKernelOperands; the forward
/// kernel ignores the trailing learning rate.
template <typename Index>
void callKernel(PackedFunction kernel, KernelOperands<Index> &operands,
                bool isBackward) {
  PackedKernelArguments<Index> packed(operands);
  kernel(packed.arguments);
}

} // namespace execution
} // namespace neuroshard

#endif // NEUROSHARD_EXECUTION_JIT_H
