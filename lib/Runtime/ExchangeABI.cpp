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

std::string
neuroshard::exchange_abi::checkRanksPerNode(const ExchangeLayout &layout,
                                            int64_t ranksPerNode) {
  if (ranksPerNode >= 1 && layout.ranks() % ranksPerNode == 0)
    return "";
  return std::to_string(layout.ranks()) + " ranks do not fill whole nodes of " +
         std::to_string(ranksPerNode) + " ranks";
}

NodeExchange
neuroshard::exchange_abi::planNodeExchange(const ExchangeLayout &layout,
                                           int64_t ranksPerNode) {
  NodeExchange plan;
  int64_t p = ranksPerNode, nodes = layout.ranks() / p;
  plan.ranksPerNode = p;
  plan.node = layout.rank / p;
  plan.local = layout.rank % p;
  auto nodeRowBegin = [&](int64_t h) { return layout.rowBegin(h * p); };
  auto nodeRows = [&](int64_t h) {
    return layout.rowBegin((h + 1) * p) - layout.rowBegin(h * p);
  };
  int64_t width = layout.widths[layout.rank];
  for (int64_t h = 0; h < nodes; ++h) {
    plan.interSendOffsets.push_back(nodeRowBegin(h) * width);
    plan.interSendCounts.push_back(nodeRows(h) * width);
    int64_t count = nodeRows(plan.node) * layout.widths[h * p + plan.local];
    plan.interRecvOffsets.push_back(plan.stagingSize);
    plan.interRecvCounts.push_back(count);
    plan.stagingSize += count;
  }
  // The columns a local rank stages: its peers' widths, summed over nodes.
  auto stagedWidth = [&](int64_t local) {
    int64_t columns = 0;
    for (int64_t h = 0; h < nodes; ++h)
      columns += layout.widths[h * p + local];
    return columns;
  };
  int64_t mine = stagedWidth(plan.local);
  for (int64_t local = 0; local < p; ++local) {
    int64_t rows = layout.batches[plan.node * p + local];
    plan.intraSendOffsets.push_back(plan.gatheredSize);
    plan.intraSendCounts.push_back(rows * mine);
    plan.gatheredSize += rows * mine;
    int64_t count = layout.batches[layout.rank] * stagedWidth(local);
    plan.intraRecvOffsets.push_back(plan.packedSize);
    plan.intraRecvCounts.push_back(count);
    plan.packedSize += count;
  }
  return plan;
}

namespace {

/// Calls `copy(staged, gathered, rows, width)` for every run of rows a
/// local rank takes from a staged block: `rows` rows of `width` columns at
/// `staged` in the staging buffer and `gathered` in the gathered buffer.
template <typename Copy>
void forEachNodeRows(const ExchangeLayout &layout, const NodeExchange &plan,
                     Copy copy) {
  int64_t p = plan.ranksPerNode, nodes = layout.ranks() / p;
  int64_t first = plan.node * p;
  for (int64_t local = 0; local < p; ++local) {
    int64_t rows = layout.batches[first + local];
    int64_t rowInNode = layout.rowBegin(first + local) - layout.rowBegin(first);
    int64_t gathered = plan.intraSendOffsets[local];
    for (int64_t h = 0; h < nodes; ++h) {
      int64_t width = layout.widths[h * p + plan.local];
      copy(plan.interRecvOffsets[h] + rowInNode * width, gathered,
           rows * width);
      gathered += rows * width;
    }
  }
}

/// Calls `copy(packedAt, column, width)` for every block of the packed
/// buffer: `width` columns of B_rank rows at `packedAt`, which are the
/// result's columns from `column`.
template <typename Copy>
void forEachNodeBlock(const ExchangeLayout &layout, const NodeExchange &plan,
                      Copy copy) {
  int64_t p = plan.ranksPerNode, nodes = layout.ranks() / p;
  for (int64_t local = 0; local < p; ++local) {
    int64_t packed = plan.intraRecvOffsets[local];
    for (int64_t h = 0; h < nodes; ++h) {
      int64_t d = h * p + local, width = layout.widths[d];
      copy(packed, layout.columnBegin(d), width);
      packed += layout.batches[layout.rank] * width;
    }
  }
}

} // namespace

void neuroshard::exchange_abi::gatherNodeRows(const ExchangeLayout &layout,
                                              const NodeExchange &plan,
                                              const float *staging,
                                              float *gathered) {
  forEachNodeRows(layout, plan, [&](int64_t from, int64_t to, int64_t count) {
    std::memcpy(gathered + to, staging + from, sizeof(float) * size_t(count));
  });
}

void neuroshard::exchange_abi::scatterNodeRows(const ExchangeLayout &layout,
                                               const NodeExchange &plan,
                                               const float *gathered,
                                               float *staging) {
  forEachNodeRows(layout, plan, [&](int64_t to, int64_t from, int64_t count) {
    std::memcpy(staging + to, gathered + from, sizeof(float) * size_t(count));
  });
}

void neuroshard::exchange_abi::unpackNodeColumns(const ExchangeLayout &layout,
                                                 const NodeExchange &plan,
                                                 const float *packed,
                                                 float *result) {
  int64_t rows = layout.batches[layout.rank], total = layout.totalWidth();
  forEachNodeBlock(layout, plan, [&](int64_t at, int64_t column, int64_t w) {
    for (int64_t b = 0; w > 0 && b < rows; ++b)
      std::memcpy(result + b * total + column, packed + at + b * w,
                  sizeof(float) * size_t(w));
  });
}

void neuroshard::exchange_abi::packNodeColumns(const ExchangeLayout &layout,
                                               const NodeExchange &plan,
                                               const float *result,
                                               float *packed) {
  int64_t rows = layout.batches[layout.rank], total = layout.totalWidth();
  forEachNodeBlock(layout, plan, [&](int64_t at, int64_t column, int64_t w) {
    for (int64_t b = 0; w > 0 && b < rows; ++b)
      std::memcpy(packed + at + b * w, result + b * total + column,
                  sizeof(float) * size_t(w));
  });
}
