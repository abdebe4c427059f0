//===- CleanPieces.cpp - No two pieces of a table on one device -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A model can price several small pieces of a table on one device below the
// one piece they make there, and a split that spreads a table over devices
// can buy nothing under the model. After the search, the pieces of a table
// that share a device are joined (joinPiecesPerDevice), and a split table
// is put back whole on one of its devices wherever the model prices the
// plan no worse so (unsplitWherePaysNothing), docs/planner.md "Clean pieces
// and structured candidates".
//
//===----------------------------------------------------------------------===//

#include "Placement.h"

#include "neuroshard/Sharding/Plan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

using namespace llvm;

namespace neuroshard {
namespace detail {

/// Gives each device of `pieces` (the pieces of one table, all column pieces
/// or all row blocks) one contiguous range holding what its pieces held, in
/// the order of the devices' first pieces; `range` reads and writes a
/// piece's [begin, end) along the cut.
template <typename Range>
static bool joinPerDevice(MutableArrayRef<Shard *> pieces, Range range) {
  SmallVector<unsigned> order;
  DenseMap<unsigned, int64_t> extent;
  llvm::sort(pieces, [&](Shard *a, Shard *b) {
    return range(*a).first < range(*b).first;
  });
  for (Shard *piece : pieces) {
    auto [begin, end] = range(*piece);
    auto [it, inserted] = extent.try_emplace(piece->device, 0);
    if (inserted)
      order.push_back(piece->device);
    it->second += end - begin;
  }
  if (order.size() == pieces.size())
    return false;
  int64_t next = range(*pieces.front()).first;
  for (auto [i, device] : enumerate(order)) {
    Shard &piece = *pieces[i];
    piece.device = device;
    range(piece, next, next + extent[device]);
    next += extent[device];
  }
  for (Shard *&piece : pieces.drop_front(order.size()))
    piece->table = ~0u;
  return true;
}

bool joinPiecesPerDevice(ArrayRef<TableSpec> tables, ShardingPlan &plan) {
  std::vector<SmallVector<Shard *>> pieces(tables.size());
  for (Shard &shard : plan.shards)
    if (!shard.replica)
      pieces[shard.table].push_back(&shard);
  bool changed = false;
  for (auto [index, table] : enumerate(tables)) {
    MutableArrayRef<Shard *> own = pieces[index];
    if (own.size() < 2)
      continue;
    const TableSpec &spec = table;
    if (all_of(own, [](Shard *s) { return s->allRows(); })) {
      changed |= joinPerDevice(
          own, [](Shard &s, int64_t begin = -1, int64_t end = -1) {
            if (begin >= 0) {
              s.colBegin = begin;
              s.colEnd = end;
            }
            return std::pair(s.colBegin, s.colEnd);
          });
    } else if (all_of(own, [&](Shard *s) { return s->width() == spec.dim; })) {
      changed |= joinPerDevice(
          own, [&](Shard &s, int64_t begin = -1, int64_t end = -1) {
            if (begin >= 0)
              s.setRows(begin, end, spec.rows);
            return std::pair(s.rowBegin, s.slice().rowEndIn(spec));
          });
    }
  }
  if (changed) {
    llvm::erase_if(plan.shards, [](const Shard &s) { return s.table == ~0u; });
    sortShards(plan.shards);
  }
  return changed;
}

/// `plan` with table `table`'s pieces replaced by the whole table on
/// `device`, in the planner's order of shards.
static ShardingPlan withTableWhole(const ShardingPlan &plan, unsigned table,
                                   const TableSpec &spec, unsigned device) {
  ShardingPlan out;
  for (const Shard &shard : plan.shards)
    if (shard.table != table)
      out.shards.push_back(shard);
  out.shards.push_back(Shard::of(ColumnSlice{table, 0, spec.dim}, device));
  sortShards(out.shards);
  return out;
}

Error unsplitWherePaysNothing(SearchContext &ctx, ShardingPlan &plan,
                              PlanCost &cost) {
  ArrayRef<TableSpec> tables = ctx.tables;
  // Each round prices every split table put back whole, alone. Those the
  // model prices no worse than the plan are put back together: those whose
  // changes to the devices add up to no worse a plan, if it is no worse;
  // else all of them, best first, if the plan so made is no worse, else
  // the better half, and so on down to the best alone. A table comes back at
  // most once, so the rounds end; they end when no table's return is no worse.
  auto noWorse = [&](const PlanCost &other) {
    return other.maxMs <= cost.maxMs * (1.0 + 1e-9);
  };
  for (size_t round = 0; round < tables.size(); ++round) {
    std::vector<ShardingPlan> variants;
    // Per variant: the table, the device it went to, and its holders.
    struct Return {
      unsigned table, device;
      SmallVector<unsigned> holders;
    };
    std::vector<Return> returned;
    for (auto [index, spec] : enumerate(tables)) {
      SmallVector<unsigned> devices = devicesHolding(plan, index);
      if (devices.size() < 2)
        continue;
      // On the holder that is least loaded now.
      unsigned device =
          *llvm::min_element(devices, [&](unsigned a, unsigned b) {
            return cost.devices[a].totalMs() < cost.devices[b].totalMs();
          });
      ShardingPlan variant = withTableWhole(plan, index, spec, device);
      if (Error err = validatePlan(tables, ctx.topology, variant)) {
        consumeError(std::move(err));
        continue;
      }
      variants.push_back(std::move(variant));
      returned.push_back({unsigned(index), device, std::move(devices)});
    }
    if (variants.empty())
      return Error::success();
    Expected<std::vector<PlanCost>> costs = pricePlans(ctx, variants);
    if (!costs)
      return costs.takeError();
    std::vector<size_t> good;
    for (size_t v = 0; v < variants.size(); ++v)
      if (noWorse((*costs)[v]))
        good.push_back(v);
    if (good.empty())
      return Error::success();
    llvm::stable_sort(good, [&](size_t a, size_t b) {
      return rankedBefore((*costs)[a], (*costs)[b]);
    });
    // The joint plan of the returns `chosen`; with `keepDevices`, each table
    // goes where its variant put it, else to the holder whose compute,
    // with what the tables before it added, is least (what one adds is
    // what it added alone on its own holder). Taken if no worse.
    auto tryTogether = [&](ArrayRef<size_t> chosen,
                           bool keepDevices) -> Expected<bool> {
      std::vector<double> load;
      for (const DeviceCost &device : cost.devices)
        load.push_back(device.computeMs);
      ShardingPlan joint = plan;
      for (size_t v : chosen) {
        const Return &back = returned[v];
        double added = (*costs)[v].devices[back.device].computeMs -
                       cost.devices[back.device].computeMs;
        unsigned device =
            keepDevices
                ? back.device
                : *llvm::min_element(back.holders, [&](unsigned a, unsigned b) {
                    return load[a] < load[b];
                  });
        load[device] += added;
        joint = withTableWhole(joint, back.table, tables[back.table], device);
      }
      if (Error err = validatePlan(tables, ctx.topology, joint)) {
        consumeError(std::move(err));
        return false;
      }
      Expected<std::vector<PlanCost>> jointCost =
          pricePlans(ctx, ArrayRef(joint));
      if (!jointCost)
        return jointCost.takeError();
      if (!noWorse(jointCost->front()))
        return false;
      plan = std::move(joint);
      cost = std::move(jointCost->front());
      return true;
    };
    // First the returns that fit together if what each did alone to every
    // device adds up: best first, each kept while no device's total then
    // exceeds the slowest device's, nor any device's compute and backward
    // exchange the most of them now (the others' forward exchange waits
    // for the latest device, which adds up no more). Many tables come back
    // in one round so, where returning them one a round would take as many
    // rounds as there are split tables.
    SmallVector<size_t> fitting;
    {
      std::vector<double> total, ready;
      for (const DeviceCost &device : cost.devices) {
        total.push_back(device.totalMs());
        ready.push_back(device.busyMs());
      }
      double limit = cost.maxMs * (1.0 + 1e-9);
      double latest = *llvm::max_element(ready) * (1.0 + 1e-9);
      std::vector<double> totalAfter(total.size()), readyAfter(ready.size());
      for (size_t v : good) {
        bool fits = true;
        for (auto [d, device] : enumerate((*costs)[v].devices)) {
          const DeviceCost &now = cost.devices[d];
          totalAfter[d] = total[d] + device.totalMs() - now.totalMs();
          readyAfter[d] = ready[d] + device.busyMs() - now.busyMs();
          fits &= totalAfter[d] <= limit && readyAfter[d] <= latest;
        }
        if (!fits)
          continue;
        total.swap(totalAfter);
        ready.swap(readyAfter);
        fitting.push_back(v);
      }
    }
    bool together = false;
    if (fitting.size() > 1) {
      Expected<bool> taken = tryTogether(fitting, /*keepDevices=*/true);
      if (!taken)
        return taken.takeError();
      together = *taken;
    }
    // Else the best half of them, and so on.
    for (size_t take = good.size(); take > 1 && !together; take /= 2) {
      Expected<bool> taken =
          tryTogether(ArrayRef(good).take_front(take), /*keepDevices=*/false);
      if (!taken)
        return taken.takeError();
      together = *taken;
    }
    if (!together) {
      plan = std::move(variants[good.front()]);
      cost = std::move((*costs)[good.front()]);
    }
  }
  return Error::success();
}

} // namespace detail
} // namespace neuroshard
