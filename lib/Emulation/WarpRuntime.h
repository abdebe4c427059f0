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

#include <string>
#include <utility>
#include <vector>

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
/// `(i64 address, f32 value) -> ()`: a float atomic add (memref.atomic_rmw
/// addf), counted.
constexpr const char *kAtomicAddSymbol = "neuroshard_emu_atomic_add";
/// `(i64 address, f32 x4) -> ()`: the backward kernel's vector reduction
/// (red.global.add.v4.f32), counted as one atomic.
constexpr const char *kVectorAtomicAddSymbol = "neuroshard_emu_atomic_add_v4";

/// The runtime symbols and their addresses, for compileForHost.
std::vector<std::pair<std::string, void *>> runtimeSymbols();

/// Runs `kernel` (a packed kernel wrapper) on every thread of the grid.
llvm::Error runGrid(execution::PackedFunction kernel, void **arguments,
                    const LaunchConfig &config, LaunchStats *stats);

} // namespace emulation
} // namespace neuroshard

#endif // NEUROSHARD_LIB_EMULATION_WARPRUNTIME_H
