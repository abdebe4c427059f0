//===- Version.cpp - The project's version and docs in every tool ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/Version.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

const char *neuroshard::projectVersion() { return NEUROSHARD_VERSION; }

void neuroshard::addVersionPrinter() {
  // The project first; the LLVM it was built with after it.
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "NeuroShard " << projectVersion() << "\n"
       << "  built with LLVM version " << LLVM_VERSION_STRING << "\n";
  });
}

std::string neuroshard::documentationDir() {
  std::string executable = sys::fs::getMainExecutable(nullptr, nullptr);
  if (!executable.empty()) {
    SmallString<256> dir(sys::path::parent_path(executable));
    sys::path::append(dir, "..", "share", "doc", "neuroshard");
    sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
    if (sys::fs::is_directory(dir))
      return std::string(dir);
  }
  if (sys::fs::is_directory(NEUROSHARD_INSTALL_DOCS_DIR))
    return NEUROSHARD_INSTALL_DOCS_DIR;
  return "";
}

void neuroshard::addDocumentationHelp(StringRef page) {
  // cl::extrahelp keeps a reference to its text, which must outlive the
  // parse: one section per program.
  static std::string text;
  if (!text.empty())
    return;
  std::string dir = documentationDir();
  raw_string_ostream os(text);
  os << "\nDOCUMENTATION:\n\n";
  if (dir.empty()) {
    os << "  docs/" << page << " and the rest of NeuroShard's documentation "
       << "are installed under share/doc/neuroshard, which this "
       << "installation lacks (expected next to the program or in "
       << NEUROSHARD_INSTALL_DOCS_DIR << ")\n";
  } else {
    SmallString<256> path(dir);
    sys::path::append(path, "docs", page);
    os << "  " << path << "\n  " << dir << "  (all of it; README.md first)\n";
  }
  static cl::extrahelp section(text.c_str());
}
