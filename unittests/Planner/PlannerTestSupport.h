//===- PlannerTestSupport.h - Planning and writing plans in tests -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What several planner tests do around the code under test: plan and check
// that the plan is valid, and write a plan in one of its file formats.
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

} // namespace testing
} // namespace neuroshard

#endif // NEUROSHARD_UNITTESTS_PLANNER_PLANNERTESTSUPPORT_H
