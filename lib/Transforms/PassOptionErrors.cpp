//===- PassOptionErrors.cpp - Pass options parsed with helpful errors -----===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "PassOptionErrors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// Splits `text` at the blanks that lie outside quotes and braces.
static SmallVector<StringRef> splitOptions(StringRef text) {
  SmallVector<StringRef> parts;
  size_t start = 0, depth = 0;
  char quote = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ' ';
    if (quote) {
      quote = c == quote ? 0 : quote;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && depth > 0) {
      --depth;
    } else if (depth == 0 && (c == ' ' || c == '\t' || c == '\n')) {
      StringRef part = text.slice(start, i).trim();
      if (!part.empty())
        parts.push_back(part);
      start = i + 1;
    }
  }
  return parts;
}

/// The pass's option names, from its textual form "name{a=1 b=2}".
static SmallVector<StringRef> optionNames(Pass &pass, std::string &storage) {
  llvm::raw_string_ostream os(storage);
  pass.printAsTextualPipeline(os);
  StringRef text(storage);
  size_t open = text.find('{');
  SmallVector<StringRef> names;
  if (open == StringRef::npos || !text.ends_with("}"))
    return names;
  for (StringRef part : splitOptions(text.slice(open + 1, text.size() - 1)))
    names.push_back(part.split('=').first);
  return names;
}

LogicalResult mlir::neuroshard::initializeWithHelp(
    Pass &pass, StringRef options,
    function_ref<LogicalResult(const Twine &)> errorHandler,
    function_ref<LogicalResult(StringRef,
                               function_ref<LogicalResult(const Twine &)>)>
        parse) {
  std::string storage;
  SmallVector<StringRef> names = optionNames(pass, storage);
  std::string flag = ("--" + pass.getArgument()).str();
  for (StringRef part : splitOptions(options)) {
    StringRef key = part.split('=').first.trim();
    if (!names.empty() && !llvm::is_contained(names, key)) {
      StringRef nearest;
      unsigned best = 3;
      for (StringRef name : names) {
        unsigned distance = key.edit_distance(name, true, best);
        if (distance < best) {
          best = distance;
          nearest = name;
        }
      }
      std::string suggestion =
          nearest.empty() ? std::string(".")
                          : ("; did you mean '" + nearest + "'?").str();
      return errorHandler(flag + " has no option '" + key + "'" + suggestion +
                          " Its options: " + llvm::join(names, ", "));
    }
    std::string message;
    if (succeeded(parse(part, [&](const Twine &text) {
          message = text.str();
          return failure();
        })))
      continue;
    if (message.empty() || StringRef(message).contains("<Pass-Options"))
      message =
          ("'" + part.split('=').second + "' is not a value it takes").str();
    return errorHandler(flag + " option '" + key + "': " + message);
  }
  return success();
}
