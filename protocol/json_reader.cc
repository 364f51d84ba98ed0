// The fast JSON reader; see json_reader.h.
#include "protocol/json_reader.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "protocol/utf8_sequence.h"

namespace memq {
namespace {

using nlohmann::json;

class Reader {
 public:
  Reader(std::string_view text, int maxDepth) : text_(text), maxDepth_(maxDepth) {}

  bool document(json& out) {
    skipSpace();
    if (!value(out, 1)) return false;
    skipSpace();
    return at_ == text_.size();
  }

 private:
  void skipSpace() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++at_;
    }
  }

  bool take(char c) {
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  bool value(json& out, int depth) {
    if (at_ >= text_.size()) return false;
    switch (text_[at_]) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"':
        out = json::value_t::string;
        return string(out.get_ref<std::string&>());
      case 't': out = true; return literal("true");
      case 'f': out = false; return literal("false");
      case 'n': out = nullptr; return literal("null");
      default: return number(out);
    }
  }

  bool object(json& out, int depth) {
    if (depth > maxDepth_) return false;
    ++at_;  // '{'
    out = json::value_t::object;
    auto& members = out.get_ref<json::object_t&>();
    skipSpace();
    if (take('}')) return true;
    std::string key;
    for (;;) {
      if (at_ >= text_.size() || text_[at_] != '"') return false;
      key.clear();
      if (!string(key)) return false;
      skipSpace();
      if (!take(':')) return false;
      skipSpace();
      // memqd writes keys sorted, so the hint is right nearly always. An existing key is overwritten: the last of
      // duplicate keys wins, as in nlohmann's parser.
      auto it = members.emplace_hint(members.end(), std::move(key), nullptr);
      if (!value(it->second, depth + 1)) return false;
      skipSpace();
      if (take('}')) return true;
      if (!take(',')) return false;
      skipSpace();
    }
  }

  bool array(json& out, int depth) {
    if (depth > maxDepth_) return false;
    ++at_;  // '['
    out = json::value_t::array;
    auto& elements = out.get_ref<json::array_t&>();
    skipSpace();
    if (take(']')) return true;
    for (;;) {
      elements.emplace_back();
      if (!value(elements.back(), depth + 1)) return false;
      skipSpace();
      if (take(']')) return true;
      if (!take(',')) return false;
      skipSpace();
    }
  }

  static int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits after "\u".
  bool hex4(uint32_t& unit) {
    if (text_.size() - at_ < 4) return false;
    unit = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = hexDigit(text_[at_ + k]);
      if (d < 0) return false;
      unit = unit * 16 + static_cast<uint32_t>(d);
    }
    at_ += 4;
    return true;
  }

  static void appendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // A string literal (text_[at_] is its opening quote) into `out`.
  bool string(std::string& out) {
    ++at_;  // '"'
    for (;;) {
      const size_t run = plainJsonRunEnd(text_, at_);
      out.append(text_.data() + at_, run - at_);
      at_ = run;
      if (at_ >= text_.size()) return false;
      const auto c = static_cast<unsigned char>(text_[at_]);
      if (c == '"') {
        ++at_;
        return true;
      }
      if (c < 0x20) return false;  // a raw control character: JSON requires it escaped
      if (c >= 0x80) {
        size_t bad = 0;
        const size_t length = wellFormedUtf8Length(text_, at_, bad);
        if (length == 0) return false;
        out.append(text_.data() + at_, length);
        at_ += length;
        continue;
      }
      // A backslash.
      if (++at_ >= text_.size()) return false;
      const char e = text_[at_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t unit = 0;
          if (!hex4(unit)) return false;
          if (unit >= 0xDC00 && unit <= 0xDFFF) return false;  // a low surrogate alone
          if (unit >= 0xD800 && unit <= 0xDBFF) {
            uint32_t low = 0;
            if (!literal("\\u") || !hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
            unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
          }
          appendUtf8(out, unit);
          break;
        }
        default: return false;
      }
    }
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(json& out) {
    const size_t start = at_;
    const bool negative = take('-');
    if (at_ >= text_.size() || !isDigit(text_[at_])) return false;
    if (text_[at_] == '0') {
      ++at_;
    } else {
      while (at_ < text_.size() && isDigit(text_[at_])) ++at_;
    }
    bool integral = true;
    if (take('.')) {
      integral = false;
      if (at_ >= text_.size() || !isDigit(text_[at_])) return false;
      while (at_ < text_.size() && isDigit(text_[at_])) ++at_;
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      integral = false;
      ++at_;
      if (!take('+')) take('-');
      if (at_ >= text_.size() || !isDigit(text_[at_])) return false;
      while (at_ < text_.size() && isDigit(text_[at_])) ++at_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + at_;
    if (integral) {
      // nlohmann: a negative integer is number_integer, any other number_unsigned; out of range it becomes a float,
      // which is left to nlohmann.
      if (negative) {
        int64_t v = 0;
        auto [end, error] = std::from_chars(first, last, v);
        if (error != std::errc() || end != last) return false;
        out = v;
      } else {
        uint64_t v = 0;
        auto [end, error] = std::from_chars(first, last, v);
        if (error != std::errc() || end != last) return false;
        out = v;
      }
      return true;
    }
    // Correctly rounded, as nlohmann's strtod; overflow, underflow and anything unusual go to nlohmann.
    double v = 0;
    auto [end, error] = std::from_chars(first, last, v);
    if (error != std::errc() || end != last || !std::isfinite(v)) return false;
    out = v;
    return true;
  }

  std::string_view text_;
  size_t at_ = 0;
  int maxDepth_;
};

}  // namespace

bool readJsonFast(std::string_view text, int maxDepth, nlohmann::json& out) {
  return Reader(text, maxDepth).document(out);
}

}  // namespace memq
