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

#include "TestProblems.h"

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/PlanVerification.h"

#include "gtest/gtest.h"

#include <set>

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
    for (const std::vector<ColumnSlice> &set : sets) {
      double ms = 0.0;
      for (const ColumnSlice &slice : set)
        ms += slice.width() * tables[slice.table].poolingFactor + perSliceMs;
      setMs.push_back(ms);
    }
    return Error::success();
  }
  double time(size_t index) override {
    order.push_back(index);
    return setMs[index];
  }
  std::string host() const override { return "test host"; }

  double perSliceMs;
  bool refuse = false;
  int64_t preparedBatch = 0;
  std::vector<double> setMs;
  std::vector<size_t> order;
};

/// One hot table beside three cold ones on 2 devices: the model (no price
/// per slice) halves the hot one; a price of 1000 per slice measured makes
/// every split cost more than it balances.
std::vector<TableSpec> hotAndCold() {
  return {makeTable("hot", 1000, 64, 4.0), makeTable("b", 1000, 64, 1.0),
          makeTable("c", 1000, 32, 1.0), makeTable("d", 1000, 32, 1.0)};
}

Topology twoDevices() {
  Topology topology = Topology::uniform(2, 1.0);
  topology.batchSize = 1024;
  return topology;
}

bool splitsATable(ArrayRef<TableSpec> tables, const ShardingPlan &plan) {
  for (const Shard &shard : plan.shards)
    if (shard.width() != tables[shard.table].dim)
      return true;
  return false;
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
  EXPECT_LE(result.candidates.size(), 4u);
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
  VerifyOptions options;
  options.seconds = 0.0;
  ASSERT_EQ(errorMessage(verifyCandidates(result, tables, twoDevices(), model,
                                          timer, options)),
            "");
  ASSERT_TRUE(result.verification);
  const PlanVerification &verification = *result.verification;
  EXPECT_EQ(timer.preparedBatch, 1024);
  EXPECT_EQ(verification.host, "test host");
  EXPECT_EQ(verification.sets, timer.setMs.size());
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

TEST(PlanVerificationTest, KeepsTheModelsChoiceWhenItMeasuresFastest) {
  PlanResult result = planWithCandidates(4);
  ShardingPlan modelsChoice = result.plan;
  SliceCostModel model;
  FormulaTimer timer(0.0);
  ASSERT_EQ(errorMessage(verifyCandidates(result, hotAndCold(), twoDevices(),
                                          model, timer, VerifyOptions())),
            "");
  EXPECT_EQ(result.verification->chosen, 0u);
  EXPECT_TRUE(result.plan.shards == modelsChoice.shards);
  EXPECT_NE(describeVerification(*result.verification)
                .find("chosen: the model's best plan"),
            std::string::npos);
}

TEST(PlanVerificationTest, RoundsAreInterleavedAndBounded) {
  PlanResult result = planWithCandidates(4);
  SliceCostModel model;
  VerifyOptions options;
  // No time: the least rounds; all the time in the world: the most.
  for (auto [seconds, rounds] : {std::pair(0.0, 3u), std::pair(1e9, 7u)}) {
    FormulaTimer timer(0.0);
    options.seconds = seconds;
    options.minRounds = 3;
    options.maxRounds = 7;
    PlanResult copy = result;
    ASSERT_EQ(errorMessage(verifyCandidates(copy, hotAndCold(), twoDevices(),
                                            model, timer, options)),
              "");
    size_t sets = timer.setMs.size();
    EXPECT_EQ(copy.verification->rounds, rounds);
    // An untimed round, then each timed round starts one set later.
    ASSERT_EQ(timer.order.size(), sets * (rounds + 1));
    for (unsigned round = 0; round < rounds; ++round)
      EXPECT_EQ(timer.order[sets * (round + 1)], round % sets);
  }
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
  EXPECT_FALSE(AnalyticalCostModel().describesThisHost());
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

} // namespace
