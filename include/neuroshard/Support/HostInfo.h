//===- HostInfo.h - What machine measurements were taken on -----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The name datasets record in their "hardware" field. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SUPPORT_HOSTINFO_H
#define NEUROSHARD_SUPPORT_HOSTINFO_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace neuroshard {

/// The host CPU's model name: the first "model name" of `cpuinfo` (Linux's
/// /proc/cpuinfo) with the blanks around it trimmed, or "unknown CPU".
std::string hostCPUModel(const std::string &cpuinfo = "/proc/cpuinfo");

/// What tells CPUs with one vague model name apart (a virtual machine may
/// call chips two generations apart "AMD EPYC"): /proc/cpuinfo's first
/// "cpu family" and "model" numbers and which of kISAFlags its "flags"
/// line names, sorted.
struct CPUIdentity {
  std::optional<int64_t> family;
  std::optional<int64_t> modelNumber;
  std::vector<std::string> isa;
};

/// The instruction-set flags that change how fast the kernels run.
inline constexpr const char *kISAFlags[] = {"amx_tile", "avx",     "avx2",
                                            "avx512bw", "avx512f", "avx512vl",
                                            "fma",      "sse4_2"};

/// This machine's CPUIdentity, from `cpuinfo`.
CPUIdentity hostCPUIdentity(const std::string &cpuinfo = "/proc/cpuinfo");

/// Whether `recorded`, the identity of the CPU a measurement was taken on,
/// names another chip than `here`: a family or model number that both know
/// differs, or, when `recordedISA` (the record lists its flags), the flags
/// differ. Both lists of flags are sorted.
bool isOtherChip(const CPUIdentity &recorded, bool recordedISA,
                 const CPUIdentity &here);

/// "family 25, model 17, avx avx2 fma": the numbers `identity` knows and,
/// when `withISA`, its flags ("no vector extensions listed" for none).
std::string describeCPUIdentity(const CPUIdentity &identity, bool withISA);

/// The first core's data and unified caches as (name, KiB) pairs, "L1d",
/// "L2", "L3" in that order, read from Linux's sysfs under `cacheDir`; a
/// level the machine does not report is left out.
std::vector<std::pair<std::string, int64_t>> hostCachesKB(
    const std::string &cacheDir = "/sys/devices/system/cpu/cpu0/cache");

} // namespace neuroshard

#endif // NEUROSHARD_SUPPORT_HOSTINFO_H
