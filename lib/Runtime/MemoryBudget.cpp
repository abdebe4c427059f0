//===- MemoryBudget.cpp - Admitting a run before it allocates -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/MemoryBudget.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/resource.h>

namespace neuroshard {

namespace {

/// The text of a small file, or nothing when it cannot be read.
std::optional<std::string> readText(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// What the soft limit `resource` leaves when `used` bytes count against it;
/// nothing for no limit.
std::optional<MemoryLimit> rlimitLeft(int resource, std::optional<double> used,
                                      const std::string &what) {
  rlimit limit;
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return std::nullopt;
  return limitLeft(double(limit.rlim_cur), used.value_or(0.0), what);
}

/// The smallest that the memory limits of the cgroup at `path` and of its
/// ancestors leave, read from `limitFile`, `usageFile` and the memory.stat
/// key `inactiveKey` under `root`, the hierarchy's mount. A directory that is
/// not there (the mount shows a container only its own cgroup) is skipped.
std::optional<MemoryLimit> cgroupLeft(const std::string &root,
                                      std::optional<std::string> path,
                                      const std::string &limitFile,
                                      const std::string &usageFile,
                                      std::string_view inactiveKey) {
  // A cgroup outside the namespace's root ("/../x") is not under the mount.
  if (!path || path->empty() || path->front() != '/' ||
      path->find("..") != std::string::npos)
    return std::nullopt;
  std::optional<MemoryLimit> smallest;
  std::string dir = *path == "/" ? "" : *path;
  while (true) {
    std::string at = root + dir + "/";
    std::optional<std::string> limitText = readText(at + limitFile);
    std::optional<double> limit =
        limitText ? parseCgroupBytes(*limitText) : std::nullopt;
    if (limit) {
      std::optional<std::string> usageText = readText(at + usageFile);
      double used =
          usageText ? parseCgroupBytes(*usageText).value_or(0.0) : 0.0;
      if (std::optional<std::string> stat = readText(at + "memory.stat"))
        used -=
            std::min(used, parseMemoryStat(*stat, inactiveKey).value_or(0.0));
      MemoryLimit left = limitLeft(
          *limit, used, "memory left under the cgroup's " + limitFile);
      if (!smallest || left.bytes < smallest->bytes)
        smallest = std::move(left);
    }
    if (dir.empty())
      return smallest;
    dir.erase(dir.rfind('/'));
  }
}

} // namespace

double MemoryNeed::total() const {
  double sum = 0.0;
  for (const auto &part : parts)
    sum += part.second;
  return sum;
}

std::optional<MemoryLimit> MemoryLimits::binding() const {
  std::optional<MemoryLimit> smallest;
  for (const std::optional<MemoryLimit> *limit :
       {&available, &addressSpace, &dataSegment, &cgroup})
    if (*limit && (!smallest || (*limit)->bytes < smallest->bytes))
      smallest = **limit;
  return smallest;
}

std::optional<double> parseKiBField(std::string_view text,
                                    std::string_view key) {
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name, unit;
    double kib = 0.0;
    if (fields >> name >> kib >> unit && unit == "kB" &&
        name.size() == key.size() + 1 && name.back() == ':' &&
        std::string_view(name).substr(0, key.size()) == key)
      return kib * 1024.0;
  }
  return std::nullopt;
}

std::optional<double> parseCgroupBytes(std::string_view text) {
  std::istringstream fields{std::string(text)};
  std::string word, rest;
  if (!(fields >> word) || fields >> rest ||
      word.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  // Cgroup v1 writes "no limit" as the largest page-aligned 63-bit number.
  constexpr double kNoLimit = double(uint64_t(1) << 60);
  double bytes = std::strtod(word.c_str(), nullptr);
  if (bytes >= kNoLimit)
    return std::nullopt;
  return bytes;
}

std::optional<double> parseMemoryStat(std::string_view text,
                                      std::string_view key) {
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    double value = 0.0;
    if (fields >> name >> value && name == key)
      return value;
  }
  return std::nullopt;
}

std::optional<std::string> parseCgroupPath(std::string_view text,
                                           std::string_view controller) {
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    // "hierarchy-ID:controller-list:cgroup-path"; the path may hold ':'.
    size_t first = line.find(':');
    size_t second =
        first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos)
      continue;
    std::string_view id = std::string_view(line).substr(0, first);
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controller.empty()) {
      if (id == "0" && controllers.empty())
        return path;
      continue;
    }
    std::istringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ','))
      if (name == controller)
        return path;
  }
  return std::nullopt;
}

MemoryLimit limitLeft(double limitBytes, double usedBytes,
                      const std::string &what) {
  return {std::max(0.0, limitBytes - usedBytes),
          what + " (" + formatGB(limitBytes) + " limit, " +
              formatGB(usedBytes) + " in use)"};
}

MemoryLimits readMemoryLimits(const MemoryLimitFiles &files) {
  MemoryLimits limits;
  std::optional<std::string> meminfo = readText(files.meminfo);
  if (std::optional<double> available =
          meminfo ? parseKiBField(*meminfo, "MemAvailable") : std::nullopt)
    limits.available = MemoryLimit{
        *available, "memory available (MemAvailable in /proc/meminfo)"};

  std::string status = readText(files.status).value_or("");
  limits.addressSpace = rlimitLeft(RLIMIT_AS, parseKiBField(status, "VmSize"),
                                   "address space left under RLIMIT_AS");
  limits.dataSegment = rlimitLeft(RLIMIT_DATA, parseKiBField(status, "VmData"),
                                  "data segment left under RLIMIT_DATA");

  std::string cgroups = readText(files.cgroups).value_or("");
  limits.cgroup = cgroupLeft(files.cgroupRoot, parseCgroupPath(cgroups),
                             "memory.max", "memory.current", "inactive_file");
  if (!limits.cgroup)
    limits.cgroup =
        cgroupLeft(files.cgroupRoot + "/memory",
                   parseCgroupPath(cgroups, "memory"), "memory.limit_in_bytes",
                   "memory.usage_in_bytes", "total_inactive_file");
  return limits;
}

std::optional<std::string> admitMemory(const MemoryNeed &need,
                                       const MemoryLimits &limits) {
  std::optional<MemoryLimit> limit = limits.binding();
  double total = need.total();
  if (!limit || total <= limit->bytes)
    return std::nullopt;
  auto [needText, limitText] = formatGBPair(total, limit->bytes);
  std::string message = "needs " + needText + " (";
  for (size_t i = 0; i < need.parts.size(); ++i)
    message += (i ? ", " : "") + need.parts[i].first + " " +
               formatGB(need.parts[i].second);
  return message + "), more than the " + limitText + " of " + limit->name;
}

std::optional<std::string> admitMemory(const MemoryNeed &need,
                                       double limitBytes) {
  MemoryLimits limits = readMemoryLimits();
  if (limitBytes > 0.0)
    limits.available = MemoryLimit{limitBytes, "--memory-limit-gb"};
  return admitMemory(need, limits);
}

} // namespace neuroshard
