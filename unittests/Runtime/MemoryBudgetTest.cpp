//===- MemoryBudgetTest.cpp - Which memory limit binds a run --------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/MemoryBudget.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>

using namespace neuroshard;

namespace {

constexpr double kGB = kBytesPerGB;

/// A fake /proc and /sys/fs/cgroup in a fresh temporary directory.
class FakeSystem {
public:
  FakeSystem() {
    char pattern[] = "/tmp/neuroshard-memory-XXXXXX";
    root = mkdtemp(pattern);
    files.meminfo = root + "/meminfo";
    files.status = root + "/status";
    files.cgroups = root + "/cgroup";
    files.cgroupRoot = root + "/sys";
  }
  ~FakeSystem() { std::system(("rm -rf '" + root + "'").c_str()); }

  /// Writes `text` to `path` under the root, making its directories.
  void write(const std::string &path, const std::string &text) {
    for (size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1))
      mkdir((root + path.substr(0, slash)).c_str(), 0700);
    std::ofstream(root + path) << text;
  }

  std::string root;
  MemoryLimitFiles files;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool startsWith(const std::string &text, const std::string &prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

/// Sets the soft limit of `resource` for the scope and restores it after.
class ScopedSoftLimit {
public:
  ScopedSoftLimit(int resource, rlim_t soft) : resource(resource) {
    getrlimit(resource, &saved);
    rlimit lowered = saved;
    lowered.rlim_cur = soft;
    setrlimit(resource, &lowered);
  }
  ~ScopedSoftLimit() { setrlimit(resource, &saved); }

private:
  int resource;
  rlimit saved;
};

TEST(MemoryBudgetTest, ParsesKiBFields) {
  std::string meminfo = "MemTotal:       24684096 kB\n"
                        "MemFree:        22000000 kB\n"
                        "MemAvailable:   20468396 kB\n";
  EXPECT_EQ(parseKiBField(meminfo, "MemAvailable"), 20468396.0 * 1024.0);
  EXPECT_EQ(parseKiBField(meminfo, "MemTotal"), 24684096.0 * 1024.0);
  EXPECT_EQ(parseKiBField(meminfo, "Mem"), std::nullopt);
  EXPECT_EQ(parseKiBField(meminfo, "SwapFree"), std::nullopt);

  std::string status = "Name:\tneuroshard-run\n"
                       "VmPeak:\t  524288 kB\n"
                       "VmSize:\t  503316 kB\n"
                       "VmData:\t  131072 kB\n";
  EXPECT_EQ(parseKiBField(status, "VmSize"), 503316.0 * 1024.0);
  EXPECT_EQ(parseKiBField(status, "VmData"), 128.0 * 1024.0 * 1024.0);
  EXPECT_EQ(parseKiBField(status, "Name"), std::nullopt);
  EXPECT_EQ(parseKiBField("", "VmSize"), std::nullopt);
}

TEST(MemoryBudgetTest, ParsesCgroupBytes) {
  EXPECT_EQ(parseCgroupBytes("4294967296\n"), 4.0 * kGB);
  EXPECT_EQ(parseCgroupBytes("0\n"), 0.0);
  // "max" and cgroup v1's stand-in for no limit are no limit.
  EXPECT_EQ(parseCgroupBytes("max\n"), std::nullopt);
  EXPECT_EQ(parseCgroupBytes("9223372036854771712\n"), std::nullopt);
  EXPECT_EQ(parseCgroupBytes("1152921504606846976"), std::nullopt);
  EXPECT_EQ(parseCgroupBytes("1152921504606842880"), 1152921504606842880.0);
  EXPECT_EQ(parseCgroupBytes(""), std::nullopt);
  EXPECT_EQ(parseCgroupBytes("-1"), std::nullopt);
  EXPECT_EQ(parseCgroupBytes("12 34"), std::nullopt);
  EXPECT_EQ(parseCgroupBytes(std::string(400, '9')), std::nullopt);
}

TEST(MemoryBudgetTest, ParsesMemoryStat) {
  std::string stat = "anon 1048576\nfile 4096\ninactive_file 2048\n"
                     "active_file 2048\n";
  EXPECT_EQ(parseMemoryStat(stat, "inactive_file"), 2048.0);
  EXPECT_EQ(parseMemoryStat(stat, "anon"), 1048576.0);
  EXPECT_EQ(parseMemoryStat(stat, "total_inactive_file"), std::nullopt);
}

TEST(MemoryBudgetTest, ParsesCgroupPaths) {
  std::string hybrid = "9:name=systemd:/\n"
                       "5:cpu,memory:/job/7\n"
                       "1:cpuacct:/\n"
                       "0::/user.slice/session-1.scope\n";
  EXPECT_EQ(parseCgroupPath(hybrid), "/user.slice/session-1.scope");
  EXPECT_EQ(parseCgroupPath(hybrid, "memory"), "/job/7");
  EXPECT_EQ(parseCgroupPath(hybrid, "pids"), std::nullopt);
  EXPECT_EQ(parseCgroupPath("0::/\n"), "/");
  EXPECT_EQ(parseCgroupPath("0::/a:b\n"), "/a:b");
  EXPECT_EQ(parseCgroupPath("4:memory:/x\n"), std::nullopt);
  EXPECT_EQ(parseCgroupPath(""), std::nullopt);
}

TEST(MemoryBudgetTest, NamesWhatALimitLeaves) {
  MemoryLimit left =
      limitLeft(4.0 * kGB, 0.5 * kGB, "address space left under RLIMIT_AS");
  EXPECT_EQ(left.bytes, 3.5 * kGB);
  EXPECT_EQ(left.name,
            "address space left under RLIMIT_AS (4.00 GB limit, 0.500 GB in "
            "use)");
  // Already past the limit: nothing is left.
  EXPECT_EQ(limitLeft(1.0 * kGB, 2.0 * kGB, "x").bytes, 0.0);
}

TEST(MemoryBudgetTest, TheSmallestLimitBinds) {
  MemoryLimits limits;
  EXPECT_EQ(limits.binding(), std::nullopt);

  limits.available = MemoryLimit{15.0 * kGB, "available"};
  limits.addressSpace = MemoryLimit{3.5 * kGB, "as"};
  limits.dataSegment = MemoryLimit{7.0 * kGB, "data"};
  limits.cgroup = MemoryLimit{5.0 * kGB, "cgroup"};
  EXPECT_EQ(limits.binding()->name, "as");

  limits.cgroup->bytes = 1.0 * kGB;
  EXPECT_EQ(limits.binding()->name, "cgroup");
  limits.dataSegment->bytes = 0.5 * kGB;
  EXPECT_EQ(limits.binding()->name, "data");
  limits.available->bytes = 0.25 * kGB;
  EXPECT_EQ(limits.binding()->name, "available");

  // Unknown limits do not bind; of equal ones the first does.
  limits.available.reset();
  limits.dataSegment.reset();
  limits.addressSpace->bytes = limits.cgroup->bytes;
  EXPECT_EQ(limits.binding()->name, "as");
}

TEST(MemoryBudgetTest, RefusesByTheBindingLimit) {
  MemoryNeed need;
  need.add("weights", 4.0 * kGB);
  need.add("indices", 2.0 * kGB);
  MemoryLimits limits;
  limits.available = MemoryLimit{
      15.2 * kGB, "memory available (MemAvailable in /proc/meminfo)"};
  EXPECT_EQ(admitMemory(need, limits), std::nullopt);

  limits.addressSpace =
      limitLeft(4.0 * kGB, 0.48 * kGB, "address space left under RLIMIT_AS");
  EXPECT_EQ(admitMemory(need, limits),
            "needs 6.00 GB (weights 4.00 GB, indices 2.00 GB), more than "
            "the 3.52 GB of address space left under RLIMIT_AS (4.00 GB "
            "limit, 0.480 GB in use)");

  // Sizes that would print alike get the digits that tell them apart.
  limits.addressSpace->bytes = 6.0 * kGB - 1e6;
  EXPECT_EQ(admitMemory(need, limits)->substr(0, 12), "needs 6.000 ");

  // Without any limit, nothing is refused.
  EXPECT_EQ(admitMemory(need, MemoryLimits()), std::nullopt);
}

TEST(MemoryBudgetTest, ReadsCgroupV2AndItsAncestors) {
  FakeSystem system;
  system.write("/meminfo", "MemAvailable:   20971520 kB\n");
  system.write("/cgroup", "0::/job/step\n");
  // The step has no limit of its own; the job's binds, less its usage
  // beyond the inactive file cache.
  system.write("/sys/job/step/memory.max", "max\n");
  system.write("/sys/job/step/memory.current", "1073741824\n");
  system.write("/sys/job/memory.max", "4294967296\n");
  system.write("/sys/job/memory.current", "2147483648\n");
  system.write("/sys/job/memory.stat", "anon 1073741824\n"
                                       "inactive_file 536870912\n");
  MemoryLimits limits = readMemoryLimits(system.files);
  ASSERT_TRUE(limits.available);
  EXPECT_EQ(limits.available->bytes, 20.0 * kGB);
  ASSERT_TRUE(limits.cgroup);
  EXPECT_EQ(limits.cgroup->bytes, 2.5 * kGB);
  EXPECT_EQ(limits.cgroup->name, "memory left under the cgroup's memory.max "
                                 "(4.00 GB limit, 1.50 GB in use)");

  // A tighter limit further down binds instead.
  system.write("/sys/job/step/memory.max", "1610612736\n");
  EXPECT_EQ(readMemoryLimits(system.files).cgroup->bytes, 0.5 * kGB);
}

TEST(MemoryBudgetTest, ReadsCgroupV1WithoutAV2Limit) {
  FakeSystem system;
  system.write("/cgroup", "4:memory:/docker/abc\n0::/\n");
  // Only the container's own cgroup is mounted, at the hierarchy's root.
  system.write("/sys/memory/memory.limit_in_bytes", "3221225472\n");
  system.write("/sys/memory/memory.usage_in_bytes", "1073741824\n");
  system.write("/sys/memory/memory.stat", "inactive_file 1\n"
                                          "total_inactive_file 0\n");
  MemoryLimits limits = readMemoryLimits(system.files);
  EXPECT_FALSE(limits.available);
  ASSERT_TRUE(limits.cgroup);
  EXPECT_EQ(limits.cgroup->bytes, 2.0 * kGB);
  EXPECT_EQ(limits.cgroup->name,
            "memory left under the cgroup's memory.limit_in_bytes (3.00 GB "
            "limit, 1.00 GB in use)");

  // v1's "no limit" is none.
  system.write("/sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_FALSE(readMemoryLimits(system.files).cgroup);
}

TEST(MemoryBudgetTest, IgnoresCgroupsOutsideTheMount) {
  FakeSystem system;
  system.write("/cgroup", "0::/../other\n");
  system.write("/sys/memory.max", "1073741824\n");
  system.write("/other/memory.max", "1073741824\n");
  EXPECT_FALSE(readMemoryLimits(system.files).cgroup);
}

TEST(MemoryBudgetTest, ReadsTheRlimitsLessWhatIsInUse) {
  std::string status = readFile("/proc/self/status");
  std::optional<double> vmSize = parseKiBField(status, "VmSize");
  std::optional<double> vmData = parseKiBField(status, "VmData");
  ASSERT_TRUE(vmSize && vmData);
  MemoryLimits limits;
  {
    // A gigabyte beyond what the process uses now, for as long as it reads.
    ScopedSoftLimit addressSpace(RLIMIT_AS, rlim_t(*vmSize + kGB));
    ScopedSoftLimit dataSegment(RLIMIT_DATA, rlim_t(*vmData + kGB));
    limits = readMemoryLimits();
  }
  ASSERT_TRUE(limits.addressSpace && limits.dataSegment);
  EXPECT_NEAR(limits.addressSpace->bytes, kGB, 0.25 * kGB);
  EXPECT_NEAR(limits.dataSegment->bytes, kGB, 0.25 * kGB);
  EXPECT_TRUE(startsWith(limits.addressSpace->name,
                         "address space left under RLIMIT_AS ("))
      << limits.addressSpace->name;
  EXPECT_TRUE(startsWith(limits.dataSegment->name,
                         "data segment left under RLIMIT_DATA ("))
      << limits.dataSegment->name;
}

} // namespace
