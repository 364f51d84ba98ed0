// parseEnvelope / parseJson / reply builders: the JSON-RPC 2.0 specification's examples and hostile input.
#include "protocol/envelope.h"

#include <gtest/gtest.h>

#include <string>

namespace memq {
namespace {

using nlohmann::json;

// Returns a copy: callers pass the temporary parseEnvelope(...) result.
EnvelopeItem single(const Envelope& envelope) {
  EXPECT_FALSE(envelope.batch);
  EXPECT_EQ(envelope.items.size(), 1u);
  return envelope.items.empty() ? EnvelopeItem{} : envelope.items.front();
}

void expectError(const EnvelopeItem& item, ErrorCode code, const json& id) {
  EXPECT_FALSE(item.call.has_value());
  EXPECT_EQ(item.error.code(), code) << item.error.toString();
  EXPECT_FALSE(item.error.message().empty());
  EXPECT_EQ(item.errorId, id);
}

TEST(Envelope, PositionalParams) {
  Envelope e = parseEnvelope(R"({"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1})");
  EnvelopeItem item = single(e);
  ASSERT_TRUE(item.call.has_value());
  EXPECT_TRUE(item.error.isOk());
  EXPECT_EQ(item.call->method, "subtract");
  EXPECT_EQ(item.call->id, json(1));
  EXPECT_EQ(item.call->params, json::parse("[42, 23]"));
  EXPECT_FALSE(item.call->isNotification());
}

TEST(Envelope, NamedParamsAndStringId) {
  Envelope e = parseEnvelope(
      R"({"jsonrpc": "2.0", "method": "memory/save", "params": {"summary": "x"}, "id": "abc"})");
  EnvelopeItem item = single(e);
  ASSERT_TRUE(item.call.has_value());
  EXPECT_EQ(item.call->id, json("abc"));
  EXPECT_EQ(item.call->params, json({{"summary", "x"}}));
}

TEST(Envelope, AbsentParamsAreNull) {
  EnvelopeItem item = single(parseEnvelope(R"({"jsonrpc":"2.0","method":"stats","id":7})"));
  ASSERT_TRUE(item.call.has_value());
  EXPECT_TRUE(item.call->params.is_null());
}

TEST(Envelope, Notification) {
  EnvelopeItem item = single(parseEnvelope(R"({"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]})"));
  ASSERT_TRUE(item.call.has_value());
  EXPECT_TRUE(item.call->isNotification());
  EXPECT_TRUE(item.call->id.is_null());
}

TEST(Envelope, InvalidJsonIsParseErrorWithNullId) {
  Envelope e = parseEnvelope(R"({"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz])");
  expectError(single(e), ErrorCode::kParseError, nullptr);
}

TEST(Envelope, InvalidRequestObject) {
  expectError(single(parseEnvelope(R"({"jsonrpc": "2.0", "method": 1, "params": "bar"})")),
              ErrorCode::kInvalidRequest, nullptr);
}

