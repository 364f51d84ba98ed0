// The text form of line ranges; see line_range.h.
#include "daemon/model/line_range.h"

#include <charconv>

namespace memq {

namespace {

// A decimal line number; 0 when it does not fit in 32 bits.
uint32_t parseLine(std::string_view digits) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return 0;
  return v;
}

bool allDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::string formatRanges(const LineRanges& lines) {
  std::string out;
  for (const LineRange& r : lines) {
    if (!out.empty()) out += ',';
    out += std::to_string(r.first);
    if (r.last != r.first) out += "-" + std::to_string(r.last);
  }
  return out;
}

std::optional<LineRanges> parseRangeList(std::string_view text) {
  if (text.empty()) return std::nullopt;
  LineRanges out;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t dash = item.find('-');
    const std::string_view first = item.substr(0, dash);
    const std::string_view last = dash == std::string_view::npos ? first : item.substr(dash + 1);
    if (!allDigits(first) || !allDigits(last)) return std::nullopt;
    out.push_back({parseLine(first), parseLine(last)});
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace memq
