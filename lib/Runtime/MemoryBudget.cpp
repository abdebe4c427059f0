//===- MemoryBudget.cpp - Admitting a run before it allocates -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/MemoryBudget.h"

#include <fstream>
#include <sstream>

namespace neuroshard {

std::optional<double> availableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    double kib = 0.0;
    if (fields >> key >> kib >> unit && key == "MemAvailable:" && unit == "kB")
      return kib * 1024.0;
  }
  return std::nullopt;
}

double MemoryNeed::total() const {
  double sum = 0.0;
  for (const auto &part : parts)
    sum += part.second;
  return sum;
}

std::optional<std::string> admitMemory(const MemoryNeed &need,
                                       double limitBytes) {
  std::string limitText = "--memory-limit-gb";
  if (!(limitBytes > 0.0)) {
    std::optional<double> available = availableMemoryBytes();
    if (!available)
      return std::nullopt;
    limitBytes = *available;
    limitText = "memory available (MemAvailable in /proc/meminfo)";
  }
  double total = need.total();
  if (total <= limitBytes)
    return std::nullopt;
  std::string message = "needs " + formatGB(total) + " (";
  for (size_t i = 0; i < need.parts.size(); ++i)
    message += (i ? ", " : "") + need.parts[i].first + " " +
               formatGB(need.parts[i].second);
  return message + "), more than the " + formatGB(limitBytes) + " of " +
         limitText;
}

} // namespace neuroshard
