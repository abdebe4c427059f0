//===- TableRules.h - What makes a table and a topology valid ---*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The one statement of the rules a table's description and a device
// topology must satisfy, whoever reads them: the dialect's verifier, the
// sharding pass, the planner's JSON reader and validateProblem. Each rule
// returns nothing when the value is allowed, or what is wrong with it,
// phrased to follow the name of the thing checked: a caller prefixes
// "table 'user': " or "tables[3] ('user'): ", so that every reader reports a
// broken rule in the same words. Python calls these very functions through
// the module neuroshard._core (lib/Bindings/Python).
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SHARDING_TABLERULES_H
#define NEUROSHARD_SHARDING_TABLERULES_H

#include "neuroshard/Sharding/AccessHistogram.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace neuroshard {

struct TableSpec;

/// What is wrong with a value, or nothing when a rule holds.
using RuleViolation = std::optional<std::string>;

/// Column splits halve a shard; both halves must stay a multiple of this, and
/// so must every table's dim.
constexpr int64_t kColumnAlignment = 4;
/// How far from 1 the bins of a histogram written with a few decimals may
/// sum.
constexpr double kAccessHistogramTolerance = 0.01;
/// Bounds that keep byte counts, and their sums over many tables and
/// devices, far from overflowing 64 bits (2^46 and 2^50 bytes).
constexpr int64_t kMaxTableGB = int64_t(1) << 16;
constexpr int64_t kMaxDeviceGB = int64_t(1) << 20;
/// The most devices a topology may have.
constexpr int64_t kMaxDevices = int64_t(1) << 16;
/// The largest mean bag length: far above any recommendation model's, and
/// low enough that index streams (batch x pooling factor) and costs stay
/// finite and countable.
constexpr double kMaxPoolingFactor = 1e6;

/// Bytes per element of a table's element type ("f32", "f16", "bf16"), or
/// nothing for a type tables may not have.
std::optional<unsigned> elementTypeBytes(llvm::StringRef elementType);

/// A table's name is text a plan and a report print back: "'name' must be
/// valid UTF-8 without control characters, got byte 0x01 at offset 2". The
/// JSON reader turns a lone UTF-16 surrogate ("\ud800") into U+FFFD, so
/// that character is refused too, rather than renaming the table.
RuleViolation checkTableName(llvm::StringRef name);
/// "'dtype' must be one of f32, f16, bf16, got 'f64'".
RuleViolation checkElementType(llvm::StringRef elementType);
/// "'rows' must be positive, got 0".
RuleViolation checkRows(int64_t rows);
/// "'dim' must be a positive multiple of 4, got 6".
RuleViolation checkDim(int64_t dim);
/// A table's size, rows * dim * elementBytes, without overflow: "needs
/// 70000 GB, more than the 65536 GB a table may have".
RuleViolation checkTableBytes(int64_t rows, int64_t dim, unsigned elementBytes);
/// "'pooling_factor' must be a finite number >= 0, got nan", "'pooling_factor'
/// must be at most 1e+06, got 1e+305".
RuleViolation checkPoolingFactor(double poolingFactor);
/// kNumAccessBins finite bins >= 0 that sum to 1 within
/// kAccessHistogramTolerance, or are all zero (a table never hit).
RuleViolation checkAccessHistogram(llvm::ArrayRef<double> bins);
/// One feature's statistics, a pooling factor and its histogram:
/// checkPoolingFactor, then checkAccessHistogram.
RuleViolation checkStatistics(double poolingFactor,
                              llvm::ArrayRef<double> bins);
/// The access histogram of one batch of `batchSize` bags (docs/design.md §3)
/// must be one that batch can produce, given the table's rows and pooling
/// factor (batchSize * poolingFactor lookups in all):
///  - a non-empty bin needs a row hit at least as often as the bin's lower
///    bound: "'access_hist' bin 16 (rows hit more than 32768 times) is
///    0.01, but a batch of 1024 bags with pooling factor 28.5 makes only
///    29184 lookups";
///  - the distinct rows, at most `rows`, each hit at most as often as its
///    bin's upper bound, must be able to take every lookup;
///  - an all-zero histogram (a table never hit) needs fewer than one lookup.
/// Both bounds allow kAccessHistogramTolerance for rounded inputs. Assumes
/// the checks of checkAccessHistogram and checkPoolingFactor hold.
RuleViolation checkAccessHistogramForBatch(llvm::ArrayRef<double> bins,
                                           int64_t rows, double poolingFactor,
                                           int64_t batchSize);
/// A pinned device must exist among `numDevices`.
RuleViolation checkPinnedDevice(int64_t device, int64_t numDevices);
/// 1..kMaxDevices devices.
RuleViolation checkDeviceCount(int64_t numDevices);
/// A device's memory capacity: a positive number of GB up to kMaxDeviceGB.
RuleViolation checkCapacityGB(double gb);
/// The fraction of every device's memory kept free of shards: in [0, 1).
RuleViolation checkReservedFraction(double fraction);
/// Bounds on a topology's bandwidths (GB/s): a megabyte per second up to
/// an exabyte per second. Outside them costs overflow to inf or to 0.
constexpr double kMinBandwidthGBps = 1e-3;
constexpr double kMaxBandwidthGBps = 1e9;
/// A bandwidth in [kMinBandwidthGBps, kMaxBandwidthGBps]: "must be between
/// 0.001 and 1e+09 GB/s, got 0" (the caller names the link).
RuleViolation checkBandwidthGBps(double gbps);
/// A node's host memory for tables kept there: a number of GB from 0 (no
/// host tier) up to kMaxDeviceGB.
RuleViolation checkHostMemoryGB(double gb);
/// The fraction of a host-memory table's rows its device caches
/// (TableSpec::cacheFraction, TorchRec's cache_load_factor): in (0, 1], as
/// a cache holds at most its shard's rows.
RuleViolation checkCacheFraction(double fraction);
/// A device kind (Topology::deviceKind): 1 to 64 lower-case letters,
/// digits, '-', '_' or '.', starting with a letter or a digit ("gpu",
/// "h100", "cpu-zen3").
RuleViolation checkDeviceKind(llvm::StringRef kind);
/// `numDevices` devices in nodes of `devicesPerNode` (at least 1): "16
/// devices do not fill whole nodes of 3 devices".
RuleViolation checkDevicesPerNode(int64_t devicesPerNode, int64_t numDevices);
/// `numDevices` devices in `nodes` nodes of equal size (at least 1): "16
/// devices do not split into 3 nodes of equal size".
RuleViolation checkNodeCount(int64_t nodes, int64_t numDevices);

/// Every rule above that applies to `table` on `numDevices` devices, in the
/// order listed; the first broken one.
RuleViolation checkTable(const TableSpec &table, int64_t numDevices);

} // namespace neuroshard

#endif // NEUROSHARD_SHARDING_TABLERULES_H
