//===- NeuralCostModel.h - Pre-trained neural cost model --------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The NeuroShard cost model (docs/design.md §5): TorchScript models exported by
// python/neuroshard/cost_model.py, loaded from a bundle directory with
// LibTorch. docs/neural-cost-model.md is the bundle contract.
//
// This header deliberately includes no LibTorch header (the model lives
// behind a pimpl) and nothing here throws: LibTorch's exceptions are caught
// inside the library and returned as llvm::Error, so MLIR code, which is
// built without exceptions, can include and use it.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_COSTMODEL_NEURALCOSTMODEL_H
#define NEUROSHARD_COSTMODEL_NEURALCOSTMODEL_H

#include "neuroshard/CostModel/CostModel.h"

#include <memory>
#include <optional>
#include <string>

namespace neuroshard {

/// What a bundle's meta.json says about its models.
struct NeuralBundleInfo {
  /// The bundle directory as given to load().
  std::string path;
  /// False for bundles with random weights (test fixtures).
  bool trained = false;
  /// The machine the training samples were measured on.
  std::string hardware;
  /// Global batch size B of the measured kernels.
  int64_t batchSize = 0;
  /// Element type of the measured tables ("f32").
  std::string dtype;
  /// Width H of a table encoding.
  unsigned encodingDim = 0;
  /// Device count of the comm models; nullopt when the bundle has none and
  /// the analytical comm terms are used.
  std::optional<unsigned> devices;
  /// The nodes those devices were on ("nodes" in meta.json, 1 when absent).
  unsigned nodes = 1;
};

/// A neural cost model loaded from a bundle. Not thread-safe: it memoises
/// encodings and reuses buffers across queries, so give each concurrent
/// search its own instance.
class NeuralCostModel final : public CostModel {
public:
  /// Loads the bundle in `bundleDir`: compute.pt, meta.json and, optionally,
  /// comm_fw.pt with comm_bw.pt. Fails, naming the file, if a file is
  /// missing, unreadable or does not honour the contract (methods, feature
  /// order, output shapes, device count).
  static llvm::Expected<std::unique_ptr<NeuralCostModel>>
  load(llvm::StringRef bundleDir);

  ~NeuralCostModel() override;

  /// The bundle directory's name.
  llvm::StringRef name() const override;
  std::string description() const override;
  std::optional<unsigned> requiredDevices() const override;
  std::optional<unsigned> requiredNodes() const override;
  std::vector<std::string> warnings() const override;
  std::vector<std::string> tablesOutsideRanges() const override;
  /// The bundle's directory; measured on this host for a trained CPU bundle
  /// recorded on this machine; the selection noise a trained bundle records.
  ModelProvenance provenance() const override;
  /// What the bundle's "row_pieces" records.
  bool coversRowPieces() const override;
  /// True for a bundle whose compute.pt exports spread() (the standard
  /// deviation of an ensemble's members) with more than one member.
  bool estimatesUncertainty() const override;
  void setRiskMargin(double sigmas) override;
  double riskMargin() const override;
  /// A trained bundle's held-out log error; from its held-out MAPE alone
  /// (mean 0, deviation MAPE * sqrt(pi / 2), as for a normal log error)
  /// where the bundle predates the log figures.
  std::optional<ComputeError> computeError() const override;

  /// Keeps the tables (their features are read when a slice is first
  /// encoded) and drops the encoding memo; fails if the topology's device
  /// count differs from the comm models' or a table's element type differs
  /// from the one the bundle was measured on. Compute costs are predicted
  /// at the bundle's batch size and scaled to the topology's by the
  /// bundle's measured batch-scaling curve (batchScaleFactor); warnings()
  /// then names a batch size outside the curve, tables outside the trained
  /// ranges and a bundle measured on another machine.
  llvm::Error prepare(llvm::ArrayRef<TableSpec> tables,
                      const Topology &topology) override;
  /// Encodes each distinct (table, width) once per prepare() and runs the
  /// head network once for the whole batch.
  llvm::Error predictCompute(llvm::ArrayRef<llvm::ArrayRef<ColumnSlice>> sets,
                             llvm::MutableArrayRef<double> costsMs) override;
  /// A slice's term is its table encoding (H values); sums are added in
  /// float, as predictCompute adds encodings.
  unsigned computeTermWidth() const override;
  llvm::Error computeTerms(llvm::ArrayRef<ColumnSlice> slices,
                           llvm::MutableArrayRef<double> terms) override;
  void addComputeTerm(llvm::ArrayRef<double> term,
                      llvm::MutableArrayRef<double> sum) const override;
  llvm::Error
  predictComputeFromSums(llvm::ArrayRef<double> sums,
                         llvm::MutableArrayRef<double> costsMs) override;
  llvm::Error
  predictBackwardComm(llvm::ArrayRef<DeviceTraffic> traffic,
                      llvm::MutableArrayRef<double> costsMs) override;
  /// The comm models price the pooled exchange they were measured on; the
  /// index distribution, which they did not measure, is the analytical
  /// model's.
  llvm::Error
  predictForwardComm(llvm::ArrayRef<DeviceTraffic> traffic,
                     llvm::ArrayRef<double> stragglersMs,
                     llvm::MutableArrayRef<double> costsMs) override;

  const NeuralBundleInfo &info() const;
  /// Distinct (table, width) encodings computed since the last prepare().
  size_t numEncodedSlices() const;

private:
  struct Impl;
  explicit NeuralCostModel(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl;
};

/// Lets createCostModel() load neural bundles (CostModelFactory.h). Tools
/// and passes call this once at start-up when the library is linked.
void registerNeuralCostModelSupport();

} // namespace neuroshard

#endif // NEUROSHARD_COSTMODEL_NEURALCOSTMODEL_H
