// validateParams / validateValue / checkSchema: every supported keyword, field paths and the wording of errors.
#include "protocol/schema_validator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memq {
namespace {

using nlohmann::json;

// Expects InvalidParams naming `field` with exactly `message`.
void expectInvalid(const Status& status, const std::string& field, const std::string& message) {
  ASSERT_FALSE(status.isOk()) << "expected an error for " << field;
  EXPECT_EQ(status.code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(status.data(), json({{"field", field}}));
  EXPECT_EQ(status.message(), message);
}

json objectOf(json properties, json required = json::array()) {
  return json{{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
              {"additionalProperties", false}};
}

TEST(SchemaValidator, Types) {
  json schema = objectOf({{"s", {{"type", "string"}}},
                          {"i", {{"type", "integer"}}},
                          {"n", {{"type", "number"}}},
                          {"b", {{"type", "boolean"}}},
                          {"o", {{"type", "object"}}},
                          {"a", {{"type", "array"}}},
                          {"z", {{"type", "null"}}},
                          {"sn", {{"type", {"string", "null"}}}},
                          {"isn", {{"type", {"integer", "string", "null"}}}}});
  EXPECT_TRUE(validateParams(schema, json::parse(
      R"({"s":"x","i":-3,"n":1.5,"b":false,"o":{},"a":[],"z":null,"sn":null,"isn":"q"})")).isOk());
  EXPECT_TRUE(validateParams(schema, json{{"n", 2}}).isOk());  // an integer is a number
  EXPECT_TRUE(validateParams(schema, json{{"i", 18446744073709551615ull}}).isOk());

  expectInvalid(validateParams(schema, json{{"s", 1}}), "s", "s must be a string (got an integer)");
  expectInvalid(validateParams(schema, json{{"i", 1.5}}), "i", "i must be an integer (got a floating-point number)");
  expectInvalid(validateParams(schema, json{{"i", 2.0}}), "i", "i must be an integer (got a floating-point number)");
  expectInvalid(validateParams(schema, json{{"n", "1"}}), "n", "n must be a number (got a string)");
  expectInvalid(validateParams(schema, json{{"b", 0}}), "b", "b must be a boolean (got an integer)");
  expectInvalid(validateParams(schema, json{{"o", json::array()}}), "o", "o must be an object (got an array)");
  expectInvalid(validateParams(schema, json{{"a", json::object()}}), "a", "a must be an array (got an object)");
  expectInvalid(validateParams(schema, json{{"z", false}}), "z", "z must be null (got a boolean)");
  expectInvalid(validateParams(schema, json{{"sn", 1}}), "sn", "sn must be a string or null (got an integer)");
  expectInvalid(validateParams(schema, json{{"isn", true}}), "isn",
                "isn must be an integer, a string or null (got a boolean)");
}

TEST(SchemaValidator, TopLevelIsNamedParams) {
  json schema = objectOf({});
  expectInvalid(validateParams(schema, json::array({1, 2})), "params", "params must be an object (got an array)");
  EXPECT_TRUE(validateParams(schema, nullptr).isOk());  // absent params validate as {}
}

TEST(SchemaValidator, RequiredAndAbsentParams) {
  json schema = objectOf({{"summary", {{"type", "string"}}}, {"id", {{"type", "string"}}}}, {"summary", "id"});
  expectInvalid(validateParams(schema, nullptr), "summary", "summary is required");
  expectInvalid(validateParams(schema, json{{"summary", "x"}}), "id", "id is required");
  EXPECT_TRUE(validateParams(schema, json{{"summary", "x"}, {"id", "y"}}).isOk());
}

TEST(SchemaValidator, UnknownFieldNamesItAndSuggestsTheClosest) {
  json schema = objectOf({{"summary", {{"type", "string"}}}, {"files", {{"type", "array"}}}}, {"summary"});
  expectInvalid(validateParams(schema, json{{"sumary", "x"}}), "sumary",
                "unknown field 'sumary' (did you mean 'summary'?)");
  expectInvalid(validateParams(schema, json{{"summary", "x"}, {"Files", json::array()}}), "Files",
                "unknown field 'Files' (did you mean 'files'?)");
  expectInvalid(validateParams(schema, json{{"summary", "x"}, {"colour", 1}}), "colour", "unknown field 'colour'");
}

TEST(SchemaValidator, AdditionalPropertiesAsSchemaOrTrue) {
  json typed = {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}};
  EXPECT_TRUE(validateParams(typed, json{{"a", 1}, {"b", 2}}).isOk());
  expectInvalid(validateParams(typed, json{{"a", "x"}}), "a", "a must be an integer (got a string)");
  json open = {{"type", "object"}, {"properties", {{"a", {{"type", "string"}}}}}};
  EXPECT_TRUE(validateParams(open, json{{"a", "x"}, {"anything", {1, 2}}}).isOk());
}

TEST(SchemaValidator, Enum) {
  json schema = objectOf({{"scope", {{"type", "string"}, {"enum", {"project", "global"}}}},
                          {"category", {{"type", {"string", "null"}}, {"enum", {"pref", "gotcha", nullptr}}}}});
  EXPECT_TRUE(validateParams(schema, json{{"scope", "global"}, {"category", nullptr}}).isOk());
  expectInvalid(validateParams(schema, json{{"scope", "both"}}), "scope", "scope must be one of: project, global");
  expectInvalid(validateParams(schema, json{{"category", "idea"}}), "category",
                "category must be one of: pref, gotcha, null");
}

TEST(SchemaValidator, Const) {
  json schema = objectOf({{"confirm", {{"const", true}}}});
  EXPECT_TRUE(validateParams(schema, json{{"confirm", true}}).isOk());
  expectInvalid(validateParams(schema, json{{"confirm", false}}), "confirm", "confirm must be true");
}

TEST(SchemaValidator, StringLengthsCountCodePoints) {
  json schema = objectOf({{"summary", {{"type", "string"}, {"minLength", 1}}},
                          {"id", {{"type", "string"}, {"minLength", 4}, {"maxLength", 5}}}});
  expectInvalid(validateParams(schema, json{{"summary", ""}}), "summary", "summary must not be empty");
  expectInvalid(validateParams(schema, json{{"id", "abc"}}), "id", "id must be at least 4 characters long");
  expectInvalid(validateParams(schema, json{{"id", "abcdef"}}), "id", "id must be at most 5 characters long (it has 6)");
  // Five code points, eleven bytes: within maxLength 5.
  EXPECT_TRUE(validateParams(schema, json{{"id", "\xC3\xA9\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80x"}}).isOk());
  // Four code points of one to four bytes each reach minLength 4.
  EXPECT_TRUE(validateParams(schema, json{{"id", "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"}}).isOk());
}

TEST(SchemaValidator, NumericBounds) {
  json schema = objectOf({{"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100}}},
                          {"max_chars", {{"type", "integer"}, {"minimum", 0}}},
                          {"weight", {{"type", "number"}, {"exclusiveMinimum", 0}, {"exclusiveMaximum", 1.5}}}});
  EXPECT_TRUE(validateParams(schema, json{{"limit", 1}, {"max_chars", 0}, {"weight", 1.49}}).isOk());
  EXPECT_TRUE(validateParams(schema, json{{"limit", 100}}).isOk());
  expectInvalid(validateParams(schema, json{{"limit", 0}}), "limit", "limit must be at least 1");
  expectInvalid(validateParams(schema, json{{"limit", 101}}), "limit", "limit must be at most 100");
  expectInvalid(validateParams(schema, json{{"max_chars", -1}}), "max_chars", "max_chars must be at least 0");
  expectInvalid(validateParams(schema, json{{"weight", 0}}), "weight", "weight must be greater than 0");
  expectInvalid(validateParams(schema, json{{"weight", 1.5}}), "weight", "weight must be less than 1.5");
  // Huge integers compare exactly instead of overflowing.
  expectInvalid(validateParams(schema, json{{"limit", 18446744073709551615ull}}), "limit", "limit must be at most 100");
  expectInvalid(validateParams(schema, json{{"limit", -9223372036854775807ll}}), "limit", "limit must be at least 1");
}

TEST(SchemaValidator, ArraysAndItemPaths) {
  json schema = objectOf({{"files", {{"type", "array"}, {"items", {{"type", "string"}, {"minLength", 1}}},
                                     {"maxItems", 3}}},
                          {"topics", {{"type", "array"}, {"items", {{"type", "string"}}}, {"minItems", 1}}},
                          {"pair", {{"type", "array"}, {"minItems", 2}}}});
  EXPECT_TRUE(validateParams(schema, json{{"files", {"a", "b", "c"}}, {"topics", {"x"}}}).isOk());
  expectInvalid(validateParams(schema, json{{"files", {"a", "b", "c", "d"}}}), "files",
                "files must have at most 3 items (it has 4)");
  expectInvalid(validateParams(schema, json{{"files", {"a", "b", 7}}}), "files[2]",
                "files[2] must be a string (got an integer)");
  expectInvalid(validateParams(schema, json{{"files", {""}}}), "files[0]", "files[0] must not be empty");
  expectInvalid(validateParams(schema, json{{"topics", json::array()}}), "topics", "topics must not be empty");
  expectInvalid(validateParams(schema, json{{"pair", {1}}}), "pair", "pair must have at least 2 items");
  expectInvalid(validateParams(schema, json{{"topics", "x"}}), "topics", "topics must be an array (got a string)");
}

TEST(SchemaValidator, NestedObjectPaths) {
  json schema = objectOf({{"project", objectOf({{"root", {{"type", "string"}}}}, {"root"})},
                          {"events", {{"type", "array"}, {"items", objectOf({{"seq", {{"type", "integer"}}}})}}}});
  expectInvalid(validateParams(schema, json{{"project", {{"root", 1}}}}), "project.root",
                "project.root must be a string (got an integer)");
  expectInvalid(validateParams(schema, json{{"project", json::object()}}), "project.root", "project.root is required");
  expectInvalid(validateParams(schema, json{{"project", {{"root", "/"}, {"rot", 1}}}}), "project.rot",
                "unknown field 'rot' (did you mean 'root'?)");
  expectInvalid(validateParams(schema, json{{"events", {{{"seq", 1}}, {{"seq", "2"}}}}}), "events[1].seq",
                "events[1].seq must be an integer (got a string)");
}

TEST(SchemaValidator, Pattern) {
  json schema = objectOf({{"head", {{"type", "string"}, {"pattern", "^[0-9a-f]{40}$"}}},
                          {"word", {{"type", "string"}, {"pattern", "ab"}}}});
  EXPECT_TRUE(validateParams(schema, json{{"head", std::string(40, 'a')}}).isOk());
  EXPECT_TRUE(validateParams(schema, json{{"word", "xxabyy"}}).isOk());  // unanchored, as JSON Schema says
  expectInvalid(validateParams(schema, json{{"head", "HEAD"}}), "head", "head must match the pattern ^[0-9a-f]{40}$");
  expectInvalid(validateParams(schema, json{{"word", "ba"}}), "word", "word must match the pattern ab");
  // Long subjects are refused rather than handed to the recursive matcher.
  Status longSubject = validateParams(schema, json{{"word", std::string(100000, 'a') + "ab"}});
  EXPECT_EQ(longSubject.code(), ErrorCode::kInvalidParams);
}

TEST(SchemaValidator, BooleanSchemas) {
  json schema = objectOf({{"anything", true}, {"nothing", false}});
  EXPECT_TRUE(validateParams(schema, json{{"anything", {{"x", {1, 2}}}}}).isOk());
  expectInvalid(validateParams(schema, json{{"nothing", 1}}), "nothing", "nothing is not allowed");
}

TEST(SchemaValidator, AnnotationsAreIgnored) {
  json schema = {{"type", "object"}, {"description", "d"}, {"title", "t"}, {"$comment", "c"},
                 {"properties", {{"a", {{"type", "integer"}, {"default", 3}, {"examples", {1}}}}}}};
  EXPECT_TRUE(validateParams(schema, json{{"a", 1}}).isOk());
  EXPECT_TRUE(checkSchema(schema).isOk());
}

TEST(SchemaValidator, ValidateValueUsesTheGivenRootName) {
  json schema = {{"type", "object"}, {"required", {"id"}}, {"properties", {{"id", {{"type", "string"}}}}}};
  expectInvalid(validateValue(schema, json::array(), "result"), "result", "result must be an object (got an array)");
  expectInvalid(validateValue(schema, json::object(), "result"), "id", "id is required");
}

TEST(SchemaLint, AcceptsTheSupportedSubset) {
  json schema = objectOf({{"a", {{"type", {"string", "null"}}, {"minLength", 1}, {"maxLength", 3}, {"pattern", "^a"}}},
                          {"b", {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 0}}},
                                 {"minItems", 0}, {"maxItems", 2}}},
                          {"c", {{"enum", {1, "x", nullptr}}}}},
                         {"a"});
  EXPECT_TRUE(checkSchema(schema).isOk()) << checkSchema(schema).toString();
}

