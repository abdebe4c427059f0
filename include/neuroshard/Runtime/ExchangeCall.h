//===- ExchangeCall.h - A call of the exchange's C interface ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What an exchange runtime receives when lowered code calls kExchangeF32's
// C interface (`_mlir_ciface_neuroshard_exchange_f32`): MLIR's memref
// descriptors (CRunnerUtils.h's layout), read into an ExchangeLayout and
// checked against the buffers and against the job, in one wording for every
// transport.
//
// This header is plain C++ with no dependency.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_EXCHANGECALL_H
#define NEUROSHARD_RUNTIME_EXCHANGECALL_H

#include "neuroshard/Runtime/ExchangeABI.h"

#include <cstdint>
#include <string>

namespace neuroshard {
namespace exchange_abi {

/// MLIR's descriptor of a memref of rank N.
template <typename T, int N> struct MemRefDescriptor {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

/// The C interface of kExchangeF32: the rank's buffer (B x W_r), its result
/// (B_r x sum(W)), the widths, the batches and the rank.
using ExchangeF32Function = void (*)(MemRefDescriptor<float, 2> *,
                                     MemRefDescriptor<float, 2> *,
                                     MemRefDescriptor<int64_t, 1> *,
                                     MemRefDescriptor<int64_t, 1> *, int64_t);

/// Reads the widths, batches and rank of one call into `layout` and checks
/// that they describe an exchange and that both buffers are row-major with
/// the sizes it needs. Returns why not (empty if they do).
std::string readExchangeCall(const MemRefDescriptor<float, 2> &buffer,
                             const MemRefDescriptor<float, 2> &result,
                             const MemRefDescriptor<int64_t, 1> &widths,
                             const MemRefDescriptor<int64_t, 1> &batches,
                             int64_t rank, ExchangeLayout &layout);

/// Reads the batches and rank of one call of either side of the
/// reduce-scatter (kReduceScatterF32 or its gradient) into `layout`, every
/// rank with the columns of `whole`, and checks that `whole` (B x W) and
/// `own` (B_rank x W) are row-major with those sizes. `offsets` holds the
/// B + 1 offsets of a mean, or nothing for a sum; `divisors` receives the
/// whole length of each of the rank's bags (1 for an empty bag), or nothing
/// for a sum. Returns why not (empty if they do).
std::string readReduceScatterCall(const MemRefDescriptor<float, 2> &whole,
                                  const MemRefDescriptor<float, 2> &own,
                                  const MemRefDescriptor<int64_t, 1> &batches,
                                  const MemRefDescriptor<int64_t, 1> &offsets,
                                  int64_t rank, ExchangeLayout &layout,
                                  std::vector<float> &divisors);

/// Divides each of a rank's bags, the rows of `rows` (divisors.size() x
/// width, row-major), by its divisor from readReduceScatterCall: the mean
/// after the reduce-scatter's sum, and its adjoint before the all-gather.
void divideBags(const std::vector<float> &divisors, int64_t width, float *rows);

/// The C interface of the reduce-scatter (kReduceScatterF32) and of its
/// gradient: the B x W and B_rank x W buffers (in the roles each direction
/// gives them), the batches, the offsets of a mean and the rank.
using ReduceScatterF32Function = void (*)(MemRefDescriptor<float, 2> *,
                                          MemRefDescriptor<float, 2> *,
                                          MemRefDescriptor<int64_t, 1> *,
                                          MemRefDescriptor<int64_t, 1> *,
                                          int64_t);

/// Why `layout` does not describe the job this process is rank `jobRank`
/// of, out of `jobRanks` (empty if it does).
std::string checkExchangeJob(const ExchangeLayout &layout, int64_t jobRank,
                             int64_t jobRanks);

} // namespace exchange_abi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_EXCHANGECALL_H
