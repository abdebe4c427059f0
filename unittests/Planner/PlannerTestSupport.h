//===- PlannerTestSupport.h - Planning and writing plans in tests -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What several planner tests do around the code under test: plan and check
// that the plan is valid, write a plan in one of its file formats, and the
// small problem the measured-selection tests plan.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_UNITTESTS_PLANNER_PLANNERTESTSUPPORT_H
#define NEUROSHARD_UNITTESTS_PLANNER_PLANNERTESTSUPPORT_H

#include "TestProblems.h"

#include "neuroshard/Planner/PlanIO.h"
#include "neuroshard/Planner/Search.h"

#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <string>
#include <vector>

namespace neuroshard {
namespace testing {

/// Plans and checks that the plan is valid.
inline PlanResult plan(llvm::ArrayRef<TableSpec> tables,
                       const Topology &topology, const SearchOptions &options,
                       CostModel &model) {
  llvm::Expected<PlanResult> result =
      planSharding(tables, topology, options, model);
  EXPECT_EQ(errorMessage(result), "");
  if (!result)
    return PlanResult();
  EXPECT_EQ(errorMessage(validatePlan(tables, topology, result->plan)), "");
  return std::move(*result);
}

/// The plan JSON of `result`, or its TorchRec format.
inline std::string writePlanText(llvm::ArrayRef<TableSpec> tables,
                                 const Topology &topology,
                                 const PlanResult &result, bool torchrec) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (torchrec)
    writeTorchRecPlan(os, tables, topology, result);
  else
    writePlanJSON(os, tables, topology, result);
  return text;
}

/// One hot table beside three cold ones: a model that knows no price per
/// slice halves the hot one on two devices (the measured-selection tests).
inline std::vector<TableSpec> hotAndCold() {
  return {makeTable("hot", 1000, 64, 4.0), makeTable("b", 1000, 64, 1.0),
          makeTable("c", 1000, 32, 1.0), makeTable("d", 1000, 32, 1.0)};
}

/// Two devices of 1 GB at batch 1024 (device kind "gpu").
inline Topology twoDevices() {
  Topology topology = Topology::uniform(2, 1.0);
  topology.batchSize = 1024;
  return topology;
}

} // namespace testing
} // namespace neuroshard

#endif // NEUROSHARD_UNITTESTS_PLANNER_PLANNERTESTSUPPORT_H
