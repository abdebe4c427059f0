//===- MemoryBudget.h - Admitting a run before it allocates -----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A run's weights, index streams, offsets and outputs are sized by products
// of user-given numbers; allocating them and failing halfway ends in the
// kernel's out-of-memory killer, not an error. Tools add up what a run will
// need first, in floating point so that no sum overflows, and refuse it
// when it exceeds the memory available (Linux: MemAvailable in
// /proc/meminfo) or a limit the user gave. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_MEMORYBUDGET_H
#define NEUROSHARD_RUNTIME_MEMORYBUDGET_H

#include "neuroshard/Support/Units.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace neuroshard {

/// The memory the system can give a new allocation without swapping
/// (MemAvailable in /proc/meminfo), or nothing where it is not known.
std::optional<double> availableMemoryBytes();

/// What a run needs, part by part ({"weights", bytes}, {"indices", bytes}).
struct MemoryNeed {
  std::vector<std::pair<std::string, double>> parts;
  void add(std::string part, double bytes) {
    parts.emplace_back(std::move(part), bytes);
  }
  double total() const;
};

/// Nothing when `need` fits, else the error (sizes by formatGB): "needs
/// 24.0 GB (weights 16.0 GB, indices 8.00 GB, offsets 0.00781 GB, outputs
/// 0.0156 GB), more than the 15.2 GB of memory available (MemAvailable);
/// lower ... or raise --memory-limit-gb". `limitBytes` > 0 is the user's limit
/// and replaces the available memory; without either nothing is refused.
std::optional<std::string> admitMemory(const MemoryNeed &need,
                                       double limitBytes);

} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_MEMORYBUDGET_H
