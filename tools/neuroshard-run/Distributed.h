//===- Distributed.h - neuroshard-run on one rank per device ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// `neuroshard-run --distributed` under `mpirun -np N`: runs the sharded
// module with execution::runDistributed (one rank per device) and prints
// rank 0's report: the results, the comparison with the original module,
// and every rank's weight bytes and step time split into compute and
// exchange.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TOOLS_NEUROSHARD_RUN_DISTRIBUTED_H
#define NEUROSHARD_TOOLS_NEUROSHARD_RUN_DISTRIBUTED_H

#include "neuroshard/Execution/DistributedRun.h"

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace neuroshard {
namespace run {

/// What the report needs beyond the run's options.
struct ReportOptions {
  /// Largest relative difference --compare accepts.
  double tolerance = 1e-5;
  /// Prints the report as JSON.
  bool json = false;
};

/// Runs `options.modulePath` on this rank of an MPI job it joins (and
/// leaves), prints the report on rank 0, and returns the process exit code.
int runDistributed(mlir::MLIRContext &context,
                   const execution::DistributedRunOptions &options,
                   const ReportOptions &report);

} // namespace run
} // namespace neuroshard

#endif // NEUROSHARD_TOOLS_NEUROSHARD_RUN_DISTRIBUTED_H
