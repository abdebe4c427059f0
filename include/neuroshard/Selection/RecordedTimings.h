//===- RecordedTimings.h - Candidates timed on another machine --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Measured selection needs the device sets timed on the hardware the plan is
// for. A GPU plan is made where NeuroShard is built (LLVM, MLIR, LibTorch)
// and its sets are timed where the GPU is, which need not be the same
// machine: the GPU needs only the standalone neuroshard-cuda-runner. So
// selection can run in two plannings around one timing:
//
//   1. writeCandidateSets writes the candidates' distinct device sets to a
//      directory: `sets.json` (what each set holds, by table name) and
//      `sets.txt`, a launch manifest of the runner with one launch per set
//      (its device number the set id);
//   2. on the GPU, `neuroshard-cuda-runner --manifest sets.txt --collect
//      samples.jsonl` times each set (scripts/gpu/verify.sh run);
//   3. planning again with the same inputs keeps the same candidates, and
//      RecordedSetTimer hands verifyCandidates the recorded times.
//
// docs/planner.md ("Measured selection on a GPU") describes the flow.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SELECTION_RECORDEDTIMINGS_H
#define NEUROSHARD_SELECTION_RECORDEDTIMINGS_H

#include "neuroshard/Selection/PlanVerification.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace neuroshard {

class CostModel;

/// The files of a directory of exported sets.
constexpr const char *kSetsFileName = "sets.json";
constexpr const char *kSetsManifestName = "sets.txt";
constexpr const char *kSetSamplesName = "samples.jsonl";
/// The kernels object the manifest names, next to it; the directory's
/// writer does not compile it (scripts/gpu/verify.sh prepare does, with
/// --neuroshard-cuda-pipeline).
constexpr const char *kSetKernelsName = "kernels.cubin";
/// The chip the manifest names when none is given.
constexpr const char *kDefaultSetChip = "sm_90";
/// Writes the distinct device sets of `result.candidates` (distinctDeviceSets)
/// to `dir`, creating it: sets.json and the runner's manifest sets.txt
/// (setsManifest, kDefaultInputDraws draws) at the topology's batch, its
/// kernels `kernels.cubin` for `chip`. Returns how many sets it wrote; fails
/// naming the file that cannot be written; needs at least one candidate.
llvm::Expected<size_t>
writeCandidateSets(llvm::StringRef dir, llvm::ArrayRef<TableSpec> tables,
                   const Topology &topology, CostModel &model,
                   const PlanResult &result,
                   llvm::StringRef chip = kDefaultSetChip);

/// The launch manifest of `sets` (neuroshard-cuda-runner, docs/lowering.md):
/// each set once per draw, launch r x sets.size() + s being set s on draw r,
/// whose lookups read index stream r. A table looked up by several features
/// is one manifest table per feature (each with that feature's
/// statistics), as the CPU set timer times it.
std::string setsManifest(llvm::ArrayRef<TableSpec> tables, int64_t batchSize,
                         llvm::ArrayRef<std::vector<ColumnSlice>> sets,
                         llvm::StringRef chip,
                         unsigned draws = kDefaultInputDraws);

/// A SetTimer whose times were measured elsewhere: the sets of a directory
/// written by writeCandidateSets, with the runner's samples of them.
class RecordedSetTimer final : public SetTimer {
public:
  /// Reads `dir`'s sets.json and samples.jsonl: a set's time is the mean
  /// of its launches' (one per draw of its inputs), its fastest and slowest
  /// run theirs. Fails naming the file, the line and the field: a file
  /// missing, a sample of no launch or of another batch, a launch with no
  /// sample ("run the runner's collection again"), or samples of two kinds
  /// of hardware.
  static llvm::Expected<std::unique_ptr<RecordedSetTimer>>
  load(llvm::StringRef dir);

  /// Finds every set among the recorded ones; fails naming the first that
  /// is not (the candidates are not those that were written: planned with
  /// other inputs or options), or a batch other than the recorded one.
  llvm::Error prepare(llvm::ArrayRef<TableSpec> tables, int64_t batchSize,
                      llvm::ArrayRef<std::vector<ColumnSlice>> sets) override;
  /// The recorded time of prepared set `index` (the mean of its draws': one
  /// draw here).
  double time(size_t index, unsigned draw) override;
  std::optional<RecordedRuns> recorded(size_t index) const override;
  /// The hardware the runner named ("NVIDIA H200").
  std::string host() const override { return hardware; }
  /// The runner's device ("cuda").
  std::string device() const override { return deviceName; }

  /// One slice as the files name it: table name, columns, rows.
  struct SliceKey {
    std::string table;
    int64_t colBegin = 0, colEnd = 0, rowBegin = 0, rowEnd = 0;
    friend bool operator<(const SliceKey &a, const SliceKey &b) {
      return std::tie(a.table, a.colBegin, a.colEnd, a.rowBegin, a.rowEnd) <
             std::tie(b.table, b.colBegin, b.colEnd, b.rowBegin, b.rowEnd);
    }
  };
  using SetKey = std::vector<SliceKey>;

private:
  RecordedSetTimer() = default;

  std::string dir, hardware, deviceName;
  int64_t batchSize = 0;
  std::map<SetKey, RecordedRuns> timings;
  std::vector<RecordedRuns> prepared;
};

/// The key of `slices` of `tables` as the sets file names them, sorted.
RecordedSetTimer::SetKey setKey(llvm::ArrayRef<TableSpec> tables,
                                llvm::ArrayRef<ColumnSlice> slices);

} // namespace neuroshard

#endif // NEUROSHARD_SELECTION_RECORDEDTIMINGS_H
