//===- BundleMetaFuzzer.cpp - Fuzz the bundle metadata reader -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Feeds arbitrary bytes to parseBundleMeta, the reader and checker of a
// neural cost-model bundle's meta.json, which runs before LibTorch loads any
// model file. What it accepts must be within the bounds the loader sizes its
// buffers and checks by.
// The TorchScript files themselves are not fuzzed (docs/limits.md).
//
//===----------------------------------------------------------------------===//

#include "BundleMeta.h"

#include "neuroshard/Sharding/TableRules.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace neuroshard;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<neural::BundleMeta> meta =
      neural::parseBundleMeta("fuzz-bundle", text);
  if (!meta) {
    llvm::consumeError(meta.takeError());
    return 0;
  }
  const NeuralBundleInfo &info = meta->info;
  // An accepted bundle's sizes are the ones the loader may allocate by.
  if (info.batchSize <= 0 || info.encodingDim == 0 ||
      info.encodingDim > neural::kMaxEncodingDim || meta->elementBytes == 0)
    std::abort();
  if (info.devices && (*info.devices == 0 || *info.devices > kMaxDevices))
    std::abort();
  return 0;
}
