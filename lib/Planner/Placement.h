//===- Placement.h - Greedy placement machinery shared by searches -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the planner library. The searches of docs/design.md §4 all reduce
// to table-wise greedy placements of a list of column slices. This header
// provides:
//  - ComputeCostCache: memoises shard-set compute costs by an order-free key
//    and batches the misses of many placements into one model call;
//  - PlacementInput / GreedyRun / runGreedyLockstep: many independent greedy
//    runs (different thresholds, different split states) advanced one slice
//    at a time together, so that each step costs one batched model call;
//  - runGridSearch: the greedy grid search over dim-sum thresholds for many
//    split states at once, and a run without a dim limit.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_LIB_PLANNER_PLACEMENT_H
#define NEUROSHARD_LIB_PLANNER_PLACEMENT_H

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/Planner/Search.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <chrono>
#include <limits>
#include <utility>
#include <vector>

namespace neuroshard {
namespace detail {

/// A 128-bit key of a multiset of (table, width) pairs: the sum of
/// per-slice hashes, so it is independent of order and can be updated in
/// O(1) as slices are added. Slices of one table with equal widths hash
/// alike wherever their columns lie, since they cost the same. Collisions
/// between distinct multisets have probability ~2^-128 per pair.
using SetKey = std::pair<uint64_t, uint64_t>;

SetKey sliceKey(const ColumnSlice &slice);
inline SetKey addKeys(SetKey a, SetKey b) {
  return {a.first + b.first, a.second + b.second};
}

struct PlacementInput;

/// Memoised, batched compute-cost queries. Lookups that miss are requested;
/// flush() prices all requested sets with one model call.
///
/// With a model that prices running sums of per-slice terms
/// (CostModel::computeTermWidth), the cache also keeps each slice's term, so
/// that a placement extends a device's sum by one term per slice placed and
/// requests the sum: re-pricing a device costs O(1), not O(its slices).
class ComputeCostCache {
public:
  ComputeCostCache(CostModel &model, SearchStats &stats)
      : model(model), stats(stats), width(model.computeTermWidth()) {}

  /// Returns true and sets `cost` if the set's cost is known.
  bool lookup(SetKey key, double &cost);
  /// Returns true and sets `ticket` if the set is already requested for the
  /// next flush (a query the memo answers). Cheaper than lookup(): the
  /// pending sets are few, while the memo is large and cold; many runs of
  /// a grid search place the same slices alike and ask for the same sets.
  bool joinPending(SetKey key, unsigned &ticket);
  /// Schedules the set for the next flush and returns the ticket to read its
  /// cost with result() after that flush.
  unsigned request(SetKey key, llvm::ArrayRef<ColumnSlice> slices);
  /// The same for a set given by its running sum of terms (termWidth() > 0).
  unsigned requestSum(SetKey key, llvm::ArrayRef<double> sum);
  bool hasPending() const { return !pendingKeys.empty(); }
  llvm::Error flush();
  double result(unsigned ticket) const { return results[ticket]; }

  /// Values per slice term; 0 when the model prices whole sets only.
  unsigned termWidth() const { return width; }
  /// Sets termOf of every input, asking the model, in one batch, for the
  /// terms of the slices not seen before (termWidth() > 0).
  llvm::Error fetchTerms(llvm::ArrayRef<PlacementInput *> inputs);
  /// Adds term `index` (from termOf) to a running sum.
  void addTerm(uint32_t index, llvm::MutableArrayRef<double> sum) const {
    model.addComputeTerm(
        llvm::ArrayRef(terms).slice(size_t(index) * width, width), sum);
  }

private:
  CostModel &model;
  SearchStats &stats;
  unsigned width;
  llvm::DenseMap<SetKey, double> costs;
  llvm::DenseMap<SetKey, unsigned> pendingIndex;
  std::vector<SetKey> pendingKeys;
  std::vector<ColumnSlice> pendingSlices;
  std::vector<size_t> pendingEnds;
  /// Per ticket: the row of pendingSums holding its set, or -1 when the set
  /// is given by its slices.
  std::vector<int64_t> pendingSumRows;
  std::vector<double> pendingSums;
  std::vector<double> results;
  /// Slice key -> index of the slice's term in `terms` (width values each).
  llvm::DenseMap<SetKey, uint32_t> termIndex;
  std::vector<double> terms;
};

/// What a search knows about the problem; shared by all its placements.
struct SearchContext {
  llvm::ArrayRef<TableSpec> tables;
  const Topology &topology;
  std::vector<uint64_t> capacities;
  /// Sum of all table dims (splits do not change it).
  double totalDim;
  CostModel &model;
  ComputeCostCache &cache;
  SearchStats &stats;
  /// When planSharding started, for progress reports.
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();

