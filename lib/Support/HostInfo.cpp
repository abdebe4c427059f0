//===- HostInfo.cpp - What machine measurements were taken on -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/HostInfo.h"

#include <algorithm>
#include <fstream>

/// The first line of a small sysfs file, or "" if it cannot be read.
static std::string firstLine(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// "32K" -> 32, "1024K" -> 1024, "32M" -> 32768; -1 for anything else.
static int64_t sizeKB(const std::string &text) {
  size_t digits = 0;
  int64_t value = 0;
  while (digits < text.size() && digits < 12 && text[digits] >= '0' &&
         text[digits] <= '9')
    value = value * 10 + (text[digits++] - '0');
  if (digits == 0)
    return -1;
  std::string unit = text.substr(digits);
  if (unit == "K")
    return value;
  if (unit == "M")
    return value * 1024;
  if (unit == "G")
    return value * 1024 * 1024;
  return -1;
}

std::vector<std::pair<std::string, int64_t>>
neuroshard::hostCachesKB(const std::string &cacheDir) {
  std::vector<std::pair<std::string, int64_t>> caches;
  for (int index = 0; index < 16; ++index) {
    std::string dir = cacheDir + "/index" + std::to_string(index) + "/";
    std::string level = firstLine(dir + "level");
    if (level.empty())
      continue;
    std::string type = firstLine(dir + "type");
    std::string name;
    if (level == "1" && type == "Data")
      name = "L1d";
    else if ((level == "2" || level == "3") && type == "Unified")
      name = "L" + level;
    int64_t kb = sizeKB(firstLine(dir + "size"));
    if (name.empty() || kb < 0)
      continue;
    bool seen = std::any_of(caches.begin(), caches.end(),
                            [&](const auto &c) { return c.first == name; });
    if (!seen)
      caches.emplace_back(name, kb);
  }
  std::sort(caches.begin(), caches.end());
  return caches;
}

/// The value of the first line of `path` whose key (before the colon,
/// blanks trimmed) is `key`; nullopt if there is none.
static std::optional<std::string> cpuinfoValue(const std::string &path,
                                               const std::string &key) {
  std::ifstream in(path);
  std::string line;
  const char *blanks = " \t";
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string name = line.substr(0, colon);
    size_t last = name.find_last_not_of(blanks);
    if (last == std::string::npos || name.substr(0, last + 1) != key)
      continue;
    size_t first = line.find_first_not_of(blanks, colon + 1);
    if (first == std::string::npos)
      return std::string();
    return line.substr(first, line.find_last_not_of(blanks) - first + 1);
  }
  return std::nullopt;
}

static std::optional<int64_t>
smallNumber(const std::optional<std::string> &text) {
  if (!text || text->empty() || text->size() > 9 ||
      !std::all_of(text->begin(), text->end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(*text);
}

std::string neuroshard::hostCPUModel(const std::string &cpuinfo) {
  std::optional<std::string> model = cpuinfoValue(cpuinfo, "model name");
  return model && !model->empty() ? *model : "unknown CPU";
}

neuroshard::CPUIdentity
neuroshard::hostCPUIdentity(const std::string &cpuinfo) {
  CPUIdentity identity;
  identity.family = smallNumber(cpuinfoValue(cpuinfo, "cpu family"));
  identity.modelNumber = smallNumber(cpuinfoValue(cpuinfo, "model"));
  std::string flags = " " + cpuinfoValue(cpuinfo, "flags").value_or("") + " ";
  for (const char *flag : kISAFlags)
    if (flags.find(" " + std::string(flag) + " ") != std::string::npos)
      identity.isa.push_back(flag);
  return identity;
}

bool neuroshard::isOtherChip(const CPUIdentity &recorded, bool recordedISA,
                             const CPUIdentity &here) {
  auto differs = [](const std::optional<int64_t> &a,
                    const std::optional<int64_t> &b) {
    return a && b && *a != *b;
  };
  return differs(recorded.family, here.family) ||
         differs(recorded.modelNumber, here.modelNumber) ||
         (recordedISA && recorded.isa != here.isa);
}

std::string neuroshard::describeCPUIdentity(const CPUIdentity &identity,
                                            bool withISA) {
  std::vector<std::string> parts;
  if (identity.family)
    parts.push_back("family " + std::to_string(*identity.family));
  if (identity.modelNumber)
    parts.push_back("model " + std::to_string(*identity.modelNumber));
  if (withISA) {
    std::string flags;
    for (const std::string &flag : identity.isa)
      flags += (flags.empty() ? "" : " ") + flag;
    parts.push_back(flags.empty() ? "no vector extensions listed" : flags);
  }
  std::string text;
  for (const std::string &part : parts)
    text += (text.empty() ? "" : ", ") + part;
  return text;
}
