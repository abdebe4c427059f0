//===- Version.h - The project's version in every tool ----------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SUPPORT_VERSION_H
#define NEUROSHARD_SUPPORT_VERSION_H

namespace neuroshard {

/// The project's version (CMake's PROJECT_VERSION), e.g. "0.4.0".
const char *projectVersion();

/// Makes `--version` print "NeuroShard <version>" after LLVM's own lines.
/// Call before parsing the command line.
void addVersionPrinter();

} // namespace neuroshard

#endif // NEUROSHARD_SUPPORT_VERSION_H
