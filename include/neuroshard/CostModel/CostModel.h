//===- CostModel.h - The interface the planner queries ----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A cost model predicts, in milliseconds, the three terms of a plan's cost
// (docs/design.md §3): the compute cost of one device's fused embedding kernel
// for a set of column slices, and the backward and forward exchange costs of
// each device from what it exchanges over which links (Sharding/Traffic.h) and
// the straggler times.
//
// Every query is batched: the search asks for many shard sets (or many plans'
// communication) in one call, so that a neural model can encode each table
// once, sum encodings per set and run its small head network once per batch.
// The planner memoises compute costs by shard set (sum pooling makes a set's
// cost independent of slice order), so a model sees each set at most once per
// cache lifetime and need not cache sets itself.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_COSTMODEL_COSTMODEL_H
#define NEUROSHARD_COSTMODEL_COSTMODEL_H

#include "neuroshard/CostModel/ModelProvenance.h"
#include "neuroshard/Sharding/Problem.h"
#include "neuroshard/Sharding/Traffic.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace neuroshard {

/// How far a model's compute predictions stray from measurements of sets it
/// was not fitted to: the mean and standard deviation of
/// ln(measured / predicted).
struct ComputeError {
  double logMean = 0.0;
  double logSd = 0.0;
};

class CostModel {
public:
  virtual ~CostModel();

  /// Short name for plan reports and JSON ("analytical", a bundle name).
  virtual llvm::StringRef name() const = 0;
  /// One line saying what the model predicts and from what (hardware, batch
  /// size, which terms are analytical), for the plan report.
  virtual std::string description() const = 0;
  /// The device count the model's communication terms were trained for, if
  /// they are tied to one (neural comm models are); nullopt for any count.
  virtual std::optional<unsigned> requiredDevices() const {
    return std::nullopt;
  }
  /// The node count of the cluster the communication terms were measured
  /// on, if they are tied to one (with requiredDevices); nullopt for any.
  virtual std::optional<unsigned> requiredNodes() const { return std::nullopt; }
  /// What a plan report should say about how far the model's predictions
  /// hold for the problem prepare() last bound, one sentence each: a batch
  /// size outside the measured range, tables outside the trained ranges, a
  /// model measured on another machine. Empty by default.
  virtual std::vector<std::string> warnings() const { return {}; }

  /// Every table of that problem outside the ranges the model was trained
  /// on, with the values that are ("'big' (rows 100000000)"): the whole
  /// list, of which warnings() names the first few. Empty by default.
  virtual std::vector<std::string> tablesOutsideRanges() const { return {}; }

  /// Whether the model's compute costs of row pieces and replicas rest on
  /// samples of them: true for the analytical model, whose formulas price
  /// them, and for a neural bundle that records "row_pieces"; false for a
  /// bundle that prices each as the table it is without having seen one.
  virtual bool coversRowPieces() const { return true; }

  /// Whether the compute cost of a set is the sum of its slices' costs
  /// alone (the analytical model's is). The planner's lower bound counts
  /// the tables' total work only for such a model (Planner/LowerBound.h):
  /// a learned model may price a union above its parts (a larger set
  /// misses the cache more), and then no total bounds the devices' share.
  virtual bool additiveCompute() const { return false; }

  /// Where the model's figures come from (ModelProvenance.h): what measured
  /// selection asks of a model. The search never reads it.
  virtual ModelProvenance provenance() const { return {}; }

  /// Whether the model estimates how uncertain its compute costs are (a
  /// neural bundle with an ensemble of corrections does).
  virtual bool estimatesUncertainty() const { return false; }
  /// From now on, prices a set's compute at its point estimate plus `sigmas`
  /// times the estimate's standard deviation, so that a search prefers
  /// devices whose cost it is sure of. Models that estimate no uncertainty
  /// ignore it.
  virtual void setRiskMargin(double sigmas) { (void)sigmas; }
  /// The margin setRiskMargin set (0 for models that ignore it).
  virtual double riskMargin() const { return 0.0; }

