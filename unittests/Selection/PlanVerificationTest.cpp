//===- PlanVerificationTest.cpp - Measured selection among candidates -----===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The search's candidates, and the choice among them by measured times, with
// a SetTimer whose "measurements" are a fixed formula: the model's cost of
// a set (width x pooling per slice) plus a price per slice the model does
// not know, so that splits measure worse than predicted.
//
//===----------------------------------------------------------------------===//

#include "PlannerTestSupport.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/Planner/PlanReport.h"
#include "neuroshard/Selection/PlanVerification.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>

using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::testing;

namespace {

class FormulaTimer final : public SetTimer {
public:
  explicit FormulaTimer(double perSliceMs) : perSliceMs(perSliceMs) {}
  Error prepare(ArrayRef<TableSpec> tables, int64_t batchSize,
                ArrayRef<std::vector<ColumnSlice>> sets) override {
    if (refuse)
      return createStringError(inconvertibleErrorCode(), "no memory");
    preparedBatch = batchSize;
    setMs.clear();
    splits.clear();
    for (const std::vector<ColumnSlice> &set : sets) {
      double ms = 0.0;
      bool split = false;
      for (const ColumnSlice &slice : set) {
        ms += slice.width() * tables[slice.table].poolingFactor + perSliceMs;
        split |= slice.width() != tables[slice.table].dim;
      }
      setMs.push_back(fixedMs.value_or(ms));
      splits.push_back(split);
    }
    return Error::success();
  }
  unsigned draws() const override { return numDraws; }
  double time(size_t index, unsigned draw) override {
    if (pause.count())
      std::this_thread::sleep_for(pause);
    order.push_back(index);
    drawOrder.push_back(draw);
    if (splits[index] && draw < splitScale.size())
      return setMs[index] * splitScale[draw];
    return setMs[index];
  }
  std::string host() const override { return "test host"; }

