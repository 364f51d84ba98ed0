// The JSON-RPC 2.0 envelope: turns one frame's text into calls to dispatch or error replies to send, and builds the
// reply and notification objects that go back. Owns the rules of the JSON-RPC 2.0 specification (jsonrpc "2.0",
// id types, batches, notifications) and the hardening every parse of untrusted JSON needs (nesting depth limit,
// UTF-8 validity, serialisation that cannot throw). It does not know any memq method: the dispatcher does.
//
// Thread-safety: free functions without shared state; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/status.h"

namespace memq {

// JSON nested deeper than this is refused before the parser builds anything (a stack-exhaustion guard).
inline constexpr int kMaxJsonDepth = 64;

// A batch holds at most this many elements; a longer one is refused whole with one InvalidRequest error, before any
// element runs (docs/protocol.md "Batches").
inline constexpr std::size_t kMaxBatchLength = 10000;

// Parses untrusted JSON text: rejects nesting deeper than maxDepth (by a linear pre-scan, never by recursion),
// invalid UTF-8, trailing garbage, and numbers out of range. Errors are ParseError with a message a person can read.
Result<nlohmann::json> parseJson(std::string_view text, int maxDepth = kMaxJsonDepth);

// A request (has an id) or notification (no id) that passed envelope validation.
struct Call {
  std::string method;
  nlohmann::json id;      // an integer or a string; null for a notification
  nlohmann::json params;  // an object or an array; null when the request had no "params"
  bool notification = false;

  bool isNotification() const { return notification; }
};

// One element of an incoming message: either a call to dispatch or an error to answer without dispatching.
struct EnvelopeItem {
  std::optional<Call> call;  // set: dispatch it
  Status error;              // non-ok exactly when call is empty
  nlohmann::json errorId;    // the id to answer the error with: the request's id when it could be recovered, else null
};

// The parse of one frame.
//
// Invariants:
//  1. items is never empty.
//  2. batch == false implies exactly one item. A parse error, an empty batch and a batch longer than kMaxBatchLength
//     each give one non-batch error item, as JSON-RPC 2.0 requires for the first two (the reply is a single object,
//     not an array).
//  3. For batch == true, the reply is the array of the replies to each item that is not a notification, in order;
//     when every item is a notification, nothing is sent at all.
struct Envelope {
  bool batch = false;
  std::vector<EnvelopeItem> items;
};

Envelope parseEnvelope(std::string_view text, std::size_t maxBatchLength = kMaxBatchLength);

// Builders for outgoing messages; they always carry "jsonrpc": "2.0".
nlohmann::json makeResultReply(const nlohmann::json& id, nlohmann::json result);
// {code, message, data}: data only when the status carries non-null data. An ok status (a caller bug) is answered as
// InternalError rather than as an error with code 0.
nlohmann::json makeErrorReply(const nlohmann::json& id, const Status& status);
// params null → no "params" member.
nlohmann::json makeNotification(std::string_view method, nlohmann::json params);
// The request a client sends; params null → no "params" member.
nlohmann::json makeRequest(const nlohmann::json& id, std::string_view method, nlohmann::json params);

// Compact serialisation that replaces invalid UTF-8 with U+FFFD instead of throwing, so a reply built from arbitrary
// stored bytes can always be sent. The output contains no raw newline (NDJSON-safe).
std::string serializeMessage(const nlohmann::json& message);

// The Status carried by a JSON-RPC error object (the inverse of makeErrorReply). A code memq does not define becomes
// InternalError, with the original code kept in data.code so nothing is lost.
Status statusFromErrorObject(const nlohmann::json& error);

// The ErrorCode for a wire integer, if memq defines it.
std::optional<ErrorCode> errorCodeFromInt(long long code);

}  // namespace memq
