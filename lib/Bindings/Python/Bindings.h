//===- Bindings.h - What the parts of neuroshard._core share ----*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The Python module is the one place where NeuroShard's C++ meets code that
// throws: pybind11 reports Python errors as C++ exceptions. These helpers
// turn the libraries' llvm::Error into a Python exception at that boundary,
// with the C++ message unchanged, and declare the parts of the module that
// each file of this directory adds.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_BINDINGS_PYTHON_BINDINGS_H
#define NEUROSHARD_BINDINGS_PYTHON_BINDINGS_H

#include "llvm/Support/Error.h"

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

namespace neuroshard {
namespace python {

/// Raised in Python as neuroshard.NeuroShardError, a ValueError: input the
/// C++ core refuses (a task, an option, a cost model, a problem with no
/// valid plan), in the core's own words.
class NeuroShardError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws NeuroShardError with the message of `err`, if it is one.
inline void throwIfError(llvm::Error err) {
  if (err)
    throw NeuroShardError(llvm::toString(std::move(err)));
}

/// The value of `expected`, or NeuroShardError with its message.
template <typename T> T unwrap(llvm::Expected<T> expected) {
  if (!expected)
    throw NeuroShardError(llvm::toString(expected.takeError()));
  return std::move(*expected);
}

/// The table rules and their constants (TableRules.h).
void populateTableRules(pybind11::module_ &m);
/// Tasks, the planner and the cost models (PlanIO.h, Search.h).
void populatePlanner(pybind11::module_ &m);
/// The input generator (InputGenerator.h) and host identity (HostInfo.h).
void populateRuntime(pybind11::module_ &m);

} // namespace python
} // namespace neuroshard

#endif // NEUROSHARD_BINDINGS_PYTHON_BINDINGS_H
