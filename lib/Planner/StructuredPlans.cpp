//===- StructuredPlans.cpp - The plans a person writes first --------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A beam of a few states follows the splits the greedy placements reward
// one step at a time, and can miss a plan a person writes at a glance: the
// hottest tables cut evenly over k devices, one piece per device, the small
// tables copied to every device, the rest placed whole. Those plans are
// built here for every k that divides the devices' count in powers of two,
// for the hottest 1, 2, 4, ... tables and for all of them, by columns and
// by rows, and those again with copies (the best few of them where the
// copies are many), each priced exactly as the search prices its own plans
// (in batches of kPlansPerBatch). The search keeps the best when it ranks
// before its own plan (docs/planner.md, "Clean pieces and structured
// candidates").
//
//===----------------------------------------------------------------------===//

#include "Placement.h"

#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/Sharding/Plan.h"
#include "neuroshard/Sharding/Traffic.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>
#include <optional>

using namespace llvm;

namespace neuroshard {
namespace detail {

/// How many of the hottest tables a structured plan splits, at most: the
/// powers of two up to it are tried.
static constexpr unsigned kMostSplitTables = 16;
/// A table is small enough to copy to every device when one copy takes at
/// most this share of the smallest device's usable memory.
static constexpr double kSmallTableShare = 0.01;
/// Every shape is also built with copies of the small tables while those
/// copies are at most kMostCopies shards; beyond, only the kCopiedShapes
/// best shapes without copies are.
static constexpr uint64_t kMostCopies = uint64_t(1) << 14;
static constexpr size_t kCopiedShapes = 4;
/// Plans priced in one batch. Copies of small tables on every device make a
/// plan of a large task large (1,000 tables on 256 devices: ~100k shards),
/// so only this many are held at once.
static constexpr size_t kPlansPerBatch = 16;

namespace {
/// How a structured plan cuts the tables it splits.
enum class Cut { Columns, Rows };

/// One structured plan being built: the shards, and each device's memory
/// and a running estimate of its compute (the sum of its pieces' costs,
/// each priced alone) that places the next piece.
struct Builder {
  ArrayRef<TableSpec> tables;
  const Topology &topology;
  ShardingPlan plan;
  std::vector<uint64_t> bytes;
  std::vector<double> loadMs;

  Builder(ArrayRef<TableSpec> tables, const Topology &topology)
      : tables(tables), topology(topology), bytes(topology.numDevices(), 0),
        loadMs(topology.numDevices(), 0.0) {}

  uint64_t bytesOf(const ColumnSlice &slice) const {
    const TableSpec &table = tables[slice.table];
    return topology.shardBytes(
        table, slice.width(),
        slice.allRows() ? std::nullopt : std::optional(slice.numRows(table)));
  }

  bool fits(const ColumnSlice &slice, unsigned device) const {
    return bytes[device] + bytesOf(slice) <= topology.usableBytes(device);
  }

  void place(const ColumnSlice &slice, unsigned device, double ms) {
    Shard shard = Shard::of(slice, device);
    if (!slice.allRows())
      shard.setRows(slice.rowBegin, slice.rowEndIn(tables[slice.table]),
                    tables[slice.table].rows);
    plan.shards.push_back(shard);
    bytes[device] += bytesOf(slice);
    loadMs[device] += ms;
  }

