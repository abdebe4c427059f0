//===- PlanVerification.cpp - Choosing among plans by measuring them ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/PlanVerification.h"

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/Runtime/Statistics.h"
#include "neuroshard/Sharding/Traffic.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <map>

using namespace llvm;

namespace neuroshard {

SetTimer::~SetTimer() = default;

std::optional<std::string> checkVerifySeconds(double seconds) {
  if (seconds >= 0.0 && seconds <= kMaxVerifySeconds)
    return std::nullopt;
  return formatv("must be between 0 and {0} seconds, got {1}",
                 format("%g", kMaxVerifySeconds), format("%g", seconds))
      .str();
}

std::optional<std::string> checkVerifyTop(unsigned count, Algorithm algorithm) {
  if (count == 0 || algorithm == Algorithm::NeuroShard)
    return std::nullopt;
  return formatv("verifying candidates needs the neuroshard algorithm, which "
                 "keeps them; {0} makes one plan",
                 algorithmName(algorithm))
      .str();
}

namespace {
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A device set as the kernels see it: (table, width) pairs, sorted. Sets
/// that split other halves of a table to the same widths time alike.
using SetKey = std::vector<std::pair<unsigned, int64_t>>;
} // namespace

Error verifyCandidates(PlanResult &result, ArrayRef<TableSpec> tables,
                       const Topology &topology, CostModel &model,
                       SetTimer &timer, const VerifyOptions &options) {
  if (result.candidates.empty())
    return createStringError(inconvertibleErrorCode(),
                             "verification needs the search's candidates");
  Clock::time_point start = Clock::now();
  unsigned n = topology.numDevices();

  // The distinct device sets, and each candidate device's set.
  std::map<SetKey, size_t> indexOf;
  std::vector<std::vector<ColumnSlice>> sets;
  std::vector<std::vector<std::optional<size_t>>> setOf;
  for (const PlanCandidate &candidate : result.candidates) {
    std::vector<std::vector<ColumnSlice>> slices(n);
    for (const Shard &shard : candidate.plan.shards)
      slices[shard.device].push_back(shard.slice());
    std::vector<std::optional<size_t>> &devices = setOf.emplace_back(n);
    for (unsigned d = 0; d < n; ++d) {
      if (slices[d].empty())
        continue;
      SetKey key;
      for (const ColumnSlice &slice : slices[d])
        key.emplace_back(slice.table, slice.width());
      llvm::sort(key);
      auto [it, added] = indexOf.try_emplace(std::move(key), sets.size());
      if (added)
        sets.push_back(std::move(slices[d]));
      devices[d] = it->second;
    }
  }
  if (Error err = timer.prepare(tables, topology.batchSize, sets))
    return err;

  // One untimed round, then timed rounds in rotated orders.
  std::vector<std::vector<double>> times(sets.size());
  for (size_t s = 0; s < sets.size(); ++s)
    timer.time(s);
  Clock::time_point timed = Clock::now();
  unsigned rounds = 0;
  while (
      rounds < options.maxRounds &&
      (rounds < options.minRounds || secondsSince(timed) < options.seconds)) {
    for (size_t i = 0; i < sets.size(); ++i) {
      size_t s = (i + rounds) % sets.size();
      times[s].push_back(timer.time(s));
    }
    ++rounds;
  }
  std::vector<double> setMs;
  for (std::vector<double> &runs : times) {
    llvm::sort(runs);
    setMs.push_back(sortedMedian(runs));
  }

  // Each candidate priced with its measured compute.
  std::vector<double> computeMs;
  std::vector<DeviceTraffic> traffic;
  for (auto [candidate, devices] : zip_equal(result.candidates, setOf)) {
    for (const std::optional<size_t> &set : devices)
      computeMs.push_back(set ? setMs[*set] : 0.0);
    std::vector<DeviceTraffic> planTraffic =
        computeTraffic(tables, topology, candidate.plan);
    traffic.insert(traffic.end(), planTraffic.begin(), planTraffic.end());
  }
  if (Error err = model.prepare(tables, topology))
    return err;
  Expected<std::vector<PlanCost>> measured =
      completePlanCosts(n, computeMs, traffic, model);
  if (!measured)
    return measured.takeError();

  PlanVerification verification;
  for (auto [candidate, cost] : zip_equal(result.candidates, *measured))
    verification.candidates.push_back(
        {candidate.origin, candidate.cost, std::move(cost)});
  for (auto [i, entry] : enumerate(verification.candidates))
    if (entry.measured.maxMs <
        verification.candidates[verification.chosen].measured.maxMs)
      verification.chosen = i;
  verification.sets = sets.size();
  verification.rounds = rounds;
  verification.host = timer.host();
  verification.seconds = secondsSince(start);
  const PlanCandidate &chosen = result.candidates[verification.chosen];
  result.plan = chosen.plan;
  result.cost = chosen.cost;
  result.verification = std::move(verification);
  return Error::success();
}

std::string describeVerification(const PlanVerification &verification) {
  const CandidateMeasurement &chosen =
      verification.candidates[verification.chosen];
  const CandidateMeasurement &first = verification.candidates.front();
  if (verification.chosen == 0)
    return formatv("chosen: the model's best plan ({0}), measured {1} ms "
                   "(predicted {2} ms), no slower than any other candidate",
                   first.origin, format("%.4g", first.measured.maxMs),
                   format("%.4g", first.predicted.maxMs))
        .str();
  return formatv("chosen: candidate {0} ({1}), measured {2} ms against {3} "
                 "ms for the model's best plan ({4}), which it predicted at "
                 "{5} ms",
                 verification.chosen + 1, chosen.origin,
                 format("%.4g", chosen.measured.maxMs),
                 format("%.4g", first.measured.maxMs), first.origin,
                 format("%.4g", first.predicted.maxMs))
      .str();
}

} // namespace neuroshard
