//===- HostInfo.cpp - What machine measurements were taken on -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/HostInfo.h"

#include <fstream>

std::string neuroshard::hostCPUModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  const char *blanks = " \t";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0)
      continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    size_t first = line.find_first_not_of(blanks, colon + 1);
    if (first == std::string::npos)
      continue;
    size_t last = line.find_last_not_of(blanks);
    return line.substr(first, last - first + 1);
  }
  return "unknown CPU";
}
