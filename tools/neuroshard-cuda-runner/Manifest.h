//===- Manifest.h - The launch manifest of neuroshard-cuda-runner -*- C++ -*-=//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What --neuroshard-export-cuda writes and the runner reads: the kernels
// object, the tables with their statistics, the lookups (one input stream
// each) and the launches (one per device's fused lookup). KernelABI.h
// defines its records; every field is checked here, so the rest of the
// runner works on validated data.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CUDA_RUNNER_MANIFEST_H
#define NEUROSHARD_CUDA_RUNNER_MANIFEST_H

#include "neuroshard/Runtime/InputGenerator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace neuroshard {
namespace runner {

struct LookupSpec {
  size_t table = 0;
  uint64_t stream = 0;
};

struct ShardSpec {
  size_t lookup = 0;
  int64_t colBegin = 0, colEnd = 0;
  bool mean = false;
  int64_t width() const { return colEnd - colBegin; }
};

struct LaunchSpec {
  int64_t device = 0;
  bool index64 = true;
  std::vector<ShardSpec> shards;
};

struct Manifest {
  /// The kernels object, resolved against the manifest's directory.
  std::string modulePath;
  std::string moduleFormat;
  std::string chip;
  std::string forwardI32, forwardI64, backwardI32, backwardI64;
  int64_t threadsPerBlock = 256;
  int64_t batchSize = 0;
  uint64_t seed = 0;
  double lr = 0.0;
  std::vector<inputs::TableStats> tables;
  std::vector<LookupSpec> lookups;
  std::vector<LaunchSpec> launches;
};

/// Parses and checks manifest text; `baseDir` resolves a relative module
/// path. On failure `error` names the field and the offending value.
bool parseManifest(const std::string &text, const std::string &baseDir,
                   Manifest &out, std::string &error);

/// Reads and parses the manifest file `path`.
bool loadManifest(const std::string &path, Manifest &out, std::string &error);

/// Reads a whole file; false with a message if it cannot.
bool readFile(const std::string &path, std::string &contents,
              std::string &error);

} // namespace runner
} // namespace neuroshard

#endif // NEUROSHARD_CUDA_RUNNER_MANIFEST_H
