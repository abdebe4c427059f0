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

#include <string>

namespace neuroshard {

/// The host CPU's model name (Linux: /proc/cpuinfo), or "unknown CPU".
std::string hostCPUModel();

} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_HOSTINFO_H
