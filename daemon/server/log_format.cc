// Log escaping and rate limiting; see log_format.h.
#include "daemon/server/log_format.h"

namespace memq {

namespace {

bool isControl(unsigned char c) { return c < 0x20 || c == 0x7F; }

// A character escapeControlCharacters writes as \uXXXX: its code point and its length in UTF-8 (0: none here).
struct UnicodeEscaped {
  size_t length = 0;
  uint32_t codePoint = 0;
};

// The character at text[i] when it is a C1 control or one of the invisible characters that change how a line
// displays: U+2028 and U+2029, at which some viewers break the line, and the bidirectional marks, embeddings,
// overrides and isolates (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which reorder the text after them,
// so that a method name could make a line read as another. Any other character: length 0.
UnicodeEscaped unicodeEscapedAt(std::string_view text, size_t i) {
  auto byte = [&](size_t k) -> uint32_t { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0; };
  const uint32_t lead = byte(0);
  if (lead == 0xC2 && byte(1) >= 0x80 && byte(1) <= 0x9F) return {2, byte(1)};  // U+0080-U+009F
  if (lead == 0xD8 && byte(1) == 0x9C) return {2, 0x061C};
  if (lead == 0xE2 && (byte(1) == 0x80 || byte(1) == 0x81) && (byte(2) & 0xC0) == 0x80) {
    const uint32_t codePoint = 0x2000 | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    if (codePoint == 0x200E || codePoint == 0x200F || (codePoint >= 0x2028 && codePoint <= 0x202E) ||
        (codePoint >= 0x2066 && codePoint <= 0x2069)) {
      return {3, codePoint};
    }
  }
  return {};
}

}  // namespace

bool needsEscaping(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (isControl(static_cast<unsigned char>(text[i])) || unicodeEscapedAt(text, i).length > 0) return true;
  }
  return false;
}

std::string escapeControlCharacters(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (const UnicodeEscaped escaped = unicodeEscapedAt(text, i); escaped.length > 0) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(escaped.codePoint >> shift) & 0xF];
      i += escaped.length - 1;
    } else if (!isControl(c)) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

EscapingFormatter::EscapingFormatter() : pattern_(std::make_unique<spdlog::pattern_formatter>()) {}

void EscapingFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const std::string_view payload(msg.payload.data(), msg.payload.size());
  if (!needsEscaping(payload)) {
    pattern_->format(msg, dest);
    return;
  }
  const std::string escaped = escapeControlCharacters(payload);
  spdlog::details::log_msg copy = msg;
  copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
  pattern_->format(copy, dest);
  // A colour sink reads the level's colour range from the message it passed in.
  msg.color_range_start = copy.color_range_start;
  msg.color_range_end = copy.color_range_end;
}

std::unique_ptr<spdlog::formatter> EscapingFormatter::clone() const { return std::make_unique<EscapingFormatter>(); }

bool LogRateLimit::admit(uint64_t* suppressed) {
  MutexLock lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (any_ && now - last_ < interval_) {
    ++suppressed_;
    return false;
  }
  any_ = true;
  last_ = now;
  if (suppressed) *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

std::string suppressedNote(uint64_t n) {
  return n == 0 ? std::string() : " (" + std::to_string(n) + " similar lines left out)";
}

}  // namespace memq
