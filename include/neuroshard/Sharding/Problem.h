//===- Problem.h - Tables and devices of a sharding problem -----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The input of the planner: the embedding tables to place (TableSpec) and the
// devices to place them on (Topology), plus the column slices and shards that
// plans are made of.
//
// Units (Support/Units.h): memory is counted in bytes and reported in GB
// where GB = 2^30 bytes (kBytesPerGB, as TorchRec's planner does);
// bandwidths are GB/s with the same GB; costs are milliseconds.
//
// This is the vocabulary below both the cost models and the planner: the
// cost-model library prices these types and the planner arranges them, and
// neither includes the other's headers to name them.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SHARDING_PROBLEM_H
#define NEUROSHARD_SHARDING_PROBLEM_H

#include "neuroshard/Sharding/AccessEstimate.h"
#include "neuroshard/Sharding/TableRules.h"
#include "neuroshard/Support/Units.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace neuroshard {

/// How one feature looks a table up: its bags' mean length and the access
/// histogram of one batch of its lookups.
struct FeatureStats {
  double poolingFactor = 1.0;
  std::array<double, kNumAccessBins> accessHist{};
};

/// The forms a table may take in a plan (docs/design.md §3), by TorchRec's
/// names:
///  - TableWise: whole on one device;
///  - ColumnWise: column ranges on several devices, each reading every
///    index of the table;
///  - RowWise: contiguous row blocks on any devices; an index goes to the
///    block that holds its row, and the blocks' partial sums are reduced;
///  - TableRowWise: row blocks that all stay inside one node;
///  - DataParallel: a replica on every device, each looking up its own
///    slice of the batch, gradients summed across replicas.
enum class ShardingKind : uint8_t {
  TableWise,
  ColumnWise,
  RowWise,
  TableRowWise,
  DataParallel,
};
constexpr unsigned kNumShardingKinds = 5;
/// A set of kinds, one bit per kind (1 << kind).
using ShardingKindSet = uint8_t;
constexpr ShardingKindSet kindBit(ShardingKind kind) {
  return static_cast<ShardingKindSet>(1u << static_cast<unsigned>(kind));
}
constexpr ShardingKindSet kAllShardingKinds = (1u << kNumShardingKinds) - 1;
/// The kinds planning has always used: whole tables and column pieces.
constexpr ShardingKindSet kTableColumnKinds =
    kindBit(ShardingKind::TableWise) | kindBit(ShardingKind::ColumnWise);
/// "table_wise", "column_wise", "row_wise", "table_row_wise",
/// "data_parallel": TorchRec's ShardingType values.
llvm::StringRef shardingKindName(ShardingKind kind);
std::optional<ShardingKind> parseShardingKind(llvm::StringRef name);
/// The names of `kinds`, comma-separated ("table_wise, column_wise").
std::string shardingKindList(ShardingKindSet kinds = kAllShardingKinds);
/// Parses a comma-separated list of kind names ("table_wise,row_wise"),
/// as the front ends' `sharding-types` option takes it; the error names the
/// entry and the kinds there are.
llvm::Expected<ShardingKindSet> parseShardingKindList(llvm::StringRef list);

