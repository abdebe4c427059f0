//===- HostInfo.h - What machine measurements were taken on -----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The name datasets record in their "hardware" field. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_HOSTINFO_H
#define NEUROSHARD_RUNTIME_HOSTINFO_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace neuroshard {

/// The host CPU's model name (Linux: /proc/cpuinfo), or "unknown CPU".
std::string hostCPUModel();

/// The first core's data and unified caches as (name, KiB) pairs, "L1d",
/// "L2", "L3" in that order, read from Linux's sysfs under `cacheDir`; a
/// level the machine does not report is left out.
std::vector<std::pair<std::string, int64_t>> hostCachesKB(
    const std::string &cacheDir = "/sys/devices/system/cpu/cpu0/cache");

} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_HOSTINFO_H
