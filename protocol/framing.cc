// FrameDecoder and encodeFrame: NDJSON and Content-Length framing with a size limit (see framing.h).
#include "protocol/framing.h"

#include <algorithm>
#include <array>

namespace memq {
namespace {

// A header block longer than this without its terminating blank line is not a header block: the stream is garbage.
constexpr std::size_t kMaxHeaderBytes = 8192;

constexpr std::array<std::string_view, 2> kLspHeaderPrefixes = {"content-length:", "content-type:"};

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool isTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool isBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), isSpace);
}

// Parses a non-negative decimal without sign, spaces or overflow; anything else is not a length.
std::optional<std::size_t> parseLength(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::size_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  return value;
}

Frame tooLarge(std::string message) { return Frame{Frame::Kind::kTooLarge, std::move(message)}; }

}  // namespace

FrameDecoder::FrameDecoder(std::size_t maxMessageBytes) : maxMessageBytes_(maxMessageBytes) {}

void FrameDecoder::feed(std::string_view bytes) {
  if (failed_) return;
  // While skipping an over-size message, drop its bytes here instead of buffering them (invariant 2). pending() is
  // empty whenever a skip is in progress, because next() discards everything it held when the skip began.
  if (pending().empty()) {
    if (framing_ == Framing::kNdjson && skippingLine_) {
      std::size_t nl = bytes.find('\n');
      if (nl == std::string_view::npos) return;
      skippingLine_ = false;
      bytes.remove_prefix(nl + 1);
    } else if (framing_ == Framing::kContentLength && lspState_ == LspState::kSkipBody) {
      std::size_t n = std::min(bodyRemaining_, bytes.size());
      bodyRemaining_ -= n;
      bytes.remove_prefix(n);
      if (bodyRemaining_ == 0) lspState_ = LspState::kHeaders;
    }
  }
  if (bytes.empty()) return;
  if (start_ > 0 && start_ >= buffer_.size() / 2) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<Frame> FrameDecoder::next() {
  if (failed_) return std::nullopt;
  if (framing_ == Framing::kUnknown && !detectFraming()) return std::nullopt;
  return framing_ == Framing::kNdjson ? nextNdjson() : nextContentLength();
}

bool FrameDecoder::detectFraming() {
  std::string_view p = pending();
  std::size_t ws = 0;
  while (ws < p.size() && isSpace(p[ws])) ++ws;
  consume(ws);
  p = pending();
  if (p.empty()) return false;
  bool couldStillMatch = false;
  for (std::string_view prefix : kLspHeaderPrefixes) {
    std::size_t n = std::min(p.size(), prefix.size());
    if (!iequals(p.substr(0, n), prefix.substr(0, n))) continue;
    if (n == prefix.size()) {
      framing_ = Framing::kContentLength;
      return true;
    }
    couldStillMatch = true;
  }
  if (couldStillMatch) return false;  // e.g. "Conte" so far: wait for the rest of the header name
  framing_ = Framing::kNdjson;
  return true;
}

std::optional<Frame> FrameDecoder::nextNdjson() {
  for (;;) {
    std::string_view p = pending();
    if (skippingLine_) {
      std::size_t nl = p.find('\n');
      if (nl == std::string_view::npos) {
        consume(p.size());
        return std::nullopt;
      }
      consume(nl + 1);
      skippingLine_ = false;
      continue;
    }
    std::size_t nl = p.find('\n', scanned_);
    if (nl == std::string_view::npos) {
      scanned_ = p.size();
      // One extra byte of slack: the line may still end in "\r\n", and the '\r' does not count.
      if (p.size() > maxMessageBytes_ + 1) {
        consume(p.size());
        scanned_ = 0;
        skippingLine_ = true;
        return tooLarge("message exceeds the limit of " + std::to_string(maxMessageBytes_) + " bytes");
      }
      return std::nullopt;
    }
    scanned_ = 0;
    std::string_view line = p.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > maxMessageBytes_) {
      consume(nl + 1);
      return tooLarge("message of " + std::to_string(line.size()) + " bytes exceeds the limit of " +
                      std::to_string(maxMessageBytes_) + " bytes");
    }
    if (isBlank(line)) {
      consume(nl + 1);
      continue;
    }
    Frame frame{Frame::Kind::kMessage, std::string(line)};
    consume(nl + 1);
    return frame;
  }
}

