//===- PlanVerification.cpp - Choosing among plans by measuring them ------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Selection/PlanVerification.h"

#include "neuroshard/CostModel/CostModel.h"
#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/Selection/RecordedTimings.h"
#include "neuroshard/Sharding/Traffic.h"
#include "neuroshard/Support/Statistics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <future>
#include <map>

using namespace llvm;

namespace neuroshard {

SetTimer::~SetTimer() = default;

static SetTimerFactory &setTimerFactory() {
  static SetTimerFactory factory = nullptr;
  return factory;
}

void registerSetTimerFactory(SetTimerFactory factory) {
  setTimerFactory() = factory;
}

bool setTimerFactoryRegistered() { return setTimerFactory() != nullptr; }

/// Why this program cannot time device sets.
static constexpr const char *kNoSetTimer =
    "this program links no kernels to time device sets with (see "
    "registerSetTimerFactory)";

std::optional<std::string> checkVerifySeconds(double seconds) {
  if (seconds >= 0.0 && seconds <= kMaxVerifySeconds)
    return std::nullopt;
  return formatv("must be between 0 and {0} seconds, got {1}",
                 format("%g", kMaxVerifySeconds), format("%g", seconds))
      .str();
}

std::optional<std::string> checkVerifySpreadFactor(double factor) {
  if (factor >= 0.0 && factor <= kMaxVerifySpreadFactor)
    return std::nullopt;
  return formatv("must be between 0 and {0} standard errors (0: the rounds' "
                 "spread asks for nothing), got {1}",
                 format("%g", kMaxVerifySpreadFactor), format("%g", factor))
      .str();
}

double verifySpreadQuantile(double factor, unsigned freedom, unsigned racing) {
  if (factor <= 0.0 || freedom == 0)
    return 0.0;
  return studentQuantile(normalTail(factor) / double(std::max(racing, 1u)),
                         freedom);
}

std::optional<std::string> checkVerifyMinGain(double gain) {
  if (gain >= 0.0 && gain <= kMaxVerifyMinGain)
    return std::nullopt;
  return formatv("must be a fraction from 0 to {0} (0.05: 5% faster), got {1}",
                 format("%g", kMaxVerifyMinGain), format("%g", gain))
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

Expected<std::optional<unsigned>> parseVerifyTop(StringRef text) {
  if (text == "auto")
    return std::nullopt;
  unsigned count = 0;
  if (!text.getAsInteger(10, count) && count <= kMaxKeepCandidates)
    return count;
  return createStringError(
      inconvertibleErrorCode(),
      formatv("expected 'auto' or a count of candidates from 0 to {0}, got "
              "'{1}'",
              kMaxKeepCandidates, text));
}

std::optional<std::string> whyNotVerified(Algorithm algorithm,
                                          const Topology &topology,
                                          const CostModel &model) {
  if (algorithm != Algorithm::NeuroShard)
    return formatv("the {0} algorithm makes one plan", algorithmName(algorithm))
        .str();
  if (!isCPUDeviceKind(topology.deviceKind))
    return formatv("the plan is for device kind '{0}', not for this "
                   "machine's CPU",
                   topology.deviceKind)
        .str();
  if (!model.provenance().measuredOnThisHost)
    return formatv("cost model '{0}' does not describe this machine",
                   model.name())
        .str();
  if (!setTimerFactoryRegistered())
    return std::string(kNoSetTimer);
  return std::nullopt;
}

Expected<unsigned> resolveVerifyTop(std::optional<unsigned> top,
                                    Algorithm algorithm,
                                    const Topology &topology,
                                    const CostModel &model) {
  if (!top)
    return whyNotVerified(algorithm, topology, model) ? 0 : kDefaultVerifyTop;
  if (*top == 0)
    return 0;
  if (std::optional<std::string> problem = checkVerifyTop(*top, algorithm))
    return createStringError(inconvertibleErrorCode(), *problem);
  if (!isCPUDeviceKind(topology.deviceKind))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("the candidates are timed with this machine's CPU kernels, "
                "but the plan is for device kind '{0}'; plan for device kind "
                "cpu to verify a plan meant for CPU execution",
                topology.deviceKind));
  if (!setTimerFactoryRegistered())
    return createStringError(inconvertibleErrorCode(), kNoSetTimer);
  return *top;
}

namespace {
using Clock = std::chrono::steady_clock;

/// A SetTimer made on a thread of its own: the timer compiles its kernels
/// (about half a second) while the search runs. A timer nobody takes is
/// waited for and dropped.
class TimerInBackground {
public:
  explicit TimerInBackground(SetTimerFactory factory)
      : made(std::async(std::launch::async, factory)) {}
  TimerInBackground(const TimerInBackground &) = delete;
  TimerInBackground &operator=(const TimerInBackground &) = delete;
  ~TimerInBackground() {
    if (!made.valid())
      return;
    Expected<std::unique_ptr<SetTimer>> timer = made.get();
    if (!timer)
      consumeError(timer.takeError());
  }

