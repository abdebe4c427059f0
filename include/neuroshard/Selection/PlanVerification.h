//===- PlanVerification.h - Choosing among plans by measuring them -*- C++ -*-//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A search that explores hundreds of states keeps the ones its model
// underestimates most. Measured selection times the device sets of the few
// best distinct plans the search kept (PlanResult::candidates) on the
// machine the plan is for and returns the one whose slowest device measured
// lowest. The timing itself is a SetTimer: the real one runs the fused CPU
// kernels (Execution/SetTiming.h); tests give fixed times.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SELECTION_PLANVERIFICATION_H
#define NEUROSHARD_SELECTION_PLANVERIFICATION_H

#include "neuroshard/Planner/Search.h"
#include "neuroshard/Planner/TopologyOptions.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace neuroshard {

class CostModel;

/// A set's runs as a timing made before reports them: their median,
/// fastest and slowest, and their count.
struct RecordedRuns {
  double medianMs = 0.0, minMs = 0.0, maxMs = 0.0;
  unsigned runs = 0;
};

/// Times the compute of device sets (forward, backward and optimizer
/// update of one training step) on this host.
class SetTimer {
public:
  virtual ~SetTimer();
  /// Makes ready to time `sets`, each the column slices one device holds,
  /// at `batchSize` bags per lookup. Fails, naming the set, when one cannot
  /// be timed here (memory).
  virtual llvm::Error
  prepare(llvm::ArrayRef<TableSpec> tables, int64_t batchSize,
          llvm::ArrayRef<std::vector<ColumnSlice>> sets) = 0;
  /// Draws of the inputs (index streams) the prepared sets can be timed on:
  /// each draw is another batch of the same statistics. 1 by default.
  virtual unsigned draws() const;
  /// One timing of prepared set `index` on draw `draw` (below draws()) of
  /// its inputs, in ms (the kernel timer: the median of a few runs in a
  /// row).
  virtual double time(size_t index, unsigned draw) = 0;
  /// The host, for reports ("AMD EPYC 7B13").
  virtual std::string host() const = 0;
  /// What the sets run on, as experience files name it: "cpu" (the
  /// default) or the runner's "cuda".
  virtual std::string device() const;
  /// For times measured before (RecordedTimings.h): prepared set `index`'s
  /// runs as they were recorded, which the report gives instead of the
  /// rounds'. nullopt for a timer that times here.
  virtual std::optional<RecordedRuns> recorded(size_t index) const;
};

/// Draws of its index streams a set is timed on, where the timer can draw
/// them: a training step sees a new batch each time, and a set's time
/// depends on the batch. The generator draws a table's hottest rows and
/// their hit counts anew with each stream; on an H200 the same set of 10
/// tables measured 4.30 and 4.90 ms on two draws, while one draw timed
/// twice repeated within 0.2% (docs/planner.md, "Timing on several
/// draws"). A choice made on one draw need not hold on the next batch.
constexpr unsigned kDefaultInputDraws = 3;

/// Whether `a` comes before `b` in the fused lookup that runs a device's
/// pieces (--neuroshard-materialize): whole tables and column pieces
/// first, then row pieces, each by table, then row and column. A set's
/// time depends on the order its tables run in: on a 2-core AMD EPYC
/// (Zen 4), 60 sets timed with neuroshard-collect with their tables
/// reversed measured 11% apart (standard deviation of the log ratio),
/// where the same order timed again measured 5% apart (docs/planner.md,
/// "Sets timed in the order they run").
bool fusedOrder(const ColumnSlice &a, const ColumnSlice &b);

/// The distinct device sets of some candidates, and which each candidate
/// device holds (nullopt: none), each set's slices in fusedOrder.
struct CandidateSets {
  std::vector<std::vector<ColumnSlice>> sets;
  std::vector<std::vector<std::optional<size_t>>> setOf;
};

