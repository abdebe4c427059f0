//===- BagInputs.h - What the kernels assume of their inputs ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The kernels read their indices and offsets without checks (as FBGEMM's do;
// PyTorch asserts the same rules before a launch). A lookup of B bags over
// a table of R rows needs B + 1 offsets that start at 0, never decrease and
// end at the number of indices, and indices in [0, R). Otherwise a bag
// length wraps around (a warp loops for ~2^59 iterations) or the kernels
// read and write outside the table. With i32 indices, offsets and indices
// must also fit in 31 bits. Plain C++, for hosts without LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_BAGINPUTS_H
#define NEUROSHARD_RUNTIME_BAGINPUTS_H

#include <cstdint>
#include <string>

namespace neuroshard {
namespace kernel_abi {

/// Why the inputs of lookup `name` cannot be passed to the kernels, naming
/// the position and the value; empty when they can. `offsets` has
/// `numOffsets` entries, `indices` `numIndices`.
template <typename Offset, typename Index>
std::string checkBagInputs(const std::string &name, const Offset *offsets,
                           int64_t numOffsets, const Index *indices,
                           int64_t numIndices, int64_t batch, int64_t rows,
                           bool i32) {
  auto at = [&](const char *what, int64_t position) {
    return name + ": " + what + "[" + std::to_string(position) + "] is ";
  };
  if (numOffsets != batch + 1)
    return name + ": " + std::to_string(numOffsets) +
           " offsets; expected the batch size + 1 = " +
           std::to_string(batch + 1);
  constexpr int64_t kI32Max = 2147483647;
  for (int64_t b = 0; b < numOffsets; ++b) {
    int64_t value = static_cast<int64_t>(offsets[b]);
    if (b == 0 && value != 0)
      return at("offsets", 0) + std::to_string(value) + "; offsets start at 0";
    if (b > 0 && value < static_cast<int64_t>(offsets[b - 1]))
      return at("offsets", b) + std::to_string(value) + ", less than offsets[" +
             std::to_string(b - 1) +
             "] = " + std::to_string(static_cast<int64_t>(offsets[b - 1])) +
             "; offsets must not decrease";
    if (i32 && value > kI32Max)
      return at("offsets", b) + std::to_string(value) +
             ", past what i32 offsets hold (2^31 - 1); use i64 indices";
  }
  int64_t last = static_cast<int64_t>(offsets[numOffsets - 1]);
  if (last != numIndices)
    return at("offsets", numOffsets - 1) + std::to_string(last) +
           "; the last offset must be the number of indices, " +
           std::to_string(numIndices);
  for (int64_t i = 0; i < numIndices; ++i) {
    int64_t value = static_cast<int64_t>(indices[i]);
    if (value < 0 || value >= rows)
      return at("indices", i) + std::to_string(value) + "; the table has " +
             std::to_string(rows) + " rows";
    if (i32 && value > kI32Max)
      return at("indices", i) + std::to_string(value) +
             ", past what i32 indices hold (2^31 - 1); use i64 indices";
  }
  return "";
}

} // namespace kernel_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_BAGINPUTS_H