  SearchContext(llvm::ArrayRef<TableSpec> tables, const Topology &topology,
                CostModel &model, ComputeCostCache &cache, SearchStats &stats);
};

/// The slices one placement must place and the order it places them in.
struct PlacementInput {
  /// Sorted by (table, colBegin).
  std::vector<ColumnSlice> slices;
  std::vector<SetKey> keys;
  std::vector<uint64_t> bytes;
  /// Pooled columns each slice sends to the exchange: its width times its
  /// table's feature count.
  std::vector<int64_t> dims;
  /// Device a slice is pinned to, or -1 (a table's pinned device; device k
  /// for the k-th replica of a data-parallel table).
  std::vector<int> pinned;
  /// Whether a slice is a row piece that must share its table's node with
  /// the table's other pieces (a table that may be table-row-wise but not
  /// row-wise), and the node size then (0 when no slice is confined).
  std::vector<bool> confined;
  unsigned confineNodeSize = 0;
  /// Where some table is in host memory: the host-memory bytes of each
  /// slice (0 for a table in device memory), which its device's node keeps,
  /// the devices per node and what a node may keep; otherwise empty.
  std::vector<uint64_t> hostBytes;
  unsigned hostNodeSize = 1;
  uint64_t hostCapacity = 0;
  /// The cost that orders the slices (largest first): the model's cost of
  /// the slice alone, or a baseline's proxy.
  std::vector<double> sortCost;
  /// Empty when device costs come from the model; otherwise a device's cost
  /// is the sum of these per-slice proxy costs (baselines).
  std::vector<double> additiveCost;
  std::vector<uint32_t> order;
  /// The fewest bytes and pooled columns of the slices at order[i] and
  /// after (size order.size() + 1; the last entries are the largest
  /// values): a device that cannot take those can take no slice left.
  std::vector<uint64_t> fewestBytesFrom;
  std::vector<int64_t> fewestDimsFrom;
  /// Index of each slice's term in the cache (incremental models only).
  std::vector<uint32_t> termOf;
  /// Key of the whole slice set; identifies a column-split state.
  SetKey key{0, 0};
};

/// Fills keys, bytes (weights and optimizer state) and pinned for `slices`
/// (which must be sorted).
PlacementInput makePlacementInput(llvm::ArrayRef<TableSpec> tables,
                                  const Topology &topology,
                                  std::vector<ColumnSlice> slices);

/// Sets sortCost of every input to the model's cost of each slice alone
/// (one batched query for all inputs), and termOf for incremental models,
/// and orders their slices.
llvm::Error orderByModelCost(llvm::ArrayRef<PlacementInput *> inputs,
                             ComputeCostCache &cache);

/// Orders slices: pinned ones first (they have no choice), then by
/// sortCost, bytes, position, largest first.
void sortPlacementOrder(PlacementInput &input);

/// Orders slices for packing: pinned ones first, then those of more than
/// `largeBytes` by bytes, then the rest as sortPlacementOrder does. Where
/// memory is tight, a slice that needs a device nearly to itself fits
/// nowhere once cheaper slices have been spread over every device.
void orderLargeFirst(PlacementInput &input, uint64_t largeBytes);

/// The packing orders runGridSearch tries where no run in the order of
/// cost placed every slice: slices of more than 1/k of the smallest
/// device's memory first, for each k here (0: every slice by bytes).
constexpr unsigned kLargeFirstShares[] = {2, 4, 8, 0};

struct DeviceLoad {
  double cost = 0.0;
  uint64_t bytes = 0;
  int64_t dims = 0;
  uint32_t numSlices = 0;
  SetKey key{0, 0};
};

/// One table-wise greedy placement in progress (docs/design.md §4).
struct GreedyRun {
  /// `capacities`: the bytes each device may hold.
  /// `recordMembers`: keep each device's slices, which pricing needs unless
  /// the model prices running sums (ComputeCostCache::termWidth).
  /// `affinityNodeSize`: when not 0 (at most kMaxAffinityNodeSize), the
  /// devices form nodes of this many, and a table's later pieces go to the
  /// node of its first piece, to a device there without a piece of it,
  /// while one has room (its lookups then cross the network once).
  GreedyRun(const PlacementInput &input, llvm::ArrayRef<uint64_t> capacities,
            double dimLimit, bool recordMembers = true,
            unsigned affinityNodeSize = 0);

