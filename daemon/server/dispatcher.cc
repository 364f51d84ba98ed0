// The dispatcher; see dispatcher.h.
#include "daemon/server/dispatcher.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "daemon/server/request_params.h"
#include "protocol/method_schemas.h"
#include "protocol/schema_validator.h"

namespace memq {

Dispatcher::Dispatcher(Service& service, ServerHooks hooks, const MethodTable& table)
    : service_(service), hooks_(std::move(hooks)), table_(table) {}

namespace {

// makeResultReply's object as text, around a result already serialised: serializeMessage writes the keys sorted
// (id, jsonrpc, result), and a compact dump of an object is its members' dumps joined, so this is the same bytes.
std::string resultReplyText(const nlohmann::json& id, const std::string& result) {
  std::string out;
  out.reserve(result.size() + 48);
  out += "{\"id\":";
  out += serializeMessage(id);
  out += ",\"jsonrpc\":\"2.0\",\"result\":";
  out += result;
  out += '}';
  return out;
}

// A client-supplied value as the log shows it: at most `limit` bytes (a 1 MiB method name is not a log line).
std::string bounded(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return std::string(text.substr(0, cut)) + "...[" + std::to_string(text.size()) + " bytes]";
}

constexpr size_t kLoggedMethodBytes = 80;
constexpr size_t kLoggedIdBytes = 80;
constexpr size_t kLoggedMessageBytes = 400;

// An error's message for the log. A parse error's message from the JSON parser quotes the bytes it last read
// ("...; last read: '<token>'"), which may be a credential in an unfinished string: the log keeps what went wrong and
// where, never those bytes. The client's own reply keeps the whole message.
std::string loggedErrorMessage(const Status& status) {
  std::string message = status.message();
  if (status.code() == ErrorCode::kParseError) {
    if (size_t at = message.find("; last read: "); at != std::string::npos) message.resize(at);
  }
  return bounded(message, kLoggedMessageBytes);
}

std::string loggedOutcome(const Status& status) {
  return std::string(errorCodeName(status.code())) + ": " + loggedErrorMessage(status);
}

}  // namespace

Result<std::string> Dispatcher::invoke(ClientState& client, const Call& call) {
  auto it = table_.find(call.method);
  if (it == table_.end()) {
    return Status(ErrorCode::kMethodNotFound, "method '" + call.method + "' does not exist",
                  nlohmann::json{{"method", call.method}});
  }
  const MethodEntry& entry = it->second;
  if (entry.needsInitialize) {
    MutexLock lock(client.mutex);
    if (!client.initialized) {
      return Status(ErrorCode::kNotInitialized, call.method + " needs `initialize` first on this connection");
    }
  }
  // The call's own params, by reference: validation and the handler only read them (a copy was a deep copy of every
  // request, a recall's file list included).
  static const nlohmann::json kNoParams = nlohmann::json::object();
  const nlohmann::json& params = call.params.is_null() ? kNoParams : call.params;
  if (!params.is_object()) {
    return Status::invalidField("params", "params must be an object with named fields");
  }
  if (const MethodSchema* schema = findMethodSchema(call.method)) {
    MEMQ_RETURN_IF_ERROR(schema->compiledParams->validateParams(params));
  }
  // initialize sets the connection's scopes rather than narrowing them, so its params are no request context.
  CommonParams common;
  if (call.method != "initialize") {
    auto read = readCommonParams(params);
    if (!read) return read.status();
    common = std::move(*read);
  }
  auto ctx = service_.context(client, common);
  if (!ctx) return ctx.status();
  HandlerEnv env{service_, client, hooks_};
  if (entry.textHandler) return entry.textHandler(env, *ctx, params);
  Result<nlohmann::json> result = entry.handler(env, *ctx, params);
  if (!result) return result.status();
  return serializeMessage(*result);
}

std::optional<std::string> Dispatcher::handleCall(ClientState& client, const Call& call, std::string* logLine,
                                                  bool* succeeded) {
  auto start = std::chrono::steady_clock::now();
  Result<std::string> result = Status::internal("unreached");
  try {
    result = invoke(client, call);
  } catch (const std::exception& e) {
    // Last resort: a bug must cost one request, never the daemon.
    spdlog::error("internal error in {}: {}", call.method, e.what());
    result = Status(ErrorCode::kInternalError, std::string("internal error: ") + e.what());
  } catch (...) {
    spdlog::error("internal error in {}: unknown exception", call.method);
    result = Status(ErrorCode::kInternalError, "internal error");
  }
  if (logLine) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    *logLine = fmt::format("{} id={} {:.2f}ms {}", bounded(call.method, kLoggedMethodBytes),
                           call.id.is_null() ? std::string("-") : bounded(call.id.dump(), kLoggedIdBytes), ms,
                           result ? std::string("ok") : loggedOutcome(result.status()));
  }
  if (succeeded) *succeeded = result.isOk();
  if (call.isNotification()) return std::nullopt;
  return result ? resultReplyText(call.id, *result) : serializeMessage(makeErrorReply(call.id, result.status()));
}