  /// Places `pieces` on as many distinct devices, the least loaded with
  /// room first; false when too few have room.
  bool placeApart(ArrayRef<ColumnSlice> pieces, double msEach) {
    if (pieces.size() == 1) {
      // The least loaded device with room, the first of equals: a scan,
      // where sorting the devices for each of thousands of tables would
      // take the most time of all.
      uint64_t size = bytesOf(pieces.front());
      std::optional<unsigned> best;
      for (unsigned d = 0; d < loadMs.size(); ++d)
        if ((!best || loadMs[d] < loadMs[*best]) &&
            bytes[d] + size <= topology.usableBytes(d))
          best = d;
      if (!best)
        return false;
      place(pieces.front(), *best, msEach);
      return true;
    }
    std::vector<unsigned> order(loadMs.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
      return loadMs[a] < loadMs[b];
    });
    size_t next = 0;
    for (unsigned device : order) {
      if (next == pieces.size())
        break;
      if (fits(pieces[next], device))
        place(pieces[next++], device, msEach);
    }
    return next == pieces.size();
  }
};
} // namespace

/// The pieces `table` is cut into for a structured plan, or none when the
/// table may not be cut so.
static std::vector<ColumnSlice> evenPieces(const TableSpec &table,
                                           unsigned index, unsigned k, Cut cut,
                                           const Topology &topology) {
  ColumnSlice whole{index, 0, table.dim};
  if (cut == Cut::Columns) {
    if (!mayColumnSplit(table, whole) ||
        table.dim % (int64_t(k) * kColumnAlignment) != 0)
      return {};
    std::vector<ColumnSlice> pieces;
    int64_t width = table.dim / k;
    for (unsigned p = 0; p < k; ++p)
      pieces.push_back({index, p * width, (p + 1) * width});
    return pieces;
  }
  if (!mayRowSplit(table, whole, topology) ||
      !table.allows(ShardingKind::RowWise) || table.rows < int64_t(k))
    return {};
  return rowPieces(table, whole, k);
}

Expected<std::vector<PlanCost>> pricePlans(SearchContext &ctx,
                                           ArrayRef<ShardingPlan> plans) {
  ArrayRef<TableSpec> tables = ctx.tables;
  const Topology &topology = ctx.topology;
  unsigned numDevices = topology.numDevices();
  // Every device set of every plan the memo does not know in one model
  // call, then the exchange. Plans that differ in a few devices (local
  // moves) share the others' sets.
  std::vector<std::vector<ColumnSlice>> deviceSets(plans.size() * numDevices);
  for (auto [p, plan] : enumerate(plans))
    for (const Shard &shard : plan.shards)
      deviceSets[p * numDevices + shard.device].push_back(shard.slice());
  std::vector<double> computeMs(deviceSets.size(), 0.0);
  std::vector<std::pair<size_t, unsigned>> tickets;
  for (auto [i, set] : enumerate(deviceSets)) {
    if (set.empty())
      continue;
    SetKey key{0, 0};
    for (const ColumnSlice &slice : set)
      key = addKeys(key, sliceKey(slice));
    if (!ctx.cache.lookup(key, computeMs[i]))
      tickets.emplace_back(i, ctx.cache.request(key, set));
  }
  if (ctx.cache.hasPending())
    if (Error err = ctx.cache.flush())
      return std::move(err);
  if (!plans.empty())
    ctx.stats.modelCalls += 2;
  for (auto [i, ticket] : tickets)
    computeMs[i] = ctx.cache.result(ticket);
  std::vector<DeviceTraffic> traffic;
  for (const ShardingPlan &plan : plans)
    append_range(traffic, computeTraffic(tables, topology, plan));
  return completePlanCosts(numDevices, computeMs, traffic, ctx.model);
}

Expected<std::optional<PlanCandidate>> bestStructuredPlan(SearchContext &ctx) {
  ArrayRef<TableSpec> tables = ctx.tables;
  const Topology &topology = ctx.topology;
  unsigned numDevices = topology.numDevices();
  if (numDevices < 2 || tables.empty())
    return std::nullopt;

  // Each table's compute priced whole; a piece of a table cut in k is
  // estimated at 1/k of it, for placing the next piece only.
  std::vector<ColumnSlice> whole;
  for (auto [index, table] : enumerate(tables))
    whole.push_back({unsigned(index), 0, table.dim});
  std::vector<double> wholeMs(tables.size());
  {
    std::vector<ArrayRef<ColumnSlice>> sets;
    for (const ColumnSlice &slice : whole)
      sets.push_back(ArrayRef(slice));
    if (Error err = ctx.model.predictCompute(sets, wholeMs))
      return std::move(err);
    ctx.stats.costQueries += sets.size();
    ctx.stats.modelCalls += 1;
  }
  std::vector<unsigned> hottest(tables.size());
  std::iota(hottest.begin(), hottest.end(), 0u);
  std::stable_sort(hottest.begin(), hottest.end(), [&](unsigned a, unsigned b) {
    return wholeMs[a] > wholeMs[b];
  });
  uint64_t smallestUsable = topology.usableBytes(0);
  for (unsigned d = 1; d < numDevices; ++d)
    smallestUsable = std::min(smallestUsable, topology.usableBytes(d));
  // Whether a variant with copies copies table `index` to every device.
  auto copyable = [&](unsigned index) {
    return mayReplicate(tables[index], whole[index]) &&
           topology.shardBytes(tables[index], tables[index].dim) <=
               kSmallTableShare * double(smallestUsable);
  };

  std::vector<unsigned> splits;
  for (unsigned k = 2; k <= numDevices; k *= 2)
    splits.push_back(k);
  if (splits.empty() || splits.back() != numDevices)
    splits.push_back(numDevices);

  // The hottest 1, 2, 4, ... tables, and all of them when they are fewer
  // than kMostSplitTables.
  unsigned mostSplit = std::min<size_t>(kMostSplitTables, tables.size());
  std::vector<unsigned> counts;
  for (unsigned many = 1; many <= mostSplit; many *= 2)
    counts.push_back(many);
  if (counts.back() != mostSplit)
    counts.push_back(mostSplit);

  /// How a structured plan is made: the hottest `many` tables cut in `k`
  /// by `cut`, with or without copies of the small tables.
  struct Shape {
    unsigned k, many;
    Cut cut;
    bool copySmall;
  };
  // The plan of `shape`; none where it does not fit, cuts no table or
  // (with copies) copies none: a variant that changes nothing over another
  // is not built twice.
  auto build = [&](const Shape &shape) -> std::optional<ShardingPlan> {
    Builder builder(tables, topology);
    bool feasible = true, cutAny = false, copied = false;
    // Pinned tables first, where they must go.
    for (auto [index, table] : enumerate(tables))
      if (table.pinnedDevice) {
        feasible &= builder.fits(whole[index], *table.pinnedDevice);
        builder.place(whole[index], *table.pinnedDevice, wholeMs[index]);
      }
    for (auto [rank, index] : enumerate(hottest)) {
      const TableSpec &table = tables[index];
      if (table.pinnedDevice || !feasible)
        continue;
      if (rank < shape.many) {
        std::vector<ColumnSlice> pieces =
            evenPieces(table, index, shape.k, shape.cut, topology);
        if (!pieces.empty()) {
          feasible &= builder.placeApart(pieces, wholeMs[index] / shape.k);
          cutAny = true;
          continue;
        }
      }
      if (shape.copySmall && copyable(index)) {
        ColumnSlice copy = whole[index];
        copy.replica = true;
        for (unsigned d = 0; d < numDevices; ++d) {
          feasible &= builder.fits(copy, d);
          builder.place(copy, d, wholeMs[index] / numDevices);
        }
        copied = true;
        continue;
      }
      feasible &= builder.placeApart(whole[index], wholeMs[index]);
    }
    if (!feasible || !cutAny || (shape.copySmall && !copied))
      return std::nullopt;
    if (Error err = validatePlan(tables, topology, builder.plan)) {
      consumeError(std::move(err));
      return std::nullopt;
    }
    // In the order the planner returns plans, which is the order
    // evaluatePlan prices their device sets in.
    sortShards(builder.plan.shards);
    return std::move(builder.plan);
  };

  // Prices the shapes' plans, kPlansPerBatch at a time, and keeps the best
  // plan of all seen in `best` (the first of equals); returns each shape's
  // cost, in their order (nullopt where the shape makes no plan).
  std::optional<PlanCandidate> best;
  auto priceShapes = [&](ArrayRef<Shape> shapes)
      -> Expected<std::vector<std::optional<PlanCost>>> {
    std::vector<std::optional<PlanCost>> costs(shapes.size());
    std::vector<ShardingPlan> plans;
    std::vector<size_t> of;
    auto priceHeld = [&]() -> Error {
      if (plans.empty())
        return Error::success();
      Expected<std::vector<PlanCost>> priced = pricePlans(ctx, plans);
      if (!priced)
        return priced.takeError();
      for (auto [plan, cost, s] : zip_equal(plans, *priced, of)) {
        costs[s] = cost;
        // The best of all seen, the first of equals.
        if (!best || rankedBefore(cost, best->cost))
          best = PlanCandidate{"structured", std::move(plan), std::move(cost)};
      }
      plans.clear();
      of.clear();
      return Error::success();
    };
    for (auto [s, shape] : enumerate(shapes)) {
      std::optional<ShardingPlan> plan = build(shape);
      if (!plan)
        continue;
      plans.push_back(std::move(*plan));
      of.push_back(s);
      if (plans.size() == kPlansPerBatch)
        if (Error err = priceHeld())
          return std::move(err);
    }
    if (Error err = priceHeld())
      return std::move(err);
    return std::move(costs);
  };

  // Every shape without copies, then with copies; where the copies are
  // many, only the best shapes get them: copies of the small tables on
  // every device make a plan of a large task large (1,000 tables on 256
  // devices: tens of thousands of shards), and pricing such plans would
  // take most of the planning time.
  uint64_t copies = 0;
  for (unsigned index = 0; index < tables.size(); ++index)
    if (copyable(index))
      copies += numDevices;
  std::vector<Shape> shapes;
  for (unsigned k : splits)
    for (unsigned many : counts)
      for (Cut cut : {Cut::Columns, Cut::Rows})
        shapes.push_back({k, many, cut, /*copySmall=*/false});
  Expected<std::vector<std::optional<PlanCost>>> costs = priceShapes(shapes);
  if (!costs)
    return costs.takeError();
  std::vector<size_t> ranked;
  for (auto [s, cost] : enumerate(*costs))
    if (cost)
      ranked.push_back(s);
  llvm::stable_sort(ranked, [&](size_t a, size_t b) {
    return rankedBefore(*(*costs)[a], *(*costs)[b]);
  });
  std::vector<Shape> copying;
  for (size_t s : ArrayRef(ranked).take_front(
           copies <= kMostCopies ? ranked.size() : kCopiedShapes)) {
    copying.push_back(shapes[s]);
    copying.back().copySmall = true;
  }
  if (Expected<std::vector<std::optional<PlanCost>>> copied =
          priceShapes(copying);
      !copied)
    return copied.takeError();
  return best;
}

} // namespace detail
} // namespace neuroshard
