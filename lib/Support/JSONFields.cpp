//===- JSONFields.cpp - Reading the fields of a JSON object ---------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/JSONFields.h"
#include "neuroshard/Support/FileIO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;

namespace neuroshard {

Error JSONFields::fail(const Twine &message) const {
  return createStringError(inconvertibleErrorCode(), where + ": " + message);
}

Error JSONFields::checkKnown(ArrayRef<StringRef> known) const {
  for (const auto &entry : object)
    if (!is_contained(known, entry.first.str()))
      return fail(formatv("unknown field '{0}' (expected one of: {1})",
                          entry.first.str(), join(known, ", ")));
  return Error::success();
}

Error JSONFields::require(StringRef key, const json::Value *&value) const {
  value = object.get(key);
  if (!value)
    return fail(formatv("missing field '{0}'", key));
  return Error::success();
}

Error JSONFields::readInteger(StringRef key, const json::Value &value,
                              int64_t &out) const {
  std::optional<int64_t> integer = getWholeNumber(value);
  if (!integer)
    return fail(formatv("'{0}' must be an integer, got {1}", key, value));
  out = *integer;
  return Error::success();
}

Error JSONFields::readNumber(StringRef key, const json::Value &value,
                             double &out) const {
  std::optional<double> number = value.getAsNumber();
  if (!number)
    return fail(formatv("'{0}' must be a number, got {1}", key, value));
  out = *number;
  return Error::success();
}

Error JSONFields::integer(StringRef key, int64_t &out, int64_t least) const {
  const json::Value *value;
  if (Error err = require(key, value))
    return err;
  std::optional<int64_t> integer = getWholeNumber(*value);
  if (!integer || *integer < least)
    return fail(formatv("'{0}' must be an integer of at least {1}, got {2}",
                        key, least, *value));
  out = *integer;
  return Error::success();
}

Error JSONFields::number(StringRef key, double &out) const {
  const json::Value *value;
  if (Error err = require(key, value))
    return err;
  std::optional<double> number = value->getAsNumber();
  if (!number || !std::isfinite(*number) || *number < 0)
    return fail(
        formatv("'{0}' must be a number of at least 0, got {1}", key, *value));
  out = *number;
  return Error::success();
}

Error JSONFields::string(StringRef key, std::string &out) const {
  const json::Value *value;
  if (Error err = require(key, value))
    return err;
  std::optional<StringRef> text = value->getAsString();
  if (!text)
    return fail(formatv("'{0}' must be a string, got {1}", key, *value));
  out = text->str();
  return Error::success();
}

Error JSONFields::range(StringRef key, int64_t &begin, int64_t &end) const {
  const json::Value *value;
  if (Error err = require(key, value))
    return err;
  const json::Array *pair = value->getAsArray();
  std::optional<int64_t> first, last;
  if (pair && pair->size() == 2) {
    first = getWholeNumber((*pair)[0]);
    last = getWholeNumber((*pair)[1]);
  }
  if (!first || !last || *first < 0 || *last <= *first)
    return fail(formatv("'{0}' must be a pair [begin, end] of integers with "
                        "0 <= begin < end, got {1}",
                        key, *value));
  begin = *first;
  end = *last;
  return Error::success();
}

} // namespace neuroshard
