//===- LowerBound.cpp - How cheap any plan of a problem can be ------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/LowerBound.h"
#include "Placement.h"

#include "neuroshard/CostModel/CostModel.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace llvm;

namespace neuroshard {

namespace {

/// One way to hold a table: its pieces, what the costliest of them costs
/// alone (`share`, filled in once priced) and what they cost together in
/// one set (`work`). A bracket form stands for every even split into k
/// pieces with lo < k < hi: the pieces of lo (no more work than any of
/// them) and the share of hi (no costlier piece than any of them).
struct Form {
  std::vector<ColumnSlice> pieces;
  ColumnSlice largest;
  double share = 0.0;
  double work = 0.0;
};

} // namespace

/// The columns of table `t` cut into `k` parts of multiples of `step`, as
/// even as that allows, widest first.
static std::vector<ColumnSlice> columnParts(unsigned t, int64_t dim,
                                            int64_t step, unsigned k) {
  int64_t units = dim / step, base = units / k, extra = units % k;
  std::vector<ColumnSlice> parts;
  int64_t begin = 0;
  for (unsigned p = 0; p < k; ++p) {
    int64_t width = (base + (p < extra ? 1 : 0)) * step;
    parts.push_back(ColumnSlice{t, begin, begin + width});
    begin += width;
  }
  return parts;
}

/// The piece counts from 2 to `most` a bound must cover: every count up
/// to 16, then powers of two and `most`, with a bracket between each
/// two of them (the pair lo, hi).
static void addSplits(unsigned most,
                      function_ref<std::vector<ColumnSlice>(unsigned)> cut,
                      function_ref<ColumnSlice(ArrayRef<ColumnSlice>)> largest,
                      std::vector<Form> &forms) {
  SmallVector<unsigned> counts;
  for (unsigned k = 2; k <= most; k = k < 16 ? k + 1 : 2 * k)
    counts.push_back(k);
  if (most >= 2 && counts.back() != most)
    counts.push_back(most);
  unsigned previous = 1;
  for (unsigned k : counts) {
    std::vector<ColumnSlice> pieces = cut(k);
    if (k > previous + 1) {
      Form bracket;
      bracket.pieces = cut(previous);
      bracket.largest = largest(pieces);
      forms.push_back(std::move(bracket));
    }
    Form form;
    form.largest = largest(pieces);
    form.pieces = std::move(pieces);
    forms.push_back(std::move(form));
    previous = k;
  }
}

/// The ways the planner may hold table `t`: whole; its columns cut into 2
/// to N parts (each a multiple of the finest piece the search makes); its
/// rows cut into 2 to mostRowBlocks blocks; a replica on every device.
static std::vector<Form> formsOf(const TableSpec &table, unsigned t,
                                 const Topology &topology) {
  ColumnSlice whole{t, 0, table.dim};
  std::vector<Form> forms(1);
  forms.front().pieces = {whole};
  forms.front().largest = whole;
  unsigned n = topology.numDevices();
  if (detail::mayColumnSplit(table, whole)) {
    int64_t step = detail::finestColumnWidth(table.dim);
    unsigned most =
        static_cast<unsigned>(std::min<int64_t>(n, table.dim / step));
    addSplits(
        most, [&](unsigned k) { return columnParts(t, table.dim, step, k); },
        [](ArrayRef<ColumnSlice> parts) { return parts.front(); }, forms);
  }
  if (detail::mayRowSplit(table, whole, topology))
    addSplits(
        detail::mostRowBlocks(table, topology),
        [&](unsigned k) { return detail::rowPieces(table, whole, k); },
        [&](ArrayRef<ColumnSlice> blocks) {
          return *llvm::max_element(
              blocks, [&](const ColumnSlice &a, const ColumnSlice &b) {
                return a.numRows(table) < b.numRows(table);
              });
        },
        forms);
  if (detail::mayReplicate(table, whole) && n > 1) {
    Form form;
    form.pieces = detail::replicas(whole, n);
    form.largest = form.pieces.front();
    forms.push_back(std::move(form));
  }
  return forms;
}

/// The narrowest share of each width the largest column part may have
/// (any multiple of the finest piece from 1/N of the columns up), which
/// the even splits do not all reach, for the piece bound.
static std::vector<ColumnSlice> columnShares(const TableSpec &table, unsigned t,
                                             unsigned n) {
  std::vector<ColumnSlice> shares;
  ColumnSlice whole{t, 0, table.dim};
  if (!detail::mayColumnSplit(table, whole) || n < 2)
    return shares;
  int64_t step = detail::finestColumnWidth(table.dim);
  int64_t least = (table.dim + n - 1) / n;
  for (int64_t width = (least + step - 1) / step * step; width < table.dim;
       width += step)
    shares.push_back(ColumnSlice{t, 0, width});
  return shares;
}

/// Slices priced in one model call at most: a table's forms on a thousand
/// devices hold thousands of pieces, and ten thousand tables' forms at once
/// would take gigabytes.
static constexpr size_t kSlicesPerBatch = size_t(1) << 16;

Expected<PlanLowerBound> computeLowerBound(ArrayRef<TableSpec> tables,
                                           const Topology &topology,
                                           CostModel &model) {
  PlanLowerBound bound;
  unsigned n = topology.numDevices();
  if (tables.empty() || n == 0)
    return bound;

  // A piece no device has room for is held by no plan: its share bounds
  // nothing (its form's work still counts as a least work).
  uint64_t roomiest = 0;
  for (unsigned d = 0; d < n; ++d)
    roomiest = std::max(roomiest, topology.usableBytes(d));
  auto fits = [&](const ColumnSlice &slice) {
    const TableSpec &table = tables[slice.table];
    return topology.shardBytes(table, slice.width(), slice.numRows(table)) <=
           roomiest;
  };
  constexpr double kNever = std::numeric_limits<double>::infinity();
  std::vector<double> thresholds;
  // Per table, its forms' shares and works once priced (the pieces are
  // dropped then).
  std::vector<std::vector<Form>> priced(tables.size());

  // Every form's largest piece alone and (where the work is counted, for
  // a model whose set costs are sums) its pieces together, and every
  // column share alone, of a few tables at a time, in one batch each.
  bool additive = model.additiveCompute();
  std::vector<unsigned> batchTables;
  std::vector<std::vector<ColumnSlice>> batchShares;
  size_t batchSlices = 0;
  auto priceBatch = [&]() -> Error {
    std::vector<ArrayRef<ColumnSlice>> sets;
    for (auto [t, tableShares] : zip_equal(batchTables, batchShares)) {
      for (Form &form : priced[t]) {
        sets.push_back(ArrayRef(form.largest));
        if (additive)
          sets.push_back(form.pieces);
      }
      for (const ColumnSlice &share : tableShares)
        sets.push_back(ArrayRef(share));
    }
    std::vector<double> costs(sets.size());
    if (!sets.empty())
      if (Error err = model.predictCompute(sets, costs))
        return err;
    const double *next = costs.data();
    for (auto [t, tableShares] : zip_equal(batchTables, batchShares)) {
      double cheapest = std::numeric_limits<double>::infinity();
      for (Form &form : priced[t]) {
        double alone = *next++;
        form.share = fits(form.largest) ? alone : kNever;
        form.work = additive ? *next++ : 0.0;
        cheapest = std::min(cheapest, form.share);
        if (form.share < kNever)
          thresholds.push_back(form.share);
        form.pieces.clear();
        form.pieces.shrink_to_fit();
      }
      for (const ColumnSlice &share : tableShares) {
        if (fits(share))
          cheapest = std::min(cheapest, *next);
        ++next;
      }
      // A table with no share that fits leaves a plan impossible, which
      // the search refuses before; it bounds nothing here.
      if (std::isfinite(cheapest) && cheapest > bound.pieceMs) {
        bound.pieceMs = cheapest;
        bound.hardestTable = t;
      }
    }
    batchTables.clear();
    batchShares.clear();
    batchSlices = 0;
    return Error::success();
  };
  for (auto [t, table] : enumerate(tables)) {
    priced[t] = formsOf(table, t, topology);
    batchTables.push_back(t);
    batchShares.push_back(columnShares(table, t, n));
    for (const Form &form : priced[t])
      batchSlices += form.pieces.size() + 1;
    batchSlices += batchShares.back().size();
    if (batchSlices >= kSlicesPerBatch)
      if (Error err = priceBatch())
        return std::move(err);
  }
  if (Error err = priceBatch())
    return std::move(err);

  bound.ms = bound.pieceMs;
  if (!model.additiveCompute())
    return bound;

  // No plan's slowest device costs less than s when s < pieceMs; for
  // s >= pieceMs it costs at least what the devices' work W(s) allows,
  // W(s) being the cheapest work of the tables held with no piece costlier
  // than s: every table in its form of least work among those whose share
  // is at most s (among all of its forms when none is). W falls as s
  // rises, so the bound min over s of max(s, W(s) / N) lies where they
  // cross: a binary search over the shares.
  thresholds.push_back(bound.pieceMs);
  llvm::sort(thresholds);
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()),
                   thresholds.end());
  thresholds.erase(thresholds.begin(),
                   llvm::lower_bound(thresholds, bound.pieceMs));
  // The model's set costs are sums: a set of every table's pieces costs
  // the sum of what each table's pieces cost together.
  auto workAt = [&](double threshold) {
    double cost = 0.0;
    for (const std::vector<Form> &tableForms : priced) {
      const Form *best = nullptr;
      for (bool anyShare : {false, true}) {
        for (const Form &form : tableForms)
          if ((anyShare || form.share <= threshold) &&
              (!best || form.work < best->work))
            best = &form;
        if (best)
          break;
      }
      cost += best->work;
    }
    return cost / n;
  };
  size_t lo = 0, hi = thresholds.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (workAt(thresholds[mid]) <= thresholds[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  // thresholds[lo] is the first share at which the work fits under it;
  // below it the work of the share before bounds the plan.
  bound.ms = lo < thresholds.size() ? thresholds[lo]
                                    : std::numeric_limits<double>::infinity();
  if (lo > 0)
    bound.ms = std::min(bound.ms, workAt(thresholds[lo - 1]));
  bound.workMs = workAt(bound.ms);
  bound.ms = std::max({bound.ms, bound.pieceMs});
  return bound;
}

} // namespace neuroshard