TEST(SchemaLint, RejectsTyposAndMalformedValues) {
  auto fails = [](const json& schema) {
    Status s = checkSchema(schema);
    EXPECT_FALSE(s.isOk()) << schema.dump();
    EXPECT_EQ(s.code(), ErrorCode::kInternalError);
    return s.message();
  };
  EXPECT_NE(fails({{"type", "object"}, {"requried", {"a"}}}).find("requried"), std::string::npos);
  fails({{"type", "strnig"}});
  fails({{"type", json::array()}});
  fails({{"minLength", -1}});
  fails({{"maxItems", 1.5}});
  fails({{"minimum", "0"}});
  fails({{"enum", json::array()}});
  fails({{"pattern", "("}});
  fails({{"properties", {{"a", {{"tpye", "string"}}}}}});
  fails({{"items", {{"type", "nope"}}}});
  fails({{"type", "object"}, {"required", {"b"}}, {"properties", {{"a", true}}}, {"additionalProperties", false}});
  fails(json::array());
}

TEST(SchemaValidator, OneOfTakesTheAlternativeOfTheValuesType) {
  // The shape of a `files` entry: a path, or an object naming lines of it.
  const json entry = {{"oneOf",
                       {{{"type", "string"}, {"minLength", 1}},
                        objectOf({{"path", {{"type", "string"}}},
                                  {"lines", {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 0}}}}}},
                                 {"path", "lines"})}}};
  const json schema = objectOf({{"files", {{"type", "array"}, {"items", entry}}}});
  EXPECT_TRUE(checkSchema(schema).isOk());
  EXPECT_TRUE(validateParams(schema, {{"files", {"a.c", {{"path", "b.c"}, {"lines", {3}}}}}}).isOk());
  // The error of the alternative whose type the value has names the member at fault.
  expectInvalid(validateParams(schema, {{"files", {""}}}), "files[0]", "files[0] must not be empty");
  expectInvalid(validateParams(schema, {{"files", {{{"path", "b.c"}}}}}), "files[0].lines",
                "files[0].lines is required");
  expectInvalid(validateParams(schema, {{"files", {{{"path", "b.c"}, {"lines", {-1}}}}}}), "files[0].lines[0]",
                "files[0].lines[0] must be at least 0");
  expectInvalid(validateParams(schema, {{"files", {{{"path", "b.c"}, {"lines", {1}}, {"x", 1}}}}}), "files[0].x",
                "unknown field 'x'");
  // A value of neither type: the types allowed.
  expectInvalid(validateParams(schema, {{"files", {7}}}), "files[0]",
                "files[0] must be a string or an object (got an integer)");
  // Two alternatives that both hold are refused: oneOf means one.
  const json both = objectOf({{"v", {{"oneOf", {{{"type", "integer"}}, {{"type", "integer"}, {"minimum", 0}}}}}}});
  expectInvalid(validateParams(both, {{"v", 3}}), "v", "v matches more than one of its allowed forms");
  EXPECT_FALSE(checkSchema(json{{"oneOf", json::array()}}).isOk());
  EXPECT_FALSE(checkSchema(json{{"oneOf", {{{"typo", 1}}}}}).isOk());
}