TEST(Envelope, BatchWithInvalidJsonIsOneParseError) {
  Envelope e = parseEnvelope(R"([
    {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
    {"jsonrpc": "2.0", "method"
  ])");
  expectError(single(e), ErrorCode::kParseError, nullptr);
}

TEST(Envelope, EmptyBatchIsOneInvalidRequestNotABatch) {
  expectError(single(parseEnvelope("[]")), ErrorCode::kInvalidRequest, nullptr);
}

TEST(Envelope, BatchOfNonObjects) {
  Envelope one = parseEnvelope("[1]");
  EXPECT_TRUE(one.batch);
  ASSERT_EQ(one.items.size(), 1u);
  expectError(one.items[0], ErrorCode::kInvalidRequest, nullptr);

  Envelope three = parseEnvelope("[1,2,3]");
  EXPECT_TRUE(three.batch);
  ASSERT_EQ(three.items.size(), 3u);
  for (const EnvelopeItem& item : three.items) expectError(item, ErrorCode::kInvalidRequest, nullptr);
}

TEST(Envelope, MixedBatchFromTheSpecification) {
  Envelope e = parseEnvelope(R"([
    {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
    {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
    {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
    {"foo": "boo"},
    {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
    {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
  ])");
  EXPECT_TRUE(e.batch);
  ASSERT_EQ(e.items.size(), 6u);
  ASSERT_TRUE(e.items[0].call.has_value());
  EXPECT_EQ(e.items[0].call->method, "sum");
  EXPECT_EQ(e.items[0].call->id, json("1"));
  ASSERT_TRUE(e.items[1].call.has_value());
  EXPECT_TRUE(e.items[1].call->isNotification());
  ASSERT_TRUE(e.items[2].call.has_value());
  EXPECT_EQ(e.items[2].call->id, json("2"));
  expectError(e.items[3], ErrorCode::kInvalidRequest, nullptr);
  ASSERT_TRUE(e.items[4].call.has_value());
  EXPECT_EQ(e.items[4].call->params, json({{"name", "myself"}}));
  ASSERT_TRUE(e.items[5].call.has_value());
  EXPECT_TRUE(e.items[5].call->params.is_null());
}

TEST(Envelope, BatchOfNotificationsOnly) {
  Envelope e = parseEnvelope(R"([
    {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
    {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
  ])");
  EXPECT_TRUE(e.batch);
  ASSERT_EQ(e.items.size(), 2u);
  for (const EnvelopeItem& item : e.items) {
    ASSERT_TRUE(item.call.has_value());
    EXPECT_TRUE(item.call->isNotification());
  }
}

TEST(Envelope, NestedBatchElementIsInvalid) {
  Envelope e = parseEnvelope(R"([[{"jsonrpc":"2.0","method":"stats","id":1}]])");
  EXPECT_TRUE(e.batch);
  ASSERT_EQ(e.items.size(), 1u);
  expectError(e.items[0], ErrorCode::kInvalidRequest, nullptr);
}

TEST(Envelope, IdTypes) {
  for (const char* id : {"0", "-5", "9223372036854775807", "18446744073709551615", "\"\"", "\"x-1\""}) {
    SCOPED_TRACE(id);
    EnvelopeItem item =
        single(parseEnvelope(std::string(R"({"jsonrpc":"2.0","method":"m","id":)") + id + "}"));
    ASSERT_TRUE(item.call.has_value());
    EXPECT_EQ(item.call->id, json::parse(id));
    EXPECT_FALSE(item.call->isNotification());
  }
  for (const char* id : {"null", "1.5", "1e3", "true", "{}", "[1]"}) {
    SCOPED_TRACE(id);
    EnvelopeItem item =
        single(parseEnvelope(std::string(R"({"jsonrpc":"2.0","method":"m","id":)") + id + "}"));
    expectError(item, ErrorCode::kInvalidRequest, nullptr);
  }
}

TEST(Envelope, InvalidEnvelopesKeepTheRecoveredId) {
  expectError(single(parseEnvelope(R"({"method":"m","id":3})")), ErrorCode::kInvalidRequest, 3);
  expectError(single(parseEnvelope(R"({"jsonrpc":"1.0","method":"m","id":3})")), ErrorCode::kInvalidRequest, 3);
  expectError(single(parseEnvelope(R"({"jsonrpc":2.0,"method":"m","id":"a"})")), ErrorCode::kInvalidRequest, "a");
  expectError(single(parseEnvelope(R"({"jsonrpc":"2.0","id":4})")), ErrorCode::kInvalidRequest, 4);
  expectError(single(parseEnvelope(R"({"jsonrpc":"2.0","method":["m"],"id":4})")), ErrorCode::kInvalidRequest, 4);
  for (const char* params : {"\"bar\"", "1", "null", "true"}) {
    SCOPED_TRACE(params);
    expectError(single(parseEnvelope(std::string(R"({"jsonrpc":"2.0","method":"m","id":5,"params":)") + params + "}")),
                ErrorCode::kInvalidRequest, 5);
  }
  // A response sent to the daemon is not a request.
  expectError(single(parseEnvelope(R"({"jsonrpc":"2.0","result":1,"id":6})")), ErrorCode::kInvalidRequest, 6);
}

TEST(Envelope, NonObjectTopLevelValues) {
  for (const char* text : {"1", "\"s\"", "null", "true"}) {
    SCOPED_TRACE(text);
    expectError(single(parseEnvelope(text)), ErrorCode::kInvalidRequest, nullptr);
  }
}

TEST(Envelope, EmptyAndTrailingGarbageAreParseErrors) {
  for (const char* text : {"", "   ", "{} x", "{}{}", "{\"a\":1,}", "{'a':1}", "NaN", "[1,]"}) {
    SCOPED_TRACE(text);
    expectError(single(parseEnvelope(text)), ErrorCode::kParseError, nullptr);
  }
}

TEST(Envelope, ARawNulByteAnywhereIsAParseErrorNotTheEndOfTheMessage) {
  using namespace std::string_literals;
  // nlohmann's parser stops at a NUL as at the end of its input: the request before it would be run, and the
  // garbage after it never looked at.
  for (const std::string& text : {R"({"jsonrpc":"2.0","id":1,"method":"x"})"s + '\0' + " garbage ]]]",
                                  R"({"jsonrpc":"2.0","id":1,"method":"x"})"s + '\0',
                                  R"([{"jsonrpc":"2.0","id":1,"method":"x"}])"s + '\0' + "]",
                                  R"({"jsonrpc":"2.0","id":1,"method":"x)"s + '\0' + R"("})",
                                  "\0"s + R"({"jsonrpc":"2.0","id":1,"method":"x"})"}) {
    SCOPED_TRACE(::testing::PrintToString(text));
    expectError(single(parseEnvelope(text)), ErrorCode::kParseError, nullptr);
  }
  // A NUL escaped, as JSON writes it, is a character like any other.
  EnvelopeItem escaped = single(parseEnvelope(R"({"jsonrpc":"2.0","id":1,"method":"x\u0000y"})"));
  ASSERT_TRUE(escaped.call.has_value()) << escaped.error.toString();
  EXPECT_EQ(escaped.call->method, "x\0y"s);
}

TEST(Envelope, DeepNestingIsRejectedWithoutRecursing) {
  std::string arrays = std::string(10000, '[') + std::string(10000, ']');
  expectError(single(parseEnvelope(arrays)), ErrorCode::kParseError, nullptr);

  std::string objects;
  for (int i = 0; i < 10000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(10000, '}');
  expectError(single(parseEnvelope(objects)), ErrorCode::kParseError, nullptr);

  // Unbalanced, never closed: still refused by the pre-scan rather than the parser.
  expectError(single(parseEnvelope(std::string(1000000, '['))), ErrorCode::kParseError, nullptr);
}

TEST(Envelope, DepthLimitIsExactlySixtyFour) {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(parseJson(nested(64)).isOk());
  Result<json> tooDeep = parseJson(nested(65));
  ASSERT_FALSE(tooDeep.isOk());
  EXPECT_EQ(tooDeep.status().code(), ErrorCode::kParseError);
  EXPECT_NE(tooDeep.status().message().find("64"), std::string::npos);
}

TEST(Envelope, BracketsInsideStringsDoNotCount) {
  std::string text = R"({"jsonrpc":"2.0","method":"m","id":1,"params":{"s":")" + std::string(5000, '[') +
                     R"(\"{{{"}})";
  EnvelopeItem item = single(parseEnvelope(text));
  ASSERT_TRUE(item.call.has_value()) << item.error.toString();
  EXPECT_EQ(item.call->params["s"].get<std::string>(), std::string(5000, '[') + "\"{{{");
}

TEST(Envelope, InvalidUtf8IsParseError) {
  for (std::string bad : {std::string("\xFF"), std::string("\xC0\xAF"), std::string("\xED\xA0\x80"),
                          std::string("\xE2\x82"), std::string("\xF8\x88\x80\x80\x80")}) {
    std::string text = R"({"jsonrpc":"2.0","method":"m","id":1,"params":{"s":")" + bad + "\"}}";
    expectError(single(parseEnvelope(text)), ErrorCode::kParseError, nullptr);
  }
  // An escaped lone surrogate is not Unicode either.
  expectError(single(parseEnvelope(R"({"jsonrpc":"2.0","method":"m","id":1,"params":{"s":"\ud800"}})")),
              ErrorCode::kParseError, nullptr);
  expectError(single(parseEnvelope("\xFF{}")), ErrorCode::kParseError, nullptr);
}

TEST(Envelope, ValidUtf8IsKept) {
  std::string text = "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1,\"params\":{\"s\":\"caf\xC3\xA9 \xF0\x9F\x98\x80 "
                     "\\u00e9\\ud83d\\ude00\"}}";
  EnvelopeItem item = single(parseEnvelope(text));
  ASSERT_TRUE(item.call.has_value()) << item.error.toString();
  EXPECT_EQ(item.call->params["s"].get<std::string>(), "caf\xC3\xA9 \xF0\x9F\x98\x80 \xC3\xA9\xF0\x9F\x98\x80");
}

TEST(Envelope, NumberOverflowIsParseError) {
  expectError(single(parseEnvelope(R"({"jsonrpc":"2.0","method":"m","id":1,"params":[1e99999]})")),
              ErrorCode::kParseError, nullptr);
}

TEST(Envelope, ParseErrorMessageIsReadable) {
  Result<json> r = parseJson("{\"a\":}");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message().rfind("invalid JSON: ", 0), 0u) << r.status().message();
  EXPECT_EQ(r.status().message().find("[json.exception"), std::string::npos);
}

TEST(EnvelopeBuilders, ResultReply) {
  EXPECT_EQ(makeResultReply(1, json{{"ok", true}}), json::parse(R"({"jsonrpc":"2.0","id":1,"result":{"ok":true}})"));
  EXPECT_EQ(makeResultReply("x", nullptr), json::parse(R"({"jsonrpc":"2.0","id":"x","result":null})"));
}

TEST(EnvelopeBuilders, ErrorReplyWithAndWithoutData) {
  EXPECT_EQ(makeErrorReply(nullptr, Status(ErrorCode::kParseError, "invalid JSON")),
            json::parse(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON"}})"));
  EXPECT_EQ(makeErrorReply(2, Status::invalidField("summary", "summary must be a string")),
            json::parse(R"({"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"summary must be a string",
                            "data":{"field":"summary"}}})"));
}

