//===- Search.h - Sharding search algorithms and their entry point -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// planSharding is the one entry point the sharding pass, neuroshard-plan and
// the benchmark share. It checks the problem, rejects infeasible ones with
// the table and numbers at fault, runs the selected algorithm (docs/design.md
// §4) and returns the plan with its per-device costs and search statistics.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_SEARCH_H
#define NEUROSHARD_PLANNER_SEARCH_H

#include "neuroshard/Planner/LowerBound.h"
#include "neuroshard/Planner/PlanEvaluation.h"
#include "neuroshard/Planner/TopologyOptions.h"
#include "neuroshard/Planner/VerificationRecord.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace neuroshard {

class CostModel;
struct PlanFile;

enum class Algorithm {
  /// Column-wise beam search over splits, each state priced by the greedy
  /// grid search (NeuroShard's algorithm).
  NeuroShard,
  /// The greedy grid search over dim-sum thresholds, tables kept whole.
  TableGreedyGrid,
  /// Each table on a uniformly random device with room (seeded).
  Random,
  /// Largest first on the device with the lowest sum of the cost proxy:
  /// bytes, dim, dim x pooling, dim x pooling x log10(rows).
  SizeGreedy,
  DimGreedy,
  LookupGreedy,
  SizeLookupGreedy,
  /// Every table whose cost alone (the model's) exceeds the mean device
  /// cost cut into equal column pieces first, then largest first on the
  /// device with the lowest sum of the pieces' costs alone.
  UniformSplitGreedy,
};

/// The name used everywhere (API, CLI, pass options): "neuroshard",
/// "table-greedy-grid", "random", "size-greedy", "dim-greedy",
/// "lookup-greedy", "size-lookup-greedy", "uniform-split-greedy".
llvm::StringRef algorithmName(Algorithm algorithm);
/// Parses a name printed by algorithmName; nullopt for an unknown name.
std::optional<Algorithm> parseAlgorithm(llvm::StringRef name);
/// Every algorithm, in the order above, for help texts and benchmarks.
llvm::ArrayRef<Algorithm> allAlgorithms();
/// "neuroshard, table-greedy-grid, ..." for help texts and errors.
std::string algorithmNameList();

/// Where a running search stands, reported after each of its steps.
struct SearchProgress {
  /// 0 after the unsplit state is priced, then the beam levels done.
  unsigned level = 0;
  /// The most levels the search may take (SearchOptions::maxSteps).
  unsigned maxLevels = 0;
  /// Column-split states priced so far.
  uint64_t statesExplored = 0;
  /// The cost of the best feasible plan so far (ms), if there is one.
  std::optional<double> bestMs;
  /// Time since planSharding started (ms).
  double elapsedMs = 0.0;
};

/// "search: level 3 of 10, 412 states priced, best 2.4216 ms, 1.8 s".
std::string formatProgress(const SearchProgress &progress);

struct SearchOptions {
  Algorithm algorithm = Algorithm::NeuroShard;
  /// The sharding kinds plans may use, on top of each table's own
  /// constraints (TableSpec::shardingKinds): a table takes the kinds both
  /// allow. defaultShardingKinds gives the front ends' default.
  ShardingKindSet shardingKinds = kAllShardingKinds;
  /// Beam search: states kept per level.
  unsigned beamWidth = 3;
  /// Beam search: the union of this many largest and this many most
  /// expensive splittable shards are the split candidates of a state.
  unsigned candidates = 10;
  /// Beam search: most levels (splits added to the unsplit state). 0 sizes
  /// the budget from the problem (autoSearchSteps) and stops the search
  /// once kBeamPatience levels in a row bring no progress; a number given
  /// runs every level it allows, as the reference does.
  unsigned maxSteps = 0;
  /// Grid search: thresholds s evenly spaced over [thresholdMin,
  /// thresholdMax]; a device's dim sum may not exceed s * total dim / N.
  unsigned gridSteps = 11;
  double thresholdMin = 1.0;
  double thresholdMax = 1.5;
  /// Seed of the random baseline.
  uint64_t seed = 0;
  /// NeuroShard: how many distinct plans of the search to return as
  /// candidates for measured selection (PlanResult::candidates), always
  /// including the best table-wise plan and the best baseline's; from 2 on,
  /// the other baselines' plans the model prices near the returned plan's
  /// are returned besides (the model overprices plans its search does not
  /// pick). 0 returns the plan alone.
  unsigned keepCandidates = 0;
  /// Called after each step of the beam and grid searches (not by the
  /// table-wise baselines, which take one step), for progress output.
  std::function<void(const SearchProgress &)> progress;
};

