//===- HostInfoTest.cpp - Reading the machine's caches --------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/HostInfo.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace neuroshard;

namespace {

/// A fake sysfs cache directory in a fresh temporary directory.
class FakeCaches {
public:
  FakeCaches() {
    char pattern[] = "/tmp/neuroshard-caches-XXXXXX";
    root = mkdtemp(pattern);
  }
  ~FakeCaches() { std::system(("rm -rf '" + root + "'").c_str()); }

  void add(int index, const std::string &level, const std::string &type,
           const std::string &size) {
    std::string dir = root + "/index" + std::to_string(index);
    mkdir(dir.c_str(), 0700);
    std::ofstream(dir + "/level") << level << "\n";
    std::ofstream(dir + "/type") << type << "\n";
    std::ofstream(dir + "/size") << size << "\n";
  }

  std::string root;
};

TEST(HostInfoTest, ReadsDataAndUnifiedCaches) {
  FakeCaches caches;
  caches.add(0, "1", "Data", "48K");
  caches.add(1, "1", "Instruction", "32K");
  caches.add(2, "2", "Unified", "1024K");
  caches.add(3, "3", "Unified", "32M");
  auto found = hostCachesKB(caches.root);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0], std::make_pair(std::string("L1d"), int64_t(48)));
  EXPECT_EQ(found[1], std::make_pair(std::string("L2"), int64_t(1024)));
  EXPECT_EQ(found[2], std::make_pair(std::string("L3"), int64_t(32768)));
}

TEST(HostInfoTest, SkipsWhatItCannotRead) {
  FakeCaches caches;
  caches.add(0, "2", "Unified", "lots");
  caches.add(1, "3", "Unified", "");
  EXPECT_TRUE(hostCachesKB(caches.root).empty());
  EXPECT_TRUE(hostCachesKB(caches.root + "/missing").empty());
}

TEST(HostInfoTest, TellsChipsWithOneNameApart) {
  FakeCaches dir;
  std::string cpuinfo = dir.root + "/cpuinfo";
  std::ofstream(cpuinfo)
      << "processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\n"
         "model name\t: AMD EPYC\n"
         "flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_bf16\n\n"
         "processor\t: 1\ncpu family\t: 6\n";
  CPUIdentity identity = hostCPUIdentity(cpuinfo);
  EXPECT_EQ(identity.family, 25);
  EXPECT_EQ(identity.modelNumber, 17);
  EXPECT_EQ(identity.isa, (std::vector<std::string>{"avx", "avx2", "avx512f",
                                                    "fma", "sse4_2"}));
  CPUIdentity none = hostCPUIdentity(dir.root + "/missing");
  EXPECT_FALSE(none.family.has_value());
  EXPECT_TRUE(none.isa.empty());
  EXPECT_EQ(hostCPUModel(cpuinfo), "AMD EPYC");
  EXPECT_EQ(hostCPUModel(dir.root + "/missing"), "unknown CPU");
}

TEST(HostInfoTest, UnnamedCPUsAreUnknown) {
  FakeCaches dir;
  std::string cpuinfo = dir.root + "/cpuinfo";
  std::ofstream(cpuinfo) << "processor\t: 0\nmodel name\t: \t\n";
  EXPECT_EQ(hostCPUModel(cpuinfo), "unknown CPU");
}

TEST(HostInfoTest, OtherChipsDifferInWhatBothKnow) {
  CPUIdentity here{25, 17, {"avx", "avx2", "fma"}};
  EXPECT_FALSE(isOtherChip(here, true, here));
  // Numbers a record leaves out, and flags it does not list, agree.
  EXPECT_FALSE(isOtherChip(CPUIdentity{25, std::nullopt, {}}, false, here));
  EXPECT_TRUE(isOtherChip(CPUIdentity{26, std::nullopt, {}}, false, here));
  EXPECT_TRUE(isOtherChip(CPUIdentity{25, 1, {}}, false, here));
  EXPECT_TRUE(isOtherChip(CPUIdentity{25, 17, {"avx"}}, true, here));
  EXPECT_EQ(describeCPUIdentity(here, true), "family 25, model 17, avx avx2 "
                                             "fma");
  EXPECT_EQ(describeCPUIdentity(CPUIdentity{26, std::nullopt, {}}, true),
            "family 26, no vector extensions listed");
  EXPECT_EQ(describeCPUIdentity(here, false), "family 25, model 17");
}

} // namespace