TEST(EnvelopeBuilders, ErrorReplyNeverCarriesCodeZero) {
  json reply = makeErrorReply(3, Status::ok());
  EXPECT_EQ(reply["error"]["code"], -32603);
  json unnamed = makeErrorReply(3, Status(ErrorCode::kBusy, ""));
  EXPECT_EQ(unnamed["error"]["message"], "Busy");
}

TEST(EnvelopeBuilders, NotificationAndRequest) {
  EXPECT_EQ(makeNotification("memory/changed", json{{"scope", "project"}, {"id", "abc"}, {"action", "create"}}),
            json::parse(R"({"jsonrpc":"2.0","method":"memory/changed",
                            "params":{"scope":"project","id":"abc","action":"create"}})"));
  EXPECT_EQ(makeNotification("hints/turn", nullptr), json::parse(R"({"jsonrpc":"2.0","method":"hints/turn"})"));
  EXPECT_EQ(makeRequest(9, "stats", nullptr), json::parse(R"({"jsonrpc":"2.0","method":"stats","id":9})"));
}

TEST(EnvelopeBuilders, SerializeReplacesInvalidUtf8AndHasNoNewline) {
  json reply = makeResultReply(1, json{{"text", std::string("bad \xFF\xFE bytes\nand a newline")}});
  std::string wire;
  ASSERT_NO_THROW(wire = serializeMessage(reply));
  EXPECT_EQ(wire.find('\n'), std::string::npos);
  EXPECT_NE(wire.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
  Result<json> back = parseJson(wire);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->at("id"), 1);
}

