//===- Placement.cpp - Greedy placement machinery shared by searches ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "Placement.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>

using namespace llvm;

namespace neuroshard {
namespace detail {

//===----------------------------------------------------------------------===//
// Set keys and the cost cache
//===----------------------------------------------------------------------===//

static uint64_t splitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A slice is hashed by its table, width, row count and whether it is a
/// replica, not by where its columns or rows start: a cost model prices a
/// slice as a table of the slice's width and rows (docs/design.md §3,
/// pieceSpec), so sets that differ only in which columns or rows their slices
/// hold cost the same and share one memo entry and one beam state.
static uint64_t hashSlice(const ColumnSlice &slice, uint64_t seed) {
  uint64_t h = splitMix64(seed ^ slice.table);
  h = splitMix64(h ^ static_cast<uint64_t>(slice.width()));
  if (slice.replica)
    return splitMix64(h ^ 0x9e3779b97f4a7c15ULL);
  if (slice.allRows())
    return h;
  return splitMix64(h ^ static_cast<uint64_t>(slice.rowEnd - slice.rowBegin) ^
                    0x5851f42d4c957f2dULL);
}

SetKey sliceKey(const ColumnSlice &slice) {
  // Two independently seeded hashes make the 128-bit key.
  return {hashSlice(slice, 0x243f6a8885a308d3ULL),
          hashSlice(slice, 0x13198a2e03707344ULL)};
}

/// Bounds the memo's memory on very large searches; dropping entries only
/// costs repeated model queries, never changes a result.
static constexpr size_t kMaxCachedSets = size_t(1) << 20;

bool ComputeCostCache::lookup(SetKey key, double &cost) {
  ++stats.costQueries;
  auto it = costs.find(key);
  if (it == costs.end())
    return false;
  ++stats.cacheHits;
  cost = it->second;
  return true;
}

bool ComputeCostCache::joinPending(SetKey key, unsigned &ticket) {
  auto it = pendingIndex.find(key);
  if (it == pendingIndex.end())
    return false;
  ++stats.costQueries;
  ++stats.cacheHits;
  ticket = it->second;
  return true;
}

unsigned ComputeCostCache::request(SetKey key, ArrayRef<ColumnSlice> slices) {
  auto [it, inserted] = pendingIndex.try_emplace(key, pendingKeys.size());
  if (!inserted) {
    // Another placement asked for the same set in this batch.
    ++stats.cacheHits;
    return it->second;
  }
  pendingKeys.push_back(key);
  pendingSlices.insert(pendingSlices.end(), slices.begin(), slices.end());
  pendingEnds.push_back(pendingSlices.size());
  pendingSumRows.push_back(-1);
  return it->second;
}

unsigned ComputeCostCache::requestSum(SetKey key, ArrayRef<double> sum) {
  auto [it, inserted] = pendingIndex.try_emplace(key, pendingKeys.size());
  if (!inserted) {
    ++stats.cacheHits;
    return it->second;
  }
  pendingKeys.push_back(key);
  pendingEnds.push_back(pendingSlices.size());
  pendingSumRows.push_back(pendingSums.size() / width);
  pendingSums.insert(pendingSums.end(), sum.begin(), sum.end());
  return it->second;
}

Error ComputeCostCache::flush() {
  size_t numSets = pendingKeys.size();
  results.assign(numSets, 0.0);
  ++stats.modelCalls;
  // Sets given by their slices, then sets given by their sums; a batch
  // usually holds one kind only.
  std::vector<ArrayRef<ColumnSlice>> sets;
  std::vector<unsigned> ticketsOfSets;
  ArrayRef<ColumnSlice> all(pendingSlices);
  size_t begin = 0;
  for (auto [ticket, end] : enumerate(pendingEnds)) {
    if (pendingSumRows[ticket] < 0) {
      sets.push_back(all.slice(begin, end - begin));
      ticketsOfSets.push_back(ticket);
    }
    begin = end;
  }
  std::vector<double> setCosts(sets.size());
  if (!sets.empty())
    if (Error err = model.predictCompute(sets, setCosts))
      return err;
  for (auto [ticket, cost] : zip_equal(ticketsOfSets, setCosts))
    results[ticket] = cost;
  if (!pendingSums.empty()) {
    std::vector<double> sumCosts(pendingSums.size() / width);
    if (Error err = model.predictComputeFromSums(pendingSums, sumCosts))
      return err;
    for (auto [ticket, row] : enumerate(pendingSumRows))
      if (row >= 0)
        results[ticket] = sumCosts[row];
  }
  if (costs.size() + numSets > kMaxCachedSets)
    costs.clear();
  for (auto [key, cost] : zip_equal(pendingKeys, results))
    costs[key] = cost;
  pendingIndex.clear();
  pendingKeys.clear();
  pendingSlices.clear();
  pendingEnds.clear();
  pendingSumRows.clear();
  pendingSums.clear();
  return Error::success();
}

Error ComputeCostCache::fetchTerms(ArrayRef<PlacementInput *> inputs) {
  // New slices get the next indices in order of first appearance; the model
  // computes their terms in that order, in one call.
  std::vector<ColumnSlice> newSlices;
  for (PlacementInput *input : inputs) {
    input->termOf.resize(input->slices.size());
    for (auto [slice, key, index] :
         zip_equal(input->slices, input->keys, input->termOf)) {
      auto [it, inserted] =
          termIndex.try_emplace(key, terms.size() / width + newSlices.size());
      if (inserted)
        newSlices.push_back(slice);
      index = it->second;
    }
  }
  if (newSlices.empty())
    return Error::success();
  size_t first = terms.size();
  terms.resize(first + newSlices.size() * width);
  if (Error err = model.computeTerms(
          newSlices, MutableArrayRef(terms).drop_front(first))) {
    // Forget the indices that point past the terms actually held.
    uint32_t firstNew = first / width;
    for (auto it = termIndex.begin(), end = termIndex.end(); it != end;) {
      auto current = it++;
      if (current->second >= firstNew)
        termIndex.erase(current);
    }
    terms.resize(first);
    return err;
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Placement inputs
//===----------------------------------------------------------------------===//

SearchContext::SearchContext(ArrayRef<TableSpec> tables,
                             const Topology &topology, CostModel &model,
                             ComputeCostCache &cache, SearchStats &stats)
    : tables(tables), topology(topology), totalDim(0.0), model(model),
      cache(cache), stats(stats) {
  for (unsigned d = 0; d < topology.numDevices(); ++d)
    capacities.push_back(topology.usableBytes(d));
  for (const TableSpec &table : tables)
    totalDim += static_cast<double>(table.dim * table.numFeatures());
}

PlacementInput makePlacementInput(ArrayRef<TableSpec> tables,
                                  const Topology &topology,
                                  std::vector<ColumnSlice> slices) {
  PlacementInput input;
  input.slices = std::move(slices);
  unsigned replicaTable = ~0u, nextReplica = 0;
  for (const ColumnSlice &slice : input.slices) {
    const TableSpec &table = tables[slice.table];
    SetKey key = sliceKey(slice);
    input.keys.push_back(key);
    input.key = addKeys(input.key, key);
    input.bytes.push_back(
        topology.shardBytes(table, slice.width(), slice.numRows(table)));
    // A replica exchanges nothing, and the k-th replica of a table is on
    // device k.
    input.dims.push_back(slice.replica ? 0
                                       : slice.width() * table.numFeatures());
    int pinned = table.pinnedDevice ? int(*table.pinnedDevice) : -1;
    if (slice.replica) {
      if (replicaTable != slice.table) {
        replicaTable = slice.table;
        nextReplica = 0;
      }
      pinned = int(nextReplica++);
    }
    input.pinned.push_back(pinned);
    // Row pieces of a table that may only be table-row-wise stay in one
    // node.
    bool confined = topology.numNodes() > 1 && !slice.allRows() &&
                    !table.allows(ShardingKind::RowWise);
    input.confined.push_back(confined);
    if (confined)
      input.confineNodeSize = topology.nodeSize();
  }
  // A host-memory table's slices also fill their node's host memory.
  if (llvm::any_of(input.slices, [&](const ColumnSlice &slice) {
        return tables[slice.table].inHostMemory();
      })) {
    for (const ColumnSlice &slice : input.slices)
      input.hostBytes.push_back(
          topology.hostShardBytes(tables[slice.table], slice.width(),
                                  slice.numRows(tables[slice.table])));
    input.hostNodeSize = topology.nodeSize();
    input.hostCapacity = topology.hostMemoryBytes();
  }
  return input;
}

bool mayColumnSplit(const TableSpec &table, const ColumnSlice &slice) {
  return !table.noSplit && !table.pinnedDevice && slice.allRows() &&
         !slice.replica && table.allows(ShardingKind::ColumnWise);
}

bool isSplittable(const TableSpec &table, const ColumnSlice &slice) {
  return mayColumnSplit(table, slice) &&
         slice.width() % (2 * kColumnAlignment) == 0;
}

SmallVector<unsigned> devicesHolding(const ShardingPlan &plan, unsigned table) {
  SmallVector<unsigned> devices;
  for (const Shard &shard : plan.shards)
    if (shard.table == table && !shard.replica &&
        !is_contained(devices, shard.device))
      devices.push_back(shard.device);
  return devices;
}

int64_t finestColumnWidth(int64_t dim) {
  int64_t width = dim;
  while (width % (2 * kColumnAlignment) == 0)
    width /= 2;
  return width;
}

unsigned mostRowBlocks(const TableSpec &table, const Topology &topology) {
  unsigned devices = table.allows(ShardingKind::RowWise) ? topology.numDevices()
                                                         : topology.nodeSize();
  return static_cast<unsigned>(std::min<int64_t>(devices, table.rows));
}

uint64_t smallestShardBytes(const TableSpec &table, const Topology &topology) {
  uint64_t smallest = topology.shardBytes(table, table.dim);
  if (table.noSplit || table.pinnedDevice)
    return smallest;
  if (table.allows(ShardingKind::ColumnWise))
    smallest = std::min(
        smallest, topology.shardBytes(table, finestColumnWidth(table.dim)));
  if (table.rows >= 2 && (table.allows(ShardingKind::RowWise) ||
                          table.allows(ShardingKind::TableRowWise))) {
    int64_t blocks = mostRowBlocks(table, topology);
    smallest = std::min(
        smallest, topology.shardBytes(table, table.dim,
                                      (table.rows + blocks - 1) / blocks));
  }
  return smallest;
}

bool mayRowSplit(const TableSpec &table, const ColumnSlice &slice,
                 const Topology &topology) {
  if (table.noSplit || table.pinnedDevice || slice.replica ||
      slice.width() != table.dim || slice.numRows(table) < 2)
    return false;
  return table.allows(ShardingKind::RowWise) ||
         table.allows(ShardingKind::TableRowWise);
}

bool mayReplicate(const TableSpec &table, const ColumnSlice &slice) {
  return !table.noSplit && !table.pinnedDevice && !slice.replica &&
         slice.allRows() && slice.width() == table.dim &&
         table.allows(ShardingKind::DataParallel);
}

std::vector<ColumnSlice> rowPieces(const TableSpec &table,
                                   const ColumnSlice &slice, int64_t pieces) {
  int64_t begin = slice.rowBegin, end = slice.rowEndIn(table);
  int64_t rows = end - begin;
  pieces = std::max<int64_t>(1, std::min(pieces, rows));
  std::vector<ColumnSlice> out;
  for (int64_t p = 0; p < pieces; ++p) {
    ColumnSlice piece = slice;
    piece.rowBegin = begin + rows * p / pieces;
    piece.rowEnd = begin + rows * (p + 1) / pieces;
    out.push_back(piece);
  }
  if (pieces == 1)
    out.front() = slice;
  return out;
}

std::vector<ColumnSlice> replicas(const ColumnSlice &slice,
                                  unsigned numDevices) {
  ColumnSlice replica = slice;
  replica.replica = true;
  return std::vector<ColumnSlice>(numDevices, replica);
}

double fairShare(const PlacementInput &input, unsigned numDevices) {
  double total = 0.0;
  for (double cost : input.sortCost)
    total += cost;
  return total / numDevices;
}

std::vector<ColumnSlice> splitAboveFairShare(const PlacementInput &input,
                                             ArrayRef<TableSpec> tables,
                                             unsigned numDevices) {
  double share = fairShare(input, numDevices);
  std::vector<ColumnSlice> slices;
  for (auto [i, slice] : enumerate(input.slices)) {
    int64_t pieces = 1;
    const TableSpec &table = tables[slice.table];
    if (mayColumnSplit(table, slice) && slice.width() > kColumnAlignment &&
        input.sortCost[i] > share) {
      int64_t most =
          std::min<int64_t>(numDevices, slice.width() / kColumnAlignment);
      int64_t wanted = std::min<int64_t>(
          most, static_cast<int64_t>(std::ceil(input.sortCost[i] / share)));
      auto fits = [&](int64_t p) {
        return slice.width() % (p * kColumnAlignment) == 0;
      };
      // The fewest equal pieces at or above the wanted count, else the most
      // below it.
      pieces = wanted;
      while (pieces <= most && !fits(pieces))
        ++pieces;
      if (pieces > most)
        for (pieces = wanted; !fits(pieces); --pieces) {
        }
    }
    int64_t width = slice.width() / pieces;
    for (int64_t p = 0; p < pieces; ++p) {
      ColumnSlice piece = slice;
      piece.colBegin = slice.colBegin + p * width;
      piece.colEnd = slice.colBegin + (p + 1) * width;
      slices.push_back(piece);
    }
  }
  return slices;
}

std::vector<ColumnSlice> rowSplitAboveFairShare(const PlacementInput &input,
                                                ArrayRef<TableSpec> tables,
                                                const Topology &topology) {
  unsigned numDevices = topology.numDevices();
  double share = fairShare(input, numDevices);
  std::vector<ColumnSlice> slices;
  for (auto [i, slice] : enumerate(input.slices)) {
    const TableSpec &table = tables[slice.table];
    int64_t pieces = 1;
    if (mayRowSplit(table, slice, topology) && input.sortCost[i] > share)
      pieces = std::min<int64_t>(
          mostRowBlocks(table, topology),
          static_cast<int64_t>(std::ceil(input.sortCost[i] / share)));
    for (const ColumnSlice &piece : rowPieces(table, slice, pieces))
      slices.push_back(piece);
  }
  return slices;
}

void sortPlacementOrder(PlacementInput &input) {
  orderLargeFirst(input, std::numeric_limits<uint64_t>::max());
}

void orderLargeFirst(PlacementInput &input, uint64_t largeBytes) {
  input.order.resize(input.slices.size());
  std::iota(input.order.begin(), input.order.end(), 0);
  auto rank = [&](uint32_t i) {
    bool large = input.bytes[i] > largeBytes;
    return std::make_tuple(input.pinned[i] < 0, !large,
                           large ? ~input.bytes[i] : uint64_t(0),
                           -input.sortCost[i], ~input.bytes[i], i);
  };
  std::sort(input.order.begin(), input.order.end(),
            [&](uint32_t a, uint32_t b) { return rank(a) < rank(b); });
  size_t n = input.order.size();
  input.fewestBytesFrom.assign(n + 1, std::numeric_limits<uint64_t>::max());
  input.fewestDimsFrom.assign(n + 1, std::numeric_limits<int64_t>::max());
  for (size_t i = n; i-- > 0;) {
    uint32_t slice = input.order[i];
    input.fewestBytesFrom[i] =
        std::min(input.fewestBytesFrom[i + 1], input.bytes[slice]);
    input.fewestDimsFrom[i] =
        std::min(input.fewestDimsFrom[i + 1], input.dims[slice]);
  }
}

Error orderByModelCost(ArrayRef<PlacementInput *> inputs,
                       ComputeCostCache &cache) {
  unsigned width = cache.termWidth();
  if (width)
    if (Error err = cache.fetchTerms(inputs))
      return err;
  // Tickets of slices whose single cost the model must compute.
  std::vector<std::tuple<PlacementInput *, size_t, unsigned>> waiting;
  std::vector<double> sum(width);
  for (PlacementInput *input : inputs) {
    input->sortCost.assign(input->slices.size(), 0.0);
    for (size_t i = 0; i < input->slices.size(); ++i) {
      if (cache.lookup(input->keys[i], input->sortCost[i]))
        continue;
      unsigned ticket;
      if (width) {
        std::fill(sum.begin(), sum.end(), 0.0);
        cache.addTerm(input->termOf[i], sum);
        ticket = cache.requestSum(input->keys[i], sum);
      } else {
        ticket = cache.request(input->keys[i], input->slices[i]);
      }
      waiting.emplace_back(input, i, ticket);
    }
  }
  if (cache.hasPending())
    if (Error err = cache.flush())
      return err;
  for (auto [input, i, ticket] : waiting)
    input->sortCost[i] = cache.result(ticket);
  for (PlacementInput *input : inputs)
    sortPlacementOrder(*input);
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Greedy runs in lockstep
//===----------------------------------------------------------------------===//

GreedyRun::GreedyRun(const PlacementInput &input, ArrayRef<uint64_t> capacities,
                     double dimLimit, bool recordMembers,
                     unsigned affinityNodeSize)
    : input(&input), capacities(capacities), dimLimit(dimLimit),
      loads(capacities.size()), members(recordMembers ? capacities.size() : 0),
      affinityNodeSize(affinityNodeSize),
      roomyDimLimit(dimLimit * (1.0 + 1e-12)) {
  placedOn.reserve(input.order.size());
  unsigned numDevices = capacities.size();
  while (leaves < numDevices)
    leaves *= 2;
  best.assign(2 * leaves, kNoDevice);
  for (unsigned d = 0; d < numDevices; ++d)
    best[leaves + d] = d;
  costs.assign(numDevices, 0.0);
  roomBytes.assign(2 * leaves, 0);
  roomDims.assign(2 * leaves, -std::numeric_limits<double>::infinity());
  for (unsigned d = 0; d < numDevices; ++d) {
    roomBytes[leaves + d] = capacities[d];
    roomDims[leaves + d] = roomyDimLimit;
  }
  for (unsigned node = leaves - 1; node >= 1; --node)
    combine(node);
  unsigned numTables = 0;
  if (affinityNodeSize || input.confineNodeSize)
    for (const ColumnSlice &slice : input.slices)
      numTables = std::max(numTables, slice.table + 1);
  if (affinityNodeSize) {
    homeNode.assign(numTables, -1);
    homeDevices.assign(numTables, 0);
  }
  if (input.confineNodeSize)
    confinedHome.assign(numTables, -1);
  if (!input.hostBytes.empty())
    nodeHost.assign((numDevices + input.hostNodeSize - 1) / input.hostNodeSize,
                    0);
}

bool GreedyRun::ranksBefore(uint32_t a, uint32_t b) const {
  if (a == kNoDevice || b == kNoDevice)
    return b == kNoDevice && a != kNoDevice;
  if (costs[a] != costs[b])
    return costs[a] < costs[b];
  if (loads[a].bytes != loads[b].bytes)
    return loads[a].bytes < loads[b].bytes;
  return a < b;
}

void GreedyRun::combine(unsigned node) {
  unsigned left = 2 * node, right = left + 1;
  best[node] = ranksBefore(best[right], best[left]) ? best[right] : best[left];
  roomBytes[node] = std::max(roomBytes[left], roomBytes[right]);
  roomDims[node] = std::max(roomDims[left], roomDims[right]);
}

void GreedyRun::setCost(unsigned device, double cost) {
  const DeviceLoad &load = loads[device];
  loads[device].cost = cost;
  costs[device] = cost;
  unsigned leaf = leaves + device;
  roomBytes[leaf] = capacities[device] - load.bytes;
  roomDims[leaf] = roomyDimLimit - static_cast<double>(load.dims);
  // A device that can take none of the slices left leaves the tree, so
  // that the search does not pass by it again and again.
  if (roomBytes[leaf] < input->fewestBytesFrom[next] ||
      roomDims[leaf] < static_cast<double>(input->fewestDimsFrom[next])) {
    best[leaf] = kNoDevice;
    roomBytes[leaf] = 0;
    roomDims[leaf] = -std::numeric_limits<double>::infinity();
  }
  for (unsigned node = leaf / 2; node >= 1; node /= 2)
    combine(node);
}

bool GreedyRun::hasRoom(uint32_t slice, unsigned device) const {
  return hasMemoryFor(slice, device) &&
         static_cast<double>(loads[device].dims) +
                 static_cast<double>(input->dims[slice]) <=
             roomyDimLimit;
}

bool GreedyRun::hasHostRoom(uint32_t slice, unsigned device) const {
  return nodeHost.empty() ||
         nodeHost[device / input->hostNodeSize] + input->hostBytes[slice] <=
             input->hostCapacity;
}

int GreedyRun::cheapestWithRoom(uint32_t slice) const {
  uint64_t bytes = input->bytes[slice];
  double width = static_cast<double>(input->dims[slice]);
  const uint64_t *freeBytes = roomBytes.data() + leaves;
  const double *freeDims = roomDims.data() + leaves;
  auto fits = [&](unsigned d) {
    return freeBytes[d] >= bytes && freeDims[d] >= width &&
           hasHostRoom(slice, d);
  };
  if (roomBytes[1] < bytes || roomDims[1] < width)
    return -1;
  // The cheapest device usually has room. When it has not (a wide slice
  // late in the run), a scan of the devices' cost and room, contiguous,
  // finds the lowest cost among those with room, then the first of them
  // to use the least memory (ranksBefore's order).
  if (best[1] != kNoDevice && fits(best[1]))
    return best[1];
  double lowest = std::numeric_limits<double>::infinity();
  const double *cost = costs.data();
  for (unsigned d = 0, e = loads.size(); d < e; ++d)
    lowest = std::min(lowest, fits(d) ? cost[d] : lowest);
  uint32_t found = kNoDevice;
  for (unsigned d = 0, e = loads.size(); d < e; ++d)
    if (cost[d] == lowest && fits(d) &&
        (found == kNoDevice || loads[d].bytes < loads[found].bytes))
      found = d;
  return found == kNoDevice ? -1 : int(found);
}

int GreedyRun::cheapestInRange(uint32_t slice, unsigned begin, unsigned end,
                               uint64_t skip) const {
  uint32_t found = kNoDevice;
  for (unsigned d = begin; d < end; ++d)
    if (!(d - begin < 64 && (skip >> (d - begin) & 1)) && hasRoom(slice, d) &&
        ranksBefore(d, found))
      found = d;
  return found == kNoDevice ? -1 : int(found);
}

/// Picks the device for `slice`, or returns false if none has room.
static bool chooseDevice(const GreedyRun &run, uint32_t slice,
                         unsigned &device) {
  const PlacementInput &input = *run.input;
  if (input.pinned[slice] >= 0) {
    device = input.pinned[slice];
    return run.hasMemoryFor(slice, device);
  }
  int best = -1;
  if (input.confined[slice]) {
    // A table-row-wise table's pieces follow its first one into its node.
    unsigned size = input.confineNodeSize;
    int home = run.confinedHome[input.slices[slice].table];
    if (home >= 0) {
      best = run.cheapestInRange(slice, home * size, (home + 1) * size, 0);
      if (best < 0)
        return false;
    }
  }
  if (best < 0 && run.affinityNodeSize) {
    unsigned table = input.slices[slice].table;
    int home = run.homeNode[table];
    if (home >= 0)
      best = run.cheapestInRange(slice, home * run.affinityNodeSize,
                                 (home + 1) * run.affinityNodeSize,
                                 run.homeDevices[table]);
  }
  if (best < 0)
    best = run.cheapestWithRoom(slice);
  if (best < 0)
    return false;
  device = best;
  return true;
}

void GreedyRun::place(uint32_t slice, unsigned device) {
  if (input->confined[slice]) {
    int &home = confinedHome[input->slices[slice].table];
    if (home < 0)
      home = device / input->confineNodeSize;
  }
  if (affinityNodeSize) {
    unsigned table = input->slices[slice].table;
    int &home = homeNode[table];
    if (home < 0)
      home = device / affinityNodeSize;
    if (device / affinityNodeSize == unsigned(home))
      homeDevices[table] |= uint64_t(1) << (device % affinityNodeSize);
  }
  if (!nodeHost.empty())
    nodeHost[device / input->hostNodeSize] += input->hostBytes[slice];
  DeviceLoad &load = loads[device];
  load.bytes += input->bytes[slice];
  load.dims += input->dims[slice];
  load.key = addKeys(load.key, input->keys[slice]);
  ++load.numSlices;
  if (!members.empty())
    members[device].push_back(slice);
  placedOn.push_back(device);
}

void GreedyRun::fail(uint32_t slice) {
  failedSlice = slice;
  maxFreeAtFailure = 0;
  for (auto [load, capacity] : zip_equal(loads, capacities))
    maxFreeAtFailure = std::max(maxFreeAtFailure, capacity - load.bytes);
  maxHostFreeAtFailure = 0;
  for (uint64_t kept : nodeHost)
    maxHostFreeAtFailure =
        std::max(maxHostFreeAtFailure,
                 input->hostCapacity - std::min(kept, input->hostCapacity));
}

Error runGreedyLockstep(MutableArrayRef<GreedyRun> runs, SearchContext &ctx) {
  SmallVector<ColumnSlice> setSlices;
  unsigned width = ctx.cache.termWidth();
  bool anyActive = true;
  while (anyActive) {
    anyActive = false;
    for (GreedyRun &run : runs) {
      if (run.finished())
        continue;
      anyActive = true;
      const PlacementInput &input = *run.input;
      uint32_t slice = input.order[run.next++];
      unsigned device;
      if (!chooseDevice(run, slice, device)) {
        run.fail(slice);
        continue;
      }
      run.place(slice, device);
      DeviceLoad &load = run.loads[device];
      if (!input.additiveCost.empty()) {
        run.setCost(device, load.cost + input.additiveCost[slice]);
        continue;
      }
      MutableArrayRef<double> sum;
      if (width) {
        if (run.sums.empty())
          run.sums.assign(run.loads.size() * width, 0.0);
        sum = MutableArrayRef(run.sums).slice(size_t(device) * width, width);
        ctx.cache.addTerm(input.termOf[slice], sum);
      }
      // A set is in the memo or pending, never both (a flush moves it).
      if (ctx.cache.joinPending(load.key, run.ticket)) {
        run.pendingDevice = device;
        continue;
      }
      double cost;
      if (ctx.cache.lookup(load.key, cost)) {
        run.setCost(device, cost);
        continue;
      }
      if (width) {
        run.ticket = ctx.cache.requestSum(load.key, sum);
      } else {
        setSlices.clear();
        for (uint32_t member : run.members[device])
          setSlices.push_back(input.slices[member]);
        run.ticket = ctx.cache.request(load.key, setSlices);
      }
      run.pendingDevice = device;
    }
    if (!ctx.cache.hasPending())
      continue;
    if (Error err = ctx.cache.flush())
      return err;
    for (GreedyRun &run : runs) {
      if (run.pendingDevice < 0)
        continue;
      run.setCost(run.pendingDevice, ctx.cache.result(run.ticket));
      run.pendingDevice = -1;
    }
  }
  return Error::success();
}

Expected<std::vector<PlanCost>> priceRuns(ArrayRef<const GreedyRun *> runs,
                                          SearchContext &ctx) {
  unsigned n = ctx.topology.numDevices();
  std::vector<double> computeMs(runs.size() * n, 0.0);
  std::vector<DeviceTraffic> traffic;
  traffic.reserve(runs.size() * n);
  std::vector<unsigned> deviceOf;
  // Model-priced runs already know their device costs; proxy-priced runs
  // (baselines) ask the model now.
  std::vector<std::pair<size_t, unsigned>> waiting;
  SmallVector<ColumnSlice> setSlices;
  for (auto [r, run] : enumerate(runs)) {
    const PlacementInput &input = *run->input;
    deviceOf.resize(input.slices.size());
    for (auto [slice, device] : zip_equal(input.order, run->placedOn))
      deviceOf[slice] = device;
    std::vector<DeviceTraffic> runTraffic =
        computeTraffic(ctx.tables, ctx.topology, input.slices, deviceOf);
    traffic.insert(traffic.end(), runTraffic.begin(), runTraffic.end());
    for (unsigned d = 0; d < n; ++d) {
      size_t at = r * n + d;
      const DeviceLoad &load = run->loads[d];
      if (load.numSlices == 0)
        continue;
      if (input.additiveCost.empty()) {
        computeMs[at] = load.cost;
        continue;
      }
      if (ctx.cache.lookup(load.key, computeMs[at]))
        continue;
      setSlices.clear();
      for (uint32_t member : run->members[d])
        setSlices.push_back(input.slices[member]);
      waiting.emplace_back(at, ctx.cache.request(load.key, setSlices));
    }
  }
  if (ctx.cache.hasPending())
    if (Error err = ctx.cache.flush())
      return std::move(err);
  for (auto [at, ticket] : waiting)
    computeMs[at] = ctx.cache.result(ticket);
  if (!runs.empty())
    ctx.stats.modelCalls += 2;
  return completePlanCosts(n, computeMs, traffic, ctx.model);
}

/// Whether costs ranked slowest first come before `b`'s (rankedBefore).
bool rankedBefore(ArrayRef<double> a, ArrayRef<double> b) {
  for (auto [x, y] : zip_equal(a, b))
    if (std::abs(x - y) > 1e-9 * std::max(std::abs(x), std::abs(y)))
      return x < y;
  return false;
}

bool rankedBefore(const PlacementOutcome &a, const PlacementOutcome &b) {
  if (a.feasible != b.feasible)
    return a.feasible;
  if (!a.feasible)
    return false;
  return rankedBefore(a.ranked, b.ranked);
}

std::vector<double> rankedCosts(const PlanCost &cost) {
  std::vector<double> ranked;
  ranked.reserve(cost.devices.size());
  for (const DeviceCost &device : cost.devices)
    ranked.push_back(device.totalMs());
  std::sort(ranked.begin(), ranked.end(), std::greater<double>());
  return ranked;
}

bool rankedBefore(const PlanCost &a, const PlanCost &b) {
  return rankedBefore(rankedCosts(a), rankedCosts(b));
}

PlacementOutcome outcomeOf(const GreedyRun &run, PlanCost cost) {
  PlacementOutcome outcome;
  outcome.failedSlice = run.failedSlice;
  outcome.maxFreeAtFailure = run.maxFreeAtFailure;
  outcome.maxHostFreeAtFailure = run.maxHostFreeAtFailure;
  if (!run.succeeded())
    return outcome;
  outcome.feasible = true;
  outcome.dimLimit = run.dimLimit;
  outcome.costMs = cost.maxMs;
  outcome.ranked = rankedCosts(cost);
  outcome.deviceOf.resize(run.input->slices.size());
  for (auto [slice, device] : zip_equal(run.input->order, run.placedOn))
    outcome.deviceOf[slice] = device;
  outcome.cost = std::move(cost);
  return outcome;
}

ShardingPlan makePlan(const PlacementInput &input,
                      const PlacementOutcome &outcome) {
  ShardingPlan plan;
  for (auto [slice, device] : zip_equal(input.slices, outcome.deviceOf))
    plan.shards.push_back(Shard::of(slice, device));
  return plan;
}

Error placementError(const SearchContext &ctx, const PlacementInput &input,
                     const PlacementOutcome &outcome) {
  const ColumnSlice &slice = input.slices[outcome.failedSlice];
  const TableSpec &table = ctx.tables[slice.table];
  uint64_t needed = 0, capacity = 0;
  for (uint64_t bytes : input.bytes)
    needed += bytes;
  for (uint64_t bytes : ctx.capacities)
    capacity += bytes;
  std::string what =
      slice.replica ? formatv("a replica of table '{0}'", table.name).str()
      : !slice.allRows()
          ? formatv("rows [{0}, {1}) of columns [{2}, {3}) of table '{4}'",
                    slice.rowBegin, slice.rowEndIn(table), slice.colBegin,
                    slice.colEnd, table.name)
                .str()
      : slice.width() == table.dim
          ? formatv("table '{0}'", table.name).str()
          : formatv("columns [{0}, {1}) of table '{2}'", slice.colBegin,
                    slice.colEnd, table.name)
                .str();
  uint64_t hostBytes =
      input.hostBytes.empty() ? 0 : input.hostBytes[outcome.failedSlice];
  if (hostBytes > 0 &&
      input.bytes[outcome.failedSlice] <= outcome.maxFreeAtFailure) {
    // A device had room; its node's host memory had not.
    uint64_t hostNeeded = 0;
    for (uint64_t bytes : input.hostBytes)
      hostNeeded += bytes;
    unsigned nodes = ctx.topology.numNodes();
    auto [size, free] = formatGBPair(hostBytes, outcome.maxHostFreeAtFailure);
    return createStringError(
        inconvertibleErrorCode(),
        formatv("could not place {0} ({1} in host memory): the node with the "
                "most free host memory has {2} left (the host-memory tables "
                "need {3} of the {4} node(s)' {5})",
                what, size, free, formatGB(hostNeeded), nodes,
                formatGB(uint64_t(nodes) * input.hostCapacity)));
  }
  auto [size, free] =
      formatGBPair(input.bytes[outcome.failedSlice], outcome.maxFreeAtFailure);
  return createStringError(
      inconvertibleErrorCode(),
      formatv("could not place {0} ({1}): the device with the most free "
              "memory has {2} left (the tables need {3} of the devices' {4})",
              what, size, free, formatGB(needed), formatGB(capacity)));
}

} // namespace detail
} // namespace neuroshard