/// One embedding table and how it is used by the model.
struct TableSpec {
  std::string name;
  int64_t rows = 0;
  /// Embedding width; a positive multiple of kColumnAlignment.
  int64_t dim = 0;
  /// Bytes per element (4 for f32).
  unsigned elementBytes = 4;
  /// Mean number of indices per bag.
  double poolingFactor = 1.0;
  /// Fractions of distinct rows per hit-count bin; sums to 1 (or all zero
  /// for a table that was never hit).
  std::array<double, kNumAccessBins> accessHist{};
  /// Further features that look the table up with statistics of their own
  /// (a table shared by several features): each adds its lookups to every
  /// shard's work and its pooled columns to the exchange. The statistics
  /// above are the first feature's.
  std::vector<FeatureStats> moreFeatures;
  /// Constraint: every column of the table must live on this device.
  std::optional<unsigned> pinnedDevice;
  /// Constraint: the table must stay whole (no column-wise split).
  bool noSplit = false;
  /// Constraint: the kinds the table may take (TorchRec's
  /// ParameterConstraints.sharding_types). A pinned or no-split table is
  /// table-wise whatever this says.
  ShardingKindSet shardingKinds = kAllShardingKinds;
  bool allows(ShardingKind kind) const { return shardingKinds & kindBit(kind); }
  /// Where the table lives: nothing for device memory (HBM); a fraction for
  /// the host memory of the node of each device that holds a shard of it,
  /// with a cache of that fraction of the shard's rows (rounded up) in the
  /// device's memory (TorchRec's fused_uvm_caching and cache_load_factor).
  std::optional<double> cacheFraction;
  bool inHostMemory() const { return cacheFraction.has_value(); }
  /// The rows a device caches of a shard of `rows` rows of a host-memory
  /// table: at least one, at most all of them.
  int64_t cacheRows(int64_t rows) const;
  /// Widens `fraction` (the table's cache fraction so far, 0 for none) to
  /// cover a shard of `rows` rows cached in `cacheRows` rows, which
  /// cacheRows then gives back: a table's fraction is the largest its
  /// shards ask for.
  static double widenCacheFraction(double fraction, int64_t cacheRows,
                                   int64_t rows);

  /// Bytes of the columns [colBegin, colBegin + width).
  uint64_t sliceBytes(int64_t width) const {
    return static_cast<uint64_t>(rows) * static_cast<uint64_t>(width) *
           elementBytes;
  }
  /// Bytes of the whole table: rows * dim * elementBytes.
  uint64_t bytes() const { return sliceBytes(dim); }
  /// Features that look the table up (1 + moreFeatures).
  unsigned numFeatures() const { return 1 + moreFeatures.size(); }
  /// Feature `i`'s statistics (0: the table's own).
  FeatureStats feature(unsigned i) const {
    return i == 0 ? FeatureStats{poolingFactor, accessHist}
                  : moreFeatures[i - 1];
  }
  /// The pooling factors of all features added up: indices per bag over
  /// every feature.
  double totalPoolingFactor() const {
    double total = poolingFactor;
    for (const FeatureStats &f : moreFeatures)
      total += f.poolingFactor;
    return total;
  }
};

/// The optimizer that trains the tables, for the memory its state takes
/// beside the weights. The state is fp32, as FBGEMM's fused optimizers keep
/// it: Adagrad one value per weight, Adam two, row-wise Adagrad one per row
/// of every shard, plain SGD none.
enum class Optimizer { SGD, Adagrad, RowwiseAdagrad, Adam };

/// "sgd", "adagrad", "rowwise-adagrad", "adam".
llvm::StringRef optimizerName(Optimizer optimizer);
std::optional<Optimizer> parseOptimizer(llvm::StringRef name);
/// The names above, comma-separated, for messages.
std::string optimizerNameList();

/// Defaults of a topology that a front end was not told: one node of
/// devices of kDefaultMemoryGB each, as planning has always assumed; a
/// cluster (a topology given its nodes) is made of nodes of
/// kDefaultDevicesPerNode H100-class devices of kDefaultClusterMemoryGB.
constexpr double kDefaultMemoryGB = 16.0;
constexpr unsigned kDefaultDevicesPerNode = 8;
constexpr double kDefaultClusterMemoryGB = 80.0;
/// A node's host memory for tables kept there, and a device's bandwidth to
/// it, when a front end was not told them: a DGX H100 node's 2 TB of
/// system memory, and the 32 GB/s TorchRec's planner prices a UVM cache's
/// misses at across PCIe.
constexpr double kDefaultHostMemoryGB = 2048.0;
constexpr double kDefaultHostBandwidthGBps = 32.0;

