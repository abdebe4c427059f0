//===- VerificationRecord.h - What measured selection found -----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The record measured selection (lib/Selection, docs/planner.md "Measured
// selection") leaves on a PlanResult: each candidate as it was timed, the
// distinct device sets that were timed, and the rounds, gains and choice.
// The types live with the planner because PlanResult carries them; the
// selection library that fills them sits above it, and the report, the plan
// JSON and the IR's #neuroshard.verification read them.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_VERIFICATIONRECORD_H
#define NEUROSHARD_PLANNER_VERIFICATIONRECORD_H

#include "neuroshard/Planner/PlanEvaluation.h"

#include <cstdint>
#include <string>
#include <vector>

namespace neuroshard {

/// What measuring the candidates on this host found (PlanVerification.h).
struct CandidateMeasurement {
  std::string origin;
  /// The model's cost of the candidate, and the same with every device's
  /// compute replaced by its measured median (communication still the
  /// model's).
  PlanCost predicted, measured;
  /// Against the incumbent (PlanVerification::incumbent), round by round:
  /// the median over the rounds this candidate was timed in of its cost in
  /// a round over the incumbent's in the same round, those rounds, and the
  /// ones in which it was faster.
  double pairedRatio = 1.0;
  unsigned rounds = 0;
  unsigned roundsFaster = 0;
  /// The geometric mean of its ratios to the incumbent over those rounds
  /// (the exponential of their mean logarithm): the gain is judged on it,
  /// as the rounds' spread gives the standard error of a mean, not of a
  /// median (VerifyOptions::spreadFactor).
  double meanRatio = 1.0;
  /// Its ratio to the incumbent in each of those rounds, in round order
  /// (empty for a verification read back from a plan's annotation).
  std::vector<double> roundRatios;
  /// The gain over the incumbent it needed to replace it: the larger of
  /// VerifyOptions::minGain and what the rounds' spread asks of its rounds
  /// (PlanVerification::roundSpread), with the host's noise added
  /// (PlanVerification::selectionNoise; VerifyOptions::spreadFactor).
  double requiredGain = 0.0;
};

/// One distinct device set the candidates have, as it was timed.
struct TimedSet {
  std::vector<ColumnSlice> slices;
  /// The median, fastest and slowest of its timed runs, and their count.
  double medianMs = 0.0, minMs = 0.0, maxMs = 0.0;
  unsigned runs = 0;
  /// The model's compute cost of the set, as the search priced it.
  double predictedMs = 0.0;
};

/// What measured selection timed, found and chose.
struct PlanVerification {
  std::vector<CandidateMeasurement> candidates;
  /// The index of the candidate returned, and of the incumbent: the plan
  /// without split tables (the table-wise plan) where it is a candidate,
  /// else the model's best. Another candidate replaces the incumbent only
  /// if it measures faster beyond the noise.
  size_t chosen = 0;
  size_t incumbent = 0;
  /// The distinct device sets timed, the timed rounds over all of them,
  /// and the time verification took (compiling the kernels included).
  std::vector<TimedSet> sets;
  unsigned rounds = 0;
  /// The draws of the inputs the rounds went through (round r: draw r mod
  /// draws); 1 for times recorded elsewhere, whose sets already averaged
  /// theirs.
  unsigned draws = 1;
  /// The rounds a choice needs (VerifyOptions::minRounds, at least one per
  /// draw). Where `rounds` is below it while a candidate raced the
  /// incumbent, the budget ran out first (budgetCut) and the incumbent
  /// stood; neededSeconds is then what the rounds a choice needs would have
  /// taken, the rounds left at the cost of the last. 0 for a verification
  /// read back from a plan record that lacks them.
  unsigned roundsNeeded = 0;
  bool budgetCut = false;
  double neededSeconds = 0.0;
  /// The gain over the incumbent another candidate needed at least
  /// (VerifyOptions::minGain).
  double minGain = 0.0;
  /// How far one round's ratio to the incumbent strays from another's: the
  /// pooled standard deviation of the logarithms of the candidates' round
  /// ratios about each candidate's mean, over the candidates timed in more
  /// than one round (0 where none was).
  double roundSpread = 0.0;
  /// The degrees of freedom of roundSpread (its candidates' rounds less one
  /// each), and the candidates other than the incumbent still racing it
  /// when the rounds stopped (the ones that could replace it); both scale
  /// the gain a candidate needs (VerifyOptions::spreadFactor). 0 for a
  /// verification read back from a plan record that lacks them.
  unsigned spreadFreedom = 0;
  unsigned racing = 0;
  /// The host's noise of measured selection, as the cost model records it
  /// (ModelProvenance::selectionNoise): its log deviation and the comparisons
  /// it rests on (both 0 where the model records none), and the gain over the
  /// incumbent it alone asks, however well the rounds agree
  /// (VerifyOptions::spreadFactor).
  double selectionNoise = 0.0;
  unsigned selectionNoiseComparisons = 0;
  double noiseGain = 0.0;
  double seconds = 0.0;
  /// The timings of sets over all rounds, and the seconds the rounds took
  /// (`seconds` less preparing the sets and pricing): what one timing
  /// costs. 0 where the times were recorded elsewhere or read back from a
  /// plan record.
  unsigned timings = 0;
  double timedSeconds = 0.0;
  /// The host the sets were timed on, and what ran them ("cpu", "cuda").
  std::string host;
  std::string device = "cpu";
  /// The experience file the sets were appended to ("" for none).
  std::string experiencePath;
};

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_VERIFICATIONRECORD_H