  /// How the model's compute predictions (at risk margin 0) stray from the
  /// machine's measurements on held-out sets, for the plan's expected
  /// slowest device (PlanEvaluation.h); nullopt when the model has no such
  /// figure (the analytical model, an untrained bundle).
  virtual std::optional<ComputeError> computeError() const {
    return std::nullopt;
  }

  /// Binds the model to a problem. Later queries name tables by their index
  /// in `tables`. Called before any query and again whenever the problem
  /// changes; a model may precompute per-table data (encodings) here.
  virtual llvm::Error prepare(llvm::ArrayRef<TableSpec> tables,
                              const Topology &topology) = 0;

  /// Predicts the compute cost of the fused forward + backward (+ update)
  /// kernel of one device for each shard set: costsMs[i] for sets[i]. Sets
  /// are non-empty and list each slice once, in no particular order.
  virtual llvm::Error
  predictCompute(llvm::ArrayRef<llvm::ArrayRef<ColumnSlice>> sets,
                 llvm::MutableArrayRef<double> costsMs) = 0;

  /// Incremental pricing (docs/design.md §5). A model whose compute cost of a
  /// set depends on its slices only through a running sum of per-slice terms
  /// (the neural model's table encodings, the analytical model's
  /// milliseconds) returns how many values a term has, so that the search
  /// can re-price a device by adding the term of the slice it just placed
  /// instead of passing the device's whole set again. 0, the default: the
  /// model prices sets with predictCompute only, and the three methods below
  /// are not called.
  virtual unsigned computeTermWidth() const { return 0; }

  /// Writes the term of slices[i] to terms[i * width, (i + 1) * width).
  virtual llvm::Error computeTerms(llvm::ArrayRef<ColumnSlice> slices,
                                   llvm::MutableArrayRef<double> terms);

  /// Adds a slice's term to a set's running sum, which starts at zero, in
  /// the arithmetic predictCompute sums in: a sum built in a set's order is
  /// priced exactly as predictCompute prices the set in that order. The
  /// default adds in double precision.
  virtual void addComputeTerm(llvm::ArrayRef<double> term,
                              llvm::MutableArrayRef<double> sum) const;

  /// Prices K running sums (sums.size() == K * width): costsMs[k] is the
  /// compute cost of the set whose sum is sums[k * width, (k + 1) * width).
  virtual llvm::Error
  predictComputeFromSums(llvm::ArrayRef<double> sums,
                         llvm::MutableArrayRef<double> costsMs);

  /// Predicts the backward exchange cost of every device of a batch of
  /// plans. `traffic` holds K plans of N devices each (N = device count of
  /// the prepared topology): traffic[k * N + d] is what device d of plan k
  /// exchanges (Sharding/Traffic.h). costsMs has the same layout.
  virtual llvm::Error
  predictBackwardComm(llvm::ArrayRef<DeviceTraffic> traffic,
                      llvm::MutableArrayRef<double> costsMs) = 0;

  /// Predicts the forward exchange cost of every device of a batch of plans
  /// (the index distribution and the pooled exchange), including the time
  /// each device waits for the slowest one. stragglersMs[k * N + d] is how
  /// much later device d of plan k reaches the collective than the earliest
  /// device: (compute + backward comm)(d) minus its minimum over devices.
  /// Layout as for predictBackwardComm.
  virtual llvm::Error
  predictForwardComm(llvm::ArrayRef<DeviceTraffic> traffic,
                     llvm::ArrayRef<double> stragglersMs,
                     llvm::MutableArrayRef<double> costsMs) = 0;
};

/// Fails, naming the model and both shapes, if `model` is tied to a device
/// or node count other than the topology's.
llvm::Error checkCostModelSupports(const CostModel &model,
                                   const Topology &topology);

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_COSTMODEL_H
