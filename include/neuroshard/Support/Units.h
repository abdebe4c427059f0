//===- Units.h - Bytes per GB and how sizes are printed ---------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Memory is counted in bytes and reported in GB where GB = 2^30 bytes (as
// TorchRec's planner does): device capacities, table and plan sizes, the
// tools' memory options and every message about memory. Plain C++ and
// header only, so that the runtime below LLVM and the standalone CUDA
// runner use the same unit and the same wording as the planner.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SUPPORT_UNITS_H
#define NEUROSHARD_SUPPORT_UNITS_H

#include <cstdio>
#include <string>
#include <utility>

namespace neuroshard {

/// Bytes in one GB.
constexpr double kBytesPerGB = 1024.0 * 1024.0 * 1024.0;

/// Formats bytes as GB for messages with at least three significant digits
/// ("20.3 GB", "2.03 GB", "0.600 GB", "1.98e+28 GB"), plus `extraDigits`
/// (at most 9).
inline std::string formatGB(double bytes, unsigned extraDigits = 0) {
  double gb = bytes / kBytesPerGB;
  int digits = static_cast<int>(extraDigits);
  char text[64];
  // Sizes no machine has (a mistyped table) in scientific notation.
  if (gb >= 1e9)
    std::snprintf(text, sizeof(text), "%.*e GB", 2 + digits, gb);
  else if (gb >= 10.0)
    std::snprintf(text, sizeof(text), "%.*f GB", 1 + digits, gb);
  else if (gb >= 1.0)
    std::snprintf(text, sizeof(text), "%.*f GB", 2 + digits, gb);
  else
    std::snprintf(text, sizeof(text), "%#.*g GB", 3 + digits, gb);
  return text;
}

/// Formats two sizes a message compares ("needs A but has B") with as many
/// digits as it takes for different sizes to print differently.
inline std::pair<std::string, std::string> formatGBPair(double a, double b) {
  // A few extra digits separate any sizes that differ by a byte or more
  // at the scales of tables and devices.
  unsigned extra = 0;
  while (extra < 9 && a != b && formatGB(a, extra) == formatGB(b, extra))
    ++extra;
  return {formatGB(a, extra), formatGB(b, extra)};
}

} // namespace neuroshard

#endif // NEUROSHARD_SUPPORT_UNITS_H
