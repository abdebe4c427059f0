//===- MemoryBudget.h - Admitting a run before it allocates -----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// A run's weights, index streams, offsets and outputs are sized by products
// of user-given numbers; allocating them and failing halfway ends in the
// kernel's out-of-memory killer or an uncaught std::bad_alloc, not an error.
// Tools add up what a run will need first, in floating point so that no sum
// overflows, and refuse it when it exceeds the smallest of the limits the
// process runs under: the memory available (MemAvailable), what RLIMIT_AS
// and RLIMIT_DATA leave of the address space and data segment, and what the
// cgroup's memory limit leaves (a container reports the host's MemAvailable).
// Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_MEMORYBUDGET_H
#define NEUROSHARD_RUNTIME_MEMORYBUDGET_H

#include "neuroshard/Support/Units.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace neuroshard {

/// What a run needs, part by part ({"weights", bytes}, {"indices", bytes}).
struct MemoryNeed {
  std::vector<std::pair<std::string, double>> parts;
  void add(std::string part, double bytes) {
    parts.emplace_back(std::move(part), bytes);
  }
  double total() const;
};

/// One bound on what a run may allocate: the bytes it leaves the run and
/// how a message names them after "more than the 3.52 GB of".
struct MemoryLimit {
  double bytes = 0.0;
  std::string name;
};

/// The limits a run's allocations meet, each absent where the process has
/// no such limit or it cannot be read.
struct MemoryLimits {
  /// MemAvailable in /proc/meminfo, or --memory-limit-gb in its place.
  std::optional<MemoryLimit> available;
  /// RLIMIT_AS less the address space in use (VmSize in /proc/self/status).
  std::optional<MemoryLimit> addressSpace;
  /// RLIMIT_DATA less the data segment in use (VmData).
  std::optional<MemoryLimit> dataSegment;
  /// The memory limit of the process's cgroup or of an ancestor, less what
  /// that cgroup uses beyond its inactive file cache, which the kernel
  /// reclaims before it fails an allocation.
  std::optional<MemoryLimit> cgroup;

  /// The smallest limit (the first of equal ones), or nothing when none is
  /// known.
  std::optional<MemoryLimit> binding() const;
};

/// Where readMemoryLimits reads; tests point it at a fake tree.
struct MemoryLimitFiles {
  std::string meminfo = "/proc/meminfo";
  std::string status = "/proc/self/status";
  std::string cgroups = "/proc/self/cgroup";
  std::string cgroupRoot = "/sys/fs/cgroup";
};

/// This process's MemoryLimits: `files` and getrlimit. The cgroup limit is
/// cgroup v2's memory.max less memory.current, at the process's cgroup and
/// each ancestor visible under `cgroupRoot`; without one, cgroup v1's
/// memory.limit_in_bytes less memory.usage_in_bytes under
/// `cgroupRoot`/memory.
MemoryLimits readMemoryLimits(const MemoryLimitFiles &files = {});

/// The bytes that a "Key:   N kB" line of `text` gives for `key`
/// (/proc/meminfo's "MemAvailable", /proc/self/status's "VmSize"), or
/// nothing.
std::optional<double> parseKiBField(std::string_view text,
                                    std::string_view key);

/// The bytes a cgroup memory file holds (memory.max, memory.current,
/// memory.limit_in_bytes): nothing for "max", for cgroup v1's stand-ins for
/// no limit (2^60 and above) and for text that is not a byte count.
std::optional<double> parseCgroupBytes(std::string_view text);

/// The value of `key` in a cgroup's memory.stat ("inactive_file 1234"), or
/// nothing.
std::optional<double> parseMemoryStat(std::string_view text,
                                      std::string_view key);

/// The cgroup that /proc/self/cgroup (`text`) places the process in, as a
/// path under its hierarchy's root: cgroup v2's ("0::/path") without
/// `controller`, else that of the v1 hierarchy whose controllers include it
/// ("4:memory:/path").
std::optional<std::string> parseCgroupPath(std::string_view text,
                                           std::string_view controller = {});

/// What a limit of `limitBytes`, `usedBytes` of it in use, leaves, named
/// `what` and the numbers: "address space left under RLIMIT_AS (4.00 GB
/// limit, 0.480 GB in use)".
MemoryLimit limitLeft(double limitBytes, double usedBytes,
                      const std::string &what);

/// Nothing when `need` fits the binding one of `limits`, else the error
/// (sizes by formatGB): "needs 6.00 GB (weights 4.00 GB, indices 2.00 GB),
/// more than the 3.52 GB of address space left under RLIMIT_AS (4.00 GB
/// limit, 0.480 GB in use)". Without any limit nothing is refused.
std::optional<std::string> admitMemory(const MemoryNeed &need,
                                       const MemoryLimits &limits);

/// admitMemory with this process's limits; `limitBytes` > 0 is the user's
/// --memory-limit-gb and replaces the memory available, while the limits
/// the process cannot exceed (rlimits, cgroup) still apply.
std::optional<std::string> admitMemory(const MemoryNeed &need,
                                       double limitBytes);

} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_MEMORYBUDGET_H