TEST(SchemaValidator, ACompiledSchemaChecksEveryValueAsAFreshOneDoes) {
  // memqd compiles each method's params schema once and checks every request with it: nothing of one check may
  // carry into the next.
  const json schema = objectOf({{"files", {{"type", "array"},
                                           {"items", {{"oneOf", {{{"type", "string"}, {"minLength", 1}},
                                                                 objectOf({{"path", {{"type", "string"}}}}, {"path"})}}}}}},
                                {"limit", {{"type", "integer"}, {"minimum", 1}}}},
                               {"limit"});
  const CompiledSchema compiled(schema);
  const std::vector<json> values = {
      {{"limit", 3}, {"files", {"a.c", {{"path", "b.c"}}}}},
      {{"limit", 0}},
      {{"files", {"a.c"}}},
      {{"limit", 3}, {"files", {""}}},
      {{"limit", 3}, {"files", {{{"path", 1}}}}},
      {{"limit", 3}, {"fils", {}}},
      {{"limit", 3}},
      json::array({1}),
      nullptr,
  };
  for (int round = 0; round < 2; ++round) {
    for (const json& value : values) {
      const Status once = compiled.validateParams(value);
      const Status fresh = validateParams(schema, value);
      EXPECT_EQ(once.isOk(), fresh.isOk()) << value.dump();
      EXPECT_EQ(once.message(), fresh.message()) << value.dump();
      EXPECT_EQ(once.data(), fresh.data()) << value.dump();
    }
  }
  expectInvalid(compiled.validateParams(values[4]), "files[0].path", "files[0].path must be a string (got an integer)");
  EXPECT_TRUE(compiled.validateParams(values[0]).isOk());
  expectInvalid(compiled.validateValue(json::array({1}), "result"), "result", "result must be an object (got an array)");
}

}  // namespace
}  // namespace memq
