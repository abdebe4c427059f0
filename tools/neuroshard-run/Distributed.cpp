//===- Distributed.cpp - neuroshard-run on one rank per device ------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "Distributed.h"
#include "Report.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace ::neuroshard::execution;
namespace run = ::neuroshard::run;
using namespace ::neuroshard::run;

/// Prints rank 0's report of `result`; returns why the run failed, or an
/// empty string.
static std::string report(const DistributedRunResult &result,
                          const DistributedRunOptions &options,
                          const ReportOptions &reportOptions) {

  std::optional<Comparison> comparison;
  if (result.outputDiff) {
    comparison.emplace();
    comparison->with = options.comparePath;
    comparison->tolerance = reportOptions.tolerance;
    comparison->outputDiff = *result.outputDiff;
    comparison->weightDiff = result.weightDiff;
  }
  bool timed = options.iters > 0;
  json::Array ranks;
  for (auto [d, rank] : llvm::enumerate(result.perRank)) {
    json::Object entry{
        {"rank", int64_t(d)},
        {"shards", rank.shards},
        {"weight_bytes", int64_t(rank.weightBytes)},
        {"allocated_weight_bytes", int64_t(rank.allocatedWeightBytes)},
        {"intra_node_bytes", int64_t(rank.intraNodeBytes)},
        {"inter_node_bytes", int64_t(rank.interNodeBytes)}};
    if (rank.planWeightsGB) {
      entry["plan_weights_gb"] = *rank.planWeightsGB;
      entry["matches_plan"] = rank.matchesPlan;
    }
    if (rank.timing)
      entry["timing_ms"] = json::Object{{"step", rank.timing->step},
                                        {"compute", rank.timing->compute},
                                        {"exchange", rank.timing->exchange}};
    ranks.push_back(std::move(entry));
  }
  json::Array resultRows =
      summarizeResults(result.results, result.resultShapes);

  if (reportOptions.json) {
    json::Object report{{"module", options.modulePath},
                        {"entry", result.entry},
                        {"device", "cpu"},
                        {"seed", static_cast<int64_t>(options.data.seed)},
                        {"max_rows", options.data.maxRows},
                        {"backward", options.backward},
                        {"ranks", result.ranks},
                        {"ranks_per_node", result.ranksPerNode},
                        {"per_rank", std::move(ranks)},
                        {"results", std::move(resultRows)}};
    if (comparison)
      comparison->addTo(report);
    if (timed)
      report["timing_ms"] = json::Object{
          {"warmup", int64_t(options.warmup)},
          {"iters", int64_t(options.iters)},
          {"step", options.backward ? "forward+backward" : "forward"}};
    outs() << formatv("{0:2}", json::Value(std::move(report))) << "\n";
  } else {
    outs() << "@" << result.entry << " on " << result.ranks
           << " MPI ranks (cpu): " << result.results.size() << " results, "
           << result.lookupInputs << " lookup inputs, " << result.tables
           << " tables, seed " << options.data.seed;
    if (options.data.maxRows > 0)
      outs() << ", at most " << options.data.maxRows << " rows per table";
    outs() << (options.backward ? ", forward + backward (SGD)\n"
                                : ", forward\n");
    printResults(outs(), resultRows);
    outs() << formatv("{0,-5} {1,7} {2,16} {3,16} {4,10} {5,11} {6,12}\n",
                      "rank", "shards", "weights (MiB)", "plan (MiB)",
                      "step ms", "compute ms", "exchange ms");
    for (auto [d, rank] : llvm::enumerate(result.perRank)) {
      std::string plan =
          rank.planWeightsGB
              ? formatv("{0:F3}", *rank.planWeightsGB * 1024.0).str()
              : "-";
      std::string times[3] = {"-", "-", "-"};
      if (rank.timing) {
        double values[3] = {rank.timing->step, rank.timing->compute,
                            rank.timing->exchange};
        for (int k = 0; k < 3; ++k)
          times[k] = formatv("{0:F3}", values[k]).str();
      }
      outs() << formatv("{0,-5} {1,7} {2,16:F3} {3,16} {4,10} {5,11} {6,12}\n",
                        d, rank.shards, rank.weightBytes / double(1 << 20),
                        plan, times[0], times[1], times[2]);
    }
    if (!result.hasPlan())
      outs() << "no neuroshard.plan in the module to check the weights per "
                "rank against\n";
    else
      outs() << "weights per rank "
             << (result.weightsMatchPlan()
                     ? "equal the plan's per-device weights"
                     : "DIFFER from the plan's per-device weights")
             << "\n";
    double intra = 0.0, inter = 0.0;
    for (const RankReport &rank : result.perRank) {
      intra += rank.intraNodeBytes;
      inter += rank.interNodeBytes;
    }
    outs() << formatv("exchange on {0} {1} of {2} {3}: one step sends {4} "
                      "MiB inside nodes and {5} MiB between them\n",
                      result.ranks / result.ranksPerNode,
                      result.ranks == result.ranksPerNode ? "node" : "nodes",
                      result.ranksPerNode,
                      result.ranksPerNode == 1 ? "rank" : "ranks",
                      format("%.3f", intra / double(1 << 20)),
                      format("%.3f", inter / double(1 << 20)));
    if (comparison)
      comparison->print(outs());
    if (timed)
      outs() << formatv("{0} ms per rank: medians over {1} runs after {2} "
                        "warm-up; exchange includes waiting for other ranks\n",
                        options.backward ? "forward+backward" : "forward",
                        options.iters, options.warmup);
  }
  if (comparison && comparison->mismatch())
    return "results differ beyond the tolerance: " + comparison->differing();
  if (!result.weightsMatchPlan())
    return "a rank's weights differ from the plan's memory";
  return "";
}

int run::runDistributed(mlir::MLIRContext &context,
                        const DistributedRunOptions &options,
                        const ReportOptions &reportOptions) {
  std::string failure;
  {
    MPIJob job;
    Expected<DistributedRunResult> ran =
        ::neuroshard::execution::runDistributed(context, options);
    if (!ran) {
      // Every rank failed alike; rank 0 says why while every rank is still
      // in the job, and all leave it with the same status.
      std::string message = toString(ran.takeError());
      if (job.rank() == 0)
        WithColor::error(errs(), "neuroshard-run") << message << "\n";
      return 1;
    }
    if (job.rank() != 0)
      return 0;
    failure = report(*ran, options, reportOptions);
  }
  // A failed check is rank 0's alone, said once MPI has finished: mpirun
  // stops the job when a rank exits with an error.
  if (failure.empty())
    return 0;
  WithColor::error(errs(), "neuroshard-run") << failure << "\n";
  return 1;
}
