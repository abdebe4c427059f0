//===- ModelProvenance.h - Where a cost model's figures come from -*- C++ -*-=//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What a cost model says of its own origin: the bundle it was loaded from,
// whether its compute costs were measured on this very machine, and how
// noisy measured selection was on the host it was calibrated on. Pricing
// never reads it; measured selection (lib/Selection) does, to decide whether
// plans can be timed here, where experience is written and what gain a
// candidate must show (docs/planner.md, "Measured selection").
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_COSTMODEL_MODELPROVENANCE_H
#define NEUROSHARD_COSTMODEL_MODELPROVENANCE_H

#include <optional>
#include <string>

namespace neuroshard {

/// How far measured selection's judgement of a plan against another, made
/// within one planning's few seconds of timing, strays on a host from what
/// timing the same plans apart from the planning finds, beyond what the
/// rounds' spread and the other timing's spread account for: the log
/// deviation left of ln(ratio measured in the planning / ratio measured
/// apart) over `comparisons` candidates (the calibration's
/// "selection_noise", docs/planner.md "Gains beyond the host's noise").
/// More rounds of one planning do not shrink it.
struct SelectionNoise {
  double logSd = 0.0;
  unsigned comparisons = 0;
};

/// Where a model's figures come from. The default describes a model that
/// was not loaded from a bundle and measured nothing (the analytical one).
struct ModelProvenance {
  /// The directory of the model's bundle; empty for a model not loaded
  /// from one.
  std::string bundlePath;
  /// Whether the compute costs were measured on this machine (a trained CPU
  /// bundle whose recorded host is this one), so that plans made with the
  /// model can be checked by timing their device sets here.
  bool measuredOnThisHost = false;
  /// The noise of measured selection on the host the model was calibrated
  /// on, for the gain a candidate needs to replace the incumbent; nullopt
  /// when the bundle records none.
  std::optional<SelectionNoise> selectionNoise;
};

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_MODELPROVENANCE_H
