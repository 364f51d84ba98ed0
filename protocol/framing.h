// Message framing on a byte stream: turns the bytes of one connection into JSON-RPC message texts and back.
// Owns framing detection (newline-delimited JSON or LSP-style Content-Length headers, decided once per connection
// from its first non-whitespace bytes), the per-message size limit, and skipping over-size messages with bounded
// memory. It knows nothing about JSON: a frame's payload is opaque text handed to the envelope parser.
//
// Thread-safety: a FrameDecoder belongs to one connection's reader and must not be shared between threads.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace memq {

enum class Framing {
  kUnknown,        // no non-whitespace byte seen yet
  kNdjson,         // one JSON message per line
  kContentLength,  // "Content-Length: N\r\n\r\n" + N bytes, as LSP
};

// The default per-message limit (docs/protocol.md: 1 MiB, `--max-message-bytes`).
inline constexpr std::size_t kDefaultMaxMessageBytes = std::size_t{1} << 20;

struct Frame {
  enum class Kind {
    kMessage,   // payload is one message's text
    kTooLarge,  // a message over the limit was (or is being) skipped; the connection stays usable
    kFatal,     // the stream cannot be framed; the caller should close the connection
  };
  Kind kind = Kind::kMessage;
  // kMessage: the message text (without framing). kTooLarge / kFatal: a sentence saying what happened, suitable for
  // an error reply or a log line.
  std::string payload;
};

// Incremental decoder for one connection. Feed it bytes as they arrive, then call next() until it returns nullopt.
//
// Invariants:
//  1. The framing is decided once, from the first non-whitespace bytes: a case-insensitive "Content-Length:" or
//     "Content-Type:" header selects kContentLength, anything else kNdjson.
//  2. Memory stays bounded by max message size + header limit + the size of the largest single feed(): an over-size
//     message is discarded as it streams in, never buffered whole.
//  3. Each over-size message is reported exactly once (kTooLarge), when it is first detected.
//  4. After kFatal the decoder is dead: feed() ignores input and next() returns nullopt.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t maxMessageBytes = kDefaultMaxMessageBytes);

  void feed(std::string_view bytes);
  std::optional<Frame> next();

  Framing framing() const { return framing_; }
  bool failed() const { return failed_; }
  std::size_t maxMessageBytes() const { return maxMessageBytes_; }
  // Bytes held but not yet returned (for tests of the memory bound).
  std::size_t bufferedBytes() const { return buffer_.size() - start_; }
  // Bytes the buffer keeps allocated: at most kKeptBufferBytes once every message held was returned.
  std::size_t bufferCapacity() const { return buffer_.capacity(); }
  static constexpr std::size_t kKeptBufferBytes = std::size_t{256} << 10;
  // True while a message has begun but has not been returned yet: bytes are held, a Content-Length body is still
  // awaited (even when none of it has arrived), or an over-size message is being skipped. A connection that stays
  // like this too long is stalled (Session's partial-message timeout).
  bool midMessage() const {
    return bufferedBytes() > 0 || lspState_ != LspState::kHeaders || skippingLine_;
  }

 private:
  enum class LspState { kHeaders, kBody, kSkipBody };

  std::optional<Frame> nextNdjson();
  std::optional<Frame> nextContentLength();
  bool detectFraming();
  Frame fail(std::string reason);
  void consume(std::size_t n);
  std::string_view pending() const { return std::string_view(buffer_).substr(start_); }

  std::size_t maxMessageBytes_;
  Framing framing_ = Framing::kUnknown;
  bool failed_ = false;
  std::string buffer_;
  std::size_t start_ = 0;  // first unconsumed byte of buffer_; compacted lazily so many small frames stay O(n)

  // NDJSON: discarding the rest of an over-size line until its newline.
  bool skippingLine_ = false;
  std::size_t scanned_ = 0;  // bytes of pending() already searched for '\n'

  // Content-Length framing.
  LspState lspState_ = LspState::kHeaders;
  std::size_t bodyRemaining_ = 0;
};

// Frames one message for sending. NDJSON (and kUnknown): json + "\n" (json must be compact, without raw newlines);
// kContentLength: "Content-Length: N\r\n\r\n" + json.
std::string encodeFrame(Framing framing, std::string_view json);

}  // namespace memq
