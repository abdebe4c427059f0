//===- HostTierChoice.cpp - Which tables go to host memory ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/HostTierChoice.h"
#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Sharding/HostTier.h"
#include "neuroshard/Support/Units.h"

#include "Placement.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace neuroshard {

namespace {
/// One cache size for a table kept in host memory.
struct Rung {
  double fraction;
  /// Device bytes of the whole table's cache, and the host traffic of one
  /// batch of the whole table behind it, in ms.
  uint64_t cacheBytes;
  double ms;
};

/// The cache sizes a table may take, smallest first.
struct TableRungs {
  unsigned table;
  uint64_t stored, hostBytes;
  std::vector<Rung> rungs;
};
} // namespace

/// Caches of these many times the distinct rows a batch uses, and of these
/// shares of the table.
static constexpr double kBatchRowRungs[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
static constexpr double kShareRungs[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.4};
/// A cache this large a share of its table frees too little to be worth it.
static constexpr double kLargestCacheFraction = 0.5;

/// The rungs of `table`, priced with the power law of its histogram.
static TableRungs rungsOf(unsigned index, const TableSpec &table,
                          const Topology &topology) {
  TableRungs result{index, topology.storedBytes(table, table.dim), 0, {}};
  TableSpec host = table;
  host.cacheFraction = 1.0;
  result.hostBytes = topology.hostShardBytes(host, host.dim);
  double lookups = double(topology.batchSize) * table.totalPoolingFactor();
  double alpha = tablePopularityLaw(table, topology);
  double batchRows = estimateRowCacheOfLaw(alpha, table.rows, lookups, 0,
                                           CachePolicy::Frequency)
                         .batchRows;
  std::vector<double> fractions;
  for (double times : kBatchRowRungs)
    fractions.push_back(std::ceil(times * batchRows) / double(table.rows));
  llvm::append_range(fractions, kShareRungs);
  llvm::sort(fractions);
  for (double fraction : fractions) {
    if (!(fraction > 0.0) || fraction > kLargestCacheFraction ||
        (!result.rungs.empty() && fraction <= result.rungs.back().fraction))
      continue;
    host.cacheFraction = fraction;
    int64_t cacheRows = host.cacheRows(table.rows);
    CacheEstimate cache = estimateRowCacheOfLaw(
        alpha, table.rows, lookups, cacheRows, CachePolicy::LeastRecentlyUsed);
    result.rungs.push_back(
        {fraction, topology.shardBytes(host, host.dim),
         hostLinkMs(hostMissBytes(table, table.dim, cache.missedRows),
                    topology)});
  }
  return result;
}

Expected<std::vector<TableSpec>> chooseHostTiers(ArrayRef<TableSpec> tables,
                                                 const Topology &topology) {
  std::vector<TableSpec> chosen(tables.begin(), tables.end());
  // CPU devices work in host memory already: there is no tier to move to.
  if (isCPUDeviceKind(topology.deviceKind)) {
    for (const TableSpec &table : chosen)
      if (table.inHostMemory())
        return createStringError(
            inconvertibleErrorCode(),
            formatv("table '{0}': 'cache_load_factor' keeps it in host "
                    "memory behind a cache in device memory, but a plan for "
                    "device kind '{1}' runs in host memory already",
                    table.name, topology.deviceKind));
    return std::move(chosen);
  }
  uint64_t capacity = 0, largest = 0;
  for (unsigned d = 0; d < topology.numDevices(); ++d) {
    capacity += topology.usableBytes(d);
    largest = std::max(largest, topology.usableBytes(d));
  }
  uint64_t target = static_cast<uint64_t>(kHostTierFill * double(capacity));
  uint64_t needed = 0, host = 0;
  for (const TableSpec &table : chosen) {
    needed += topology.shardBytes(table, table.dim);
    host += topology.hostShardBytes(table, table.dim);
  }
  // A table whose smallest allowed shard (the whole table, if it must stay
  // whole) is larger than every device fits no device, whatever the total:
  // it goes to host memory if its cache fits one.
  auto fitsNoDevice = [&](const TableSpec &table) {
    return !table.inHostMemory() &&
           detail::smallestShardBytes(table, topology) > largest;
  };
  if (needed <= capacity && llvm::none_of(chosen, fitsNoDevice))
    return std::move(chosen);
  uint64_t hostCapacity =
      uint64_t(topology.numNodes()) * topology.hostMemoryBytes();

  std::vector<TableRungs> candidates;
  for (auto [index, table] : enumerate(chosen))
    if (!table.inHostMemory() && table.rows >= 2) {
      TableRungs rungs = rungsOf(index, table, topology);
      if (!rungs.rungs.empty())
        candidates.push_back(std::move(rungs));
    }

  // First which tables move: each at its smallest cache, which frees the
  // most, the least host traffic per byte freed first, until the tables
  // fill at most kHostTierFill of the devices' memory.
  struct Move {
    size_t candidate, rung;
    double msPerByte;
  };
  std::vector<Move> moves;
  for (auto [c, candidate] : enumerate(candidates)) {
    const Rung &smallest = candidate.rungs.front();
    if (smallest.cacheBytes < candidate.stored)
      moves.push_back(
          {c, 0, smallest.ms / double(candidate.stored - smallest.cacheBytes)});
  }
  llvm::stable_sort(moves, [](const Move &a, const Move &b) {
    return a.msPerByte < b.msPerByte;
  });
  std::vector<std::optional<size_t>> rungOf(candidates.size());
  auto moveToHost = [&](size_t c, size_t rung) {
    rungOf[c] = rung;
    needed -= candidates[c].stored - candidates[c].rungs[rung].cacheBytes;
    host += candidates[c].hostBytes;
  };
  for (auto [c, candidate] : enumerate(candidates))
    if (fitsNoDevice(chosen[candidate.table]) &&
        candidate.rungs.front().cacheBytes <= largest &&
        host + candidate.hostBytes <= hostCapacity)
      moveToHost(c, 0);
  for (const Move &move : moves) {
    if (needed <= target)
      break;
    const TableRungs &candidate = candidates[move.candidate];
    if (rungOf[move.candidate] || host + candidate.hostBytes > hostCapacity)
      continue;
    moveToHost(move.candidate, move.rung);
  }
  bool anyMoved = llvm::any_of(rungOf, [](const std::optional<size_t> &rung) {
    return rung.has_value();
  });
  // With nothing that could move (no host memory, or no table it holds),
  // the search says why the devices are too small, as without host memory.
  if (!anyMoved)
    return std::move(chosen);
  if (needed > capacity) {
    uint64_t all = 0;
    for (const TableSpec &table : tables)
      all += topology.storedBytes(table, table.dim);
    auto [need, have] = formatGBPair(all, capacity);
    return createStringError(
        inconvertibleErrorCode(),
        formatv("the tables need {0} in total but the {1} devices have {2}; "
                "with the tables the {3} host memory ({4}) can hold kept "
                "there behind caches, the devices would still need {5}",
                need, topology.numDevices(), have,
                topology.numNodes() == 1
                    ? std::string("node's")
                    : formatv("{0} nodes'", topology.numNodes()).str(),
                formatGB(hostCapacity), formatGB(needed)));
  }

  // Then the caches grow into the memory left, the most host traffic saved
  // per byte first.
  while (true) {
    std::optional<std::pair<size_t, size_t>> best;
    double bestSaving = 0.0;
    for (auto [c, candidate] : enumerate(candidates)) {
      if (!rungOf[c])
        continue;
      const Rung &now = candidate.rungs[*rungOf[c]];
      for (size_t r = *rungOf[c] + 1; r < candidate.rungs.size(); ++r) {
        const Rung &next = candidate.rungs[r];
        uint64_t extra = next.cacheBytes - now.cacheBytes;
        if (needed + extra > target || next.ms >= now.ms)
          continue;
        double saving =
            (now.ms - next.ms) / double(std::max<uint64_t>(extra, 1));
        if (saving > bestSaving) {
          bestSaving = saving;
          best = {c, r};
        }
      }
    }
    if (!best)
      break;
    auto [c, r] = *best;
    needed += candidates[c].rungs[r].cacheBytes -
              candidates[c].rungs[*rungOf[c]].cacheBytes;
    rungOf[c] = r;
  }

  for (auto [c, candidate] : enumerate(candidates)) {
    if (!rungOf[c])
      continue;
    TableSpec &table = chosen[candidate.table];
    table.cacheFraction = candidate.rungs[*rungOf[c]].fraction;
    // A replica on every device would keep the table once per device.
    table.shardingKinds &= ~kindBit(ShardingKind::DataParallel);
    if (table.shardingKinds == 0)
      table.shardingKinds = kindBit(ShardingKind::TableWise);
  }
  return std::move(chosen);
}

Expected<std::vector<TableSpec>> tablesForPlanning(ArrayRef<TableSpec> tables,
                                                   const Topology &topology,
                                                   const PlanFile *given) {
  if (given)
    return tablesOfPlan(tables, *given);
  if (Error err = validateProblem(tables, topology))
    return std::move(err);
  return chooseHostTiers(tables, topology);
}

} // namespace neuroshard