  bool finished() const {
    return failedSlice >= 0 || next == input->order.size();
  }
  bool succeeded() const { return failedSlice < 0 && finished(); }
  /// Records `slice` on `device` (memory, dims, key, members, placedOn); the
  /// caller updates the device's cost. Slices are placed in input order.
  void place(uint32_t slice, unsigned device);
  /// Records that `slice` fit on no device.
  void fail(uint32_t slice);
  /// The device with room for `slice` (memory and dim limit) that costs
  /// least, then uses the least memory, then has the lowest index; -1 if
  /// none has room.
  int cheapestWithRoom(uint32_t slice) const;
  /// Whether `device` has room for `slice`: memory and the dim limit, or
  /// memory alone.
  bool hasRoom(uint32_t slice, unsigned device) const;
  bool hasMemoryFor(uint32_t slice, unsigned device) const {
    return loads[device].bytes + input->bytes[slice] <= capacities[device] &&
           hasHostRoom(slice, device);
  }
  /// Whether the host memory of `device`'s node has room for `slice`.
  bool hasHostRoom(uint32_t slice, unsigned device) const;
  /// cheapestWithRoom among the devices [begin, end), passing over those
  /// whose bit in `skip` (by their offset from `begin`) is set.
  int cheapestInRange(uint32_t slice, unsigned begin, unsigned end,
                      uint64_t skip) const;
  /// Sets a device's cost, once known, and re-ranks it.
  void setCost(unsigned device, double cost);

