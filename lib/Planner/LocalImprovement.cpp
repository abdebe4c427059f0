//===- LocalImprovement.cpp - Moves that relieve the slowest device -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The beam search and the structured candidates build a plan in steps that
// never undo a placement. Afterwards, each round tries every move of one
// part (a table's piece on a device) off the slowest device:
//
//  - the part to another device (joined to that device's part of the same
//    table, if it has one);
//  - half of the part (half its columns, or half its rows) to another
//    device, which re-splits a table the search left too coarse;
//  - the part, or half of it, traded for a part of another table on
//    another device, or half of that (the kTradesPerTarget trades per
//    device that would even the two devices out best);
//  - the part's table dealt evenly again over the devices that hold it,
//    over those and another device, or over the others alone
//    (re-splitting a table the search cut unevenly).
//
// The targets are the kMostTargets least loaded devices. All moves of a
// round are priced in one batch, exactly as the search prices plans, and
// the best is taken when it lowers the sorted vector of the devices' busy
// times (compute and own exchange, what the others wait for), so that of
// two devices tied at the top one is relieved, then the other. When none
// does, the kSecondLooks least bad are each followed by their best move,
// and a pair that lowers the vector is taken. Rounds end when nothing
// helps, after kMostRounds, or once kMostMovesTried plans or
// kMostShardsPriced of their shards are priced (the parts that cost most
// alone have their moves built first); the plan returned is the best met
// (rankedBefore) (docs/planner.md, "Local improvement").
//
//===----------------------------------------------------------------------===//

#include "Placement.h"

#include "neuroshard/Sharding/Plan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <tuple>

using namespace llvm;

namespace neuroshard {
namespace detail {

/// Rounds of moves at most, each taking one move.
static constexpr unsigned kMostRounds = 64;
/// Devices a part may move to in a round: the least loaded.
static constexpr unsigned kMostTargets = 8;
/// Trades of a part with a target's parts tried per target: those whose
/// relief of the slowest device is nearest half the gap between the two.
static constexpr size_t kTradesPerTarget = 4;
/// When no move helps alone, the moves followed by a second one.
static constexpr unsigned kSecondLooks = 4;
/// Plans, and shards of those plans, priced at most by one improvement, so
/// that a plan of thousands of pieces on hundreds of devices is improved
/// in bounded time (pricing a plan takes time in its shards).
static constexpr uint64_t kMostMovesTried = 4096;
static constexpr uint64_t kMostShardsPriced = uint64_t(1) << 22;

namespace {
/// Builds the moves of one round from a plan whose pieces of a table are
/// one per device (joinPiecesPerDevice).
class MoveBuilder {
public:
  /// At most `most` moves are kept; the rest are not built.
  MoveBuilder(ArrayRef<TableSpec> tables, const Topology &topology,
              const ShardingPlan &plan, size_t most)
      : tables(tables), topology(topology), plan(plan), most(most) {}

  bool full() const { return moves.size() >= most; }

  /// The plan with shard `index` on `device`, joined there.
  void move(size_t index, unsigned device) {
    ShardingPlan out = plan;
    out.shards[index].device = device;
    add(std::move(out));
  }

  /// The plan with the upper half of shard `index` (of its columns or
  /// rows) on `device`, if the search could cut it so.
  void moveHalf(size_t index, unsigned device) {
    moveUpper(index, halves(plan.shards[index]), device);
  }

  /// The whole table of shard `index` cut in two row blocks, the upper on
  /// `device`.
  void moveRowHalf(size_t index, unsigned device) {
    const Shard &shard = plan.shards[index];
    const TableSpec &table = tables[shard.table];
    if (shard.replica || !shard.allRows() || shard.width() != table.dim ||
        !mayRowSplit(table, shard.slice(), topology))
      return;
    Shard lower = shard, upper = shard;
    lower.setRows(0, table.rows / 2, table.rows);
    upper.setRows(table.rows / 2, table.rows, table.rows);
    moveUpper(index, std::pair(lower, upper), device);
  }

