//===- Json.h - A small JSON reader for the runner's manifest ---*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The runner builds without LLVM, so it cannot use llvm::json; this reader
// covers RFC 8259 (no extensions) and reports the line and column of the
// first error.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_CUDA_RUNNER_JSON_H
#define NEUROSHARD_CUDA_RUNNER_JSON_H

#include <string>
#include <utility>
#include <vector>

namespace neuroshard {
namespace runner {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0.0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  /// The member `key` of an object, or null if absent.
  const JsonValue *find(const std::string &key) const;
  /// "object", "array", ... for error messages.
  const char *kindName() const;
};

/// Parses `text` into `out`; on failure sets `error` to
/// "line L, column C: what was expected".
bool parseJson(const std::string &text, JsonValue &out, std::string &error);

} // namespace runner
} // namespace neuroshard

#endif // NEUROSHARD_CUDA_RUNNER_JSON_H
