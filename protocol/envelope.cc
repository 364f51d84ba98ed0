// JSON-RPC 2.0 envelope parsing and reply building (see envelope.h).
#include "protocol/envelope.h"

#include <utility>

#include "protocol/json_reader.h"

namespace memq {
namespace {

using nlohmann::json;

// Counts bracket nesting outside strings. Linear and allocation-free, so a hostile "[[[[…" of any length is refused
// before nlohmann builds (and later destroys) a deep tree. Malformed text is left for the real parser to report.
bool nestingWithin(std::string_view text, int maxDepth) {
  int depth = 0;
  bool inString = false;
  bool escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    switch (c) {
      case '"': inString = true; break;
      case '[':
      case '{':
        if (++depth > maxDepth) return false;
        break;
      case ']':
      case '}': --depth; break;
      default: break;
    }
  }
  return true;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; people need only the part after it.
std::string readableParseError(const std::exception& e) {
  std::string_view what = e.what();
  if (!what.empty() && what.front() == '[') {
    std::size_t close = what.find("] ");
    if (close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  return "invalid JSON: " + std::string(what);
}

EnvelopeItem invalid(std::string message, json id = nullptr) {
  EnvelopeItem item;
  item.error = Status(ErrorCode::kInvalidRequest, std::move(message));
  item.errorId = std::move(id);
  return item;
}

EnvelopeItem parseCall(json& message) {
  if (!message.is_object()) return invalid("a request must be a JSON object");

  json id = nullptr;
  auto idIt = message.find("id");
  bool hasId = idIt != message.end();
  if (hasId) {
    // JSON-RPC allows null and fractional ids but discourages both; memq refuses them so an id always round-trips.
    if (!idIt->is_number_integer() && !idIt->is_string()) return invalid("\"id\" must be an integer or a string");
    id = *idIt;
  }

  auto versionIt = message.find("jsonrpc");
  if (versionIt == message.end() || !versionIt->is_string() || versionIt->get_ref<const std::string&>() != "2.0") {
    return invalid("\"jsonrpc\" must be \"2.0\"", id);
  }

  auto methodIt = message.find("method");
  if (methodIt == message.end() || !methodIt->is_string()) return invalid("\"method\" must be a string", id);

  json params = nullptr;
  auto paramsIt = message.find("params");
  if (paramsIt != message.end()) {
    if (!paramsIt->is_object() && !paramsIt->is_array()) {
      return invalid("\"params\" must be an object or an array", id);
    }
    params = std::move(*paramsIt);
  }

  EnvelopeItem item;
  item.call = Call{std::move(methodIt->get_ref<std::string&>()), std::move(id), std::move(params), !hasId};
  return item;
}

}  // namespace

Result<nlohmann::json> parseJson(std::string_view text, int maxDepth) {
  // The fast reader takes what it is sure of (all the traffic between memqd and its clients), nesting no deeper than
  // maxDepth; anything else, malformed input included, goes to nlohmann's parser, so acceptance and error messages
  // are nlohmann's. Only that parser needs the nesting counted first: the fast reader stops at the limit itself.
  if (json fast; readJsonFast(text, maxDepth, fast)) return fast;
  // nlohmann's lexer takes a NUL byte for the end of its input, so `{...}` followed by a NUL and garbage would parse
  // as `{...}` alone. A raw NUL is never valid JSON (inside a string it must be written \u0000), so a message that
  // holds one is refused here. The fast reader above refuses it by itself: only text it did not take is searched.
  if (text.find('\0') != std::string_view::npos) {
    return Status(ErrorCode::kParseError, "invalid JSON: a raw NUL byte (a NUL inside a string is written \\u0000)");
  }
  if (!nestingWithin(text, maxDepth)) {
    return Status(ErrorCode::kParseError,
                  "invalid JSON: nested deeper than " + std::to_string(maxDepth) + " levels");
  }
  try {
    // nlohmann rejects ill-formed UTF-8 (including overlongs and lone surrogates) inside strings, and any byte
    // outside strings that is not JSON syntax, so a successful parse holds valid UTF-8 only.
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return Status(ErrorCode::kParseError, readableParseError(e));
  }
}

Envelope parseEnvelope(std::string_view text, std::size_t maxBatchLength) {
  Envelope envelope;
  Result<json> parsed = parseJson(text);
  if (!parsed) {
    EnvelopeItem item;
    item.error = parsed.status();
    envelope.items.push_back(std::move(item));
    return envelope;
  }
  json& message = *parsed;
  if (!message.is_array()) {
    envelope.items.push_back(parseCall(message));
    return envelope;
  }
  if (message.empty()) {
    envelope.items.push_back(invalid("an empty batch is not a request"));
    return envelope;
  }
  if (message.size() > maxBatchLength) {
    envelope.items.push_back(invalid("a batch may hold at most " + std::to_string(maxBatchLength) +
                                     " requests; this one holds " + std::to_string(message.size())));
    envelope.items.back().error =
        Status(ErrorCode::kInvalidRequest, envelope.items.back().error.message(),
               json{{"batch_length", message.size()}, {"max_batch_length", maxBatchLength}});
    return envelope;
  }
  envelope.batch = true;
  envelope.items.reserve(message.size());
  for (json& element : message) envelope.items.push_back(parseCall(element));
  return envelope;
}

nlohmann::json makeResultReply(const nlohmann::json& id, nlohmann::json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json makeErrorReply(const nlohmann::json& id, const Status& status) {
  ErrorCode code = status.isOk() ? ErrorCode::kInternalError : status.code();
  std::string message = status.message();
  if (status.isOk()) message = "internal error: an error reply was built from a success status";
  if (message.empty()) message = std::string(errorCodeName(code));
  json error = {{"code", static_cast<int>(code)}, {"message", std::move(message)}};
  if (!status.isOk() && !status.data().is_null()) error["data"] = status.data();
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

nlohmann::json makeNotification(std::string_view method, nlohmann::json params) {
  json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = std::move(params);
  return message;
}

nlohmann::json makeRequest(const nlohmann::json& id, std::string_view method, nlohmann::json params) {
  json message = makeNotification(method, std::move(params));
  message["id"] = id;
  return message;
}

std::string serializeMessage(const nlohmann::json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<ErrorCode> errorCodeFromInt(long long code) {
  switch (code) {
    case static_cast<int>(ErrorCode::kParseError): return ErrorCode::kParseError;
    case static_cast<int>(ErrorCode::kInvalidRequest): return ErrorCode::kInvalidRequest;
    case static_cast<int>(ErrorCode::kMethodNotFound): return ErrorCode::kMethodNotFound;
    case static_cast<int>(ErrorCode::kInvalidParams): return ErrorCode::kInvalidParams;
    case static_cast<int>(ErrorCode::kInternalError): return ErrorCode::kInternalError;
    case static_cast<int>(ErrorCode::kNotFound): return ErrorCode::kNotFound;
    case static_cast<int>(ErrorCode::kAmbiguous): return ErrorCode::kAmbiguous;
    case static_cast<int>(ErrorCode::kConflict): return ErrorCode::kConflict;
    case static_cast<int>(ErrorCode::kScopeUnavailable): return ErrorCode::kScopeUnavailable;
    case static_cast<int>(ErrorCode::kBusy): return ErrorCode::kBusy;
    case static_cast<int>(ErrorCode::kStorageError): return ErrorCode::kStorageError;
    case static_cast<int>(ErrorCode::kGitError): return ErrorCode::kGitError;
    case static_cast<int>(ErrorCode::kForbidden): return ErrorCode::kForbidden;
    case static_cast<int>(ErrorCode::kNotInitialized): return ErrorCode::kNotInitialized;
    default: return std::nullopt;
  }
}

Status statusFromErrorObject(const nlohmann::json& error) {
  if (!error.is_object()) return Status::internal("malformed JSON-RPC error object");
  std::string message;
  if (auto it = error.find("message"); it != error.end() && it->is_string()) message = it->get<std::string>();
  json data = nullptr;
  if (auto it = error.find("data"); it != error.end()) data = *it;

  auto codeIt = error.find("code");
  if (codeIt == error.end() || !codeIt->is_number_integer()) {
    return Status(ErrorCode::kInternalError, message.empty() ? "malformed JSON-RPC error object" : message,
                  std::move(data));
  }
  long long wire = codeIt->get<long long>();
  std::optional<ErrorCode> code = errorCodeFromInt(wire);
  if (!code || *code == ErrorCode::kOk) {
    json kept = {{"original_code", wire}};
    if (!data.is_null()) kept["data"] = std::move(data);
    return Status(ErrorCode::kInternalError, message, std::move(kept));
  }
  return Status(*code, std::move(message), std::move(data));
}

}  // namespace memq
