// Dispatcher: the method table and the one place a JSON-RPC call becomes a reply.
// For each call: find the method (MethodNotFound), check initialisation where required (NotInitialized), validate
// params against schema/methods (InvalidParams naming the field), bind the request context, run the thin handler,
// and turn its Status into an error object — exactly once per call, with a last-resort catch so nothing a client
// sends can take the daemon down.
// Thread-safety: thread-safe (stateless besides the table); runs on worker threads, never on the I/O thread.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/service/service.h"
#include "protocol/envelope.h"

namespace memq {

// What handlers of the transport-level methods need from the server that runs them.
struct ServerHooks {
  std::function<nlohmann::json()> status;   // daemon/status
  std::function<void()> shutdown;           // daemon/shutdown
};

struct HandlerEnv {
  Service& service;
  ClientState& client;
  const ServerHooks& hooks;
};

using Handler = std::function<Result<nlohmann::json>(HandlerEnv&, const CallContext&, const nlohmann::json& params)>;
// A handler whose result is already JSON text in serializeMessage's form (daemon/server/reply_json): for the largest
// results, where building a nlohmann tree only to dump it cost more than writing the text.
using TextHandler = std::function<Result<std::string>(HandlerEnv&, const CallContext&, const nlohmann::json& params)>;

struct MethodEntry {
  MethodEntry() = default;
  explicit MethodEntry(Handler h, bool needsInit = false) : handler(std::move(h)), needsInitialize(needsInit) {}
  // A method whose result is written as text.
  static MethodEntry writingText(TextHandler h, bool needsInit = false) {
    MethodEntry entry;
    entry.textHandler = std::move(h);
    entry.needsInitialize = needsInit;
    return entry;
  }

  Handler handler;               // exactly one of handler and textHandler is set
  bool needsInitialize = false;  // hints/*: per-connection state needs an identified client
  TextHandler textHandler;
};

using MethodTable = std::map<std::string, MethodEntry, std::less<>>;

// The table of every method memqd serves (daemon/server/handlers.cc).
const MethodTable& methodTable();

class Dispatcher {
 public:
  Dispatcher(Service& service, ServerHooks hooks, const MethodTable& table = methodTable());

  // What one message leaves for the request log: one line, whether it held one call or a batch of them (a batch's
  // line counts its outcomes and names its first error). No line quotes the message's bytes: a value from the
  // client appears only as a field the line names (method, id, an error's message), each cut to a bounded length.
  struct MessageLog {
    std::string line;
    size_t calls = 0;  // elements handled, for requests_served
  };
  // The most reply text one message gets: what a connection may have queued (Session::kMaxQueuedBytes, 16 MiB) less
  // room for the framing. A call whose reply would be longer is answered with an InvalidParams error instead (the
  // call ran; a read is what makes replies that long). In a batch an element runs only while the replies so far
  // leave kBatchRunRoom, and one whose reply would take them past kMaxReplyBytes - kBatchErrorRoom gets that error
  // instead; the elements not run are answered with Busy. So no message gets its client disconnected for a reply it
  // could not read, nor makes memqd build more than this (and one reply) in memory.
  static constexpr size_t kMaxReplyBytes = (16u << 20) - (64u << 10);
  // Room kept for the answers to the elements not run: at most 10,000 of ~150 bytes, plus their ids (all within
  // the message, at most 1 MiB by default and far less in practice).
  static constexpr size_t kBatchErrorRoom = 3u << 20;
  // Room an element needs to run: more than any write's reply (a save's is at most a few hundred KiB), so a write
  // that ran is never answered with a reply-size error.
  static constexpr size_t kBatchRunRoom = kBatchErrorRoom + (1u << 20);
  // Handles one frame's text; returns the reply text to send, or nullopt when nothing is to be sent
  // (notifications only).
  std::optional<std::string> handleMessage(ClientState& client, std::string_view text, MessageLog* log = nullptr);
  // The same for a frame already parsed (parseEnvelope).
  std::optional<std::string> handleEnvelope(ClientState& client, const Envelope& envelope, MessageLog* log = nullptr);
  // One call; returns the reply's text (nullopt for a notification). *succeeded: whether it was answered with a result.
  std::optional<std::string> handleCall(ClientState& client, const Call& call, std::string* logLine = nullptr,
                                        bool* succeeded = nullptr);

 private:
  // The call's result as JSON text.
  Result<std::string> invoke(ClientState& client, const Call& call);

  Service& service_;
  ServerHooks hooks_;
  const MethodTable& table_;
};

}  // namespace memq
