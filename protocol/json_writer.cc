// The JSON text writer; see json_writer.h.
#include "protocol/json_writer.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>

#include "protocol/utf8_sequence.h"

namespace memq {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

void appendControlEscape(std::string& out, unsigned char c) {
  switch (c) {
    case '\b': out += "\\b"; return;
    case '\t': out += "\\t"; return;
    case '\n': out += "\\n"; return;
    case '\f': out += "\\f"; return;
    case '\r': out += "\\r"; return;
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    default: {
      // nlohmann writes the other control characters as \u00xx with lower-case hex digits.
      static constexpr char kHex[] = "0123456789abcdef";
      const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out.append(escaped, sizeof escaped);
      return;
    }
  }
}

}  // namespace

void appendJsonString(std::string& out, std::string_view text) {
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  size_t i = 0;
  while (i < text.size()) {
    const size_t run = plainJsonRunEnd(text, i);
    out.append(text.data() + i, run - i);
    i = run;
    if (i == text.size()) break;
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      appendControlEscape(out, c);
      ++i;
      continue;
    }
    size_t bad = 0;
    if (size_t length = wellFormedUtf8Length(text, i, bad)) {
      out.append(text.data() + i, length);
      i += length;
      continue;
    }
    // As nlohmann's dump with error_handler_t::replace: the ill-formed sequence so far becomes one U+FFFD. A byte
    // that broke a sequence begun before it is read again on its own (it may start a valid one); a byte that cannot
    // start any sequence is consumed by its replacement.
    out += kReplacementCharacter;
    if (bad == text.size()) break;
    i = bad == i ? i + 1 : bad;
  }
  out += '"';
}

void JsonWriter::separate() {
  if (needComma_) out_ += ',';
}

void JsonWriter::beginObject() {
  separate();
  out_ += '{';
  needComma_ = false;
}

void JsonWriter::endObject() {
  out_ += '}';
  needComma_ = true;
}

void JsonWriter::beginArray() {
  separate();
  out_ += '[';
  needComma_ = false;
}

void JsonWriter::endArray() {
  out_ += ']';
  needComma_ = true;
}

void JsonWriter::key(std::string_view name) {
  separate();
  appendJsonString(out_, name);
  out_ += ':';
  needComma_ = false;
}

void JsonWriter::string(std::string_view text) {
  separate();
  appendJsonString(out_, text);
  needComma_ = true;
}

void JsonWriter::integer(std::int64_t value) {
  separate();
  char buffer[24];
  auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out_.append(buffer, static_cast<size_t>(end - buffer));
  needComma_ = true;
}

void JsonWriter::number(double value) {
  separate();
  if (!std::isfinite(value)) {
    out_ += "null";
  } else {
    // nlohmann's own shortest round-trip formatter, so doubles come out exactly as its dump writes them.
    char buffer[64];
    char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, static_cast<size_t>(end - buffer));
  }
  needComma_ = true;
}

void JsonWriter::boolean(bool value) {
  separate();
  out_ += value ? "true" : "false";
  needComma_ = true;
}

void JsonWriter::null() {
  separate();
  out_ += "null";
  needComma_ = true;
}

void JsonWriter::raw(std::string_view json) {
  separate();
  out_.append(json);
  needComma_ = true;
}

}  // namespace memq
