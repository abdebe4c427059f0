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

namespace neuroshard {
namespace neural {

/// Features per table, in DESIGN §3 order: rows, dim, pooling_factor,
/// bin_0..bin_16.
constexpr unsigned kNumFeatures = 3 + kNumAccessBins;

/// The widest table encoding a bundle may declare (the shipped models use
/// 32); it sizes buffers of the search, so it is bounded like every size
/// read from a file.
constexpr int64_t kMaxEncodingDim = 4096;

/// meta.json's fields that the C++ side uses, on top of NeuralBundleInfo.
struct BundleMeta {
  NeuralBundleInfo info;
  /// Bytes per table element of `info.dtype`.
  unsigned elementBytes = 0;
  /// Held-out mean absolute percentage error of the compute model, when the
  /// trainer recorded one.
  std::optional<double> computeMape;
};

/// The path of `file` inside the bundle directory.
std::string bundleFile(llvm::StringRef bundleDir, llvm::StringRef file);

/// An error about the bundle at `bundleDir`: "neural cost model bundle
/// '<dir>': <message>".
llvm::Error bundleError(llvm::StringRef bundleDir, const llvm::Twine &message);

/// Reads and checks `<bundleDir>/meta.json` with parseBundleMeta.
llvm::Expected<BundleMeta> readBundleMeta(llvm::StringRef bundleDir);

/// Checks the text of a bundle's meta.json: the format and version, the
/// feature order (count and names), batch size, dtype, encoding width (at
/// most kMaxEncodingDim) and device count (within the topology's bounds).
/// Integer fields must be written as integers. Errors name
/// `<bundleDir>/meta.json`.
llvm::Expected<BundleMeta> parseBundleMeta(llvm::StringRef bundleDir,
                                           llvm::StringRef text);

} // namespace neural
} // namespace neuroshard

#endif // NEUROSHARD_LIB_COSTMODEL_NEURAL_BUNDLEMETA_H
