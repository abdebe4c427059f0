//===- Version.cpp - The project's version in every tool ------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/Version.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

const char *neuroshard::projectVersion() { return NEUROSHARD_VERSION; }

void neuroshard::addVersionPrinter() {
  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "NeuroShard " << projectVersion() << "\n";
  });
}
