//===- JSONFields.h - Reading the fields of a JSON object -------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Every reader of a JSON file (tasks, plans, topologies, recorded timings)
// reads an object's fields here, so that its errors name the object and the
// field alike: "tables[0] ('t'): 'dim' must be an integer, got 4.5".
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SUPPORT_JSONFIELDS_H
#define NEUROSHARD_SUPPORT_JSONFIELDS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace neuroshard {

/// Reads the fields of one JSON object; `where` names the object ("task",
/// "samples 'x' line 3") at the start of every error.
class JSONFields {
public:
  JSONFields(const llvm::json::Object &object, std::string where)
      : object(object), where(std::move(where)) {}

  /// "WHERE: MESSAGE".
  llvm::Error fail(const llvm::Twine &message) const;
  /// Fails with `problem` where there is one (a broken rule's message).
  llvm::Error check(const std::optional<std::string> &problem) const {
    return problem ? fail(*problem) : llvm::Error::success();
  }

  /// Refuses fields outside `known`, so that typos do not pass silently.
  llvm::Error checkKnown(llvm::ArrayRef<llvm::StringRef> known) const;

  /// The field `key`, or null.
  const llvm::json::Value *find(llvm::StringRef key) const {
    return object.get(key);
  }
  /// The field `key` in `value`; "missing field 'KEY'" without it.
  llvm::Error require(llvm::StringRef key,
                      const llvm::json::Value *&value) const;

  /// `value`, field `key`, as a whole number (getWholeNumber): "'KEY' must be
  /// an integer, got VALUE" otherwise.
  llvm::Error readInteger(llvm::StringRef key, const llvm::json::Value &value,
                          int64_t &out) const;
  /// `value`, field `key`, as a number: "'KEY' must be a number, got VALUE"
  /// otherwise.
  llvm::Error readNumber(llvm::StringRef key, const llvm::json::Value &value,
                         double &out) const;

  /// The required field `key`: a whole number of at least `least`.
  llvm::Error integer(llvm::StringRef key, int64_t &out,
                      int64_t least = 0) const;
  /// The required field `key`: a finite number of at least 0.
  llvm::Error number(llvm::StringRef key, double &out) const;
  /// The required field `key`: a string.
  llvm::Error string(llvm::StringRef key, std::string &out) const;
  /// The required field `key`: a pair [begin, end] of whole numbers with
  /// 0 <= begin < end.
  llvm::Error range(llvm::StringRef key, int64_t &begin, int64_t &end) const;

  /// What the errors name the object.
  const std::string &name() const { return where; }

private:
  const llvm::json::Object &object;
  std::string where;
};

} // namespace neuroshard

#endif // NEUROSHARD_SUPPORT_JSONFIELDS_H
