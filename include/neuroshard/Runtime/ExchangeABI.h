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

/// Symbol of a rank's side of the reduce-scatter of row pieces' partial
/// sums (`neuroshard.rank_reduce_scatter`), with a C interface. Operands:
/// the rank's partial sums (`memref<?x?xf32>`, B x W), its slice of their
/// sum (`memref<?x?xf32>`, B_rank x W), the batches (`memref<?xi64>`, one
/// per rank), the lookup's B + 1 offsets for a mean (`memref<?xi64>`;
/// empty for a sum) and the rank (i64).
constexpr const char *kReduceScatterF32 = "neuroshard_reduce_scatter_f32";

/// Symbol of its backward direction, an all-gather: the gradient of the
/// rank's slice (`memref<?x?xf32>`, B_rank x W), the gradient of its
/// partial sums (`memref<?x?xf32>`, B x W), the batches, the offsets and
/// the rank.
constexpr const char *kReduceScatterGradientF32 =
    "neuroshard_reduce_scatter_gradient_f32";

/// Symbols of the SGD update of data-parallel replicas
/// (`neuroshard.fused_embedding_bag_sgd ... all_reduce`), with a C
/// interface and the operands of the backward kernel (KernelABI.h): each
/// rank's gradient of the replicas' rows is summed over all ranks before
/// the update.
constexpr const char *kReplicaSGDI32 = "neuroshard_replica_sgd_i32";
constexpr const char *kReplicaSGDI64 = "neuroshard_replica_sgd_i64";

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

/// The exchange in two phases on nodes of P consecutive ranks (N = M x P
/// ranks; rank r = g * P + l is rank l of node g). First, between nodes:
/// rank r sends rank h * P + l, its peer in every node h, the rows of node
/// h's slice of the batch (one contiguous block), and receives node g's
/// rows of every peer's columns into a staging buffer, block h after block
/// h - 1. Then, inside node g: rank r sends every rank g * P + l' of its
/// node that rank's rows of every staged block, and receives from every
/// rank g * P + l'' its rows of the columns that rank staged. Each value
/// crosses between nodes at most once, in one message per pair of peers
/// rather than one per pair of ranks. The backward runs both phases in
/// reverse order, each in reverse. Counts and offsets are in elements; all
/// messages are indexed by the rank's position in the communicator of the
/// phase: the node for the first phase, the local rank for the second.
struct NodeExchange {
  int64_t ranksPerNode = 1, node = 0, local = 0;
  /// Between nodes: sent from the rank's B x W_r buffer, received into the
  /// staging buffer (block h: node g's rows x W_{h*P+l}).
  std::vector<int64_t> interSendCounts, interSendOffsets;
  std::vector<int64_t> interRecvCounts, interRecvOffsets;
  int64_t stagingSize = 0;
  /// Inside the node: sent from the gathered buffer (for rank l', its rows
  /// of every staged block in node order), received into the packed buffer
  /// (from rank l'', B_r x W_{h*P+l''} for every node h in order).
  std::vector<int64_t> intraSendCounts, intraSendOffsets;
  std::vector<int64_t> intraRecvCounts, intraRecvOffsets;
  int64_t gatheredSize = 0, packedSize = 0;
};

/// Why `ranksPerNode` cannot group the ranks of `layout` into nodes (it is
/// below 1 or does not divide the rank count), or empty.
std::string checkRanksPerNode(const ExchangeLayout &layout,
                              int64_t ranksPerNode);

/// The two phases for this rank of `layout` (checkExchangeLayout and
/// checkRanksPerNode hold).
NodeExchange planNodeExchange(const ExchangeLayout &layout,
                              int64_t ranksPerNode);

/// Forward, between the phases: every node rank's rows of the staged blocks
/// into the gathered buffer, and its inverse (backward).
void gatherNodeRows(const ExchangeLayout &layout, const NodeExchange &plan,
                    const float *staging, float *gathered);
void scatterNodeRows(const ExchangeLayout &layout, const NodeExchange &plan,
                     const float *gathered, float *staging);

/// Forward, after the second phase: the packed blocks into the columns of
/// the B_rank x sum(W) result, and its inverse (backward, before).
void unpackNodeColumns(const ExchangeLayout &layout, const NodeExchange &plan,
                       const float *packed, float *result);
void packNodeColumns(const ExchangeLayout &layout, const NodeExchange &plan,
                     const float *result, float *packed);

} // namespace exchange_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_EXCHANGEABI_H