/// The kinds a front end plans with unless told: every kind for GPUs;
/// whole tables and column pieces for CPU execution, whose kernels and
/// measured bundles cover those.
ShardingKindSet defaultShardingKinds(llvm::StringRef deviceKind);
/// The kinds a front end's `sharding-types` option names: "default"
/// (defaultShardingKinds of `deviceKind`), "all", or a comma-separated list
/// of kind names ("table_wise,column_wise,row_wise"). The error names the
/// option as `spell` spells it, the entry and the kinds there are.
llvm::Expected<ShardingKindSet> resolveShardingKinds(llvm::StringRef option,
                                                     llvm::StringRef deviceKind,
                                                     OptionSpelling spell);

/// Upper bounds of the search options: each far above what helps (the
/// defaults are 3, 10, auto and 11), and low enough that a mistyped value
/// cannot make the search run for days or exhaust memory.
constexpr unsigned kMaxBeamWidth = 256;
constexpr unsigned kMaxCandidates = 1024;
constexpr unsigned kMaxSteps = 4096;
constexpr unsigned kMaxGridSteps = 1000;
constexpr double kMaxThreshold = 1000.0;
constexpr unsigned kMaxKeepCandidates = 64;

/// Levels without progress after which a search with an automatic budget
/// stops. Progress is a lower slowest device, or as slow a slowest device
/// shared by fewer devices (ties at the maximum broken up one by one).
constexpr unsigned kBeamPatience = 3;

/// The levels an automatic budget (maxSteps = 0) allows on `numDevices`
/// devices: enough to split the hottest tables over every device one
/// piece at a time, and never fewer than the reference's 10.
unsigned autoSearchSteps(unsigned numDevices);

/// Checks option ranges; the error names the option and its value.
llvm::Error validateSearchOptions(const SearchOptions &options);

/// The search options a front end (the planning pass, neuroshard-plan, the
/// Python module) was given: `algorithm` by name, the numeric settings of
/// `values` (its algorithm and progress are ignored) and, with `progress`, a
/// progress line per search step on standard error. Every front end builds
/// its options here, so that each option means, defaults and is refused
/// alike everywhere; the error names the option as the front ends spell it
/// ("algorithm: unknown algorithm 'x' (expected one of: ...)",
/// "beam-width must be between 1 and 256, got 0").
llvm::Expected<SearchOptions> makeSearchOptions(llvm::StringRef algorithm,
                                                const SearchOptions &values,
                                                bool progress);

struct SearchStats {
  double timeMs = 0.0;
  /// Shard-set compute costs the search asked for, and how many of those
  /// the memo answered without the model.
  uint64_t costQueries = 0;
  uint64_t cacheHits = 0;
  /// Batched calls made to the cost model (all three kinds of query).
  uint64_t modelCalls = 0;
  /// Column-split states whose grid search ran (1 for table-wise search).
  uint64_t statesExplored = 0;
  /// Table-wise greedy placements run (one per state and threshold).
  uint64_t greedyRuns = 0;
  /// Local improvement: the plans it priced (each one move of a part off
  /// the slowest device) and the moves it took.
  uint64_t movesTried = 0;
  uint64_t movesTaken = 0;
};

/// A plan the search kept as a candidate for measured selection.
struct PlanCandidate {
  /// Where it came from: "neuroshard" (a state of the beam),
  /// "table-greedy-grid" (the best table-wise plan) or the baseline's name.
  std::string origin;
  ShardingPlan plan;
  PlanCost cost;
};

