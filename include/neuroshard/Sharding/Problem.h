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

#include "neuroshard/Sharding/TableRules.h"
#include "neuroshard/Support/Units.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
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
  /// Bytes of optimizer state for `width` columns of `table`.
  uint64_t optimizerStateBytes(const TableSpec &table, int64_t width) const;
  /// Bytes `width` columns of `table` take on a device: weights and
  /// optimizer state.
  uint64_t shardBytes(const TableSpec &table, int64_t width) const {
    return table.sliceBytes(width) + optimizerStateBytes(table, width);
  }
};

/// The columns [colBegin, colEnd) of table `table` (an index into the table
/// list of the problem). This is what cost models price.
struct ColumnSlice {
  unsigned table = 0;
  int64_t colBegin = 0;
  int64_t colEnd = 0;

  int64_t width() const { return colEnd - colBegin; }
  friend bool operator==(const ColumnSlice &a, const ColumnSlice &b) {
    return a.table == b.table && a.colBegin == b.colBegin &&
           a.colEnd == b.colEnd;
  }
  friend bool operator<(const ColumnSlice &a, const ColumnSlice &b) {
    if (a.table != b.table)
      return a.table < b.table;
    return a.colBegin < b.colBegin;
  }
};

/// A column slice of a table placed on a device.
struct Shard {
  unsigned table = 0;
  int64_t colBegin = 0;
  int64_t colEnd = 0;
  unsigned device = 0;

  ColumnSlice slice() const { return {table, colBegin, colEnd}; }
  int64_t width() const { return colEnd - colBegin; }
  friend bool operator==(const Shard &a, const Shard &b) {
    return a.slice() == b.slice() && a.device == b.device;
  }
};

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
