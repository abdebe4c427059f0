//===- FileIO.h - Reading JSON and writing output files safely --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Every tool that reads a JSON file a user wrote, or writes an output file,
// does it here, so that a document nested deep enough to overflow the
// parser's stack, or a full disk, is one error message and not a crash.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_SUPPORT_FILEIO_H
#define NEUROSHARD_SUPPORT_FILEIO_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace neuroshard {

/// The deepest nesting of arrays and objects a JSON input may have. Every
/// file format of the project needs fewer than ten levels; llvm::json::parse
/// recurses once per level, so much deeper documents would exhaust the stack.
constexpr unsigned kMaxJSONDepth = 256;

/// Parses `text` after a scan that refuses documents nested deeper than
/// kMaxJSONDepth: "JSON nests deeper than 256 levels (line 1, column 257)".
llvm::Expected<llvm::json::Value> parseJSON(llvm::StringRef text);

/// Reads the JSON file at `path` ("-" is standard input) and parses it with
/// parseJSON. `what` names the file's role ("inputs", "pool"), so that every
/// reader words its errors alike: "cannot read WHAT 'PATH': <reason>" and
/// "WHAT 'PATH': invalid JSON: <reason>".
llvm::Expected<llvm::json::Value> readJSONFile(llvm::StringRef path,
                                               llvm::StringRef what);

/// The parsing half of readJSONFile, for `text` read from `path` otherwise:
/// "WHAT 'PATH': invalid JSON: <reason>".
llvm::Expected<llvm::json::Value>
parseJSONFile(llvm::StringRef text, llvm::StringRef path, llvm::StringRef what);

/// The value of an integer field: a JSON number written as an integer. Unlike
/// json::Value::getAsInteger, "4.0" and "4e0" are not integers; a negative
/// number with a zero fraction cannot be told apart from an integer here,
/// and is returned (every negative integer field of the project is refused
/// by its own rule).
std::optional<int64_t> getInteger(const llvm::json::Value &value);

/// The largest integer every double up to which is exact: 2^53.
constexpr double kLargestExactInteger = 9007199254740992.0;

/// The value of an integer field a person writes (a task, a plan): any JSON
/// number with a whole value ("5000000", "5e6", "5.0e6"), up to 2^53 in
/// magnitude when written with a fraction or an exponent. "4.5", "1e300"
/// and NaN are not integers. Files the tools write use getInteger.
std::optional<int64_t> getWholeNumber(const llvm::json::Value &value);

/// Writes an output file through `write`. "-" is standard output; a regular
/// file is written to a temporary file beside it that replaces it only once
/// complete, so a failed write leaves no half-written file; other files
/// (devices, pipes) are written in place. Every failure, including one that
/// shows only when the data is flushed, is "cannot write 'FILE': <reason>".
llvm::Error
writeOutputFile(llvm::StringRef path,
                llvm::function_ref<void(llvm::raw_ostream &)> write);

} // namespace neuroshard

#endif // NEUROSHARD_SUPPORT_FILEIO_H
