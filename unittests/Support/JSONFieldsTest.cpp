//===- JSONFieldsTest.cpp - Reading the fields of a JSON object -----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Every reader of a JSON object names the object and the field in its
// errors, with the value it got.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Support/JSONFields.h"

#include "gtest/gtest.h"

#include <string>

using namespace llvm;
using namespace neuroshard;

namespace {

std::string message(Error err) {
  return err ? toString(std::move(err)) : std::string();
}

json::Object sample() {
  return json::Object{{"id", 3},
                      {"whole", 5e6},
                      {"half", 4.5},
                      {"negative", -1},
                      {"ms", 0.25},
                      {"name", "t"},
                      {"cols", json::Array{0, 32}},
                      {"empty", json::Array{8, 8}}};
}

TEST(JSONFieldsTest, ReadsWellFormedFields) {
  json::Object object = sample();
  JSONFields fields(object, "set 1");
  int64_t id = 0, whole = 0, begin = 0, end = 0;
  double ms = 0.0;
  std::string name;
  EXPECT_EQ(message(fields.integer("id", id, 1)), "");
  EXPECT_EQ(id, 3);
  EXPECT_EQ(message(fields.integer("whole", whole)), "");
  EXPECT_EQ(whole, 5000000);
  EXPECT_EQ(message(fields.number("ms", ms)), "");
  EXPECT_EQ(ms, 0.25);
  EXPECT_EQ(message(fields.string("name", name)), "");
  EXPECT_EQ(name, "t");
  EXPECT_EQ(message(fields.range("cols", begin, end)), "");
  EXPECT_EQ(begin, 0);
  EXPECT_EQ(end, 32);
  EXPECT_EQ(message(fields.check(std::nullopt)), "");
  EXPECT_EQ(fields.name(), "set 1");
}

TEST(JSONFieldsTest, ErrorsNameTheObjectTheFieldAndTheValue) {
  json::Object object = sample();
  JSONFields fields(object, "samples 'x' line 2");
  int64_t integer = 0, begin = 0, end = 0;
  double number = 0.0;
  std::string text;
  EXPECT_EQ(message(fields.integer("runs", integer)),
            "samples 'x' line 2: missing field 'runs'");
  EXPECT_EQ(message(fields.integer("half", integer)),
            "samples 'x' line 2: 'half' must be an integer of at least 0, "
            "got 4.5");
  EXPECT_EQ(message(fields.integer("id", integer, 4)),
            "samples 'x' line 2: 'id' must be an integer of at least 4, got 3");
  EXPECT_EQ(message(fields.number("negative", number)),
            "samples 'x' line 2: 'negative' must be a number of at least 0, "
            "got -1");
  EXPECT_EQ(message(fields.number("name", number)),
            "samples 'x' line 2: 'name' must be a number of at least 0, got "
            "\"t\"");
  EXPECT_EQ(message(fields.string("id", text)),
            "samples 'x' line 2: 'id' must be a string, got 3");
  EXPECT_EQ(message(fields.range("empty", begin, end)),
            "samples 'x' line 2: 'empty' must be a pair [begin, end] of "
            "integers with 0 <= begin < end, got [8,8]");
  EXPECT_EQ(message(fields.range("id", begin, end)),
            "samples 'x' line 2: 'id' must be a pair [begin, end] of "
            "integers with 0 <= begin < end, got 3");
  EXPECT_EQ(message(fields.readInteger("half", *fields.find("half"), integer)),
            "samples 'x' line 2: 'half' must be an integer, got 4.5");
  EXPECT_EQ(message(fields.readNumber("name", *fields.find("name"), number)),
            "samples 'x' line 2: 'name' must be a number, got \"t\"");
  EXPECT_EQ(message(fields.check(std::string("too wide"))),
            "samples 'x' line 2: too wide");
  EXPECT_EQ(fields.find("absent"), nullptr);
}

TEST(JSONFieldsTest, RefusesUnknownFields) {
  json::Object object{{"rows", 10}, {"dmi", 4}};
  JSONFields fields(object, "tables[0] ('t')");
  EXPECT_EQ(message(fields.checkKnown({"rows", "dim"})),
            "tables[0] ('t'): unknown field 'dmi' (expected one of: rows, "
            "dim)");
  EXPECT_EQ(message(fields.checkKnown({"rows", "dim", "dmi"})), "");
}

} // namespace
