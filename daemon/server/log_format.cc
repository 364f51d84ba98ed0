// Log escaping and rate limiting; see log_format.h.
#include "daemon/server/log_format.h"

namespace memq {

namespace {

bool isC1Lead(std::string_view text, size_t i) {
  return static_cast<unsigned char>(text[i]) == 0xC2 && i + 1 < text.size() &&
         static_cast<unsigned char>(text[i + 1]) >= 0x80 && static_cast<unsigned char>(text[i + 1]) <= 0x9F;
}

bool isControl(unsigned char c) { return c < 0x20 || c == 0x7F; }

}  // namespace

bool needsEscaping(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (isControl(static_cast<unsigned char>(text[i])) || isC1Lead(text, i)) return true;
  }
  return false;
}

std::string escapeControlCharacters(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (isC1Lead(text, i)) {
      const auto code = static_cast<unsigned char>(text[i + 1]);
      out += "\\u00";
      out += kHex[code >> 4];
      out += kHex[code & 0xF];
      ++i;
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
