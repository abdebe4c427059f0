//===- HostTier.cpp - Tables kept in host memory behind a cache -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/HostTier.h"
#include "neuroshard/Sharding/Plan.h"

using namespace llvm;

namespace neuroshard {

void HostTierPricer::prepare(ArrayRef<TableSpec> newTables,
                             const Topology &newTopology) {
  tables.assign(newTables.begin(), newTables.end());
  topology = newTopology;
  alphas.assign(tables.size(), std::nullopt);
  estimates.clear();
  anyInHost = llvm::any_of(
      tables, [](const TableSpec &table) { return table.inHostMemory(); });
}

double popularityLaw(llvm::ArrayRef<double> accessHist, int64_t rows,
                     double lookups) {
  double total = 0.0;
  for (double fraction : accessHist)
    total += fraction;
  return total > 0.0 && lookups >= 1.0 ? fitZipfAlpha(accessHist, rows, lookups)
                                       : kDefaultZipfAlpha;
}

double tablePopularityLaw(const TableSpec &table, const Topology &topology) {
  return popularityLaw(table.accessHist, table.rows,
                       double(topology.batchSize) * table.totalPoolingFactor());
}

double hostMissBytes(const TableSpec &table, int64_t width, double missedRows) {
  return 2.0 * missedRows * double(width) * table.elementBytes;
}

double hostLinkMs(double bytes, const Topology &topology) {
  return bytes / (topology.hostBandwidthGBps * kBytesPerGB) * 1e3;
}

std::optional<HostTraffic> HostTierPricer::traffic(const ColumnSlice &slice) {
  if (slice.table >= tables.size() || slice.replica)
    return std::nullopt;
  const TableSpec &table = tables[slice.table];
  if (!table.inHostMemory())
    return std::nullopt;
  double tableLookups = double(topology.batchSize) * table.totalPoolingFactor();
  std::optional<double> &alpha = alphas[slice.table];
  if (!alpha)
    alpha = tablePopularityLaw(table, topology);
  int64_t rows = slice.numRows(table);
  double lookups = tableLookups * double(rows) / double(table.rows);
  HostTraffic traffic;
  traffic.cacheRows = table.cacheRows(rows);
  auto key = std::make_tuple(slice.table, rows, lookups);
  auto found = estimates.find(key);
  if (found == estimates.end())
    found = estimates
                .emplace(key, estimateRowCacheOfLaw(
                                  *alpha, rows, lookups, traffic.cacheRows,
                                  CachePolicy::LeastRecentlyUsed))
                .first;
  traffic.cache = found->second;
  traffic.bytes = hostMissBytes(table, slice.width(), traffic.cache.missedRows);
  traffic.ms = hostLinkMs(traffic.bytes, topology);
  return traffic;
}

std::vector<HostTableUse> hostTierUse(ArrayRef<TableSpec> tables,
                                      const Topology &topology,
                                      const ShardingPlan &plan) {
  HostTierPricer pricer;
  pricer.prepare(tables, topology);
  std::vector<HostTableUse> uses;
  std::vector<int> entry(tables.size(), -1);
  for (auto [t, table] : enumerate(tables))
    if (table.inHostMemory()) {
      entry[t] = int(uses.size());
      uses.push_back({unsigned(t)});
    }
  for (const Shard &shard : plan.shards) {
    if (shard.table >= tables.size() || entry[shard.table] < 0)
      continue;
    const TableSpec &table = tables[shard.table];
    HostTableUse &use = uses[entry[shard.table]];
    int64_t rows = shard.numRows(table);
    use.hostBytes += topology.hostShardBytes(table, shard.width(), rows);
    use.cacheBytes += topology.shardBytes(table, shard.width(), rows);
    if (std::optional<HostTraffic> traffic = pricer.traffic(shard.slice())) {
      use.batchRows += traffic->cache.batchRows;
      use.missedRows += traffic->cache.missedRows;
      use.hostMs += traffic->ms;
    }
  }
  return uses;
}

} // namespace neuroshard