/// The kind of device a plan is for when none is named: a GPU. A kind is
/// "gpu", "cpu" (a plan for CPU execution), or a chip ("h100", "h200",
/// "cpu-zen3"); it chooses the default cost model (the shipped bundle of
/// that kind) and a bundle of another kind warns.
constexpr const char *kDefaultDeviceKind = "gpu";
/// True for the kinds of plans meant for CPU execution: "cpu" and "cpu-*".
bool isCPUDeviceKind(llvm::StringRef kind);

/// The devices a plan places tables on, how they are grouped into nodes, and
/// what the analytical cost model needs to know about them and about the
/// training step.
struct Topology {
  /// Memory capacity of each device in GB; its size is the device count.
  std::vector<double> memoryGB;
  /// Devices per node: devices are numbered node by node, and the devices
  /// of a node share its fast links (NVLink-class); 0 puts every device on
  /// one node.
  unsigned devicesPerNode = 0;
  /// Device memory (HBM) bandwidth in GB/s (TorchRec's default).
  double hbmBandwidthGBps = 897.0;
  /// Bandwidth of a device to the other devices of its node, in GB/s
  /// (TorchRec's intra-node default, NVLink-class).
  double intraNodeBandwidthGBps = 600.0;
  /// Bandwidth of a device to the devices of other nodes, in GB/s (one
  /// 400 Gb/s InfiniBand or RoCE port per GPU).
  double interNodeBandwidthGBps = 50.0;
  /// Host memory of each node for the tables kept there, in GB, and a
  /// device's bandwidth to it (both ways) in GB/s.
  double hostMemoryGB = kDefaultHostMemoryGB;
  double hostBandwidthGBps = kDefaultHostBandwidthGBps;
  /// Global batch size B: every device's fused kernel runs all B bags.
  int64_t batchSize = 65536;
  /// What the devices are (checkDeviceKind): what the plan's kernels run on.
  std::string deviceKind = kDefaultDeviceKind;

  /// N devices with the same capacity, on one node.
  static Topology uniform(unsigned numDevices, double memoryGBPerDevice) {
    Topology topology;
    topology.memoryGB.assign(numDevices, memoryGBPerDevice);
    return topology;
  }
  /// The optimizer whose state shards carry beside their weights.
  Optimizer optimizer = Optimizer::SGD;
  /// The fraction of every device's memory kept free of shards (for
  /// activations, buffers and the framework), in [0, 1).
  double reservedFraction = 0.0;

  unsigned numDevices() const { return memoryGB.size(); }
  /// Devices per node (all of them on one node).
  unsigned nodeSize() const {
    return devicesPerNode ? devicesPerNode : numDevices();
  }
  unsigned numNodes() const {
    return nodeSize() ? numDevices() / nodeSize() : 0;
  }
  /// The node `device` is on.
  unsigned nodeOf(unsigned device) const { return device / nodeSize(); }
  /// A device's whole memory.
  uint64_t memoryBytes(unsigned device) const {
    return static_cast<uint64_t>(memoryGB[device] * kBytesPerGB);
  }
  /// The memory shards may use: the whole memory less the reserved
  /// fraction. Plans must fit it.
  uint64_t usableBytes(unsigned device) const {
    return static_cast<uint64_t>(memoryGB[device] * (1.0 - reservedFraction) *
                                 kBytesPerGB);
  }
  /// Bytes of optimizer state for `width` columns of `rows` rows of
  /// `table` (all of its rows by default).
  uint64_t optimizerStateBytes(const TableSpec &table, int64_t width,
                               std::optional<int64_t> rows = {}) const;
  /// Bytes `width` columns of `table` (of `rows` of its rows) take on a
  /// device: weights and optimizer state; for a table in host memory, the
  /// weights of its cached rows.
  uint64_t shardBytes(const TableSpec &table, int64_t width,
                      std::optional<int64_t> rows = {}) const {
    int64_t held = rows.value_or(table.rows);
    if (table.inHostMemory())
      return static_cast<uint64_t>(table.cacheRows(held)) *
             static_cast<uint64_t>(width) * table.elementBytes;
    return storedBytes(table, width, rows);
  }
  /// Bytes the same shard takes in its node's host memory: its weights and
  /// optimizer state for a table kept there, else none.
  uint64_t hostShardBytes(const TableSpec &table, int64_t width,
                          std::optional<int64_t> rows = {}) const {
    return table.inHostMemory() ? storedBytes(table, width, rows) : 0;
  }
  /// A node's host memory for tables.
  uint64_t hostMemoryBytes() const {
    return static_cast<uint64_t>(hostMemoryGB * kBytesPerGB);
  }
  /// Weights and optimizer state of a shard, wherever it lives.
  uint64_t storedBytes(const TableSpec &table, int64_t width,
                       std::optional<int64_t> rows = {}) const {
    uint64_t weights = static_cast<uint64_t>(rows.value_or(table.rows)) *
                       static_cast<uint64_t>(width) * table.elementBytes;
    return weights + optimizerStateBytes(table, width, rows);
  }
};