namespace {

// The answer to a call that ran but whose reply (of `replyBytes`) does not fit in what is left of `room`.
std::string replyTooLong(const nlohmann::json& id, size_t replyBytes, size_t room) {
  return serializeMessage(makeErrorReply(
      id, Status(ErrorCode::kInvalidParams,
                 fmt::format("the call ran, but its reply of {} bytes would pass the {} bytes one message may get; "
                             "ask for less (a smaller limit), or send it alone",
                             replyBytes, room),
                 nlohmann::json{{"reply_bytes", replyBytes}, {"max_reply_bytes", room}})));
}

}  // namespace

std::optional<std::string> Dispatcher::handleMessage(ClientState& client, std::string_view text, MessageLog* log) {
  return handleEnvelope(client, parseEnvelope(text), log);
}

std::optional<std::string> Dispatcher::handleEnvelope(ClientState& client, const Envelope& envelope,
                                                      MessageLog* log) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> replies;
  size_t replyBytes = 0;
  // A batch is one log line: its counts, and the first error in full.
  size_t ok = 0, failed = 0;
  std::string firstError;
  for (const auto& item : envelope.items) {
    if (!item.call) {
      replies.push_back(serializeMessage(makeErrorReply(item.errorId, item.error)));
      replyBytes += replies.back().size() + 1;  // and its comma
      ++failed;
      if (log && firstError.empty()) firstError = "<invalid> " + loggedOutcome(item.error);
      continue;
    }
    if (envelope.batch && replyBytes + kBatchRunRoom > kMaxReplyBytes) {
      const Status skipped(ErrorCode::kBusy,
                           fmt::format("not run: the batch's replies before this element left too little of the {} "
                                       "bytes one message may get; send it again in a smaller batch",
                                       kMaxReplyBytes),
                           nlohmann::json{{"max_reply_bytes", kMaxReplyBytes}});
      ++failed;
      if (log && firstError.empty()) firstError = bounded(item.call->method, kLoggedMethodBytes) + " " + loggedOutcome(skipped);
      if (!item.call->isNotification()) replies.push_back(serializeMessage(makeErrorReply(item.call->id, skipped)));
      continue;
    }
    std::string line;
    bool succeeded = false;
    std::optional<std::string> reply = handleCall(client, *item.call, log ? &line : nullptr, &succeeded);
    bool answered = succeeded;
    if (reply) {
      const size_t limit = envelope.batch ? kMaxReplyBytes - kBatchErrorRoom : kMaxReplyBytes;
      if (const size_t bytes = reply->size(); bytes > limit - std::min(limit, replyBytes)) {
        *reply = replyTooLong(item.call->id, bytes, limit);
        answered = false;
        if (log) line += fmt::format(" (its reply of {} bytes refused: too long)", bytes);
      }
      replyBytes += reply->size() + 1;  // and its comma
      replies.push_back(std::move(*reply));
    }
    (answered ? ok : failed) += 1;
    if (log && (envelope.batch ? !answered && firstError.empty() : true)) firstError = std::move(line);
  }
  if (log) {
    log->calls = envelope.items.size();
    if (!envelope.batch) {
      log->line = std::move(firstError);
    } else {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      log->line = fmt::format("batch of {} in {:.2f}ms: {} ok, {} failed{}", envelope.items.size(), ms, ok, failed,
                              firstError.empty() ? std::string() : "; first failure: " + firstError);
    }
  }
  if (replies.empty()) return std::nullopt;
  if (!envelope.batch) return std::move(replies[0]);
  // A batch reply is the array of the replies: its compact dump is theirs joined by commas.
  std::string out = "[";
  for (size_t i = 0; i < replies.size(); ++i) {
    if (i > 0) out += ',';
    out += replies[i];
  }
  out += ']';
  return out;
}

}  // namespace memq
