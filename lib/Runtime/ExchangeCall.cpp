//===- ExchangeCall.cpp - A call of the exchange's C interface ------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeCall.h"

using namespace neuroshard::exchange_abi;

namespace {

bool rowMajor(const MemRefDescriptor<float, 2> &d) {
  return d.strides[1] == 1 && (d.sizes[0] <= 1 || d.strides[0] == d.sizes[1]);
}

std::vector<int64_t> elements(const MemRefDescriptor<int64_t, 1> &d) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < d.sizes[0]; ++i)
    values.push_back(d.aligned[d.offset + i * d.strides[0]]);
  return values;
}

} // namespace

std::string neuroshard::exchange_abi::readExchangeCall(
    const MemRefDescriptor<float, 2> &buffer,
    const MemRefDescriptor<float, 2> &result,
    const MemRefDescriptor<int64_t, 1> &widths,
    const MemRefDescriptor<int64_t, 1> &batches, int64_t rank,
    ExchangeLayout &layout) {
  layout.widths = elements(widths);
  layout.batches = elements(batches);
  layout.rank = rank;
  std::string why = checkExchangeLayout(layout);
  if (!why.empty())
    return why;
  if (!rowMajor(buffer) || !rowMajor(result))
    return "the exchange's buffers are not row-major";
  if (buffer.sizes[0] != layout.batch() ||
      buffer.sizes[1] != layout.widths[rank] ||
      result.sizes[0] != layout.batches[rank] ||
      result.sizes[1] != layout.totalWidth())
    return "the exchange's buffers do not match its widths and batches";
  return "";
}

std::string
neuroshard::exchange_abi::checkExchangeJob(const ExchangeLayout &layout,
                                           int64_t jobRank, int64_t jobRanks) {
  std::string why = checkExchangeLayout(layout);
  if (!why.empty())
    return why;
  if (layout.ranks() != jobRanks)
    return "the exchange is between " + std::to_string(layout.ranks()) +
           " ranks but the job has " + std::to_string(jobRanks);
  if (layout.rank != jobRank)
    return "the program of rank " + std::to_string(layout.rank) +
           " runs on rank " + std::to_string(jobRank);
  return "";
}
