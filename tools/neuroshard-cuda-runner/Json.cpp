//===- Json.cpp - A small JSON reader for the runner's manifest -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "Json.h"

#include <cstdlib>

namespace neuroshard {
namespace runner {

const JsonValue *JsonValue::find(const std::string &key) const {
  for (const auto &member : object)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *JsonValue::kindName() const {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "a value";
}

namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  bool parseDocument(JsonValue &out, std::string &error) {
    skipSpace();
    if (!parseValue(out, 0)) {
      error = message;
      return false;
    }
    skipSpace();
    if (pos != text.size()) {
      fail("unexpected text after the JSON value");
      error = message;
      return false;
    }
    return true;
  }

private:
  // Nesting deeper than this is refused rather than recursed into.
  static constexpr int kMaxDepth = 64;

  bool fail(const std::string &what) {
    if (!message.empty())
      return false;
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    message = "line " + std::to_string(line) + ", column " +
              std::to_string(column) + ": " + what;
    return false;
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool literal(const char *word) {
    size_t length = std::char_traits<char>::length(word);
    if (text.compare(pos, length, word) != 0)
      return fail(std::string("expected '") + word + "'");
    pos += length;
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth) +
                  " levels");
    if (pos >= text.size())
      return fail("unexpected end of input, expected a value");
    char c = text[pos];
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      out.kind = JsonValue::Kind::String;
      return parseString(out.string);
    }
    if (c == 't' || c == 'f') {
      out.kind = JsonValue::Kind::Bool;
      out.boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out.kind = JsonValue::Kind::Null;
      return literal("null");
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    return fail(std::string("unexpected character '") + c +
                "', expected a value");
  }

  bool digits() {
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
      ++pos;
    return pos > start;
  }

  bool parseNumber(JsonValue &out) {
    size_t start = pos;
    if (text[pos] == '-')
      ++pos;
    if (pos < text.size() && text[pos] == '0')
      ++pos;
    else if (!digits())
      return fail("malformed number");
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      if (!digits())
        return fail("malformed number: digits expected after '.'");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!digits())
        return fail("malformed number: digits expected in the exponent");
    }
    out.kind = JsonValue::Kind::Number;
    out.number = std::strtod(text.substr(start, pos - start).c_str(), nullptr);
    return true;
  }

  bool hex4(unsigned &value) {
    if (pos + 4 > text.size())
      return fail("truncated \\u escape");
    value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        value |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        value |= unsigned(c - 'A' + 10);
      else
        return fail("malformed \\u escape");
    }
    return true;
  }

  void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xc0 | (code >> 6));
      out += char(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += char(0xe0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3f));
      out += char(0x80 | (code & 0x3f));
    } else {
      out += char(0xf0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3f));
      out += char(0x80 | ((code >> 6) & 0x3f));
      out += char(0x80 | (code & 0x3f));
    }
  }

  bool parseString(std::string &out) {
    ++pos; // opening quote
    out.clear();
    while (true) {
      if (pos >= text.size())
        return fail("unterminated string");
      char c = text[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos;
        return fail("control character in a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= text.size())
        return fail("unterminated string");
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned code = 0;
        if (!hex4(code))
          return false;
        if (code >= 0xd800 && code < 0xdc00) {
          unsigned low = 0;
          if (text.compare(pos, 2, "\\u") != 0)
            return fail("unpaired surrogate in a \\u escape");
          pos += 2;
          if (!hex4(low))
            return false;
          if (low < 0xdc00 || low >= 0xe000)
            return fail("unpaired surrogate in a \\u escape");
          code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        }
        appendUtf8(out, code);
        break;
      }
      default:
        --pos;
        return fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  bool parseArray(JsonValue &out, int depth) {
    ++pos;
    out.kind = JsonValue::Kind::Array;
    skipSpace();
    if (pos < text.size() && text[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      out.array.emplace_back();
      skipSpace();
      if (!parseValue(out.array.back(), depth + 1))
        return false;
      skipSpace();
      if (pos >= text.size())
        return fail("unterminated array, expected ',' or ']'");
      if (text[pos] == ']') {
        ++pos;
        return true;
      }
      if (text[pos] != ',')
        return fail("expected ',' or ']' in an array");
      ++pos;
    }
  }

  bool parseObject(JsonValue &out, int depth) {
    ++pos;
    out.kind = JsonValue::Kind::Object;
    skipSpace();
    if (pos < text.size() && text[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      if (pos >= text.size() || text[pos] != '"')
        return fail("expected a quoted member name");
      std::string key;
      if (!parseString(key))
        return false;
      if (out.find(key))
        return fail("duplicate member '" + key + "'");
      skipSpace();
      if (pos >= text.size() || text[pos] != ':')
        return fail("expected ':' after member '" + key + "'");
      ++pos;
      skipSpace();
      out.object.emplace_back(key, JsonValue());
      if (!parseValue(out.object.back().second, depth + 1))
        return false;
      skipSpace();
      if (pos >= text.size())
        return fail("unterminated object, expected ',' or '}'");
      if (text[pos] == '}') {
        ++pos;
        return true;
      }
      if (text[pos] != ',')
        return fail("expected ',' or '}' in an object");
      ++pos;
    }
  }

  const std::string &text;
  size_t pos = 0;
  std::string message;
};

} // namespace

bool parseJson(const std::string &text, JsonValue &out, std::string &error) {
  out = JsonValue();
  return Parser(text).parseDocument(out, error);
}

} // namespace runner
} // namespace neuroshard