/// The device sets of `candidates` (plans over `numDevices` devices), each
/// distinct set once: two sets of the same tables at the same widths (other
/// column halves of a table, other row blocks of the same size) are one,
/// as the kernels time them alike.
CandidateSets distinctDeviceSets(llvm::ArrayRef<PlanCandidate> candidates,
                                 unsigned numDevices);

struct VerifyOptions {
  /// Seconds the timed rounds may take; preparing the sets is not counted.
  /// The first round always runs: it times every set once. A later round
  /// starts only where it ends within the budget, as the times its sets
  /// took when last timed foretell (0: one round).
  double seconds = 2.0;
  /// The rounds a choice needs: another candidate replaces the incumbent
  /// only after at least minRounds rounds, and at least one per draw of the
  /// timer's inputs, so that the choice holds over batches. Where the budget
  /// bought fewer while a candidate raced, the incumbent stays
  /// (PlanVerification::roundsNeeded). At most maxRounds rounds however
  /// fast.
  unsigned minRounds = 3;
  unsigned maxRounds = 25;
  /// Rounds after which a candidate whose median ratio to the incumbent is
  /// not below 1 is no longer timed (nor chosen): the rounds left go to the
  /// candidates that may win.
  unsigned raceRounds = 2;
  /// A candidate whose median ratio to the incumbent is above 1 + dropMargin
  /// after any round, the first included, no longer races: one round of
  /// every set rarely misjudges a plan by that much.
  double dropMargin = 0.10;
  /// After the first round, a set is timed again only where a racing
  /// candidate holds it on a device whose cost, at the sets' medians so far,
  /// is within this fraction of that candidate's slowest device; elsewhere
  /// its median so far prices it. A set far below every slowest device it
  /// could be does not decide a price. 1 times every set of a racing
  /// candidate in every round.
  double decidingMargin = 0.15;
  /// How much faster than the incumbent (the table-wise plan, else the
  /// model's best), in the geometric mean of the round-by-round ratios,
  /// another candidate must measure to replace it: smaller differences are
  /// within the noise of timing one set. Users on a noisy host raise it
  /// (--verify-min-gain), 0 takes any gain.
  double minGain = 0.02;
  /// Standard errors of its mean log ratio a candidate must gain beyond to
  /// replace the incumbent, where the spread is known exactly and one
  /// candidate races it: with a spread s of the rounds' log ratios
  /// (PlanVerification::roundSpread) and n rounds of its own, it needs a
  /// gain of at least 1 - exp(-q * s / sqrt(n)) besides minGain, where q is
  /// verifySpreadQuantile(spreadFactor, d, m) for the d degrees of freedom
  /// of s and the m candidates racing the incumbent at the end: the
  /// factor's normal tail shared among the m and read off Student's t.
  /// Where a host's timings move a lot from round to round, a few rounds
  /// cannot tell a few percent apart, s itself is known roughly, and the
  /// candidate that looks fastest among several is the one the noise
  /// favoured most. Where the cost model records the host's noise of
  /// measured selection (ModelProvenance::selectionNoise, s' over d'
  /// comparisons), which more rounds of one planning do not shrink, the
  /// standard error is sqrt(s^2 / n + s'^2) instead, on the
  /// Welch-Satterthwaite degrees of freedom of the two. 0 leaves minGain
  /// alone (--verify-spread-factor).
  double spreadFactor = 2.0;
};

/// Candidates verified where verification applies and no count was given.
constexpr unsigned kDefaultVerifyTop = 4;

/// Parses a `verify-top` value: "auto" (nullopt) or a count from 0 to
/// kMaxKeepCandidates; the message names the value.
llvm::Expected<std::optional<unsigned>> parseVerifyTop(llvm::StringRef text);

/// Why verification does not apply by default to a plan, or nullopt when
/// it does: the NeuroShard search (which keeps candidates), devices that
/// are this machine's CPU (a plan for CPU execution), a cost model that
/// describes this machine (ModelProvenance::measuredOnThisHost) and a program
/// that can time device sets (registerSetTimerFactory).
std::optional<std::string> whyNotVerified(Algorithm algorithm,
                                          const Topology &topology,
                                          const CostModel &model);

