//===- BundleMeta.h - meta.json of a neural cost-model bundle ---*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Reading and checking a bundle's meta.json is plain LLVM code; it lives apart
// from the LibTorch translation unit so that only that one needs exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_LIB_COSTMODEL_NEURAL_BUNDLEMETA_H
#define NEUROSHARD_LIB_COSTMODEL_NEURAL_BUNDLEMETA_H

#include "neuroshard/CostModel/NeuralCostModel.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace neuroshard {
namespace neural {

/// Features per table, in docs/design.md §3 order: rows, dim, pooling_factor,
/// bin_0..bin_16.
constexpr unsigned kNumFeatures = 3 + kNumAccessBins;

/// The widest table encoding a bundle may declare (the shipped models use
/// 32); it sizes buffers of the search, so it is bounded like every size
/// read from a file.
constexpr int64_t kMaxEncodingDim = 4096;

/// The most ensemble members a bundle may declare.
constexpr int64_t kMaxEnsemble = 64;
/// The largest |mean| and standard deviation of a held-out log error
/// accepted from meta.json.
constexpr double kMaxLogError = 2.0;
/// The most comparisons a "selection_noise" may say it rests on.
constexpr int64_t kMaxSelectionComparisons = 1000000;

/// How compute costs grow with the global batch size on the measured
/// machine: ratios[i] = cost at batchSizes[i] / cost at the bundle's
/// batch_size, the median over sets timed at every size
/// (python/neuroshard/batch_scaling.py measures it).
struct BatchScaling {
  std::vector<int64_t> batchSizes;
  std::vector<double> ratios;
};

/// The closed range of a table feature the compute model was trained on.
struct FeatureRange {
  double low = 0.0;
  double high = 0.0;
  bool contains(double value) const { return value >= low && value <= high; }
};

/// meta.json's fields that the C++ side uses, on top of NeuralBundleInfo.
struct BundleMeta {
  NeuralBundleInfo info;
  /// Bytes per table element of `info.dtype`.
  unsigned elementBytes = 0;
  /// Held-out mean absolute percentage error of the compute model, when the
  /// trainer recorded one.
  std::optional<double> computeMape;
  /// Held-out mean and standard deviation of ln(measured / predicted) of
  /// the compute model, when the trainer recorded both.
  std::optional<double> computeLogErrorMean, computeLogErrorSd;
  /// "selection_noise": {"log_sd": s, "comparisons": n, ...}, how far
  /// measured selection's ratios stray on the calibrated host from timings
  /// made apart (SelectionNoise), when calibration measured it.
  std::optional<SelectionNoise> selectionNoise;
  /// "batch_scaling"; without it the bundle was measured at one batch size.
  std::optional<BatchScaling> batchScaling;
  /// "host": the measured machine's CPU model and caches (KiB by name:
  /// "L1d", "L2", "L3"), when the trainer recorded them.
  std::optional<std::string> hostCPUModel;
  std::vector<std::pair<std::string, int64_t>> hostCachesKB;
  /// "host"'s CPU family and model numbers and instruction sets (sorted),
  /// when recorded.
  std::optional<int64_t> hostCPUFamily, hostCPUModelNumber;
  std::optional<std::vector<std::string>> hostISA;
  /// "host" of a bundle measured on a GPU: {"gpu_model": name, "l2_kb": n}
  /// in place of the CPU fields. Such a bundle prices the GPUs a plan is
  /// for, not the machine that plans.
  std::optional<std::string> hostGPUModel;
  std::optional<int64_t> hostGPUL2KB;
  /// "trained_ranges" of rows, dim and pooling factor.
  std::optional<FeatureRange> rowsRange, dimRange, poolingRange;
  /// "compute_model": the factor by which the network may correct the
  /// physics prior, and the ensemble's size, for a compute model of that
  /// form (cost_model.ComputeCostModel); unset for a plain network.
  std::optional<double> correctionBound;
  std::optional<unsigned> ensemble;
  /// "row_pieces": whether the samples the compute model was trained on
  /// include row pieces and replicas; absent means they do not.
  bool rowPieces = false;
};

/// The factor that turns a compute cost at the bundle's batch size into one
/// at `batch`: the batch-scaling curve interpolated linearly in
/// (log batch, log ratio), extended past its ends along its end segments;
/// batch / batch_size without a curve of at least two points.
double batchScaleFactor(const BundleMeta &meta, int64_t batch);

/// The path of `file` inside the bundle directory.
std::string bundleFile(llvm::StringRef bundleDir, llvm::StringRef file);

/// An error about the bundle at `bundleDir`: "neural cost model bundle
/// '<dir>': <message>".
llvm::Error bundleError(llvm::StringRef bundleDir, const llvm::Twine &message);

/// Reads `<bundleDir>/meta.json` (readJSONFile: "cannot read metadata
/// '<bundleDir>/meta.json': ...") and checks it as parseBundleMeta does.
llvm::Expected<BundleMeta> readBundleMeta(llvm::StringRef bundleDir);

/// Checks the text of a bundle's meta.json: the format and version, the
/// feature order (count and names), batch size, dtype, encoding width (at
/// most kMaxEncodingDim) and device count (within the topology's bounds).
/// Integer fields must be written as integers. Errors name
/// `<bundleDir>/meta.json`; text that is not JSON is "metadata
/// '<bundleDir>/meta.json': invalid JSON: ..." (parseJSONFile).
llvm::Expected<BundleMeta> parseBundleMeta(llvm::StringRef bundleDir,
                                           llvm::StringRef text);

} // namespace neural
} // namespace neuroshard

#endif // NEUROSHARD_LIB_COSTMODEL_NEURAL_BUNDLEMETA_H
