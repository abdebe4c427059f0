//===- HostTier.h - Tables kept in host memory behind a cache ---*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A table too large for the devices' memory can live in the host memory of
// the nodes (TableSpec::cacheFraction): each shard of it stays in the host
// memory of its device's node, and the device caches a fraction of the
// shard's rows in its own memory. The device looks rows up in its cache;
// each distinct row a batch uses that the cache does not hold crosses the
// host link twice: read before the forward, written back after the
// backward has updated it. HostTierPricer prices that traffic. The cost
// models add it to a shard's compute (cost-model contract, CostModel.h).
//
// The cache is least recently used, refilled before each batch
// (CachePolicy::LeastRecentlyUsed), and its misses follow from the table's
// access histogram (estimateRowCacheOfLaw). A row block of a table holds a
// random share of its rows (hashed ids), so its popularity is the table's
// power law over its own rows and its share of the lookups.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SHARDING_HOSTTIER_H
#define NEUROSHARD_SHARDING_HOSTTIER_H

#include "neuroshard/Sharding/AccessEstimate.h"
#include "neuroshard/Sharding/Problem.h"

#include "llvm/ADT/ArrayRef.h"

#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace neuroshard {

/// One batch of a shard of a host-memory table, expected.
struct HostTraffic {
  /// The rows the device caches of the shard.
  int64_t cacheRows = 0;
  /// The distinct rows of the shard a batch uses, and of those the rows
  /// the cache does not hold.
  CacheEstimate cache;
  /// Bytes that cross the host link: every missed row read and written
  /// back.
  double bytes = 0.0;
  /// Their time at the topology's host bandwidth, in ms.
  double ms = 0.0;
};

/// The power law a table's rows are used by: the one fitZipfAlpha finds in
/// its histogram at the topology's batch, the default one for a table a
/// batch never hits.
double tablePopularityLaw(const TableSpec &table, const Topology &topology);
/// The same from a histogram of `lookups` lookups over `rows` rows.
double popularityLaw(llvm::ArrayRef<double> accessHist, int64_t rows,
                     double lookups);

/// The bytes `missedRows` missed rows of `width` columns of `table` move
/// across the host link (each read, then written back), and their time in
/// ms at the topology's host bandwidth.
double hostMissBytes(const TableSpec &table, int64_t width, double missedRows);
double hostLinkMs(double bytes, const Topology &topology);

/// Prices the host traffic of the shards of a problem's host-memory tables
/// (none for the others), memoizing by table, rows and lookups: the
/// search prices a table's few row-block sizes many times.
class HostTierPricer {
public:
  /// Binds the pricer to a problem; forgets what it priced before.
  void prepare(llvm::ArrayRef<TableSpec> tables, const Topology &topology);

  /// The traffic of `slice` (nothing for a slice of a table in device
  /// memory, and for a replica).
  std::optional<HostTraffic> traffic(const ColumnSlice &slice);
  /// Its time in ms (0 for a slice of a table in device memory).
  double ms(const ColumnSlice &slice) {
    std::optional<HostTraffic> found = traffic(slice);
    return found ? found->ms : 0.0;
  }
  /// Whether any table of the problem is kept in host memory.
  bool any() const { return anyInHost; }

private:
  std::vector<TableSpec> tables;
  Topology topology;
  bool anyInHost = false;
  /// The power law of each table's histogram, fitted on first use.
  std::vector<std::optional<double>> alphas;
  std::map<std::tuple<unsigned, int64_t, double>, CacheEstimate> estimates;
};

struct ShardingPlan;

/// What a plan keeps of one host-memory table, over all its shards.
struct HostTableUse {
  unsigned table = 0;
  /// Bytes in host memory (weights and optimizer state) and in the
  /// devices' caches.
  uint64_t hostBytes = 0, cacheBytes = 0;
  /// Per batch: the distinct rows the shards use, the rows their caches
  /// miss, and the host traffic's time summed over the shards (each
  /// device moves its own in parallel).
  double batchRows = 0.0, missedRows = 0.0, hostMs = 0.0;
  /// The share of a batch's rows the caches hold.
  double hitRate() const {
    return batchRows > 0.0 ? 1.0 - missedRows / batchRows : 1.0;
  }
};

/// One entry per host-memory table of `tables`, in table order.
std::vector<HostTableUse> hostTierUse(llvm::ArrayRef<TableSpec> tables,
                                      const Topology &topology,
                                      const ShardingPlan &plan);

} // namespace neuroshard

#endif // NEUROSHARD_SHARDING_HOSTTIER_H
