// Fuzz target for protocol/framing: arbitrary bytes as one connection's stream, in either framing (the decoder
// picks it from the first bytes; the seeds hold both). Each input is decoded whole and again split at pseudo-random
// points, under the default limit and under a tiny one, and the properties below must hold.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/framing.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using memq::Frame;
using memq::FrameDecoder;

// framing.cc's header-block limit; the decoder's memory bound is stated in terms of it.
constexpr std::size_t kHeaderLimit = 8192;

struct Decoded {
  std::vector<std::string> messages;
  std::size_t tooLarge = 0;
  bool fatal = false;
  memq::Framing framing = memq::Framing::kUnknown;
};

// Deterministic split points derived from the input itself, so a saved crash replays exactly.
std::uint64_t seedOf(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::uint64_t nextRandom(std::uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

void drain(FrameDecoder& decoder, Decoded& out, std::size_t lastFeed) {
  while (auto frame = decoder.next()) {
    MEMQ_FUZZ_CHECK(!out.fatal, "nothing comes out of a decoder after a fatal frame");
    switch (frame->kind) {
      case Frame::Kind::kMessage:
        MEMQ_FUZZ_CHECK(frame->payload.size() <= decoder.maxMessageBytes(), "a message never exceeds the limit");
        if (decoder.framing() == memq::Framing::kNdjson) {
          MEMQ_FUZZ_CHECK(frame->payload.find('\n') == std::string::npos, "an NDJSON message holds no newline");
          MEMQ_FUZZ_CHECK(frame->payload.find_first_not_of(" \t\r\n") != std::string::npos,
                          "blank NDJSON lines are skipped, never returned");
        }
        out.messages.push_back(std::move(frame->payload));
        break;
      case Frame::Kind::kTooLarge:
        MEMQ_FUZZ_CHECK(!frame->payload.empty(), "an over-size report says what happened");
        ++out.tooLarge;
        break;
      case Frame::Kind::kFatal:
        MEMQ_FUZZ_CHECK(decoder.failed(), "a fatal frame leaves the decoder failed");
        out.fatal = true;
        break;
    }
  }
  MEMQ_FUZZ_CHECK(decoder.bufferedBytes() <= decoder.maxMessageBytes() + kHeaderLimit + lastFeed + 2,
                  "held bytes stay within limit + header limit + one feed (invariant 2)");
  if (decoder.failed()) MEMQ_FUZZ_CHECK(decoder.bufferedBytes() == 0, "a failed decoder holds nothing");
}

Decoded decode(std::string_view stream, std::size_t limit, std::uint64_t* splitState) {
  FrameDecoder decoder(limit);
  Decoded out;
  if (splitState == nullptr) {
    decoder.feed(stream);
    drain(decoder, out, stream.size());
  } else {
    std::size_t pos = 0;
    while (pos < stream.size()) {
      std::uint64_t r = nextRandom(*splitState);
      // Mostly small pieces (down to single bytes, which split every header and "\r\n"), sometimes large ones.
      std::size_t piece = (r & 7) == 0 ? 1 + (r >> 8) % 512 : 1 + (r >> 8) % 9;
      piece = std::min(piece, stream.size() - pos);
      decoder.feed(stream.substr(pos, piece));
      drain(decoder, out, piece);
      pos += piece;
    }
  }
  out.framing = decoder.framing();
  return out;
}

void checkLimit(std::string_view stream, std::size_t limit) {
  Decoded whole = decode(stream, limit, nullptr);
  std::uint64_t state = seedOf(stream) | 1;
  Decoded pieces = decode(stream, limit, &state);
  MEMQ_FUZZ_CHECK(whole.framing == pieces.framing, "the framing does not depend on how the bytes arrive");
  MEMQ_FUZZ_CHECK(whole.messages == pieces.messages, "the messages do not depend on how the bytes arrive");
  MEMQ_FUZZ_CHECK(whole.tooLarge == pieces.tooLarge, "each over-size message is reported exactly once");
  MEMQ_FUZZ_CHECK(whole.fatal == pieces.fatal, "a stream is fatal however its bytes arrive");

  // encodeFrame round trip: a Content-Length frame carries any bytes unchanged.
  for (const std::string& message : whole.messages) {
    FrameDecoder again(limit);
    again.feed(memq::encodeFrame(memq::Framing::kContentLength, message));
    auto frame = again.next();
    MEMQ_FUZZ_CHECK(frame && frame->kind == Frame::Kind::kMessage && frame->payload == message,
                    "encodeFrame(kContentLength) then decoding gives the message back");
    MEMQ_FUZZ_CHECK(!again.next() && !again.midMessage(), "an encoded frame leaves nothing behind");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  checkLimit(stream, memq::kDefaultMaxMessageBytes);
  checkLimit(stream, 48);  // small enough that the fuzzer's inputs cross it often
  return 0;
}
