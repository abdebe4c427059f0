//===- ExchangeABI.h - One rank's side of the exchange ----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The interface between the program one rank runs (`--neuroshard-spmd`) and
// the collective library that moves its data, and the bookkeeping both
// directions of the exchange share.
//
// Rank r of N computes its fused lookup for the whole batch: a row-major
// `B x W_r` buffer. The batch is split into N slices in rank order, rank d
// owning `B_d` rows starting at row `rowBegin(d)`. Forward, rank r sends
// rows `rowBegin(d) .. rowBegin(d) + B_d` of its buffer to rank d and
// receives from every rank d its `B_r x W_d` block, which lands in columns
// `columnBegin(d) .. columnBegin(d) + W_d` of its `B_r x (W_0 + ... +
// W_{N-1})` result. Backward runs the same exchange in reverse: the gradient
// of the rank's result rows goes back, block by block, to the rank that
// computed those columns, which receives the gradient of its whole buffer.
//
// On the wire every block is contiguous (`B_d x W_r` rows of the sender's
// buffer, or a packed `B_r x W_d` block); the receiving side packs and
// unpacks the column blocks.
//
// This header is plain C++ with no dependency.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_EXCHANGEABI_H
#define NEUROSHARD_RUNTIME_EXCHANGEABI_H

#include <cstdint>
#include <string>
#include <vector>

namespace neuroshard {
namespace exchange_abi {

/// Symbol of the exchange runtime function the lowering calls, with a C
/// interface (`_mlir_ciface_<name>`). Operands: the rank's buffer
/// (`memref<?x?xf32>`, B x W_r), its result (`memref<?x?xf32>`,
/// B_r x sum(W)), the widths and the batches (`memref<?xi64>`, one per
/// rank) and the rank (i64).
constexpr const char *kExchangeF32 = "neuroshard_exchange_f32";

/// Symbol of the backward direction, with the same C interface and
/// operands in the reverse roles: the gradient of the rank's result
/// (`memref<?x?xf32>`, B_r x sum(W)), the gradient of its buffer
/// (`memref<?x?xf32>`, B x W_r), the widths, the batches and the rank.
constexpr const char *kExchangeGradientF32 = "neuroshard_exchange_gradient_f32";

/// One rank's view of an exchange between `widths.size()` ranks.
struct ExchangeLayout {
  std::vector<int64_t> widths;  ///< Columns each rank's fused lookup makes.
  std::vector<int64_t> batches; ///< Rows of the batch each rank owns.
  int64_t rank = 0;

  int64_t ranks() const { return static_cast<int64_t>(widths.size()); }
  /// B: rows of every rank's fused lookup.
  int64_t batch() const;
  /// sum(W): columns of every rank's result.
  int64_t totalWidth() const;
  /// First row of rank d's slice of the batch.
  int64_t rowBegin(int64_t d) const;
  /// First column of rank d's columns in a result.
  int64_t columnBegin(int64_t d) const;

  /// Forward: what this rank sends to rank d, as an element offset and
  /// count in its B x W_rank buffer (rank d's rows of it).
  int64_t sendOffset(int64_t d) const;
  int64_t sendCount(int64_t d) const;
  /// Forward: where rank d's B_rank x W_d block lands in the packed
  /// receive buffer (blocks in rank order), and its size.
  int64_t packedOffset(int64_t d) const;
  int64_t packedCount(int64_t d) const;
  /// Elements of the packed buffer: B_rank x sum(W).
  int64_t packedSize() const;
};

/// Why `layout` cannot describe an exchange (empty if it can): counts that
/// differ, a rank outside [0, N), negative sizes, or sizes whose element
/// counts overflow 64 bits.
std::string checkExchangeLayout(const ExchangeLayout &layout);

/// Copies the packed blocks (rank order) into the columns of the
/// B_rank x sum(W) result, row-major.
void unpackColumns(const ExchangeLayout &layout, const float *packed,
                   float *result);

/// The inverse: the columns of a B_rank x sum(W) gradient into packed
/// blocks, rank d's `B_rank x W_d` block at packedOffset(d).
void packColumns(const ExchangeLayout &layout, const float *result,
                 float *packed);

} // namespace exchange_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_EXCHANGEABI_H