  Expected<std::unique_ptr<SetTimer>> take() { return made.get(); }

private:
  std::future<Expected<std::unique_ptr<SetTimer>>> made;
};

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A device set as the kernels see it: (table, width, rows) triples,
/// sorted. Sets that split other halves of a table to the same widths, or
/// other row blocks of the same size, time alike.
using SetKey = std::vector<std::tuple<unsigned, int64_t, int64_t>>;

/// The order in which round `round` times the `needed` sets of candidates
/// on `numDevices` devices (`setOf` as distinctDeviceSets gives it): dealt
/// out device by device, one set of every racing candidate in turn (the first
/// candidate and the first device rotating from round to round), each set
/// once. The host's speed wanders while a round is timed (on a 2-core
/// virtual machine a set measured 1.25 to 1.56 times as long in a slow
/// spell as minutes later), and a round that timed one candidate's sets one
/// after another let a spell fall on that candidate alone, which then lost to
/// the incumbent by as much; dealt out, a spell falls on the sets of every
/// candidate still racing.
std::vector<size_t>
roundOrder(ArrayRef<std::vector<std::optional<size_t>>> setOf,
           unsigned numDevices, const std::vector<bool> &racing,
           const std::vector<bool> &needed, unsigned round) {
  size_t k = setOf.size();
  std::vector<size_t> order;
  std::vector<bool> placed(needed.size(), false);
  for (unsigned d = 0; d < numDevices; ++d)
    for (size_t j = 0; j < k; ++j) {
      size_t c = (j + round) % k;
      if (!racing[c])
        continue;
      std::optional<size_t> set = setOf[c][(d + round) % numDevices];
      if (set && needed[*set] && !placed[*set]) {
        placed[*set] = true;
        order.push_back(*set);
      }
    }
  return order;
}
} // namespace

std::optional<RecordedRuns> SetTimer::recorded(size_t) const {
  return std::nullopt;
}

std::string SetTimer::device() const { return "cpu"; }

unsigned SetTimer::draws() const { return 1; }

bool fusedOrder(const ColumnSlice &a, const ColumnSlice &b) {
  if (a.allRows() != b.allRows())
    return a.allRows();
  return a < b;
}

CandidateSets distinctDeviceSets(ArrayRef<PlanCandidate> candidates,
                                 unsigned numDevices) {
  CandidateSets out;
  std::map<SetKey, size_t> indexOf;
  for (const PlanCandidate &candidate : candidates) {
    std::vector<std::vector<ColumnSlice>> slices(numDevices);
    for (const Shard &shard : candidate.plan.shards)
      slices[shard.device].push_back(shard.slice());
    std::vector<std::optional<size_t>> &devices =
        out.setOf.emplace_back(numDevices);
    for (unsigned d = 0; d < numDevices; ++d) {
      if (slices[d].empty())
        continue;
      llvm::sort(slices[d], fusedOrder);
      SetKey key;
      for (const ColumnSlice &slice : slices[d])
        key.emplace_back(slice.table, slice.width(),
                         slice.allRows() ? -1 : slice.rowEnd - slice.rowBegin);
      llvm::sort(key);
      auto [it, added] = indexOf.try_emplace(std::move(key), out.sets.size());
      if (added)
        out.sets.push_back(std::move(slices[d]));
      devices[d] = it->second;
    }
  }
  return out;
}

/// The gain over the incumbent that a candidate timed in `rounds` rounds
/// needs: options.minGain, or more where its mean log ratio is uncertain.
/// Two variances add up: the rounds' spread squared over its rounds (on
/// the spread's degrees of freedom) and the host's noise of measured
/// selection squared (on its comparisons), which more rounds of the same
/// planning do not shrink. It needs options.spreadFactor standard errors
/// of their sum, read off Student's t with the Welch-Satterthwaite degrees
/// of freedom and shared among the candidates racing
/// (verifySpreadQuantile). Without the host's noise this is the spread's
/// standard error alone, on the spread's degrees of freedom.
static double requiredGain(size_t rounds, const PlanVerification &verification,
                           const VerifyOptions &options) {
  if (rounds == 0)
    return options.minGain;
  double roundVariance = 0.0, noiseVariance = 0.0, spread = 0.0;
  if (verification.spreadFreedom) {
    roundVariance =
        verification.roundSpread * verification.roundSpread / double(rounds);
    spread += roundVariance * roundVariance / verification.spreadFreedom;
  }
  if (verification.selectionNoiseComparisons) {
    noiseVariance = verification.selectionNoise * verification.selectionNoise;
    spread +=
        noiseVariance * noiseVariance / verification.selectionNoiseComparisons;
  }
  double variance = roundVariance + noiseVariance;
  if (variance <= 0.0)
    return options.minGain;
  unsigned freedom = verification.spreadFreedom;
  if (roundVariance <= 0.0)
    freedom = verification.selectionNoiseComparisons;
  else if (noiseVariance > 0.0)
    freedom = unsigned(
        std::max(1.0, std::min(1e6, std::floor(variance * variance / spread))));
  double quantile =
      verifySpreadQuantile(options.spreadFactor, freedom, verification.racing);
  return std::max(options.minGain,
                  1.0 - std::exp(-quantile * std::sqrt(variance)));
}

Error verifyCandidates(PlanResult &result, ArrayRef<TableSpec> tables,
                       const Topology &topology, CostModel &model,
                       SetTimer &timer, const VerifyOptions &options) {
  if (result.candidates.empty())
    return createStringError(inconvertibleErrorCode(),
                             "verification needs the search's candidates");
  Clock::time_point start = Clock::now();
  unsigned n = topology.numDevices();

  // The distinct device sets, and each candidate device's set.
  CandidateSets distinct = distinctDeviceSets(result.candidates, n);
  std::vector<std::vector<ColumnSlice>> &sets = distinct.sets;
  const std::vector<std::vector<std::optional<size_t>>> &setOf = distinct.setOf;
  if (Error err = timer.prepare(tables, topology.batchSize, sets))
    return err;
  if (Error err = model.prepare(tables, topology))
    return err;

  // The incumbent: the table-wise plan where it is a candidate, else the
  // model's best.
  PlanVerification verification;
  StringRef tableWise = algorithmName(Algorithm::TableGreedyGrid);
  for (auto [c, candidate] : enumerate(result.candidates))
    if (candidate.origin == tableWise) {
      verification.incumbent = c;
      break;
    }
  size_t incumbent = verification.incumbent;
  size_t k = result.candidates.size();
  std::vector<DeviceTraffic> traffic;
  for (const PlanCandidate &candidate : result.candidates) {
    std::vector<DeviceTraffic> planTraffic =
        computeTraffic(tables, topology, candidate.plan);
    traffic.insert(traffic.end(), planTraffic.begin(), planTraffic.end());
  }
  // Every candidate priced with each set's time in `setMs` and the model's
  // communication.
  auto price = [&](ArrayRef<double> setMs) {
    std::vector<double> computeMs;
    for (const std::vector<std::optional<size_t>> &devices : setOf)
      for (const std::optional<size_t> &set : devices)
        computeMs.push_back(set ? setMs[*set] : 0.0);
    return completePlanCosts(n, computeMs, traffic, model);
  };

  // Timed rounds, each dealing out the sets of the candidates in turn
  // (roundOrder), over the sets that decide the prices of the candidates
  // still racing the incumbent. After the first, which times every set, a
  // round starts only where the times its sets took when last timed say it
  // ends within options.seconds: at batch 4096 a round of the 28 sets of a
  // 53-table task took 2 s on a 2-core Xeon, and rounds begun regardless
  // took three times the budget. A candidate whose median
  // ratio to it is above 1 + options.dropMargin after a round, or not below
  // 1 after options.raceRounds rounds, is not timed again; a set that, at
  // the sets' medians so far, is on no device within options.decidingMargin
  // of its candidate's slowest is priced at its median instead of timed
  // again. So the rounds the budget buys go to the sets that decide between
  // the candidates that may win. No round is left untimed: a timing starts
  // with untimed runs of its own (KernelSetTimerOptions::warmupRuns).
  std::vector<std::vector<double>> times(sets.size());
  std::vector<double> medianMs(sets.size(), 0.0);
  std::vector<bool> deciding(sets.size(), true);
  std::vector<std::vector<double>> ratios(k);
  std::vector<bool> racing(k, true);
  // The seconds each set's latest timing took.
  std::vector<double> lastSeconds(sets.size(), 0.0);
  unsigned draws = std::max(timer.draws(), 1u);
  unsigned minRounds =
      std::min(std::max(options.minRounds, draws), options.maxRounds);
  Clock::time_point timed = Clock::now();
  unsigned rounds = 0;
  bool contended = true, budgetSpent = false;
  double nextRoundSeconds = 0.0;
  while (rounds < options.maxRounds) {
    std::vector<bool> needed(sets.size(), false);
    for (size_t c = 0; c < k; ++c)
      if (racing[c])
        for (const std::optional<size_t> &set : setOf[c])
          if (set && deciding[*set])
            needed[*set] = true;
    std::vector<size_t> order = roundOrder(setOf, n, racing, needed, rounds);
    if (rounds > 0) {
      nextRoundSeconds = 0.0;
      for (size_t s : order)
        nextRoundSeconds += lastSeconds[s];
      if (secondsSince(timed) + nextRoundSeconds > options.seconds) {
        budgetSpent = true;
        break;
      }
    }
    std::vector<double> roundMs = medianMs;
    for (size_t s : order) {
      Clock::time_point begin = Clock::now();
      roundMs[s] = timer.time(s, rounds % draws);
      lastSeconds[s] = secondsSince(begin);
      times[s].push_back(roundMs[s]);
      medianMs[s] = median(times[s]);
    }
    Expected<std::vector<PlanCost>> costs = price(roundMs);
    if (!costs)
      return costs.takeError();
    for (size_t c = 0; c < k; ++c)
      if (racing[c])
        ratios[c].push_back((*costs)[c].maxMs / (*costs)[incumbent].maxMs);
    ++rounds;
    contended = false;
    for (size_t c = 0; c < k; ++c) {
      if (c == incumbent || !racing[c])
        continue;
      double ratio = median(ratios[c]);
      racing[c] = ratio <= 1.0 + options.dropMargin &&
                  (rounds < options.raceRounds || ratio < 1.0);
      contended |= racing[c];
    }
    // Where no candidate races the incumbent any more, it is the choice.
    if (!contended)
      break;
    Expected<std::vector<PlanCost>> sofar = price(medianMs);
    if (!sofar)
      return sofar.takeError();
    deciding.assign(sets.size(), false);
    for (size_t c = 0; c < k; ++c) {
      if (!racing[c])
        continue;
      const PlanCost &cost = (*sofar)[c];
      for (auto [device, set] : enumerate(setOf[c]))
        if (set && cost.devices[device].totalMs() >=
                       (1.0 - options.decidingMargin) * cost.maxMs)
          deciding[*set] = true;
    }
  }
  double timedSeconds = secondsSince(timed);
  // Rounds cut short of the least a choice needs, while a candidate raced:
  // the incumbent stands, and the report says what the rounds would take.
  verification.roundsNeeded = minRounds;
  verification.budgetCut = budgetSpent && contended && rounds < minRounds;
  if (verification.budgetCut)
    verification.neededSeconds =
        timedSeconds + double(minRounds - rounds) * nextRoundSeconds;
  std::vector<double> setMs;
  std::vector<TimedSet> timedSets;
  for (auto [s, perRound] : enumerate(times)) {
    TimedSet &set = timedSets.emplace_back();
    set.slices = std::move(sets[s]);
    if (std::optional<RecordedRuns> recorded = timer.recorded(s)) {
      set.medianMs = recorded->medianMs;
      set.minMs = recorded->minMs;
      set.maxMs = recorded->maxMs;
      set.runs = recorded->runs;
    } else {
      std::vector<double> runs = perRound;
      llvm::sort(runs);
      set.medianMs = sortedMedian(runs);
      set.minMs = runs.front();
      set.maxMs = runs.back();
      set.runs = runs.size();
      verification.timings += runs.size();
    }
    setMs.push_back(set.medianMs);
  }
  // Times recorded elsewhere cost nothing here.
  if (verification.timings)
    verification.timedSeconds = timedSeconds;
  Expected<std::vector<PlanCost>> costs = price(setMs);
  if (!costs)
    return costs.takeError();
  std::vector<ArrayRef<ColumnSlice>> slices;
  for (const TimedSet &set : timedSets)
    slices.push_back(set.slices);
  std::vector<double> predictedMs(timedSets.size());
  if (Error err = model.predictCompute(slices, predictedMs))
    return err;
  for (auto [set, predicted] : zip_equal(timedSets, predictedMs))
    set.predictedMs = predicted;

  // Each candidate's geometric mean of its round ratios, and how far the
  // rounds' ratios stray: the pooled standard deviation of their logarithms
  // about each candidate's mean.
  std::vector<double> meanRatios;
  for (const std::vector<double> &perRound : ratios)
    meanRatios.push_back(geometricMean(perRound));
  double squares = 0.0;
  size_t freedom = 0;
  for (size_t c = 0; c < k; ++c) {
    if (c == incumbent || ratios[c].size() < 2)
      continue;
    double mean = std::log(meanRatios[c]);
    for (double ratio : ratios[c])
      squares += (std::log(ratio) - mean) * (std::log(ratio) - mean);
    freedom += ratios[c].size() - 1;
  }
  verification.roundSpread =
      freedom ? std::sqrt(squares / double(freedom)) : 0.0;
  verification.spreadFreedom = freedom;
  for (size_t c = 0; c < k; ++c)
    verification.racing += c != incumbent && racing[c];
  // The host's noise: the rounds of one planning may share a view of the
  // sets that timing them apart does not (docs/planner.md, "Gains beyond
  // the host's noise"). What it alone asks is reported; requiredGain adds
  // it to each candidate's rounds.
  if (std::optional<SelectionNoise> noise = model.provenance().selectionNoise) {
    verification.selectionNoise = noise->logSd;
    verification.selectionNoiseComparisons = noise->comparisons;
    double noiseQuantile = verifySpreadQuantile(
        options.spreadFactor, noise->comparisons, verification.racing);
    verification.noiseGain = 1.0 - std::exp(-noiseQuantile * noise->logSd);
  }

  // The lowest mean ratio (geometric) of the candidates that raced to the
  // end wins if it is a gain beyond the noise (requiredGain): the rounds'
  // spread over sqrt(rounds), the standard error of the mean log ratio, and
  // the host's noise. A median of rounds that fall on either side of 1
  // moves further than that standard error.
  for (size_t c = 0; c < k; ++c) {
    CandidateMeasurement &entry = verification.candidates.emplace_back();
    entry.origin = result.candidates[c].origin;
    entry.predicted = result.candidates[c].cost;
    entry.measured = std::move((*costs)[c]);
    entry.rounds = ratios[c].size();
    for (double ratio : ratios[c])
      entry.roundsFaster += ratio < 1.0;
    entry.pairedRatio = median(ratios[c]);
    entry.meanRatio = meanRatios[c];
    entry.roundRatios = ratios[c];
    entry.requiredGain =
        c == incumbent ? options.minGain
                       : requiredGain(ratios[c].size(), verification, options);
  }
  verification.chosen = incumbent;
  for (auto [i, entry] : enumerate(verification.candidates))
    if (!verification.budgetCut && racing[i] &&
        entry.meanRatio <= 1.0 - entry.requiredGain &&
        entry.meanRatio <
            verification.candidates[verification.chosen].meanRatio)
      verification.chosen = i;
  verification.sets = std::move(timedSets);
  verification.rounds = rounds;
  verification.draws = std::min(rounds, draws);
  verification.minGain = options.minGain;
  verification.host = timer.host();
  verification.device = timer.device();
  verification.seconds = secondsSince(start);
  const PlanCandidate &chosen = result.candidates[verification.chosen];
  result.plan = chosen.plan;
  result.cost = chosen.cost;
  result.verification = std::move(verification);
  return Error::success();
}

std::string experiencePath(StringRef experience, const CostModel &model) {
  if (experience == kNoExperience)
    return {};
  if (!experience.empty())
    return experience.str();
  std::string dir = model.provenance().bundlePath;
  if (dir.empty() || isShippedBundle(dir) ||
      sys::fs::access(dir, sys::fs::AccessMode::Write))
    return {};
  SmallString<256> path(dir);
  sys::path::append(path, kExperienceFileName);
  return std::string(path);
}

Error appendExperience(StringRef path, ArrayRef<TableSpec> tables,
                       const Topology &topology, StringRef model,
                       const PlanVerification &verification) {
  std::string lines;
  raw_string_ostream os(lines);
  for (const TimedSet &set : verification.sets) {
    json::OStream json(os);
    json.object([&] {
      json.attribute("format", "neuroshard-experience");
      json.attribute("version", 1);
      json.attribute("hardware", verification.host);
      json.attribute("device", verification.device);
      json.attribute("batch_size", topology.batchSize);
      json.attribute("bundle", model);
      json.attribute("cost_ms", set.medianMs);
      json.attribute("min_ms", set.minMs);
      json.attribute("max_ms", set.maxMs);
      json.attribute("runs", int64_t(set.runs));
      json.attribute("predicted_ms", set.predictedMs);
      json.attributeArray("tables", [&] {
        for (const ColumnSlice &slice : set.slices) {
          // What was timed, as calibration samples describe it: a row
          // piece is a table of its rows with its mean share of the
          // lookups, whichever block it is.
          TableSpec table =
              pieceSpec(tables[slice.table], slice, topology.numDevices(),
                        topology.batchSize, RowBlockLoad::Mean);
          for (unsigned f = 0; f < table.numFeatures(); ++f) {
            FeatureStats feature = table.feature(f);
            json.object([&] {
              json.attribute("name", table.name);
              json.attribute("rows", table.rows);
              json.attribute("dim", slice.width());
              json.attribute("pooling_factor", feature.poolingFactor);
              json.attributeArray("access_hist", [&] {
                for (double bin : feature.accessHist)
                  json.value(bin);
              });
            });
          }
        }
      });
    });
    os << "\n";
  }
  std::error_code ec;
  raw_fd_ostream file(path, ec, sys::fs::OF_Append | sys::fs::OF_Text);
  if (!ec) {
    file << lines;
    file.close();
    ec = file.error();
  }
  if (ec)
    return createStringError(ec, formatv("cannot append the verified sets to "
                                         "the experience file '{0}': {1}",
                                         path, ec.message()));
  return Error::success();
}

/// planWithVerification before the plan's expected slowest device.
static Expected<PlanResult>
planAndVerify(ArrayRef<TableSpec> tables, const Topology &topology,
              SearchOptions search, CostModel &model,
              const VerifyRequest &request, OptionSpelling spell) {
  auto optionError = [&](const Twine &option, Error err) {
    return createStringError(inconvertibleErrorCode(),
                             spell(option.str()) + ": " +
                                 toString(std::move(err)));
  };
  if (!request.exportDir.empty() && !request.timingsDir.empty())
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0} and {1} are two steps: write the candidates' sets with "
                "the first, time them, then plan again with the second",
                spell("verify-export"), spell("verify-timings")));
  bool elsewhere = request.timedElsewhere();
  Expected<unsigned> count = [&]() -> Expected<unsigned> {
    if (!elsewhere)
      return resolveVerifyTop(request.top, search.algorithm, topology, model);
    unsigned top = request.top.value_or(kDefaultVerifyTop);
    if (top == 0)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0} needs candidates, but none are kept with 0",
                  spell(request.exportDir.empty() ? "verify-timings"
                                                  : "verify-export")));
    if (std::optional<std::string> problem =
            checkVerifyTop(top, search.algorithm))
      return createStringError(inconvertibleErrorCode(), *problem);
    return top;
  }();
  if (!count)
    return optionError("verify-top", count.takeError());
  if (std::optional<std::string> problem =
          checkVerifySeconds(request.options.seconds))
    return optionError("verify-seconds",
                       createStringError(inconvertibleErrorCode(), *problem));
  if (std::optional<std::string> problem =
          checkVerifyMinGain(request.options.minGain))
    return optionError("verify-min-gain",
                       createStringError(inconvertibleErrorCode(), *problem));
  if (std::optional<std::string> problem =
          checkVerifySpreadFactor(request.options.spreadFactor))
    return optionError("verify-spread-factor",
                       createStringError(inconvertibleErrorCode(), *problem));
  search.keepCandidates = *count;
  std::optional<TimerInBackground> timedHere;
  if (*count && !elsewhere)
    timedHere.emplace(setTimerFactory());
  Expected<PlanResult> result = planSharding(tables, topology, search, model);
  if (!result || !*count)
    return result;
  // The kernels time whole tables, column pieces and row pieces with the
  // whole batch: a candidate with replicas (a slice of the batch each) is
  // not timed, and when the model's best has them, nothing is.
  auto timeable = [](const PlanCandidate &candidate) {
    return llvm::none_of(candidate.plan.shards,
                         [](const Shard &shard) { return shard.replica; });
  };
  if (!result->candidates.empty() && !timeable(result->candidates.front())) {
    if (!request.exportDir.empty())
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0}: the model's best plan has replicas, which look up a "
                  "slice of the batch, and the sets written are timed with "
                  "the whole batch; plan without data_parallel shards ({1}) "
                  "to verify",
                  spell("verify-export"), spell("sharding-types"))
              .str());
    result->warnings.push_back(
        "the plan has replicas, which look up a slice of the batch the "
        "kernels that time candidates do not run: it was not verified");
    return result;
  }
  llvm::erase_if(result->candidates, [&](const PlanCandidate &candidate) {
    return !timeable(candidate);
  });
  if (!request.exportDir.empty()) {
    Expected<size_t> written =
        writeCandidateSets(request.exportDir, tables, topology, model, *result);
    if (!written)
      return written.takeError();
    result->exported =
        PlanResult::SetExport{request.exportDir, *written, kSetsManifestName,
                              kSetSamplesName, kSetKernelsName};
    return result;
  }
  if (!elsewhere && !model.provenance().measuredOnThisHost)
    result->warnings.push_back(
        formatv("the candidates are timed on this machine, which cost model "
                "'{0}' does not describe: the plan is chosen for this "
                "machine's CPU",
                model.name())
            .str());
  VerifyOptions options = request.options;
  Expected<std::unique_ptr<SetTimer>> timer = [&]() {
    if (timedHere)
      return timedHere->take();
    // A recorded set times the same in every round: one round decides.
    options.minRounds = options.maxRounds = options.raceRounds = 1;
    Expected<std::unique_ptr<RecordedSetTimer>> recorded =
        RecordedSetTimer::load(request.timingsDir);
    if (!recorded)
      return Expected<std::unique_ptr<SetTimer>>(recorded.takeError());
    return Expected<std::unique_ptr<SetTimer>>(std::move(*recorded));
  }();
  if (!timer)
    return timer.takeError();
  if (Error err =
          verifyCandidates(*result, tables, topology, model, **timer, options))
    return std::move(err);
  std::string path = experiencePath(request.experience, model);
  if (!path.empty()) {
    if (Error err = appendExperience(path, tables, topology, model.name(),
                                     *result->verification))
      return std::move(err);
    result->verification->experiencePath = path;
  }
  return result;
}

Expected<PlanResult>
planWithVerification(ArrayRef<TableSpec> tables, const Topology &topology,
                     SearchOptions search, CostModel &model,
                     const VerifyRequest &request, OptionSpelling spell) {
  Expected<PlanResult> result =
      planAndVerify(tables, topology, std::move(search), model, request, spell);
  if (!result)
    return result;
  if (Error err = addPlanEstimates(*result, tables, topology, model))
    return std::move(err);
  return result;
}

} // namespace neuroshard