/// The number of candidates to verify: `top` when given (0: none), checked
/// against the algorithm and the device kind (the kernels timed are this
/// CPU's); for nullopt ("auto"), kDefaultVerifyTop where whyNotVerified
/// finds nothing against it, else 0. The message says why a given count
/// cannot be verified.
llvm::Expected<unsigned> resolveVerifyTop(std::optional<unsigned> top,
                                          Algorithm algorithm,
                                          const Topology &topology,
                                          const CostModel &model);

/// Checks that `count` candidates can be verified for this search; the
/// message says why not (another algorithm than NeuroShard, a priced plan).
std::optional<std::string> checkVerifyTop(unsigned count, Algorithm algorithm);

/// Most seconds --verify-seconds accepts.
constexpr double kMaxVerifySeconds = 3600.0;
/// Checks --verify-seconds; the message names the value.
std::optional<std::string> checkVerifySeconds(double seconds);

/// Most --verify-min-gain accepts (a fraction): with it, a plan must
/// measure at most half the incumbent's time to replace it.
constexpr double kMaxVerifyMinGain = 0.5;
/// Checks --verify-min-gain (VerifyOptions::minGain); the message names
/// the value.
std::optional<std::string> checkVerifyMinGain(double gain);

/// Most --verify-spread-factor accepts (standard errors): beyond it, a
/// candidate would need several times the rounds' spread to switch.
constexpr double kMaxVerifySpreadFactor = 10.0;
/// Checks --verify-spread-factor (VerifyOptions::spreadFactor); the message
/// names the value.
std::optional<std::string> checkVerifySpreadFactor(double factor);

/// The standard errors a gain must exceed (VerifyOptions::spreadFactor):
/// the one-sided normal tail of `factor`, divided among the `racing`
/// candidates (at least 1) that could be chosen, as a quantile of Student's
/// t with the spread's `freedom` degrees of freedom. `factor` itself for
/// one candidate as the degrees of freedom grow; 0 for a factor of 0 or no
/// degrees of freedom (no spread to scale).
double verifySpreadQuantile(double factor, unsigned freedom, unsigned racing);

/// Times every distinct device set of `result.candidates` with `timer` in
/// rounds over the sets (each round in another order,
/// so that no set always follows the same one, and round r on draw r mod
/// timer.draws() of the inputs, so that the sets compared in a round read
/// the same batch and the choice holds over batches) while the next round
/// ends within `options.seconds`. The first round times every set, whatever
/// the budget; later rounds time only the
/// sets that decide the prices (options.decidingMargin) of the incumbent and
/// of the candidates still racing it: those whose median ratio to it is at
/// most 1 + options.dropMargin and, from `options.raceRounds` rounds on,
/// below 1. When no such candidate is left, the rounds stop. Each candidate is
/// priced round by round with its devices' measured compute and the model's
/// communication (completePlanCosts), and compared in the same rounds with the
/// incumbent, so that what slows a whole round down cancels. The incumbent is
/// the table-wise plan (origin table-greedy-grid) where it is a candidate, else
/// the model's best (the first candidate): a plan that splits tables is
/// returned only where it measures faster than the plan that splits none, since
/// the model's errors favour the plans its search picks. `result`'s plan and
/// cost become those of the candidate, among those still racing at the end,
/// with the lowest geometric mean of its round ratios to the incumbent, if that
/// mean is at most 1 - its required gain (the larger of options.minGain and
/// what the rounds' spread asks, with the host's noise of measured
/// selection added where `model` records it, ModelProvenance::selectionNoise;
/// options.spreadFactor) and the rounds reached
/// the least a choice needs (options.minRounds, one per draw); else the
/// incumbent's.
/// The cost stays the model's, so that the plan prices the same everywhere.
/// Sets `result.verification` (each candidate's cost from its sets' medians,
/// and its ratios). Needs at least one candidate.
llvm::Error verifyCandidates(PlanResult &result,
                             llvm::ArrayRef<TableSpec> tables,
                             const Topology &topology, CostModel &model,
                             SetTimer &timer, const VerifyOptions &options);