  /// The plan with table `table`'s columns (or rows) dealt as evenly as
  /// its finest piece allows over `devices`, the first given the least.
  void deal(unsigned table, ArrayRef<unsigned> devices) {
    const TableSpec &spec = tables[table];
    ColumnSlice whole{table, 0, spec.dim};
    bool byRows = false;
    for (const Shard &shard : plan.shards)
      if (shard.table == table) {
        if (shard.replica)
          return;
        byRows |= !shard.allRows();
      }
    std::vector<ColumnSlice> pieces;
    if (byRows) {
      pieces = rowPieces(spec, whole, devices.size());
    } else {
      int64_t step = finestColumnWidth(spec.dim);
      int64_t units = spec.dim / step;
      if (units < int64_t(devices.size()))
        return;
      int64_t begin = 0;
      for (size_t p = 0; p < devices.size(); ++p) {
        // The last devices (the least busy) take the extra units.
        int64_t width =
            (units / devices.size() +
             (p >= devices.size() - units % devices.size() ? 1 : 0)) *
            step;
        pieces.push_back(ColumnSlice{table, begin, begin + width});
        begin += width;
      }
    }
    if (pieces.size() != devices.size())
      return;
    ShardingPlan out;
    for (const Shard &shard : plan.shards)
      if (shard.table != table)
        out.shards.push_back(shard);
    for (auto [piece, device] : zip_equal(pieces, devices))
      out.shards.push_back(Shard::of(piece, device));
    add(std::move(out));
  }

  /// The plan with shards `a` and `b` (of two tables, on two devices)
  /// traded: each whole, or the upper half of it (halfA, halfB).
  void trade(size_t a, size_t b, bool halfA, bool halfB) {
    ShardingPlan out = plan;
    unsigned deviceA = plan.shards[a].device, deviceB = plan.shards[b].device;
    for (auto [index, half, to] :
         {std::tuple(a, halfA, deviceB), std::tuple(b, halfB, deviceA)}) {
      if (!half) {
        out.shards[index].device = to;
        continue;
      }
      std::optional<std::pair<Shard, Shard>> cut = halves(plan.shards[index]);
      if (!cut)
        return;
      cut->second.device = to;
      out.shards[index] = cut->first;
      out.shards.push_back(cut->second);
    }
    add(std::move(out));
  }

  std::vector<ShardingPlan> take() { return std::move(moves); }

  /// `shard` cut in two halves of its columns (when the search could halve
  /// them) or of its rows (a row piece of two rows or more).
  std::optional<std::pair<Shard, Shard>> halves(const Shard &shard) const {
    const TableSpec &table = tables[shard.table];
    if (shard.replica)
      return std::nullopt;
    Shard lower = shard, upper = shard;
    if (shard.allRows()) {
      if (!isSplittable(table, shard.slice()))
        return std::nullopt;
      int64_t middle = shard.colBegin + shard.width() / 2;
      lower.colEnd = middle;
      upper.colBegin = middle;
      return std::pair(lower, upper);
    }
    int64_t begin = shard.rowBegin, end = shard.slice().rowEndIn(table);
    if (shard.width() != table.dim || end - begin < 2)
      return std::nullopt;
    int64_t middle = begin + (end - begin) / 2;
    lower.setRows(begin, middle, table.rows);
    upper.setRows(middle, end, table.rows);
    return std::pair(lower, upper);
  }

private:
  /// The plan with shard `index` replaced by `cut`'s lower piece, its upper
  /// one on `device`; nothing when there is no cut.
  void moveUpper(size_t index, std::optional<std::pair<Shard, Shard>> cut,
                 unsigned device) {
    if (!cut)
      return;
    cut->second.device = device;
    ShardingPlan out = plan;
    out.shards[index] = cut->first;
    out.shards.push_back(cut->second);
    add(std::move(out));
  }

  void add(ShardingPlan out) {
    if (full())
      return;
    joinPiecesPerDevice(tables, out);
    sortShards(out.shards);
    if (Error err = validatePlan(tables, topology, out)) {
      consumeError(std::move(err));
      return;
    }
    moves.push_back(std::move(out));
  }

