// Fuzz target for protocol/envelope: arbitrary bytes as one frame's text. Checks the Envelope invariants, that the
// depth limit accepts exactly what an independent depth count allows, and that every call and every error reply
// survives serialisation and parsing unchanged.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/envelope.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using nlohmann::json;

// Measures nesting while nlohmann only validates (no tree is built, so any depth is safe to measure).
class DepthCounter : public nlohmann::json_sax<json> {
 public:
  int maxDepth = 0;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  int depth_ = 0;
  bool open() {
    maxDepth = std::max(maxDepth, ++depth_);
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
};

void checkCallRoundTrip(const memq::Call& call) {
  json message = call.isNotification() ? memq::makeNotification(call.method, call.params)
                                       : memq::makeRequest(call.id, call.method, call.params);
  std::string text = memq::serializeMessage(message);
  MEMQ_FUZZ_CHECK(text.find('\n') == std::string::npos, "a serialised message holds no raw newline");
  memq::Envelope again = memq::parseEnvelope(text);
  MEMQ_FUZZ_CHECK(!again.batch && again.items.size() == 1 && again.items[0].call, "a built request parses back");
  const memq::Call& back = *again.items[0].call;
  MEMQ_FUZZ_CHECK(back.method == call.method && back.id == call.id && back.params == call.params &&
                      back.isNotification() == call.isNotification(),
                  "a call round-trips through makeRequest and serializeMessage unchanged");
}

void checkErrorReply(const memq::EnvelopeItem& item) {
  MEMQ_FUZZ_CHECK(item.errorId.is_null() || item.errorId.is_number_integer() || item.errorId.is_string(),
                  "an error is answered with a valid id or null");
  std::string text = memq::serializeMessage(memq::makeErrorReply(item.errorId, item.error));
  MEMQ_FUZZ_CHECK(text.find('\n') == std::string::npos, "a serialised reply holds no raw newline");
  memq::Result<json> reply = memq::parseJson(text);
  MEMQ_FUZZ_CHECK(reply.isOk(), "an error reply is valid JSON");
  MEMQ_FUZZ_CHECK((*reply)["id"] == item.errorId, "the reply carries the recovered id");
  memq::Status status = memq::statusFromErrorObject((*reply)["error"]);
  // A parse error may quote the offending bytes; serializeMessage sends ill-formed UTF-8 as U+FFFD.
  std::string sentMessage =
      json::parse(json(item.error.message()).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
  MEMQ_FUZZ_CHECK(status.code() == item.error.code() && status.message() == sentMessage,
                  "an error reply decodes to the same code and message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  DepthCounter counter;
  // nlohmann's lexer takes a NUL byte for the end of its input; a raw NUL is never valid JSON.
  bool wellFormed = text.find('\0') == std::string_view::npos && json::sax_parse(text.begin(), text.end(), &counter);
  memq::Result<json> parsed = memq::parseJson(text);
  MEMQ_FUZZ_CHECK(parsed.isOk() == (wellFormed && counter.maxDepth <= memq::kMaxJsonDepth),
                  "parseJson accepts exactly the well-formed JSON nested at most kMaxJsonDepth deep");
  if (!parsed.isOk()) {
    MEMQ_FUZZ_CHECK(parsed.status().code() == memq::ErrorCode::kParseError, "bad JSON is a ParseError");
    MEMQ_FUZZ_CHECK(!parsed.status().message().empty(), "a parse error says what is wrong");
  }

  memq::Envelope envelope = memq::parseEnvelope(text);
  MEMQ_FUZZ_CHECK(!envelope.items.empty(), "an envelope always has an item (invariant 1)");
  MEMQ_FUZZ_CHECK(envelope.batch || envelope.items.size() == 1, "a non-batch has exactly one item (invariant 2)");
  if (envelope.batch) {
    MEMQ_FUZZ_CHECK(parsed.isOk() && parsed->is_array() && parsed->size() == envelope.items.size(),
                    "a batch has one item per element");
  }
  if (!parsed.isOk()) {
    MEMQ_FUZZ_CHECK(!envelope.items[0].call && envelope.items[0].error.code() == memq::ErrorCode::kParseError,
                    "unparsable text is one ParseError item");
  }
  for (const memq::EnvelopeItem& item : envelope.items) {
    MEMQ_FUZZ_CHECK(item.call.has_value() == item.error.isOk(), "an item is a call or an error, never both");
    if (item.call) {
      MEMQ_FUZZ_CHECK(item.call->id.is_null() == item.call->isNotification(), "only notifications lack an id");
      MEMQ_FUZZ_CHECK(item.call->params.is_null() || item.call->params.is_object() || item.call->params.is_array(),
                      "params is an object, an array or absent");
      checkCallRoundTrip(*item.call);
    } else {
      checkErrorReply(item);
    }
  }
  return 0;
}
