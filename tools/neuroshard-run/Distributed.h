//===- Distributed.h - neuroshard-run on one rank per device ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// `neuroshard-run --distributed` under `mpirun -np N`: every rank builds its
// own program from the sharded module (`--neuroshard-spmd`), allocates only
// the shards its device holds, and runs its fused lookup, the exchange over
// MPI and, with --backward, the reverse exchange and its fused SGD update.
// Rank 0 gathers the results (and the updated weights) to compare them with
// a single-process run of the original module, and reports every rank's
// weight bytes and step time split into compute and exchange.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TOOLS_NEUROSHARD_RUN_DISTRIBUTED_H
#define NEUROSHARD_TOOLS_NEUROSHARD_RUN_DISTRIBUTED_H

#include <cstdint>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace neuroshard {
namespace run {

/// neuroshard-run's options, as a distributed run reads them.
struct RunOptions {
  std::string modulePath;
  std::string comparePath;
  std::string inputsPath;
  std::string entry;
  uint64_t seed = 0;
  int64_t maxRows = 0;
  double maxWeightBytes = 0.0;
  double memoryLimitBytes = 0.0;
  bool backward = false;
  float learningRate = 0.01f;
  unsigned warmup = 0;
  unsigned iters = 0;
  double tolerance = 1e-5;
  bool trustInputs = false;
  bool json = false;
};

/// Runs `options.modulePath`, a sharded module, with one MPI rank per device
/// and returns the process exit code. Initialises and finalises MPI.
int runDistributed(mlir::MLIRContext &context, const RunOptions &options);

} // namespace run
} // namespace neuroshard

#endif // NEUROSHARD_TOOLS_NEUROSHARD_RUN_DISTRIBUTED_H
