//===- FileIO.cpp - Reading JSON and writing output files safely ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/FileIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace llvm;

namespace neuroshard {

/// The line and column of the first byte nested deeper than kMaxJSONDepth,
/// if any. Brackets inside strings do not count.
static std::optional<std::pair<unsigned, unsigned>>
findTooDeep(StringRef text) {
  unsigned depth = 0, line = 1, column = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    }
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    switch (c) {
    case '"':
      inString = true;
      break;
    case '[':
    case '{':
      if (++depth > kMaxJSONDepth)
        return std::make_pair(line, column);
      break;
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

Expected<json::Value> parseJSON(StringRef text) {
  if (auto where = findTooDeep(text))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("JSON nests deeper than {0} levels (line {1}, column {2})",
                kMaxJSONDepth, where->first, where->second));
  return json::parse(text);
}

Expected<json::Value> readJSONFile(StringRef path, StringRef what) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (std::error_code ec = buffer.getError())
    return createStringError(ec, "cannot read " + what + " '" + path +
                                     "': " + ec.message());
  return parseJSONFile((*buffer)->getBuffer(), path, what);
}

Expected<json::Value> parseJSONFile(StringRef text, StringRef path,
                                    StringRef what) {
  Expected<json::Value> value = parseJSON(text);
  if (!value)
    return createStringError(
        inconvertibleErrorCode(),
        what + " '" + path + "': invalid JSON: " + toString(value.takeError()));
  return value;
}

std::optional<int64_t> getInteger(const json::Value &value) {
  // json::Value keeps numbers written with a fraction or an exponent as
  // doubles, and getAsUINT64 accepts only the integer kinds.
  if (std::optional<uint64_t> natural = value.getAsUINT64())
    return *natural <= uint64_t(INT64_MAX) ? std::optional<int64_t>(*natural)
                                           : std::nullopt;
  // getAsInteger converts a double to int64_t to compare it, which is
  // undefined for doubles outside int64_t's range ("-1e300").
  std::optional<double> number = value.getAsNumber();
  if (!number || !(*number < 0) || *number < double(INT64_MIN))
    return std::nullopt;
  return value.getAsInteger();
}

std::optional<int64_t> getWholeNumber(const json::Value &value) {
  if (std::optional<int64_t> integer = getInteger(value))
    return integer;
  std::optional<double> number = value.getAsNumber();
  if (!number || !std::isfinite(*number) || std::floor(*number) != *number ||
      std::fabs(*number) > kLargestExactInteger)
    return std::nullopt;
  return static_cast<int64_t>(*number);
}

/// Flushes `os` and takes its error, if any, so that the stream's destructor
/// does not abort on it.
static std::error_code flushAndTakeError(raw_fd_ostream &os) {
  os.flush();
  std::error_code ec = os.error();
  os.clear_error();
  return ec;
}

Error writeOutputFile(StringRef path, function_ref<void(raw_ostream &)> write) {
  auto failure = [&](const Twine &reason) {
    return createStringError(inconvertibleErrorCode(),
                             "cannot write '" + path + "': " + reason);
  };
  if (path == "-") {
    write(outs());
    if (std::error_code ec = flushAndTakeError(outs()))
      return failure(ec.message());
    return Error::success();
  }

  sys::fs::file_status status;
  if (!sys::fs::status(path, status) && sys::fs::exists(status) &&
      status.type() != sys::fs::file_type::regular_file) {
    // A device or a pipe cannot be replaced by a renamed file.
    std::error_code ec;
    raw_fd_ostream os(path, ec, sys::fs::OF_None);
    if (ec)
      return failure(ec.message());
    write(os);
    if ((ec = flushAndTakeError(os)))
      return failure(ec.message());
    return Error::success();
  }

  Expected<sys::fs::TempFile> temp = sys::fs::TempFile::create(
      path + ".tmp-%%%%%%", sys::fs::all_read | sys::fs::all_write);
  if (!temp)
    return failure(toString(temp.takeError()));
  std::error_code ec;
  {
    raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    write(os);
    ec = flushAndTakeError(os);
  }
  if (ec) {
    consumeError(temp->discard());
    return failure(ec.message());
  }
  if (Error err = temp->keep(path))
    return failure(toString(std::move(err)));
  return Error::success();
}

} // namespace neuroshard
