//===- ExchangeABI.cpp - One rank's side of the exchange ------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeABI.h"

#include <cstring>

using namespace neuroshard::exchange_abi;

int64_t ExchangeLayout::batch() const { return rowBegin(ranks()); }

int64_t ExchangeLayout::totalWidth() const { return columnBegin(ranks()); }

int64_t ExchangeLayout::rowBegin(int64_t d) const {
  int64_t rows = 0;
  for (int64_t k = 0; k < d; ++k)
    rows += batches[k];
  return rows;
}

int64_t ExchangeLayout::columnBegin(int64_t d) const {
  int64_t columns = 0;
  for (int64_t k = 0; k < d; ++k)
    columns += widths[k];
  return columns;
}

int64_t ExchangeLayout::sendOffset(int64_t d) const {
  return rowBegin(d) * widths[rank];
}

int64_t ExchangeLayout::sendCount(int64_t d) const {
  return batches[d] * widths[rank];
}

int64_t ExchangeLayout::packedOffset(int64_t d) const {
  return batches[rank] * columnBegin(d);
}

int64_t ExchangeLayout::packedCount(int64_t d) const {
  return batches[rank] * widths[d];
}

int64_t ExchangeLayout::packedSize() const {
  return batches[rank] * totalWidth();
}

std::string
neuroshard::exchange_abi::checkExchangeLayout(const ExchangeLayout &layout) {
  if (layout.widths.empty())
    return "the exchange has no ranks";
  if (layout.widths.size() != layout.batches.size())
    return "the exchange lists " + std::to_string(layout.widths.size()) +
           " widths but " + std::to_string(layout.batches.size()) + " batches";
  if (layout.rank < 0 || layout.rank >= layout.ranks())
    return "rank " + std::to_string(layout.rank) + " is not one of the " +
           std::to_string(layout.ranks()) + " ranks of the exchange";
  // Every sum and product below stays under 2^62.
  constexpr int64_t kLimit = int64_t(1) << 31;
  for (int64_t d = 0; d < layout.ranks(); ++d)
    if (layout.widths[d] < 0 || layout.widths[d] >= kLimit ||
        layout.batches[d] < 0 || layout.batches[d] >= kLimit)
      return "rank " + std::to_string(d) + " has width " +
             std::to_string(layout.widths[d]) + " and batch " +
             std::to_string(layout.batches[d]) + "; each must be in [0, 2^31)";
  if (layout.ranks() >= kLimit)
    return "the exchange has too many ranks";
  return "";
}

void neuroshard::exchange_abi::unpackColumns(const ExchangeLayout &layout,
                                             const float *packed,
                                             float *result) {
  int64_t rows = layout.batches[layout.rank], width = layout.totalWidth();
  for (int64_t d = 0; d < layout.ranks(); ++d) {
    int64_t w = layout.widths[d], column = layout.columnBegin(d);
    const float *block = packed + layout.packedOffset(d);
    if (w == 0)
      continue;
    for (int64_t b = 0; b < rows; ++b)
      std::memcpy(result + b * width + column, block + b * w,
                  sizeof(float) * size_t(w));
  }
}

void neuroshard::exchange_abi::packColumns(const ExchangeLayout &layout,
                                           const float *result, float *packed) {
  int64_t rows = layout.batches[layout.rank], width = layout.totalWidth();
  for (int64_t d = 0; d < layout.ranks(); ++d) {
    int64_t w = layout.widths[d], column = layout.columnBegin(d);
    float *block = packed + layout.packedOffset(d);
    if (w == 0)
      continue;
    for (int64_t b = 0; b < rows; ++b)
      std::memcpy(block + b * w, result + b * width + column,
                  sizeof(float) * size_t(w));
  }
}