/// The end of a row range that holds a table's rows to its last one.
constexpr int64_t kAllRows = std::numeric_limits<int64_t>::max();

/// A piece of table `table` (an index into the table list of the problem):
/// the columns [colBegin, colEnd) of the rows [rowBegin, rowEnd) (rowEnd
/// kAllRows: to the table's last row), or, with `replica`, a data-parallel
/// replica of the whole table that looks up one device's share of the
/// batch. This is what cost models price.
struct ColumnSlice {
  unsigned table = 0;
  int64_t colBegin = 0;
  int64_t colEnd = 0;
  int64_t rowBegin = 0;
  int64_t rowEnd = kAllRows;
  bool replica = false;
  int64_t width() const { return colEnd - colBegin; }
  /// Whether the piece holds every row (a whole table or a column piece).
  bool allRows() const { return rowBegin == 0 && rowEnd == kAllRows; }
  /// Whether the piece is a row piece or a replica, not a whole table or a
  /// column piece.
  bool distributesRows() const { return !allRows() || replica; }
  /// The rows the piece holds of `spec`, its table.
  int64_t numRows(const TableSpec &spec) const {
    return std::min(rowEnd, spec.rows) - rowBegin;
  }
  /// The row range's end in `spec`'s rows.
  int64_t rowEndIn(const TableSpec &spec) const {
    return std::min(rowEnd, spec.rows);
  }
  /// The fraction of `spec`'s rows the piece holds, and so of the table's
  /// lookups it receives on average (rowBlockShare): 1 for a piece of every
  /// row.
  double rowShare(const TableSpec &spec) const {
    return allRows() || spec.rows <= 0 ? 1.0
                                       : static_cast<double>(numRows(spec)) /
                                             static_cast<double>(spec.rows);
  }
  friend bool operator==(const ColumnSlice &a, const ColumnSlice &b) {
    return a.table == b.table && a.colBegin == b.colBegin &&
           a.colEnd == b.colEnd && a.rowBegin == b.rowBegin &&
           a.rowEnd == b.rowEnd && a.replica == b.replica;
  }
  friend bool operator<(const ColumnSlice &a, const ColumnSlice &b) {
    if (a.table != b.table)
      return a.table < b.table;
    if (a.rowBegin != b.rowBegin)
      return a.rowBegin < b.rowBegin;
    return a.colBegin < b.colBegin;
  }
};

