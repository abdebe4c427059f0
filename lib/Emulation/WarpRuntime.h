//===- WarpRuntime.h - The runtime the emulated kernels call ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Emulation: the symbols that the host copies of the kernels
// call, and the grid runner that schedules their lanes.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_LIB_EMULATION_WARPRUNTIME_H
#define NEUROSHARD_LIB_EMULATION_WARPRUNTIME_H

#include "neuroshard/Emulation/SIMTEmulator.h"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

namespace neuroshard {
namespace emulation {

/// `(i32 dimension) -> index` queries.
constexpr const char *kThreadIdSymbol = "neuroshard_emu_thread_id";
constexpr const char *kBlockIdSymbol = "neuroshard_emu_block_id";
constexpr const char *kBlockDimSymbol = "neuroshard_emu_block_dim";
constexpr const char *kGridDimSymbol = "neuroshard_emu_grid_dim";
/// `(i32 value, i32 offset, i32 width, i32 mode, i32 site) -> i64`: the
/// received value in the low 32 bits and the valid flag in bit 32. `mode`
/// is gpu::ShuffleMode; `site` numbers the shuffles of a kernel.
constexpr const char *kShuffleSymbol = "neuroshard_emu_shuffle";

/// The addresses of the runtime symbols, for ExecutionEngine.
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner interner);

/// Runs `kernel` (a packed kernel wrapper) on every thread of the grid.
llvm::Error runGrid(execution::PackedFunction kernel, void **arguments,
                    const LaunchConfig &config, LaunchStats *stats);

} // namespace emulation
} // namespace neuroshard

#endif // NEUROSHARD_LIB_EMULATION_WARPRUNTIME_H
