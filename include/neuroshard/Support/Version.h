//===- Version.h - The project's version and docs in every tool -*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SUPPORT_VERSION_H
#define NEUROSHARD_SUPPORT_VERSION_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace neuroshard {

/// The project's version (CMake's PROJECT_VERSION), e.g. "0.4.0".
const char *projectVersion();

/// Makes `--version` print "NeuroShard <version>" first, then the version of
/// LLVM the tool was built with.
/// Call before parsing the command line.
void addVersionPrinter();

/// The directory of NeuroShard's documentation (README.md and docs/, as in
/// the source tree):
/// share/doc/neuroshard next to the running program's bin/ (the build tree
/// and an installed prefix alike), else the configured install prefix's;
/// "" when neither exists.
std::string documentationDir();

/// Ends `--help` with a DOCUMENTATION section naming `page` (a file of
/// docs/, "planner.md") and the directory of all of it, where they are on
/// this machine. Call once, before parsing the command line.
void addDocumentationHelp(llvm::StringRef page);

} // namespace neuroshard

#endif // NEUROSHARD_SUPPORT_VERSION_H
