//===- planner-consumer.cpp - Plan with an installed NeuroShard's planner -===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Plans three tables over two devices with the analytical cost model through
// the C++ planner (planSharding) and prints the plan, then the path of the
// installed neuroshard-plan that the build found as an imported target.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/Search.h"

#include "llvm/Support/raw_ostream.h"

int main() {
  struct {
    const char *name;
    int64_t rows, dim;
  } specs[] = {
      {"user", 4000000, 128}, {"item", 1000000, 64}, {"category", 200000, 32}};
  std::vector<neuroshard::TableSpec> tables;
  for (const auto &spec : specs) {
    neuroshard::TableSpec table;
    table.name = spec.name;
    table.rows = spec.rows;
    table.dim = spec.dim;
    table.poolingFactor = 2.0;
    table.accessHist = {0.5, 0.2, 0.1, 0.1, 0.05, 0.05};
    tables.push_back(table);
  }
  neuroshard::Topology topology = neuroshard::Topology::uniform(2, 16.0);
  neuroshard::AnalyticalCostModel model;
  llvm::Expected<neuroshard::PlanResult> result = neuroshard::planSharding(
      tables, topology, neuroshard::SearchOptions(), model);
  if (!result) {
    llvm::errs() << "planner-consumer: " << llvm::toString(result.takeError())
                 << "\n";
    return 1;
  }
  llvm::outs() << "cost model: " << result->costModelName << "\n";
  for (const neuroshard::Shard &shard : result->plan.shards)
    llvm::outs() << "shard: " << tables[shard.table].name << " columns ["
                 << shard.colBegin << ", " << shard.colEnd << ") on device "
                 << shard.device << "\n";
  llvm::outs() << "cost_ms: " << result->cost.maxMs << "\n";
  llvm::outs() << "neuroshard-plan: " << NEUROSHARD_PLAN_TOOL << "\n";
  return 0;
}
