//===- ExchangeCall.cpp - A call of the exchange's C interface ------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeCall.h"

#include <algorithm>

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

std::string neuroshard::exchange_abi::readReduceScatterCall(
    const MemRefDescriptor<float, 2> &whole,
    const MemRefDescriptor<float, 2> &own,
    const MemRefDescriptor<int64_t, 1> &batches,
    const MemRefDescriptor<int64_t, 1> &offsets, int64_t rank,
    ExchangeLayout &layout, std::vector<float> &divisors) {
  layout.batches = elements(batches);
  layout.widths.assign(layout.batches.size(), whole.sizes[1]);
  layout.rank = rank;
  std::string why = checkExchangeLayout(layout);
  if (!why.empty())
    return why;
  if (!rowMajor(whole) || !rowMajor(own))
    return "the reduce-scatter's buffers are not row-major";
  int64_t rows = layout.batches[rank];
  if (whole.sizes[0] != layout.batch() || own.sizes[0] != rows ||
      own.sizes[1] != whole.sizes[1])
    return "the reduce-scatter's buffers do not match its batches";
  divisors.clear();
  std::vector<int64_t> bags = elements(offsets);
  if (bags.empty())
    return "";
  if (static_cast<int64_t>(bags.size()) != layout.batch() + 1)
    return "the mean of a reduce-scatter has " + std::to_string(bags.size()) +
           " offsets for " + std::to_string(layout.batch()) + " bags";
  for (int64_t b = layout.rowBegin(rank); b < layout.rowBegin(rank) + rows; ++b)
    divisors.push_back(float(std::max<int64_t>(bags[b + 1] - bags[b], 1)));
  return "";
}

void neuroshard::exchange_abi::divideBags(const std::vector<float> &divisors,
                                          int64_t width, float *rows) {
  for (size_t b = 0; b < divisors.size(); ++b)
    for (int64_t c = 0; c < width; ++c)
      rows[int64_t(b) * width + c] /= divisors[b];
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