/// The experience file (JSON Lines) that verified sets are appended to
/// when no path is given: next to the model's bundle.
constexpr const char *kExperienceFileName = "experience.jsonl";
/// The `experience` value that appends nowhere.
constexpr const char *kNoExperience = "none";

/// Where the sets verified with `model` are appended for `experience` (the
/// user's option): "" means next to the model's bundle
/// (ModelProvenance::bundlePath) when it is a bundle of the user's (not one
/// shipped with NeuroShard) in a writable directory, else nowhere;
/// kNoExperience nowhere; anything else is the path. "" for nowhere.
std::string experiencePath(llvm::StringRef experience, const CostModel &model);

/// Appends one JSON line per timed set of `verification` to `path`
/// (docs/planner.md, "Learning from measured plans"): its lookups as the
/// cost model's features (rows, the slice's width, pooling factor, access
/// histogram; a table that several features look up once per feature),
/// the measured median, fastest and slowest run, the runs, and the model's
/// prediction. Creates the file if needed; the error names it.
llvm::Error appendExperience(llvm::StringRef path,
                             llvm::ArrayRef<TableSpec> tables,
                             const Topology &topology, llvm::StringRef model,
                             const PlanVerification &verification);

/// Makes the SetTimer that measured selection uses. planWithVerification
/// calls it on a thread of its own while the search runs (a timer compiles
/// its kernels), so it must not depend on the calling thread.
using SetTimerFactory = llvm::Expected<std::unique_ptr<SetTimer>> (*)();

/// Installs the factory planWithVerification times with (nullptr removes
/// it). The planner does not link the kernels: a program that does (every
/// NeuroShard tool and the Python module) installs
/// execution::createKernelSetTimer at start-up
/// (execution::registerKernelSetTimer).
void registerSetTimerFactory(SetTimerFactory factory);
/// Whether a factory is installed.
bool setTimerFactoryRegistered();

/// What a user asks of measured selection.
struct VerifyRequest {
  /// Candidates to verify (resolveVerifyTop); nullopt: "auto".
  std::optional<unsigned> top;
  VerifyOptions options;
  /// Where to append the verified sets (experiencePath).
  std::string experience;
  /// A directory to write the candidates' distinct device sets to, for
  /// timing them on the machine the plan is for (writeCandidateSets in
  /// RecordedTimings.h), instead of timing them here; "" for none.
  std::string exportDir;
  /// A directory written with exportDir whose sets were timed there
  /// (RecordedSetTimer): the candidates are chosen by those times, whatever
  /// the device kind; "" for none.
  std::string timingsDir;
  /// Whether the sets are timed elsewhere (exportDir or timingsDir).
  bool timedElsewhere() const {
    return !exportDir.empty() || !timingsDir.empty();
  }
};

/// Plans with planSharding and, when `request` resolves to a count of
/// candidates, keeps that many, verifies them with a timer of the installed
/// factory (made while the search runs) and appends the timed sets to the
/// experience file. A model that
/// does not describe this machine adds a warning to the result. With
/// request.exportDir the candidates' sets are written there instead
/// (PlanResult::exported), and with request.timingsDir they are verified by
/// the times recorded there; either applies to any device kind, and with
/// "auto" keeps kDefaultVerifyTop candidates. Errors about the request name
/// its option as `spell` spells "verify-top".
llvm::Expected<PlanResult>
planWithVerification(llvm::ArrayRef<TableSpec> tables, const Topology &topology,
                     SearchOptions search, CostModel &model,
                     const VerifyRequest &request, OptionSpelling spell);

} // namespace neuroshard

#endif // NEUROSHARD_SELECTION_PLANVERIFICATION_H