std::optional<Frame> FrameDecoder::nextContentLength() {
  for (;;) {
    switch (lspState_) {
      case LspState::kSkipBody: {
        std::size_t n = std::min(bodyRemaining_, pending().size());
        consume(n);
        bodyRemaining_ -= n;
        if (bodyRemaining_ > 0) return std::nullopt;
        lspState_ = LspState::kHeaders;
        continue;
      }
      case LspState::kBody: {
        if (pending().size() < bodyRemaining_) return std::nullopt;
        Frame frame{Frame::Kind::kMessage, std::string(pending().substr(0, bodyRemaining_))};
        consume(bodyRemaining_);
        bodyRemaining_ = 0;
        lspState_ = LspState::kHeaders;
        return frame;
      }
      case LspState::kHeaders:
        break;
    }

    // Tolerate stray blank lines between messages; some clients end a body with a newline.
    std::string_view p = pending();
    std::size_t ws = 0;
    while (ws < p.size() && isSpace(p[ws])) ++ws;
    consume(ws);
    p = pending();
    if (p.empty()) return std::nullopt;

    std::optional<std::size_t> length;
    std::size_t pos = 0;
    for (;;) {
      std::size_t nl = p.find('\n', pos);
      if (nl == std::string_view::npos) {
        if (p.size() > kMaxHeaderBytes) return fail("header block exceeds " + std::to_string(kMaxHeaderBytes) + " bytes");
        return std::nullopt;  // header block not complete yet; nothing consumed, re-parsed on the next call
      }
      std::string_view line = p.substr(pos, nl - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      pos = nl + 1;
      if (line.empty()) break;  // the blank line that ends the header block
      std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) return fail("malformed header line (no ':')");
      std::string_view name = trim(line.substr(0, colon));
      std::string_view value = trim(line.substr(colon + 1));
      if (name.empty() || !std::all_of(name.begin(), name.end(), isTokenChar)) {
        return fail("malformed header name");
      }
      if (!iequals(name, "content-length")) continue;  // Content-Type and any other header carry nothing we use
      std::optional<std::size_t> parsed = parseLength(value);
      if (!parsed) return fail("invalid Content-Length value");
      if (length && *length != *parsed) return fail("conflicting Content-Length headers");
      length = parsed;
    }
    if (pos > kMaxHeaderBytes) return fail("header block exceeds " + std::to_string(kMaxHeaderBytes) + " bytes");
    if (!length) return fail("header block without Content-Length");
    consume(pos);
    bodyRemaining_ = *length;
    if (*length > maxMessageBytes_) {
      lspState_ = LspState::kSkipBody;
      return tooLarge("message of " + std::to_string(*length) + " bytes exceeds the limit of " +
                      std::to_string(maxMessageBytes_) + " bytes");
    }
    lspState_ = LspState::kBody;
  }
}

Frame FrameDecoder::fail(std::string reason) {
  failed_ = true;
  buffer_.clear();
  buffer_.shrink_to_fit();
  start_ = 0;
  return Frame{Frame::Kind::kFatal, "cannot frame the stream: " + std::move(reason)};
}

void FrameDecoder::consume(std::size_t n) {
  start_ += n;
  if (start_ >= buffer_.size()) {
    buffer_.clear();
    start_ = 0;
    // One large message (an import part of up to the message limit) must not pin its buffer for the rest of a
    // connection's life: with thousands of connections that is gigabytes. A small buffer is kept for the next ones.
    if (buffer_.capacity() > kKeptBufferBytes) buffer_.shrink_to_fit();
  }
}

std::string encodeFrame(Framing framing, std::string_view json) {
  std::string out;
  if (framing == Framing::kContentLength) {
    std::string header = "Content-Length: " + std::to_string(json.size()) + "\r\n\r\n";
    out.reserve(header.size() + json.size());
    out.append(header);
    out.append(json);
  } else {
    out.reserve(json.size() + 1);
    out.append(json);
    out.push_back('\n');
  }
  return out;
}

}  // namespace memq
