//===- FileIOTest.cpp - Reading JSON files --------------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Every JSON file a tool or library reads goes through readJSONFile, so its
// two errors read the same everywhere: "cannot read WHAT 'PATH': ..." and
// "WHAT 'PATH': invalid JSON: ...".
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/FileIO.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>

using namespace llvm;
using namespace neuroshard;

namespace {

/// A file holding `text`, removed with the fixture.
class FileIOTest : public ::testing::Test {
protected:
  std::string write(StringRef text) {
    SmallString<128> path;
    int fd;
    EXPECT_FALSE(sys::fs::createTemporaryFile("fileio", "json", fd, path));
    {
      raw_fd_ostream os(fd, /*shouldClose=*/true);
      os << text;
    }
    files.push_back(std::string(path));
    return files.back();
  }
  void TearDown() override {
    for (const std::string &file : files)
      sys::fs::remove(file);
  }
  std::vector<std::string> files;
};

template <typename T> std::string errorOf(Expected<T> value) {
  if (value)
    return "no error";
  return toString(value.takeError());
}

TEST_F(FileIOTest, ReadsAndParsesAFile) {
  std::string path = write("{\"0\": [1, 2]}");
  Expected<json::Value> value = readJSONFile(path, "inputs");
  ASSERT_TRUE(static_cast<bool>(value)) << toString(value.takeError());
  const json::Object *object = value->getAsObject();
  ASSERT_NE(object, nullptr);
  ASSERT_NE(object->getArray("0"), nullptr);
  EXPECT_EQ(object->getArray("0")->size(), 2u);
}

TEST_F(FileIOTest, NamesTheFileItCannotRead) {
  std::string missing = write("") + ".missing";
  std::string message = errorOf(readJSONFile(missing, "pool"));
  EXPECT_EQ(message.rfind("cannot read pool '" + missing + "': ", 0), 0u)
      << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos)
      << message;
}

TEST_F(FileIOTest, NamesTheFileThatIsNotJSON) {
  std::string path = write("{\"tables\": ");
  std::string message = errorOf(readJSONFile(path, "pool"));
  EXPECT_EQ(message.rfind("pool '" + path + "': invalid JSON: ", 0), 0u)
      << message;
}

TEST_F(FileIOTest, RefusesDocumentsNestedTooDeep) {
  std::string path = write(std::string(300, '[') + std::string(300, ']'));
  EXPECT_EQ(errorOf(readJSONFile(path, "inputs")),
            "inputs '" + path +
                "': invalid JSON: JSON nests deeper than 256 levels (line 1, "
                "column 257)");
}

TEST(FileIOParseTest, ParsesTextReadElsewhere) {
  EXPECT_TRUE(static_cast<bool>(parseJSONFile("[1]", "b/meta.json", "x")));
  EXPECT_EQ(errorOf(parseJSONFile("[1,", "b/meta.json", "metadata"))
                .rfind("metadata 'b/meta.json': invalid JSON: ", 0),
            0u);
}

} // namespace