/// A piece of a table placed on a device.
struct Shard {
  unsigned table = 0;
  int64_t colBegin = 0;
  int64_t colEnd = 0;
  unsigned device = 0;
  int64_t rowBegin = 0;
  int64_t rowEnd = kAllRows;
  bool replica = false;
  ColumnSlice slice() const {
    return {table, colBegin, colEnd, rowBegin, rowEnd, replica};
  }
  static Shard of(const ColumnSlice &slice, unsigned device) {
    return {slice.table,    slice.colBegin, slice.colEnd, device,
            slice.rowBegin, slice.rowEnd,   slice.replica};
  }
  int64_t width() const { return colEnd - colBegin; }
  bool allRows() const { return rowBegin == 0 && rowEnd == kAllRows; }
  bool distributesRows() const { return slice().distributesRows(); }
  int64_t numRows(const TableSpec &spec) const { return slice().numRows(spec); }
  /// Sets the rows to [begin, end) of a table of `tableRows` rows; the
  /// range of every row spelled out is written kAllRows, so that every
  /// reader of a plan or of the IR gives it one form.
  void setRows(int64_t begin, int64_t end, int64_t tableRows) {
    rowBegin = begin;
    rowEnd = begin == 0 && end == tableRows ? kAllRows : end;
  }
  friend bool operator==(const Shard &a, const Shard &b) {
    return a.slice() == b.slice() && a.device == b.device;
  }
};

/// Which of a table's row blocks pieceSpec describes. The rows of a table
/// are assumed to be in random order with respect to how often they are
/// hit (hashed ids, as production tables have), so a block of a fraction f
/// of the rows receives a fraction f of the lookups on average (Mean). A
/// few hot rows make the blocks' shares lumpy, and the device that takes
/// longest is the one whose block holds them: a planner prices every block
/// as the most loaded of its table's blocks is expected to be (Heaviest,
/// heaviestRowBlockShare), which is f for a table of many evenly hit rows.
enum class RowBlockLoad : uint8_t { Mean, Heaviest };

/// The share of `table`'s lookups that `slice` receives in a batch of
/// `batchSize` bags, as `load` says: 1 for a piece of every row and for a
/// replica (whose share is of the bags).
double rowBlockShare(const TableSpec &table, const ColumnSlice &slice,
                     int64_t batchSize, RowBlockLoad load);

/// The hit moments of every lookup of `table` (all its features) in a batch
/// of `batchSize` bags, which the Heaviest share of its row blocks follows
/// from (heaviestRowBlockShare): a model that prices many row pieces of one
/// table computes them once.
RowHitMoments tableRowHitMoments(const TableSpec &table, int64_t batchSize);

/// rowBlockShare's Heaviest share, from the table's hit moments
/// (tableRowHitMoments).
double rowBlockShare(const TableSpec &table, const ColumnSlice &slice,
                     const RowHitMoments &moments);

/// What a cost model prices for `slice`: its table as the piece sees it.
/// A row piece is a table of its rows that receives its share of every
/// bag (rowBlockShare), whose rows are hit as often as the table's rows are
/// (the histogram is unchanged). A replica looks up one device's share of
/// the batch, `batchSize / replicas` bags: as many lookups per bag over 1 /
/// replicas of the bags, priced as every bag with a fraction 1 / replicas
/// of the pooling factor, each row hit 1 / replicas as often
/// (rescaleAccessHistogram). Columns are not narrowed here: the slice's
/// width says that.
TableSpec pieceSpec(const TableSpec &table, const ColumnSlice &slice,
                    unsigned replicas, int64_t batchSize,
                    RowBlockLoad load = RowBlockLoad::Heaviest);

/// Checks that the tables and devices describe a well-formed problem: every
/// table and capacity satisfies TableRules.h, names are unique and
/// non-empty, the nodes divide the devices evenly, bandwidths lie within
/// [kMinBandwidthGBps, kMaxBandwidthGBps] and the batch size is positive.
/// It does not check that a plan exists (planSharding reports that with the
/// numbers involved).
llvm::Error validateProblem(llvm::ArrayRef<TableSpec> tables,
                            const Topology &topology);

} // namespace neuroshard

#endif // NEUROSHARD_SHARDING_PROBLEM_H
