//===- TaskJSONFuzzer.cpp - Fuzz the task JSON reader and the planner -----===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Feeds arbitrary bytes to the task JSON reader. A task that parses is
// checked against a two-device topology and, when it is valid and small, is
// planned with the analytical cost model, so that every value the reader
// accepts is also one the planner survives.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/CostModel/AnalyticalCostModel.h"
#include "neuroshard/Planner/Search.h"
#include "neuroshard/Planner/TaskIO.h"
#include "neuroshard/Sharding/Problem.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>

using namespace neuroshard;

// Bounds that keep one input to milliseconds: the search grows with the
// number of tables and of column slices, not with the values' magnitudes.
static constexpr size_t kMaxPlannedTables = 8;
static constexpr int64_t kMaxPlannedDim = 512;

static bool isSmallTask(const PlanningTask &task) {
  if (task.tables.size() > kMaxPlannedTables)
    return false;
  for (const TableSpec &table : task.tables)
    if (table.dim > kMaxPlannedDim)
      return false;
  return true;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<PlanningTask> task = parseTaskJSON(text);
  if (!task) {
    llvm::consumeError(task.takeError());
    return 0;
  }

  Topology topology = Topology::uniform(/*numDevices=*/2,
                                        /*memoryGBPerDevice=*/16.0);
  if (task->batchSize)
    topology.batchSize = *task->batchSize;
  if (llvm::Error err = validateProblem(task->tables, topology)) {
    llvm::consumeError(std::move(err));
    return 0;
  }
  if (!isSmallTask(*task))
    return 0;

  SearchOptions options;
  options.beamWidth = 2;
  options.candidates = 2;
  options.maxSteps = 2;
  options.gridSteps = 2;
  AnalyticalCostModel model;
  llvm::Expected<PlanResult> result =
      planSharding(task->tables, topology, options, model);
  if (!result)
    llvm::consumeError(result.takeError());
  return 0;
}