struct PlanResult {
  /// The algorithm that made the plan; none for a plan made elsewhere and
  /// priced here (pricePlan) whose file does not name one.
  std::optional<Algorithm> algorithm;
  /// The model's name() and description(), for reports.
  std::string costModelName;
  std::string costModelDescription;
  /// The model's warnings() about this problem, and every table it names
  /// as outside its training ranges (CostModel::tablesOutsideRanges).
  std::vector<std::string> warnings;
  std::vector<std::string> tablesOutsideRanges;
  ShardingPlan plan;
  PlanCost cost;
  /// What the search did; for a priced plan, only the time it took.
  SearchStats stats;
  /// False for a plan priced by pricePlan rather than found by a search.
  bool searched = true;
  /// With SearchOptions::keepCandidates: the distinct plans kept, in the
  /// model's order (the first is `plan`).
  std::vector<PlanCandidate> candidates;
  /// The slowest device `plan` is expected to measure, when the model
  /// records its held-out error (expectedSlowestDevice).
  std::optional<ExpectedSlowest> expected;
  /// How cheap any plan of the problem can be under the model
  /// (computeLowerBound); unset where the plan was not priced so (a plan
  /// read back from IR without one).
  std::optional<PlanLowerBound> lowerBound;
  /// Per table, in the order of the tables: the compute cost of its pieces,
  /// each priced alone by the model, summed (addPlanEstimates); empty where
  /// the plan was not priced so (a plan read back from IR).
  std::vector<double> tableComputeMs;
  /// Set when the candidates were measured and `plan` is the one that
  /// measured fastest.
  std::optional<PlanVerification> verification;
  /// Set when the candidates' device sets were written for timing on
  /// another machine (Selection/RecordedTimings.h) rather than verified
  /// here: the directory, the number of distinct sets, and the names in it
  /// of the runner's manifest, of the samples it is to write and of the
  /// kernels the manifest names.
  struct SetExport {
    std::string dir;
    size_t sets = 0;
    std::string manifest, samples, kernels;
  };
  std::optional<SetExport> exported;
};

/// Plans the sharding of `tables` over the topology's devices with the
/// selected algorithm, pricing plans with `model` (prepared here). Fails
/// with a message naming the table or device and the numbers if the
/// problem is malformed or no valid plan exists. Deterministic: the same
/// inputs and seed give the same plan.
llvm::Expected<PlanResult> planSharding(llvm::ArrayRef<TableSpec> tables,
                                        const Topology &topology,
                                        const SearchOptions &options,
                                        CostModel &model);

/// Prices `given`, a plan made elsewhere (by hand, by TorchRec, by an
/// earlier run) and read by readPlanFile or parsePlanJSON (PlanIO.h), with
/// `model` exactly as planSharding prices the plans it returns. The problem
/// is checked as planSharding checks it, and the plan with validatePlan's
/// messages after its source's name; a plan for another device count is
/// refused. The result's search statistics count the pricing alone.
llvm::Expected<PlanResult> pricePlan(llvm::ArrayRef<TableSpec> tables,
                                     const Topology &topology,
                                     const PlanFile &given, CostModel &model);

/// Adds to `result` what `model` (prepared for `tables` by the search or
/// pricePlan) estimates of result.plan beyond its cost: result.expected,
/// the slowest device the plan is expected to measure under the model's
/// held-out error (expectedSlowestDevice; unset for a model without one),
/// result.tableComputeMs, each table's pieces priced alone, and
/// result.lowerBound, how cheap any plan of the problem can be.
llvm::Error addPlanEstimates(PlanResult &result,
                             llvm::ArrayRef<TableSpec> tables,
                             const Topology &topology, CostModel &model);

/// The name reports give the plan's origin: its algorithm's name, or
/// "given" for a priced plan that names none.
llvm::StringRef planOriginName(const PlanResult &result);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_SEARCH_H