  ArrayRef<TableSpec> tables;
  const Topology &topology;
  const ShardingPlan &plan;
  size_t most;
  std::vector<ShardingPlan> moves;
};
} // namespace

/// Whether `shard` may leave its device.
static bool mayMove(const TableSpec &table, const Shard &shard) {
  return !shard.replica && !table.pinnedDevice;
}

/// Every device's compute and own exchange, busiest first: what the other
/// devices wait for (a device's total also counts that wait).
static std::vector<double> rankedBusy(const PlanCost &cost) {
  std::vector<double> busy;
  for (const DeviceCost &device : cost.devices)
    busy.push_back(device.busyMs());
  llvm::sort(busy, std::greater<double>());
  return busy;
}

namespace {
/// The moves of one round from a plan, priced.
struct PricedMoves {
  std::vector<ShardingPlan> plans;
  std::vector<PlanCost> costs;
};
} // namespace

/// Every move off the busiest device of `plan` (priced `cost`), the parts
/// that cost most alone first, up to `mostMoves` of them, priced in one
/// batch; their shards are added to `shardsPriced`.
static Expected<PricedMoves> movesOf(SearchContext &ctx,
                                     const ShardingPlan &plan,
                                     const PlanCost &cost, size_t mostMoves,
                                     uint64_t &shardsPriced) {
  ArrayRef<TableSpec> tables = ctx.tables;
  unsigned n = ctx.topology.numDevices();
  std::vector<unsigned> byLoad(n);
  std::iota(byLoad.begin(), byLoad.end(), 0u);
  auto busy = [&](unsigned d) { return cost.devices[d].busyMs(); };
  auto busiestFirst = [&](MutableArrayRef<unsigned> devices) {
    llvm::stable_sort(
        devices, [&](unsigned a, unsigned b) { return busy(a) > busy(b); });
  };
  busiestFirst(byLoad);
  unsigned slowest = byLoad.front();
  ArrayRef<unsigned> targets =
      ArrayRef(byLoad).drop_front().take_back(kMostTargets);

  MoveBuilder builder(tables, ctx.topology, plan, mostMoves);
  // What a trade sends off the slowest device and takes back, each the
  // part or its upper half, priced alone: a trade that takes back more
  // than it sends cannot relieve the slowest device, and is not tried.
  auto traded = [&](const Shard &shard, bool half) -> std::optional<Shard> {
    if (!half)
      return shard;
    std::optional<std::pair<Shard, Shard>> cut = builder.halves(shard);
    if (!cut)
      return std::nullopt;
    return cut->second;
  };
  DenseMap<SetKey, double> alone;
  {
    std::vector<std::pair<SetKey, unsigned>> tickets;
    for (const Shard &shard : plan.shards) {
      if (shard.device != slowest && !is_contained(targets, shard.device))
        continue;
      for (bool half : {false, true}) {
        std::optional<Shard> part = traded(shard, half);
        if (!part)
          continue;
        SetKey key = sliceKey(part->slice());
        double cost;
        if (!alone.try_emplace(key, 0.0).second)
          continue;
        if (ctx.cache.lookup(key, cost))
          alone[key] = cost;
        else
          tickets.emplace_back(key, ctx.cache.request(key, part->slice()));
      }
    }
    if (ctx.cache.hasPending())
      if (Error err = ctx.cache.flush())
        return std::move(err);
    for (auto [key, ticket] : tickets)
      alone[key] = ctx.cache.result(ticket);
  }
  // The work a trade takes off the slowest device, by the parts' costs
  // alone; none when it takes back more than it sends, which cannot
  // relieve the slowest device.
  auto relief = [&](const Shard &mine, bool halfMine, const Shard &theirs,
                    bool halfTheirs) -> std::optional<double> {
    std::optional<Shard> going = traded(mine, halfMine);
    std::optional<Shard> coming = traded(theirs, halfTheirs);
    if (!going || !coming)
      return std::nullopt;
    double sent = alone.lookup(sliceKey(going->slice()));
    double taken = alone.lookup(sliceKey(coming->slice()));
    if (taken > sent)
      return std::nullopt;
    return sent - taken;
  };
  std::vector<size_t> parts;
  for (auto [index, shard] : enumerate(plan.shards))
    if (shard.device == slowest && mayMove(tables[shard.table], shard))
      parts.push_back(index);
  llvm::stable_sort(parts, [&](size_t a, size_t b) {
    return alone.lookup(sliceKey(plan.shards[a].slice())) >
           alone.lookup(sliceKey(plan.shards[b].slice()));
  });
  for (size_t index : parts) {
    if (builder.full())
      break;
    const Shard &shard = plan.shards[index];
    for (unsigned target : targets) {
      builder.move(index, target);
      builder.moveHalf(index, target);
      builder.moveRowHalf(index, target);
      // The trades whose relief is nearest half the two devices' gap,
      // which would even them out.
      double half = (busy(slowest) - busy(target)) / 2.0;
      SmallVector<std::tuple<double, size_t, bool, bool>> trades;
      for (auto [other, partner] : enumerate(plan.shards))
        if (partner.device == target && partner.table != shard.table &&
            mayMove(tables[partner.table], partner))
          for (bool halfMine : {false, true})
            for (bool halfTheirs : {false, true})
              if (std::optional<double> eased =
                      relief(shard, halfMine, partner, halfTheirs))
                trades.emplace_back(std::abs(*eased - half), other, halfMine,
                                    halfTheirs);
      llvm::stable_sort(trades, [](const auto &a, const auto &b) {
        return std::get<0>(a) < std::get<0>(b);
      });
      for (auto [distance, other, halfMine, halfTheirs] :
           ArrayRef(trades).take_front(kTradesPerTarget))
        builder.trade(index, other, halfMine, halfTheirs);
    }
    // The part's table dealt evenly again over the devices that hold it,
    // and over those and each target.
    SmallVector<unsigned> holders = devicesHolding(plan, shard.table);
    if (holders.size() > 1) {
      SmallVector<unsigned> same = holders;
      busiestFirst(same);
      builder.deal(shard.table, same);
      // And over the others alone.
      if (same.size() > 2)
        builder.deal(shard.table, ArrayRef(same).drop_front());
    }
    for (unsigned target : targets) {
      if (is_contained(holders, target))
        continue;
      SmallVector<unsigned> wider = holders;
      wider.push_back(target);
      busiestFirst(wider);
      builder.deal(shard.table, wider);
    }
  }
  PricedMoves moves;
  moves.plans = builder.take();
  if (moves.plans.empty())
    return std::move(moves);
  Expected<std::vector<PlanCost>> costs = pricePlans(ctx, moves.plans);
  if (!costs)
    return costs.takeError();
  ctx.stats.movesTried += moves.plans.size();
  for (const ShardingPlan &move : moves.plans)
    shardsPriced += move.shards.size();
  moves.costs = std::move(*costs);
  return std::move(moves);
}

/// The moves of `moves`, by their busy vectors, least first.
static std::vector<size_t> byBusy(const PricedMoves &moves) {
  std::vector<std::vector<double>> ranked;
  for (const PlanCost &cost : moves.costs)
    ranked.push_back(rankedBusy(cost));
  std::vector<size_t> order(moves.plans.size());
  std::iota(order.begin(), order.end(), size_t(0));
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return rankedBefore(ranked[a], ranked[b]);
  });
  return order;
}