TEST(EnvelopeBuilders, StatusRoundTripsThroughTheErrorObject) {
  for (ErrorCode code : {ErrorCode::kParseError, ErrorCode::kInvalidRequest, ErrorCode::kMethodNotFound,
                         ErrorCode::kInvalidParams, ErrorCode::kInternalError, ErrorCode::kNotFound,
                         ErrorCode::kAmbiguous, ErrorCode::kConflict, ErrorCode::kScopeUnavailable, ErrorCode::kBusy,
                         ErrorCode::kStorageError, ErrorCode::kGitError, ErrorCode::kForbidden,
                         ErrorCode::kNotInitialized}) {
    Status original(code, "message for " + std::string(errorCodeName(code)), json{{"candidates", {"a", "b"}}});
    Status back = statusFromErrorObject(makeErrorReply(1, original)["error"]);
    EXPECT_EQ(back.code(), code);
    EXPECT_EQ(back.message(), original.message());
    EXPECT_EQ(back.data(), original.data());
  }
}

TEST(EnvelopeBuilders, UnknownErrorCodeBecomesInternalErrorKeepingTheCode) {
  Status s = statusFromErrorObject(json{{"code", -32099}, {"message", "server specific"}, {"data", 1}});
  EXPECT_EQ(s.code(), ErrorCode::kInternalError);
  EXPECT_EQ(s.message(), "server specific");
  EXPECT_EQ(s.data()["original_code"], -32099);
  EXPECT_EQ(s.data()["data"], 1);
  EXPECT_EQ(statusFromErrorObject(json{{"code", 0}, {"message", "zero"}}).code(), ErrorCode::kInternalError);
  EXPECT_EQ(statusFromErrorObject("nonsense").code(), ErrorCode::kInternalError);
  EXPECT_FALSE(errorCodeFromInt(42).has_value());
  EXPECT_EQ(errorCodeFromInt(-32001), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace memq