  const PlacementInput *input;
  /// The bytes each device may hold.
  llvm::ArrayRef<uint64_t> capacities;
  /// A device's dim sum may not exceed this (infinity: no limit).
  double dimLimit;
  std::vector<DeviceLoad> loads;
  /// Slices of each device, if recorded (empty otherwise).
  std::vector<llvm::SmallVector<uint32_t, 8>> members;
  /// Device of the i-th slice placed (of input->order[i]); written in
  /// sequence, as many runs advance together and each touches its own.
  std::vector<unsigned> placedOn;
  size_t next = 0;
  /// The slice that fit on no device, and the most free bytes then, on a
  /// device and in a node's host memory.
  int64_t failedSlice = -1;
  uint64_t maxFreeAtFailure = 0, maxHostFreeAtFailure = 0;
  /// Running term sums of the devices (termWidth values each), for
  /// incremental models; allocated at the first placement.
  std::vector<double> sums;
  /// Device whose cost awaits a flush of the cache, or -1.
  int pendingDevice = -1;
  unsigned ticket = 0;
  /// With node affinity: the node size, the node of each table's first
  /// piece (-1 before it is placed) and which devices of that node hold a
  /// piece of the table (a bit per device); otherwise 0 and empty.
  unsigned affinityNodeSize = 0;
  std::vector<int> homeNode;
  std::vector<uint64_t> homeDevices;
  /// With confined slices: the node of each table's first confined piece
  /// (-1 before it is placed).
  std::vector<int> confinedHome;
  /// Where some table is in host memory: the bytes each node keeps there.
  std::vector<uint64_t> nodeHost;

private:
  /// A tournament tree over the devices: leaf `leaves + d` is device d
  /// (kNoDevice past the last, and for a device that can take no slice
  /// left), and every inner node holds the best-ranked device below it and
  /// the most memory and dims any device below it has left. The cheapest
  /// device is at the root, and re-ranking a device costs O(log N): a scan
  /// of every device for every slice placed would make the greedy
  /// O(slices x devices). Only when the cheapest device has no room are
  /// the leaves' room and the costs, contiguous, scanned. (A descent of
  /// the tree to the best device with room is slower: the devices the
  /// dim limit has filled are cheap and spread over every subtree.)
  static constexpr uint32_t kNoDevice = ~uint32_t(0);
  bool ranksBefore(uint32_t a, uint32_t b) const;
  /// Recomputes inner node `node` from its children.
  void combine(unsigned node);
  /// dimLimit with slack for rounding, so that thresholds like 1.05 hold.
  double roomyDimLimit;
  unsigned leaves = 1;
  std::vector<uint32_t> best;
  std::vector<uint64_t> roomBytes;
  std::vector<double> roomDims;
  /// Every device's cost, contiguous for ranksBefore.
  std::vector<double> costs;
};

/// The largest node for which greedy runs keep a table's pieces together.
constexpr unsigned kMaxAffinityNodeSize = 64;

/// Places slices until every run has finished. Each step places the next
/// slice of every unfinished run on the device with the lowest cost among
/// those with room (memory and dim limit), ties broken by less memory used,
/// then lower index, and re-prices that device; the model-priced steps of
/// all runs share one batched query.
llvm::Error runGreedyLockstep(llvm::MutableArrayRef<GreedyRun> runs,
                              SearchContext &ctx);

/// Prices finished, successful runs with the model (batched).
llvm::Expected<std::vector<PlanCost>>
priceRuns(llvm::ArrayRef<const GreedyRun *> runs, SearchContext &ctx);

/// The best placement found for one split state (or a baseline's only one).
struct PlacementOutcome {
  bool feasible = false;
  double costMs = std::numeric_limits<double>::infinity();
  /// Every device's total cost, slowest first: what plans are ranked by.
  std::vector<double> ranked;
  std::vector<unsigned> deviceOf;
  PlanCost cost;
  /// If infeasible: the slice the unconstrained greedy could not place,
  /// and the most free bytes then, on a device and in a node's host memory.
  int64_t failedSlice = -1;
  uint64_t maxFreeAtFailure = 0, maxHostFreeAtFailure = 0;
  /// If feasible: the dim limit of the run that placed it (infinity for
  /// the run without one).
  double dimLimit = std::numeric_limits<double>::infinity();
};

/// How searches rank plans: infeasible last, then by the slowest device's
/// cost, the second slowest's, and so on (costs within a relative 1e-9 are
/// equal). The reported cost stays the maximum; the rest orders plans that
/// share it, so that relieving one of several devices tied at the maximum
/// is progress rather than a tie.
bool rankedBefore(const PlacementOutcome &a, const PlacementOutcome &b);
/// The same order for two vectors of device costs, each slowest first.
bool rankedBefore(llvm::ArrayRef<double> a, llvm::ArrayRef<double> b);
/// Every device's total cost, slowest first.
std::vector<double> rankedCosts(const PlanCost &cost);
/// rankedBefore for the costs of two feasible plans.
bool rankedBefore(const PlanCost &a, const PlanCost &b);

/// Moves parts of tables off the slowest device of `plan` (one part per
/// device and table: joinPiecesPerDevice) while a move lowers its sorted
/// device-cost vector: a part to another device, half of it, or a swap
/// with another table's part (LocalImprovement.cpp). Bounded in rounds;
/// counted in ctx.stats.
llvm::Error improveLocally(SearchContext &ctx, ShardingPlan &plan,
                           PlanCost &cost);

/// The best of the plans a person writes first (StructuredPlans.cpp): the
/// hottest tables cut evenly over k devices, one piece per device, small
/// tables copied to every device, the rest placed whole; each valid one
/// priced as the search prices its plans. nullopt when none is valid. The
/// model must be prepared for ctx.tables.
llvm::Expected<std::optional<PlanCandidate>>
bestStructuredPlan(SearchContext &ctx);

/// Prices valid `plans` as the search prices its own: every device set of
/// every plan in one model call, then the exchange, one batch each.
llvm::Expected<std::vector<PlanCost>>
pricePlans(SearchContext &ctx, llvm::ArrayRef<ShardingPlan> plans);

/// Rewrites `plan` so that no device holds two pieces of one table: the
/// column pieces (or the row blocks) of a table that a device holds more
/// than one of are joined into one, and the table's pieces are laid out
/// again so that each device's range is contiguous. Widths and row counts
/// per device stay as they were. Returns whether anything changed.
bool joinPiecesPerDevice(llvm::ArrayRef<TableSpec> tables, ShardingPlan &plan);

/// Puts split tables of `plan` (column pieces or row blocks over several
/// devices) back whole, on the least loaded device that holds a piece, as
/// long as the model prices the plan no worse (its slowest device) so:
/// each round, of the tables that pay nothing alone, those whose changes to
/// the devices add up to no worse a plan, together; else all of them, the
/// better half of them, and so on, if that pays nothing either; else the
/// best alone. `cost` is the plan's and follows it.
llvm::Error unsplitWherePaysNothing(SearchContext &ctx, ShardingPlan &plan,
                                    PlanCost &cost);

/// The evenly spaced dim-sum thresholds of the grid search.
std::vector<double> gridThresholds(const SearchOptions &options);

/// Runs the greedy grid search on every input at once (all thresholds of
/// all inputs, and one run without a dim limit each, in lockstep) and keeps
/// each input's cheapest plan. An input no run could place is run again in
/// the packing orders of kLargeFirstShares. With `probeLimits` (one per
/// input), input i is placed once, at the dim limit probeLimits[i], and not
/// again where that fails: a cheap first look.
llvm::Expected<std::vector<PlacementOutcome>>
runGridSearch(llvm::ArrayRef<const PlacementInput *> inputs,
              llvm::ArrayRef<double> thresholds, SearchContext &ctx,
              llvm::ArrayRef<double> probeLimits = {});

/// The outcome of one finished run with its price (if it succeeded).
PlacementOutcome outcomeOf(const GreedyRun &run, PlanCost cost);

/// Builds the plan of a feasible outcome for `input`.
ShardingPlan makePlan(const PlacementInput &input,
                      const PlacementOutcome &outcome);

/// The error for an infeasible outcome: the slice that could not be placed,
/// its size and the free memory, and the totals.
llvm::Error placementError(const SearchContext &ctx,
                           const PlacementInput &input,
                           const PlacementOutcome &outcome);

/// How far a beam search goes, resolved from the options.
struct BeamBudget {
  /// Most levels; 0 prices the root alone (the greedy grid search).
  unsigned levels = 0;
  /// Stop after kBeamPatience levels without progress (automatic budgets).
  bool stopWithoutProgress = false;
  /// Also start from the states that split the costliest tables into equal
  /// pieces.
  bool seedUniformSplits = false;
  /// Return the `keepCandidates` best states seen, and the root's plan, as
  /// PlanResult::candidates (in the model's order, not yet deduplicated).
  unsigned keepCandidates = 0;
};

/// The column-wise beam search (NeuroShard's algorithm) from `root`.
llvm::Expected<PlanResult> runColumnBeamSearch(PlacementInput root,
                                               const SearchOptions &options,
                                               const BeamBudget &budget,
                                               SearchContext &ctx);

/// Whether the columns of `slice` of `table` may be cut: the table is
/// neither pinned nor kept whole and may be column-wise, and the slice
/// holds every row and is no replica.
bool mayColumnSplit(const TableSpec &table, const ColumnSlice &slice);
/// Whether the search may halve the columns of `slice` of `table`:
/// mayColumnSplit, and both halves stay multiples of kColumnAlignment.
bool isSplittable(const TableSpec &table, const ColumnSlice &slice);
/// The devices that hold a piece of table `table` in `plan` (replicas
/// aside), in the order of their first pieces.
llvm::SmallVector<unsigned> devicesHolding(const ShardingPlan &plan,
                                           unsigned table);

/// The narrowest column piece the search makes of a table `dim` wide: it
/// halves a piece while both halves stay multiples of kColumnAlignment.
int64_t finestColumnWidth(int64_t dim);
/// Whether the search may split the rows of `slice` (every column of its
/// table, at least two rows, no replica) into pieces: the table is neither
/// pinned nor kept whole and may be row-wise or table-row-wise.
bool mayRowSplit(const TableSpec &table, const ColumnSlice &slice,
                 const Topology &topology);
/// The most row blocks `table` may be cut into on `topology`: one per
/// device, or per device of a node for a table that may be table-row-wise
/// but not row-wise, and never more than its rows.
unsigned mostRowBlocks(const TableSpec &table, const Topology &topology);
/// Bytes of the smallest shard `table` may be cut into on `topology`: its
/// columns halved as long as they stay aligned (column-wise), or its rows in
/// mostRowBlocks blocks (row-wise, table-row-wise); the whole table when it
/// is pinned, kept whole or allowed neither.
uint64_t smallestShardBytes(const TableSpec &table, const Topology &topology);
/// Whether the search may replicate `slice`, a whole table that may be
/// data-parallel and is neither pinned nor kept whole.
bool mayReplicate(const TableSpec &table, const ColumnSlice &slice);
/// `slice` with its rows cut into `pieces` contiguous blocks as even as
/// the rows allow (at most one piece per row); one piece is the slice.
std::vector<ColumnSlice> rowPieces(const TableSpec &table,
                                   const ColumnSlice &slice, int64_t pieces);
/// The replicas of a whole-table slice on `numDevices` devices.
std::vector<ColumnSlice> replicas(const ColumnSlice &slice,
                                  unsigned numDevices);
/// The slices of `input` (ordered by model cost) with every slice that may
/// be row-split and costs more alone than a device's fair share cut into
/// that many row pieces (at most one per device, or per device of a node
/// for a table-row-wise table), in order.
std::vector<ColumnSlice>
rowSplitAboveFairShare(const PlacementInput &input,
                       llvm::ArrayRef<TableSpec> tables,
                       const Topology &topology);

/// A device's fair share of `input`'s cost: the total of its slices' costs
/// alone (sortCost) over `numDevices`.
double fairShare(const PlacementInput &input, unsigned numDevices);

/// The slices of `input` (ordered by model cost: orderByModelCost) with
/// every slice whose cost alone exceeds a device's fair share (the total of
/// the costs alone over `numDevices`) cut into the fewest equal pieces, at
/// most `numDevices`, that bring each to that share, as far as the slice's
/// width allows (pieces stay multiples of kColumnAlignment). Pinned and
/// no-split tables stay whole.
std::vector<ColumnSlice> splitAboveFairShare(const PlacementInput &input,
                                             llvm::ArrayRef<TableSpec> tables,
                                             unsigned numDevices);

/// The random, proxy-greedy and uniform-split baselines.
llvm::Expected<PlanResult> runBaseline(PlacementInput input,
                                       const SearchOptions &options,
                                       SearchContext &ctx);

} // namespace detail
} // namespace neuroshard

#endif // NEUROSHARD_LIB_PLANNER_PLACEMENT_H