  double perSliceMs;
  /// What a timing takes on the clock (none by default).
  std::chrono::milliseconds pause{0};
  unsigned numDraws = 1;
  /// Per draw, what the time of a set holding part of a table's columns is
  /// multiplied by (1 where not given).
  std::vector<double> splitScale;
  std::vector<bool> splits;
  std::vector<unsigned> drawOrder;
  /// Every set's time, when given, instead of the formula's.
  std::optional<double> fixedMs;
  bool refuse = false;
  int64_t preparedBatch = 0;
  std::vector<double> setMs;
  std::vector<size_t> order;
};

// hotAndCold() on twoDevices(): the model (no price per slice) halves the
// hot table; a price of 1000 per slice measured makes every split cost more
// than it balances.

bool splitsATable(ArrayRef<TableSpec> tables, const ShardingPlan &plan) {
  for (const Shard &shard : plan.shards)
    if (shard.width() != tables[shard.table].dim)
      return true;
  return false;
}

/// Options that time the rounds a choice needs (3) wherever a candidate
/// races the incumbent, and no more: the budget never stops them.
VerifyOptions leastRounds() {
  VerifyOptions options;
  options.seconds = 1e9;
  options.maxRounds = options.minRounds;
  return options;
}

PlanResult planWithCandidates(unsigned count) {
  SliceCostModel model;
  SearchOptions options;
  options.keepCandidates = count;
  Expected<PlanResult> result =
      planSharding(hotAndCold(), twoDevices(), options, model);
  EXPECT_EQ(errorMessage(result), "");
  return result ? std::move(*result) : PlanResult();
}

TEST(PlanCandidatesTest, DistinctValidInTheModelsOrder) {
  std::vector<TableSpec> tables = hotAndCold();
  PlanResult result = planWithCandidates(4);
  ASSERT_GE(result.candidates.size(), 2u);
  // The first is the plan returned.
  EXPECT_EQ(result.candidates.front().cost.maxMs, result.cost.maxMs);
  EXPECT_TRUE(splitsATable(tables, result.plan));
  std::set<std::string> origins;
  for (auto [i, candidate] : enumerate(result.candidates)) {
    EXPECT_EQ(errorMessage(validatePlan(tables, twoDevices(), candidate.plan)),
              "");
    origins.insert(candidate.origin);
    if (i > 0) {
      EXPECT_LE(result.candidates[i - 1].cost.maxMs, candidate.cost.maxMs);
    }
    for (size_t j = 0; j < i; ++j)
      EXPECT_FALSE(result.candidates[j].plan.shards == candidate.plan.shards);
  }
  // The table-wise plan is always among them.
  EXPECT_TRUE(origins.count("table-greedy-grid"));
}

// Four of the search's plans, and besides them the other baselines' plans
// that the model prices within 1.5x of the returned plan: the model
// overprices the plans its search does not pick.
TEST(PlanCandidatesTest, AddsTheOtherBaselinesPricedNearTheBest) {
  PlanResult result = planWithCandidates(4);
  ASSERT_GT(result.candidates.size(), 4u);
  std::set<std::string> searchOrigins = {"neuroshard", "table-greedy-grid"};
  unsigned fromSearch = 0, baselines = 0;
  for (const PlanCandidate &candidate : result.candidates) {
    EXPECT_NE(candidate.origin, "random");
    EXPECT_LE(candidate.cost.maxMs, 1.5 * result.cost.maxMs);
    if (searchOrigins.count(candidate.origin))
      ++fromSearch;
    else
      ++baselines;
  }
  // At most 4 are the search's, the best baseline's among them.
  EXPECT_LE(fromSearch, 4u);
  EXPECT_GE(baselines, 2u);
}

// A baseline whose plan the model prices beyond 1.5x the returned plan is not
// timed: one hot table beside two wide cold ones, which dim-greedy and
// size-greedy put together.
TEST(PlanCandidatesTest, LeavesOutBaselinesPricedFarAboveTheBest) {
  std::vector<TableSpec> tables = {makeTable("hot", 1000, 16, 20.0),
                                   makeTable("wide1", 1000, 128, 1.0),
                                   makeTable("wide2", 1000, 128, 1.0)};
  SliceCostModel model;
  SearchOptions options;
  options.keepCandidates = 4;
  Expected<PlanResult> result =
      planSharding(tables, twoDevices(), options, model);
  ASSERT_EQ(errorMessage(result), "");
  std::set<std::string> origins;
  for (const PlanCandidate &candidate : result->candidates)
    origins.insert(candidate.origin);
  unsigned beyond = 0;
  for (Algorithm algorithm :
       {Algorithm::SizeGreedy, Algorithm::DimGreedy, Algorithm::LookupGreedy,
        Algorithm::SizeLookupGreedy, Algorithm::UniformSplitGreedy}) {
    SearchOptions alone;
    alone.algorithm = algorithm;
    Expected<PlanResult> baseline =
        planSharding(tables, twoDevices(), alone, model);
    ASSERT_EQ(errorMessage(baseline), "");
    if (baseline->cost.maxMs <= 1.5 * result->cost.maxMs)
      continue;
    ++beyond;
    EXPECT_FALSE(origins.count(algorithmName(algorithm).str()))
        << algorithmName(algorithm).str() << " priced at "
        << baseline->cost.maxMs << " against " << result->cost.maxMs;
  }
  EXPECT_GE(beyond, 2u);
}

TEST(PlanCandidatesTest, NoneUnlessAsked) {
  EXPECT_TRUE(planWithCandidates(0).candidates.empty());
  EXPECT_EQ(planWithCandidates(1).candidates.size(), 1u);
}

TEST(PlanVerificationTest, ChoosesWhatMeasuresFastest) {
  std::vector<TableSpec> tables = hotAndCold();
  PlanResult result = planWithCandidates(4);
  ShardingPlan modelsChoice = result.plan;
  SliceCostModel model;
  FormulaTimer timer(1000.0);
  VerifyOptions options = leastRounds();
  ASSERT_EQ(errorMessage(verifyCandidates(result, tables, twoDevices(), model,
                                          timer, options)),
            "");
  ASSERT_TRUE(result.verification);
  const PlanVerification &verification = *result.verification;
  EXPECT_EQ(timer.preparedBatch, 1024);
  EXPECT_EQ(verification.host, "test host");
  ASSERT_EQ(verification.sets.size(), timer.setMs.size());
  for (auto [set, ms] : zip_equal(verification.sets, timer.setMs)) {
    // A fixed formula: every run the same; the prediction is the model's.
    EXPECT_EQ(set.medianMs, ms);
    EXPECT_EQ(set.minMs, ms);
    EXPECT_EQ(set.maxMs, ms);
    // Every set runs in the first round; a slower candidate's stop there
    // or in the first rounds.
    EXPECT_GE(set.runs, 1u);
    EXPECT_LE(set.runs, verification.rounds);
    EXPECT_EQ(set.predictedMs, ms - 1000.0 * set.slices.size());
  }
  ASSERT_EQ(verification.candidates.size(), result.candidates.size());
  // Measured: each device's set from the formula, no communication.
  double lowest = std::numeric_limits<double>::infinity();
  for (const CandidateMeasurement &candidate : verification.candidates) {
    double slowest = 0.0;
    for (const DeviceCost &device : candidate.measured.devices)
      slowest = std::max(slowest, device.computeMs);
    EXPECT_EQ(candidate.measured.maxMs, slowest);
    lowest = std::min(lowest, slowest);
  }
  EXPECT_NE(verification.chosen, 0u);
  EXPECT_EQ(verification.candidates[verification.chosen].measured.maxMs,
            lowest);
  // The plan returned is the chosen candidate's, priced by the model.
  const PlanCandidate &chosen = result.candidates[verification.chosen];
  EXPECT_TRUE(result.plan.shards == chosen.plan.shards);
  EXPECT_FALSE(result.plan.shards == modelsChoice.shards);
  EXPECT_EQ(result.cost.maxMs, chosen.cost.maxMs);
  EXPECT_FALSE(splitsATable(tables, result.plan));
  EXPECT_NE(describeVerification(verification).find("chosen: candidate"),
            std::string::npos);
}

/// `result` verified on hotAndCold() and twoDevices() with the slice model.
PlanResult verifiedCopy(const PlanResult &result, SetTimer &timer,
                        const VerifyOptions &options,
                        std::optional<SelectionNoise> noise = std::nullopt) {
  PlanResult copy = result;
  SliceCostModel model;
  model.noise = noise;
  EXPECT_EQ(errorMessage(verifyCandidates(copy, hotAndCold(), twoDevices(),
                                          model, timer, options)),
            "");
  return copy;
}

/// The index of the table-wise candidate.
size_t tableWiseCandidate(const PlanResult &result) {
  for (auto [i, candidate] : enumerate(result.candidates))
    if (candidate.origin == "table-greedy-grid")
      return i;
  ADD_FAILURE() << "no table-wise candidate";
  return 0;
}

TEST(PlanVerificationTest, ComparesRoundByRoundWithThePlanThatSplitsNothing) {
  PlanResult result = planWithCandidates(4);
  size_t tableWise = tableWiseCandidate(result);
  ASSERT_NE(tableWise, 0u);
  SliceCostModel model;
  VerifyOptions options = leastRounds();
  // Measured as the model prices them, the same every round: each ratio is
  // the ratio of the sets' times to the table-wise plan's, and a candidate
  // is faster in every round or in none.
  FormulaTimer timer(0.0);
  PlanResult measured = result;
  ASSERT_EQ(errorMessage(verifyCandidates(measured, hotAndCold(), twoDevices(),
                                          model, timer, options)),
            "");
  const PlanVerification &verification = *measured.verification;
  EXPECT_EQ(verification.incumbent, tableWise);
  const CandidateMeasurement &incumbent =
      verification.candidates[verification.incumbent];
  EXPECT_EQ(incumbent.pairedRatio, 1.0);
  EXPECT_EQ(incumbent.roundsFaster, 0u);
  for (const CandidateMeasurement &candidate : verification.candidates) {
    EXPECT_DOUBLE_EQ(candidate.pairedRatio,
                     candidate.measured.maxMs / incumbent.measured.maxMs);
    EXPECT_EQ(candidate.roundsFaster,
              candidate.pairedRatio < 1.0 ? verification.rounds : 0u);
    // A candidate not faster than the incumbent stops racing after the
    // first rounds, one more than dropMargin slower after the first.
    bool racing = &candidate == &incumbent || candidate.pairedRatio < 1.0;
    unsigned dropped = candidate.pairedRatio > 1.0 + options.dropMargin
                           ? 1u
                           : options.raceRounds;
    EXPECT_EQ(candidate.rounds, racing ? verification.rounds : dropped);
  }
  // The model's best halves the hot table and measures as predicted: it
  // replaces the table-wise plan.
  EXPECT_EQ(verification.chosen, 0u);
  const CandidateMeasurement &chosen = verification.candidates.front();
  EXPECT_LT(chosen.pairedRatio, 0.98);
  EXPECT_TRUE(splitsATable(hotAndCold(), measured.plan));
  std::string text = describeVerification(verification);
  std::string best = verification.candidates.front().origin;
  EXPECT_NE(text.find("chosen: candidate 1 (" + best + ")"), std::string::npos)
      << text;
  EXPECT_NE(text.find("the plan that splits no table; "), std::string::npos)
      << text;
  EXPECT_NE(text.find("faster on the rounds' geometric mean ("),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("% in the median round, faster in 3 of 3 rounds)"),
            std::string::npos)
      << text;

  // A gain smaller than minGain is noise: the table-wise plan stays, though
  // the model's best plan measured faster.
  options.minGain = 1.0 - chosen.pairedRatio + 1e-9;
  PlanResult kept = result;
  ASSERT_EQ(errorMessage(verifyCandidates(kept, hotAndCold(), twoDevices(),
                                          model, timer, options)),
            "");
  EXPECT_EQ(kept.verification->chosen, tableWise);
  EXPECT_TRUE(kept.plan.shards == result.candidates[tableWise].plan.shards);
  EXPECT_FALSE(splitsATable(hotAndCold(), kept.plan));
  text = describeVerification(*kept.verification);
  EXPECT_NE(text.find("chosen: candidate " + std::to_string(tableWise + 1) +
                      " (table-greedy-grid), the plan that splits no table"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("the fastest other, candidate 1 (" + best + ")"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("within the noise, below the " +
                formatv("{0}", format("%g", 100.0 * options.minGain)).str() +
                "% gain that replaces it"),
      std::string::npos)
      << text;
  EXPECT_EQ(kept.verification->minGain, options.minGain);
}

// A gain that round-by-round timings agree on replaces the incumbent; the
// same median gain where the rounds' ratios spread over more than it does
// not, and the candidate's needed gain says why.
TEST(PlanVerificationTest, AsksTheGainTheRoundsSpreadWarrants) {
  PlanResult result = planWithCandidates(4);
  size_t tableWise = tableWiseCandidate(result);
  VerifyOptions options = leastRounds();
  FormulaTimer steady(0.0);
  steady.numDraws = 3;
  PlanResult agreed = verifiedCopy(result, steady, options);
  const PlanVerification &calm = *agreed.verification;
  ASSERT_EQ(calm.chosen, 0u);
  EXPECT_EQ(calm.roundSpread, 0.0);
  for (const CandidateMeasurement &candidate : calm.candidates)
    EXPECT_EQ(candidate.requiredGain, options.minGain);
  const CandidateMeasurement &best = calm.candidates.front();
  ASSERT_EQ(best.roundRatios.size(), 3u);
  for (double ratio : best.roundRatios)
    EXPECT_DOUBLE_EQ(ratio, best.pairedRatio);

  // The splits measure 0.7, 1.3 and 1 times the formula on the three draws:
  // the median round is the same, the rounds disagree.
  FormulaTimer noisy(0.0);
  noisy.numDraws = 3;
  noisy.splitScale = {0.7, 1.3, 1.0};
  PlanResult spread = verifiedCopy(result, noisy, options);
  const PlanVerification &verification = *spread.verification;
  const CandidateMeasurement &same = verification.candidates.front();
  EXPECT_DOUBLE_EQ(same.pairedRatio, best.pairedRatio);
  ASSERT_EQ(same.rounds, 3u);
  EXPECT_GT(verification.roundSpread, 0.1);
  // The spread's degrees of freedom are the rounds of the candidates timed
  // in more than one, less one each; the candidates racing at the end are
  // those still timed in the last round.
  unsigned freedom = 0, racing = 0;
  for (auto [i, candidate] : enumerate(verification.candidates)) {
    if (i == verification.incumbent)
      continue;
    freedom += candidate.rounds > 1 ? candidate.rounds - 1 : 0;
    racing += candidate.rounds == verification.rounds;
  }
  EXPECT_EQ(verification.spreadFreedom, freedom);
  EXPECT_EQ(verification.racing, racing);
  ASSERT_GE(racing, 1u);
  double quantile = verifySpreadQuantile(options.spreadFactor, freedom, racing);
  EXPECT_GT(quantile, options.spreadFactor);
  double needed =
      1.0 - std::exp(-quantile * verification.roundSpread / std::sqrt(3.0));
  EXPECT_DOUBLE_EQ(same.requiredGain, needed);
  ASSERT_GT(needed, 1.0 - same.pairedRatio);
  EXPECT_EQ(verification.chosen, tableWise);
  EXPECT_TRUE(spread.plan.shards == result.candidates[tableWise].plan.shards);
  EXPECT_EQ(verification.candidates[tableWise].requiredGain, options.minGain);
  std::string text = describeVerification(verification);
  EXPECT_NE(text.find(formatv("below the {0}% gain that replaces it, as its "
                              "3 rounds' ratios spread {1}% ({2} degrees of "
                              "freedom) and {3} {4} raced it",
                              format("%g", std::round(1000.0 * needed) / 10.0),
                              format("%.1f", 100.0 * verification.roundSpread),
                              freedom, racing,
                              racing == 1 ? "candidate" : "candidates")
                          .str()),
            std::string::npos)
      << text;

  // Without the spread's share, minGain alone decides, as before.
  options.spreadFactor = 0.0;
  PlanResult alone = verifiedCopy(result, noisy, options);
  EXPECT_EQ(alone.verification->chosen, 0u);
  EXPECT_EQ(alone.verification->candidates.front().requiredGain,
            options.minGain);
  text = describeVerification(*alone.verification);
  EXPECT_NE(text.find(", beyond the 2% gain it needed"), std::string::npos)
      << text;
}

// Rounds that agree with each other may share one view of the sets: where
// the model records the host's noise of measured selection, a candidate
// must gain beyond it too, however well its rounds agree.
TEST(PlanVerificationTest, AsksTheGainTheHostsNoiseWarrants) {
  PlanResult result = planWithCandidates(4);
  size_t tableWise = tableWiseCandidate(result);
  VerifyOptions options = leastRounds();
  FormulaTimer steady(0.0);
  steady.numDraws = 3;
  PlanResult agreed = verifiedCopy(result, steady, options);
  ASSERT_EQ(agreed.verification->chosen, 0u);
  EXPECT_EQ(agreed.verification->noiseGain, 0.0);
  EXPECT_EQ(agreed.verification->selectionNoiseComparisons, 0u);
  double gain = 1.0 - agreed.verification->candidates.front().meanRatio;
  ASSERT_GT(gain, options.minGain);

  // A noise whose gain is above the candidate's: the table-wise plan stays.
  SelectionNoise loud{gain, 30};
  PlanResult held = verifiedCopy(result, steady, options, loud);
  const PlanVerification &verification = *held.verification;
  EXPECT_EQ(verification.chosen, tableWise);
  EXPECT_EQ(verification.roundSpread, 0.0);
  EXPECT_EQ(verification.selectionNoise, gain);
  EXPECT_EQ(verification.selectionNoiseComparisons, 30u);
  double quantile = verifySpreadQuantile(options.spreadFactor, 30,
                                         std::max(verification.racing, 1u));
  double needed = 1.0 - std::exp(-quantile * gain);
  EXPECT_DOUBLE_EQ(verification.noiseGain, needed);
  ASSERT_GT(needed, gain);
  for (auto [i, candidate] : enumerate(verification.candidates))
    EXPECT_DOUBLE_EQ(candidate.requiredGain,
                     i == tableWise ? options.minGain : needed);
  std::string text = describeVerification(verification);
  EXPECT_NE(text.find(formatv("within the noise, below the {0}% gain that "
                              "replaces it, as measured selection on this "
                              "host strays {1}% beyond its rounds' spread (30 "
                              "comparisons at calibration)",
                              format("%g", std::round(1000.0 * needed) / 10.0),
                              format("%.1f", 100.0 * gain))
                          .str()),
            std::string::npos)
      << text;

  // With rounds that disagree, the two add up as variances: the gain asked
  // is above what either asks alone.
  FormulaTimer noisy(0.0);
  noisy.numDraws = 3;
  noisy.splitScale = {0.7, 1.3, 1.0};
  PlanResult both = verifiedCopy(result, noisy, options, loud);
  const PlanVerification &added = *both.verification;
  ASSERT_GT(added.roundSpread, 0.0);
  PlanResult spreadOnly = verifiedCopy(result, noisy, options);
  const CandidateMeasurement &first = added.candidates.front();
  ASSERT_EQ(first.rounds, 3u);
  EXPECT_GT(first.requiredGain, added.noiseGain);
  EXPECT_GT(first.requiredGain,
            spreadOnly.verification->candidates.front().requiredGain);
  double variance = added.roundSpread * added.roundSpread / 3.0 + gain * gain;
  EXPECT_LT(first.requiredGain, 1.0 - std::exp(-3.0 * std::sqrt(variance)));
  text = describeVerification(added);
  EXPECT_NE(text.find(formatv("as its 3 rounds' ratios spread {0}% ({1} "
                              "degrees of freedom) and measured selection on "
                              "this host strays {2}% beyond its rounds' "
                              "spread (30 comparisons at calibration)",
                              format("%.1f", 100.0 * added.roundSpread),
                              added.spreadFreedom, format("%.1f", 100.0 * gain))
                          .str()),
            std::string::npos)
      << text;

  // A quiet host's noise asks less than the gain: the candidate is chosen.
  PlanResult quiet =
      verifiedCopy(result, steady, options, SelectionNoise{gain / 4.0, 30});
  EXPECT_EQ(quiet.verification->chosen, 0u);
  EXPECT_LT(quiet.verification->noiseGain, gain);

  // A spread factor of 0 asks nothing of the noise either.
  options.spreadFactor = 0.0;
  PlanResult unasked = verifiedCopy(result, steady, options, loud);
  EXPECT_EQ(unasked.verification->chosen, 0u);
  EXPECT_EQ(unasked.verification->noiseGain, 0.0);
}

// The gain is judged on the geometric mean of the rounds' ratios, whose
// standard error the spread gives: a candidate faster in the median round
// whose other rounds undo the gain stays out.
TEST(PlanVerificationTest, JudgesTheGainOnTheMeanOfTheRounds) {
  PlanResult result = planWithCandidates(4);
  size_t tableWise = tableWiseCandidate(result);
  VerifyOptions options = leastRounds();
  options.spreadFactor = 0.0;
  FormulaTimer steady(0.0);
  steady.numDraws = 3;
  PlanResult agreed = verifiedCopy(result, steady, options);
  ASSERT_EQ(agreed.verification->chosen, 0u);
  double ratio = agreed.verification->candidates.front().pairedRatio;
  EXPECT_DOUBLE_EQ(agreed.verification->candidates.front().meanRatio, ratio);
  ASSERT_LT(ratio, 1.0 - options.minGain);

  // Two draws as the model prices them, the third slow enough for the split
  // that the three rounds' geometric mean is below the incumbent by less
  // than the 2% that replaces it (the model's communication, which the
  // scale leaves alone, keeps it from 1% exactly).
  FormulaTimer uneven(0.0);
  uneven.numDraws = 3;
  uneven.splitScale = {1.0, 1.0, 0.99 / (ratio * ratio * ratio)};
  PlanResult undone = verifiedCopy(result, uneven, options);
  const PlanVerification &verification = *undone.verification;
  const CandidateMeasurement &best = verification.candidates.front();
  ASSERT_EQ(best.rounds, 3u);
  EXPECT_EQ(best.roundsFaster, 2u);
  EXPECT_DOUBLE_EQ(best.pairedRatio, ratio);
  EXPECT_GT(best.meanRatio, 1.0 - options.minGain);
  EXPECT_LT(best.meanRatio, 1.0);
  EXPECT_EQ(verification.chosen, tableWise);
  EXPECT_FALSE(splitsATable(hotAndCold(), undone.plan));
  std::string text = describeVerification(verification);
  EXPECT_NE(text.find(formatv("{0}% faster on the rounds' geometric mean "
                              "({1}% in the median round, faster in 2 of 3 "
                              "rounds): within the noise, below the 2% gain "
                              "that replaces it",
                              format("%.1f", 100.0 * (1.0 - best.meanRatio)),
                              format("%.1f", 100.0 * (1.0 - ratio)))
                          .str()),
            std::string::npos)
      << text;
}

// The spread factor is a one-sided normal tail: read off Student's t for
// the spread's degrees of freedom and shared among the candidates that
// could be chosen. With many rounds and one candidate it is the factor.
TEST(PlanVerificationTest, SpreadQuantileWidensForFewRoundsAndManyRacers) {
  EXPECT_NEAR(verifySpreadQuantile(2.0, 100000, 1), 2.0, 1e-3);
  // A 2.3% tail: 2.28 for 10 degrees of freedom, 2.52 for 6, 3.31 for 3.
  EXPECT_NEAR(verifySpreadQuantile(2.0, 10, 1), 2.28, 0.01);
  EXPECT_NEAR(verifySpreadQuantile(2.0, 6, 1), 2.52, 0.01);
  EXPECT_NEAR(verifySpreadQuantile(2.0, 3, 1), 3.31, 0.01);
  // Shared among 4 candidates: the normal point of a 0.57% tail.
  EXPECT_NEAR(verifySpreadQuantile(2.0, 100000, 4), 2.53, 0.01);
  EXPECT_GT(verifySpreadQuantile(2.0, 6, 2), verifySpreadQuantile(2.0, 6, 1));
  EXPECT_GT(verifySpreadQuantile(2.0, 6, 1), verifySpreadQuantile(2.0, 12, 1));
  // No racer counts as one; no spread or no factor asks for nothing.
  EXPECT_EQ(verifySpreadQuantile(2.0, 6, 0), verifySpreadQuantile(2.0, 6, 1));
  EXPECT_EQ(verifySpreadQuantile(2.0, 0, 3), 0.0);
  EXPECT_EQ(verifySpreadQuantile(0.0, 6, 3), 0.0);
  // The largest factor asks for a finite quantile.
  EXPECT_TRUE(
      std::isfinite(verifySpreadQuantile(kMaxVerifySpreadFactor, 1, 64)));
}

TEST(PlanVerificationTest, WithoutATableWiseCandidateTheModelsBestIsIncumbent) {
  // One candidate: the model's best, which stays.
  PlanResult result = planWithCandidates(1);
  ASSERT_EQ(result.candidates.size(), 1u);
  ShardingPlan modelsChoice = result.plan;
  SliceCostModel model;
  FormulaTimer timer(1000.0);
  ASSERT_EQ(errorMessage(verifyCandidates(result, hotAndCold(), twoDevices(),
                                          model, timer, VerifyOptions())),
            "");
  EXPECT_EQ(result.verification->incumbent, 0u);
  EXPECT_EQ(result.verification->chosen, 0u);
  EXPECT_TRUE(result.plan.shards == modelsChoice.shards);
  EXPECT_NE(describeVerification(*result.verification)
                .find("chosen: the model's best plan (" +
                      result.candidates.front().origin + ")"),
            std::string::npos);

  // Without the table-wise plan, the others are compared with the model's
  // best.
  PlanResult several = planWithCandidates(4);
  size_t tableWise = tableWiseCandidate(several);
  several.candidates.erase(several.candidates.begin() + tableWise);
  ASSERT_GE(several.candidates.size(), 2u);
  ASSERT_EQ(errorMessage(verifyCandidates(several, hotAndCold(), twoDevices(),
                                          model, timer, VerifyOptions())),
            "");
  const PlanVerification &verification = *several.verification;
  EXPECT_EQ(verification.incumbent, 0u);
  for (const CandidateMeasurement &candidate : verification.candidates)
    EXPECT_DOUBLE_EQ(candidate.pairedRatio,
                     candidate.measured.maxMs /
                         verification.candidates[0].measured.maxMs);
}

TEST(PlanVerificationTest, RoundsAreInterleavedAndBounded) {
  PlanResult result = planWithCandidates(4);
  SliceCostModel model;
  VerifyOptions options;
  // All the time in the world: the most rounds, the least a choice needs
  // or more.
  options.seconds = 1e9;
  for (unsigned rounds : {3u, 7u}) {
    FormulaTimer timer(0.0);
    options.maxRounds = rounds;
    PlanResult copy = result;
    ASSERT_EQ(errorMessage(verifyCandidates(copy, hotAndCold(), twoDevices(),
                                            model, timer, options)),
              "");
    size_t sets = timer.setMs.size();
    EXPECT_EQ(copy.verification->rounds, rounds);
    EXPECT_EQ(copy.verification->roundsNeeded, 3u);
    EXPECT_FALSE(copy.verification->budgetCut);
    // The first round times every set once (none is untimed), starting
    // with the first candidate's first device, and the next round starts
    // elsewhere; after the race's rounds, a round times fewer sets.
    ASSERT_GT(timer.order.size(), sets * options.raceRounds);
    ASSERT_LT(timer.order.size(), sets * rounds);
    std::vector<size_t> first(timer.order.begin(), timer.order.begin() + sets);
    EXPECT_EQ(std::set<size_t>(first.begin(), first.end()).size(), sets);
    CandidateSets distinct = distinctDeviceSets(result.candidates, 2);
    EXPECT_EQ(first.front(), distinct.setOf[0][0]);
    EXPECT_NE(timer.order[sets], first.front());
  }
}

// After the first round, which times every set, a round starts only where
// the times its sets took say it ends within the budget. Where the budget
// does not buy the rounds a choice needs while a candidate races, the
// incumbent stays, however fast the other measured, and the report says
// what the rounds would take.
TEST(PlanVerificationTest, KeepsToTheBudget) {
  PlanResult result = planWithCandidates(4);
  size_t tableWise = tableWiseCandidate(result);
  // Measured as the model prices them, the model's best is faster in every
  // round (ComparesRoundByRoundWithThePlanThatSplitsNothing); each timing
  // takes 5 ms, and a budget of 1 ms buys the first round alone.
  FormulaTimer timer(0.0);
  timer.pause = std::chrono::milliseconds(5);
  VerifyOptions options;
  options.seconds = 0.001;
  PlanResult cut = verifiedCopy(result, timer, options);
  ASSERT_TRUE(cut.verification);
  const PlanVerification &verification = *cut.verification;
  size_t sets = verification.sets.size();
  EXPECT_EQ(verification.rounds, 1u);
  EXPECT_EQ(timer.order.size(), sets);
  EXPECT_EQ(verification.roundsNeeded, 3u);
  EXPECT_TRUE(verification.budgetCut);
  const CandidateMeasurement &best = verification.candidates.front();
  EXPECT_LT(best.meanRatio, 1.0 - options.minGain);
  EXPECT_EQ(verification.chosen, tableWise);
  EXPECT_FALSE(splitsATable(hotAndCold(), cut.plan));
  // The two rounds left, at the cost of the one that did not start (at
  // least one timing), on top of the first.
  EXPECT_GE(verification.neededSeconds, verification.timedSeconds + 2 * 0.005);
  std::string text = describeVerification(verification);
  EXPECT_NE(
      text.find(formatv("the budget ran out after 1 of the 3 rounds a "
                        "choice needs (one per draw of the inputs), "
                        "which would take about {0} s of timing, so no "
                        "other candidate could replace it; the fastest "
                        "other, candidate 1 ({1}), was ",
                        format("%.1f", verification.neededSeconds), best.origin)
                    .str()),
      std::string::npos)
      << text;

  // A budget the rounds fit in: the three, and the model's best.
  FormulaTimer roomy(0.0);
  roomy.pause = std::chrono::milliseconds(5);
  options.seconds = 1e9;
  options.maxRounds = 3;
  PlanResult chosen = verifiedCopy(result, roomy, options);
  EXPECT_EQ(chosen.verification->rounds, 3u);
  EXPECT_FALSE(chosen.verification->budgetCut);
  EXPECT_EQ(chosen.verification->neededSeconds, 0.0);
  EXPECT_EQ(chosen.verification->chosen, 0u);

  // Where no candidate races after the first round, the budget cuts
  // nothing short: the incumbent is the choice either way.
  FormulaTimer alike(0.0);
  alike.pause = std::chrono::milliseconds(5);
  alike.fixedMs = 1.0;
  alike.perSliceMs = 0.0;
  options.seconds = 0.001;
  options.dropMargin = -1.0;
  PlanResult settled = verifiedCopy(result, alike, options);
  EXPECT_EQ(settled.verification->rounds, 1u);
  EXPECT_FALSE(settled.verification->budgetCut);
  EXPECT_EQ(settled.verification->chosen, settled.verification->incumbent);
}

// A round deals the candidates' sets out in turn: every candidate has a
// set among the round's first timings, so that a slow spell of the host
// during part of a round does not fall on one candidate's sets alone.
TEST(PlanVerificationTest, RoundsDealOutTheCandidatesSets) {
  PlanResult result = planWithCandidates(4);
  VerifyOptions options = leastRounds();
  FormulaTimer timer(0.0);
  ASSERT_TRUE(verifiedCopy(result, timer, options).verification);
  CandidateSets distinct = distinctDeviceSets(result.candidates, 2);
  size_t k = result.candidates.size(), sets = distinct.sets.size();
  ASSERT_GE(k, 3u);
  // Candidates that share no set with those before them: their sets would
  // have come last, one after another, in the order of distinctDeviceSets.
  ASSERT_GE(sets, k + 2);
  ASSERT_GE(timer.order.size(), sets);
  std::vector<size_t> first(timer.order.begin(), timer.order.begin() + sets);
  for (size_t c = 0; c < k; ++c) {
    size_t earliest = sets;
    for (const std::optional<size_t> &set : distinct.setOf[c])
      if (set)
        earliest = std::min<size_t>(
            earliest,
            std::find(first.begin(), first.end(), *set) - first.begin());
    EXPECT_LT(earliest, k) << "candidate " << c;
  }
}

// After the first rounds only the incumbent's sets and those of the
// candidates faster than it are timed, and where none is left the
// rounds stop, whatever the budget.
TEST(PlanVerificationTest, RacesOnlyTheCandidatesThatMayWin) {
  PlanResult result = planWithCandidates(4);
  VerifyOptions options;
  options.seconds = 1e9;
  options.minRounds = 3;
  options.maxRounds = 7;
  // Every set alike: no candidate measures faster than the incumbent, and
  // after the race's rounds none is left.
  FormulaTimer slow(0.0);
  slow.fixedMs = 1.0;
  PlanResult copy = verifiedCopy(result, slow, options);
  ASSERT_TRUE(copy.verification);
  EXPECT_EQ(copy.verification->rounds, options.raceRounds);
  EXPECT_EQ(copy.verification->chosen, copy.verification->incumbent);
  size_t sets = copy.verification->sets.size();
  EXPECT_EQ(slow.order.size(), options.raceRounds * sets);
  for (const CandidateMeasurement &candidate : copy.verification->candidates)
    EXPECT_EQ(candidate.rounds, options.raceRounds);

  // Measured as the model prices them: the model's best is faster and
  // races to the end; after the race's rounds, a round times only sets of
  // it and of the incumbent.
  FormulaTimer timer(0.0);
  PlanResult raced = verifiedCopy(result, timer, options);
  ASSERT_TRUE(raced.verification);
  const PlanVerification &verification = *raced.verification;
  EXPECT_EQ(verification.rounds, options.maxRounds);
  // The sets are in distinctDeviceSets' order.
  CandidateSets distinct = distinctDeviceSets(result.candidates, 2);
  ASSERT_EQ(distinct.sets.size(), verification.sets.size());
  std::set<size_t> racingSets;
  for (auto [c, candidate] : enumerate(verification.candidates))
    if (c == verification.incumbent || candidate.rounds == verification.rounds)
      for (const std::optional<size_t> &set : distinct.setOf[c])
        if (set)
          racingSets.insert(*set);
  EXPECT_LT(racingSets.size(), verification.sets.size());
  size_t firstRounds = verification.sets.size() * options.raceRounds;
  ASSERT_GT(timer.order.size(), firstRounds);
  for (size_t i = firstRounds; i < timer.order.size(); ++i)
    EXPECT_TRUE(racingSets.count(timer.order[i])) << i;
}

// A set that, at the medians so far, is well below the slowest device of
// every racing candidate holding it is timed only in the first round.
TEST(PlanVerificationTest, TimesAgainOnlyTheSetsThatDecide) {
  PlanResult result = planWithCandidates(4);
  size_t tableWise = tableWiseCandidate(result);
  VerifyOptions options = leastRounds();
  // The table-wise plan holds the hot table (cost 256) on one device and
  // the three others (128) on the other: only the hot set decides its
  // price.
  auto runsOfTableWise = [&](double margin) {
    options.decidingMargin = margin;
    FormulaTimer timer(0.0);
    PlanResult copy = verifiedCopy(result, timer, options);
    if (!copy.verification)
      return std::map<size_t, unsigned>();
    CandidateSets distinct = distinctDeviceSets(result.candidates, 2);
    std::map<size_t, unsigned> runsByTables;
    for (const std::optional<size_t> &set : distinct.setOf[tableWise])
      if (set)
        runsByTables[distinct.sets[*set].size()] =
            copy.verification->sets[*set].runs;
    EXPECT_EQ(copy.verification->rounds, 3u);
    return runsByTables;
  };
  std::map<size_t, unsigned> runs = runsOfTableWise(0.15);
  EXPECT_EQ(runs, (std::map<size_t, unsigned>{{1, 3u}, {3, 1u}}));
  // With a margin of 1, every set of a racing candidate is timed in every
  // round.
  runs = runsOfTableWise(1.0);
  EXPECT_EQ(runs, (std::map<size_t, unsigned>{{1, 3u}, {3, 3u}}));
}

// Round r times draw r mod draws() of the inputs, at least one round per
// draw: a candidate faster on one draw and slower on the others does not
// replace the incumbent, though timed on that one draw it would.
TEST(PlanVerificationTest, RoundsGoThroughTheDrawsOfTheInputs) {
  PlanResult result = planWithCandidates(4);
  SliceCostModel model;
  VerifyOptions options = leastRounds();
  options.minRounds = 1;
  // Measured as the model prices them on draw 0, where the model's best
  // (which halves the hot table) wins; a set holding half a table takes
  // twice as long on draws 1 and 2.
  FormulaTimer timer(0.0);
  timer.numDraws = 3;
  timer.splitScale = {1.0, 2.0, 2.0};
  PlanResult copy = result;
  ASSERT_EQ(errorMessage(verifyCandidates(copy, hotAndCold(), twoDevices(),
                                          model, timer, options)),
            "");
  const PlanVerification &verification = *copy.verification;
  // The first round on draw 0, the second on draw 1, after which the
  // model's best is not faster in the median round and the rounds stop.
  EXPECT_EQ(verification.rounds, 2u);
  EXPECT_EQ(verification.draws, 2u);
  size_t sets = timer.setMs.size();
  ASSERT_GT(timer.drawOrder.size(), sets);
  for (auto [i, draw] : enumerate(timer.drawOrder))
    EXPECT_EQ(draw, i < sets ? 0u : 1u) << i;
  EXPECT_EQ(verification.chosen, verification.incumbent);
  EXPECT_FALSE(splitsATable(hotAndCold(), copy.plan));
  const CandidateMeasurement &best = verification.candidates.front();
  EXPECT_GT(best.pairedRatio, 1.0);
  EXPECT_EQ(best.roundsFaster, 1u);

  // Timed on draw 0 alone, the model's best is chosen.
  FormulaTimer oneDraw(0.0);
  oneDraw.splitScale = timer.splitScale;
  PlanResult single = result;
  ASSERT_EQ(errorMessage(verifyCandidates(single, hotAndCold(), twoDevices(),
                                          model, oneDraw, options)),
            "");
  EXPECT_EQ(single.verification->draws, 1u);
  EXPECT_EQ(single.verification->chosen, 0u);
  EXPECT_TRUE(splitsATable(hotAndCold(), single.plan));
}

TEST(PlanVerificationTest, ReportsWhatCannotBeTimed) {
  PlanResult result = planWithCandidates(4);
  SliceCostModel model;
  FormulaTimer timer(0.0);
  timer.refuse = true;
  EXPECT_EQ(errorMessage(verifyCandidates(result, hotAndCold(), twoDevices(),
                                          model, timer, VerifyOptions())),
            "no memory");
  PlanResult none;
  EXPECT_EQ(errorMessage(verifyCandidates(none, hotAndCold(), twoDevices(),
                                          model, timer, VerifyOptions())),
            "verification needs the search's candidates");
}

TEST(PlanVerificationTest, WhereItApplies) {
  EXPECT_FALSE(AnalyticalCostModel().provenance().measuredOnThisHost);
  EXPECT_EQ(checkVerifyTop(0, Algorithm::SizeGreedy), std::nullopt);
  EXPECT_EQ(checkVerifyTop(4, Algorithm::SizeGreedy),
            "verifying candidates needs the neuroshard algorithm, which keeps "
            "them; size-greedy makes one plan");
  EXPECT_EQ(checkVerifySeconds(5.0), std::nullopt);
  EXPECT_EQ(checkVerifySeconds(-1.0),
            "must be between 0 and 3600 seconds, got -1");
  SearchOptions options;
  options.keepCandidates = 65;
  EXPECT_EQ(errorMessage(validateSearchOptions(options)),
            "verify-top must be between 0 and 64, got 65");
}

TEST(PlanVerificationTest, ParsesTheCount) {
  Expected<std::optional<unsigned>> automatic = parseVerifyTop("auto");
  ASSERT_TRUE(bool(automatic));
  EXPECT_EQ(*automatic, std::nullopt);
  Expected<std::optional<unsigned>> four = parseVerifyTop("4");
  ASSERT_TRUE(bool(four));
  EXPECT_EQ(*four, 4u);
  for (StringRef bad : {"65", "-1", "four", ""}) {
    Expected<std::optional<unsigned>> parsed = parseVerifyTop(bad);
    EXPECT_EQ(errorMessage(parsed),
              ("expected 'auto' or a count of candidates from 0 to 64, got '" +
               bad + "'")
                  .str());
  }
}

/// A SetTimer factory that makes FormulaTimers with a price per slice.
Expected<std::unique_ptr<SetTimer>> makeFormulaTimer() {
  return std::make_unique<FormulaTimer>(1000.0);
}

/// Installs a SetTimer factory (makeFormulaTimer unless told) while alive.
struct TimerInstalled {
  explicit TimerInstalled(SetTimerFactory factory = makeFormulaTimer) {
    registerSetTimerFactory(factory);
  }
  ~TimerInstalled() { registerSetTimerFactory(nullptr); }
};

TEST(PlanVerificationTest, AutoVerifiesWhereItApplies) {
  Topology cpu = twoDevices();
  cpu.deviceKind = "cpu";
  SliceCostModel model;
  model.describesHost = true;
  auto resolve = [&](std::optional<unsigned> top, const Topology &topology,
                     Algorithm algorithm = Algorithm::NeuroShard) {
    Expected<unsigned> count =
        resolveVerifyTop(top, algorithm, topology, model);
    return count ? std::to_string(*count) : errorMessage(count.takeError());
  };
  // No program to time with: auto is off, a count is refused.
  EXPECT_EQ(resolve(std::nullopt, cpu), "0");
  EXPECT_EQ(*whyNotVerified(Algorithm::NeuroShard, cpu, model),
            "this program links no kernels to time device sets with (see "
            "registerSetTimerFactory)");
  EXPECT_EQ(resolve(4, cpu),
            *whyNotVerified(Algorithm::NeuroShard, cpu, model));
  TimerInstalled installed;
  EXPECT_EQ(whyNotVerified(Algorithm::NeuroShard, cpu, model), std::nullopt);
  EXPECT_EQ(resolve(std::nullopt, cpu), "4");
  EXPECT_EQ(resolve(2, cpu), "2");
  EXPECT_EQ(resolve(0, cpu), "0");
  // A GPU plan: auto is off, a count is refused by the device kind.
  EXPECT_EQ(resolve(std::nullopt, twoDevices()), "0");
  EXPECT_EQ(*whyNotVerified(Algorithm::NeuroShard, twoDevices(), model),
            "the plan is for device kind 'gpu', not for this machine's CPU");
  EXPECT_EQ(resolve(4, twoDevices()),
            "the candidates are timed with this machine's CPU kernels, but the "
            "plan is for device kind 'gpu'; plan for device kind cpu to verify "
            "a plan meant for CPU execution");
  // Another algorithm: auto is off, a count is refused.
  EXPECT_EQ(resolve(std::nullopt, cpu, Algorithm::SizeGreedy), "0");
  EXPECT_EQ(resolve(4, cpu, Algorithm::SizeGreedy),
            "verifying candidates needs the neuroshard algorithm, which keeps "
            "them; size-greedy makes one plan");
  // A model of another machine: auto is off, a count verifies.
  model.describesHost = false;
  EXPECT_EQ(resolve(std::nullopt, cpu), "0");
  EXPECT_EQ(*whyNotVerified(Algorithm::NeuroShard, cpu, model),
            "cost model 'slice-test' does not describe this machine");
  EXPECT_EQ(resolve(4, cpu), "4");
}

/// The message of a planning error, "" for a plan.
std::string planError(Expected<PlanResult> result) {
  return errorMessage(result);
}

/// A fresh directory under the system's temporary directory.
std::string freshDirectory() {
  SmallString<128> dir;
  EXPECT_FALSE(sys::fs::createUniqueDirectory("neuroshard-verify", dir));
  return std::string(dir);
}

TEST(PlanVerificationTest, ExperienceGoesNextToTheUsersBundle) {
  SliceCostModel model;
  EXPECT_EQ(experiencePath("", model), "");
  EXPECT_EQ(experiencePath("none", model), "");
  EXPECT_EQ(experiencePath("x.jsonl", model), "x.jsonl");
  model.bundle = freshDirectory();
  SmallString<128> expected(model.bundle);
  sys::path::append(expected, "experience.jsonl");
  EXPECT_EQ(experiencePath("", model), expected);
  EXPECT_EQ(experiencePath("none", model), "");
  // A shipped bundle (in a directory "default" searches) gets none.
  SmallString<128> shipped(model.bundle);
  sys::path::append(shipped, "models");
  SmallString<128> bundle(shipped);
  sys::path::append(bundle, "cpu-test");
  ASSERT_FALSE(sys::fs::create_directories(bundle));
  model.bundle = std::string(bundle);
  EXPECT_EQ(experiencePath("", model), (bundle + "/experience.jsonl").str());
  addDefaultModelSearchDir(shipped);
  EXPECT_EQ(experiencePath("", model), "");
  sys::fs::remove_directories(sys::path::parent_path(shipped));
}

/// Plans `tables` on two CPU devices with measured selection of 2
/// candidates, appending what it times to `bundle`'s experience file when
/// one is given.
Expected<PlanResult> verifyOnTwoCPUs(ArrayRef<TableSpec> tables,
                                     SliceCostModel &model,
                                     StringRef bundle = "") {
  Topology cpu = twoDevices();
  cpu.deviceKind = "cpu";
  model.describesHost = true;
  model.bundle = bundle.str();
  VerifyRequest request;
  request.top = 2;
  request.options.seconds = 0.0;
  request.experience = bundle.empty() ? "none" : "";
  auto spell = [](StringRef name) { return "--" + name.str(); };
  return planWithVerification(tables, cpu, SearchOptions(), model, request,
                              spell);
}

// Row pieces are timed with their blocks of the whole batch's lookups, and
// the experience file records them as the model sees them: a table of
// their rows with their share of the lookups.
TEST(PlanVerificationTest, VerifiesPlansWithRowPieces) {
  std::vector<TableSpec> tables = hotAndCold();
  tables[0].shardingKinds = kindBit(ShardingKind::RowWise);
  SliceCostModel model;
  TimerInstalled installed;
  std::string bundle = freshDirectory();
  Expected<PlanResult> result = verifyOnTwoCPUs(tables, model, bundle);
  ASSERT_EQ(errorMessage(result), "");
  ASSERT_TRUE(result->verification);
  EXPECT_TRUE(result->warnings.empty());
  const ColumnSlice *piece = nullptr;
  size_t pieceSet = 0;
  for (auto [k, set] : llvm::enumerate(result->verification->sets))
    for (const ColumnSlice &slice : set.slices)
      if (!slice.allRows() && !piece) {
        piece = &slice;
        pieceSet = k;
      }
  ASSERT_TRUE(piece) << "no candidate timed a row piece";
  ErrorOr<std::unique_ptr<MemoryBuffer>> file =
      MemoryBuffer::getFile(result->verification->experiencePath);
  ASSERT_TRUE(bool(file));
  SmallVector<StringRef> lines;
  (*file)->getBuffer().trim().split(lines, '\n');
  ASSERT_EQ(lines.size(), result->verification->sets.size());
  Expected<json::Value> value = json::parse(lines[pieceSet]);
  ASSERT_EQ(errorMessage(value.takeError()), "");
  const json::Array *entries = value->getAsObject()->getArray("tables");
  ASSERT_TRUE(entries);
  const auto &slices = result->verification->sets[pieceSet].slices;
  size_t at = std::find(slices.begin(), slices.end(), *piece) - slices.begin();
  const json::Object &entry = *(*entries)[at].getAsObject();
  const TableSpec &table = tables[piece->table];
  EXPECT_EQ(entry.getString("name"), table.name);
  EXPECT_EQ(entry.getInteger("rows"), piece->numRows(table));
  EXPECT_LT(*entry.getInteger("rows"), table.rows);
  EXPECT_DOUBLE_EQ(*entry.getNumber("pooling_factor"),
                   table.poolingFactor * piece->rowShare(table));
  sys::fs::remove_directories(bundle);
}

// A replica looks up its device's slice of the batch, which the timing
// kernels do not run: such a plan is returned unverified, with a warning.
TEST(PlanVerificationTest, LeavesPlansWithReplicasUnverified) {
  std::vector<TableSpec> tables = hotAndCold();
  tables[0].shardingKinds = kindBit(ShardingKind::DataParallel);
  SliceCostModel model;
  TimerInstalled installed;
  Expected<PlanResult> result = verifyOnTwoCPUs(tables, model);
  ASSERT_EQ(errorMessage(result), "");
  ASSERT_TRUE(llvm::any_of(result->plan.shards,
                           [](const Shard &shard) { return shard.replica; }));
  EXPECT_FALSE(result->verification);
  ASSERT_EQ(result->warnings.size(), 1u);
  EXPECT_EQ(result->warnings[0],
            "the plan has replicas, which look up a slice of the batch the "
            "kernels that time candidates do not run: it was not verified");
}

/// A SetTimer factory whose kernels do not compile.
Expected<std::unique_ptr<SetTimer>> makeNoTimer() {
  return createStringError(inconvertibleErrorCode(),
                           "the kernels did not compile");
}

// The timer is made on a thread of its own while the search runs: its
// error is the plan's when candidates are to be timed, and nothing when
// the plan is not verified after all.
TEST(PlanVerificationTest, MakesTheTimerBesideTheSearch) {
  TimerInstalled installed(makeNoTimer);
  SliceCostModel model;
  EXPECT_EQ(planError(verifyOnTwoCPUs(hotAndCold(), model)),
            "the kernels did not compile");
  std::vector<TableSpec> replicated = hotAndCold();
  replicated[0].shardingKinds = kindBit(ShardingKind::DataParallel);
  Expected<PlanResult> result = verifyOnTwoCPUs(replicated, model);
  ASSERT_EQ(errorMessage(result), "");
  EXPECT_FALSE(result->verification);
}

TEST(PlanVerificationTest, PlansVerifiesAndAppendsTheSets) {
  std::vector<TableSpec> tables = hotAndCold();
  tables[1].moreFeatures.push_back({3.0, tables[1].accessHist});
  Topology cpu = twoDevices();
  cpu.deviceKind = "cpu";
  SliceCostModel model;
  model.describesHost = true;
  model.bundle = freshDirectory();
  TimerInstalled installed;
  VerifyRequest request;
  request.options.seconds = 0.0;
  auto spell = [](StringRef name) { return "--" + name.str(); };
  Expected<PlanResult> result =
      planWithVerification(tables, cpu, SearchOptions(), model, request, spell);
  ASSERT_EQ(errorMessage(result), "");
  ASSERT_TRUE(result->verification);
  // Four of the search's and another baseline's (PlanCandidatesTest).
  EXPECT_EQ(result->candidates.size(), 5u);
  EXPECT_TRUE(result->warnings.empty());
  // The price per slice the model does not know makes a table-wise plan
  // measure fastest.
  EXPECT_FALSE(splitsATable(tables, result->plan));
  const PlanVerification &verification = *result->verification;
  SmallString<128> path(model.bundle);
  sys::path::append(path, "experience.jsonl");
  EXPECT_EQ(verification.experiencePath, path);

  // Twice: the file grows by one line per set each time.
  ASSERT_EQ(planError(planWithVerification(tables, cpu, SearchOptions(), model,
                                           request, spell)),
            "");
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(file));
  SmallVector<StringRef> lines;
  (*file)->getBuffer().trim().split(lines, '\n');
  ASSERT_EQ(lines.size(), 2 * verification.sets.size());
  for (auto [line, set] : zip(lines, verification.sets)) {
    Expected<json::Value> value = json::parse(line);
    ASSERT_EQ(errorMessage(value.takeError()), "");
    const json::Object &entry = *value->getAsObject();
    EXPECT_EQ(entry.getString("format"), "neuroshard-experience");
    EXPECT_EQ(entry.getInteger("version"), 1);
    EXPECT_EQ(entry.getString("hardware"), "test host");
    EXPECT_EQ(entry.getString("device"), "cpu");
    EXPECT_EQ(entry.getInteger("batch_size"), 1024);
    EXPECT_EQ(entry.getString("bundle"), "slice-test");
    EXPECT_EQ(entry.getNumber("cost_ms"), set.medianMs);
    EXPECT_EQ(entry.getNumber("min_ms"), set.minMs);
    EXPECT_EQ(entry.getNumber("max_ms"), set.maxMs);
    EXPECT_EQ(entry.getInteger("runs"), int64_t(set.runs));
    EXPECT_EQ(entry.getNumber("predicted_ms"), set.predictedMs);
    // One entry per lookup: table b is looked up twice.
    size_t lookups = 0;
    for (const ColumnSlice &slice : set.slices)
      lookups += tables[slice.table].numFeatures();
    const json::Array *entries = entry.getArray("tables");
    ASSERT_TRUE(entries);
    ASSERT_EQ(entries->size(), lookups);
    const json::Object &first = *(*entries)[0].getAsObject();
    const TableSpec &table = tables[set.slices[0].table];
    EXPECT_EQ(first.getString("name"), table.name);
    EXPECT_EQ(first.getInteger("rows"), table.rows);
    EXPECT_EQ(first.getInteger("dim"), set.slices[0].width());
    EXPECT_EQ(first.getNumber("pooling_factor"), table.poolingFactor);
    EXPECT_EQ(first.getArray("access_hist")->size(), kNumAccessBins);
  }

  // A file that cannot be written is named; nothing is planned silently.
  request.experience = model.bundle + "/no/such/dir/e.jsonl";
  EXPECT_NE(planError(planWithVerification(tables, cpu, SearchOptions(), model,
                                           request, spell))
                .find("cannot append the verified sets to the experience "
                      "file '" +
                      request.experience + "'"),
            std::string::npos);
  // Options are named as the front end spells them.
  request.options.seconds = -2.0;
  EXPECT_EQ(planError(planWithVerification(tables, cpu, SearchOptions(), model,
                                           request, spell)),
            "--verify-seconds: must be between 0 and 3600 seconds, got -2");
  request.options.seconds = 0.0;
  request.top = 3;
  Topology gpu = twoDevices();
  EXPECT_NE(planError(planWithVerification(tables, gpu, SearchOptions(), model,
                                           request, spell))
                .find("--verify-top: the candidates are timed with this "
                      "machine's CPU kernels"),
            std::string::npos);
  // A model of another machine still verifies a given count, and says so.
  model.describesHost = false;
  request.experience = "none";
  result =
      planWithVerification(tables, cpu, SearchOptions(), model, request, spell);
  ASSERT_EQ(errorMessage(result), "");
  EXPECT_EQ(result->verification->experiencePath, "");
  ASSERT_EQ(result->warnings.size(), 1u);
  EXPECT_NE(result->warnings[0].find("which cost model 'slice-test' does not "
                                     "describe"),
            std::string::npos);
  sys::fs::remove_directories(model.bundle);
}

// The front ends' entry adds the expected slowest device to the plans it
// returns, planned or priced, as pricePlan does.
TEST(PlanWithVerification, PlannedAndPricedPlansCarryTheExpectedSlowest) {
  std::vector<TableSpec> tables = {makeTable("a", 1000, 8, 2.0),
                                   makeTable("b", 1000, 8, 1.0),
                                   makeTable("c", 1000, 8, 1.0)};
  Topology topology = Topology::uniform(2, 1);
  SliceCostModel model;
  model.error = ComputeError{0.01, 0.1};
  SearchOptions options;
  options.algorithm = Algorithm::TableGreedyGrid;
  VerifyRequest request;
  request.top = 0;
  request.experience = "none";
  Expected<PlanResult> planned =
      planWithVerification(tables, topology, options, model, request,
                           [](StringRef option) { return option.str(); });
  ASSERT_TRUE(static_cast<bool>(planned)) << errorMessage(planned);
  ASSERT_TRUE(planned->expected.has_value());
  // Both devices are predicted at 16 ms: the expected slowest lies above.
  EXPECT_DOUBLE_EQ(planned->expected->predictedMs, 16.0);
  EXPECT_NEAR(planned->expected->computeMs,
              expectedSlowestMs({16.0, 16.0}, {0.01, 0.1}), 1e-12);
  EXPECT_GT(planned->expected->computeMs, 16.0 * std::exp(0.01));

  PlanFile given;
  given.plan = planned->plan;
  given.devices = 2;
  Expected<PlanResult> priced = pricePlan(tables, topology, given, model);
  ASSERT_TRUE(static_cast<bool>(priced)) << errorMessage(priced);
  ASSERT_TRUE(priced->expected.has_value());
  EXPECT_DOUBLE_EQ(priced->expected->computeMs, planned->expected->computeMs);
}

} // namespace