Error improveLocally(SearchContext &ctx, ShardingPlan &plan, PlanCost &cost) {
  if (ctx.topology.numDevices() < 2)
    return Error::success();
  // Moves are taken while they lower the busy vector, which relieves
  // devices tied at the top one at a time; the best plan met is kept.
  ShardingPlan current = plan;
  PlanCost currentCost = cost;
  auto take = [&](ShardingPlan next, PlanCost nextCost, unsigned steps) {
    current = std::move(next);
    currentCost = std::move(nextCost);
    ctx.stats.movesTaken += steps;
    if (rankedBefore(currentCost, cost)) {
      plan = current;
      cost = currentCost;
    }
  };
  uint64_t budgetEnd = ctx.stats.movesTried + kMostMovesTried;
  uint64_t shardsPriced = 0;
  auto spent = [&] {
    return ctx.stats.movesTried >= budgetEnd ||
           shardsPriced >= kMostShardsPriced;
  };
  // The moves of `from` the budget has left.
  auto left = [&](const ShardingPlan &from) {
    uint64_t byShards =
        (kMostShardsPriced - std::min(shardsPriced, kMostShardsPriced)) /
        std::max<size_t>(1, from.shards.size());
    return size_t(std::max<uint64_t>(
        1, std::min(budgetEnd - ctx.stats.movesTried, byShards)));
  };
  for (unsigned round = 0; round < kMostRounds && !spent(); ++round) {
    Expected<PricedMoves> moves =
        movesOf(ctx, current, currentCost, left(current), shardsPriced);
    if (!moves)
      return moves.takeError();
    if (moves->plans.empty())
      break;
    std::vector<double> now = rankedBusy(currentCost);
    std::vector<size_t> order = byBusy(*moves);
    size_t first = order.front();
    if (rankedBefore(rankedBusy(moves->costs[first]), now)) {
      take(std::move(moves->plans[first]), std::move(moves->costs[first]), 1);
      continue;
    }
    // No one move helps: the few least bad, each followed by its best.
    bool taken = false;
    for (size_t m : ArrayRef(order).take_front(kSecondLooks)) {
      if (spent())
        break;
      Expected<PricedMoves> next =
          movesOf(ctx, moves->plans[m], moves->costs[m], left(moves->plans[m]),
                  shardsPriced);
      if (!next)
        return next.takeError();
      if (next->plans.empty())
        continue;
      size_t best = byBusy(*next).front();
      if (rankedBefore(rankedBusy(next->costs[best]), now)) {
        take(std::move(next->plans[best]), std::move(next->costs[best]), 2);
        taken = true;
        break;
      }
    }
    if (!taken)
      break;
  }
  return Error::success();
}

} // namespace detail
} // namespace neuroshard
