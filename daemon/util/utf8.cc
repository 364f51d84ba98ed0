// UTF-8 validation, decoding and UTF-16 conversion; see utf8.h for the ill-formed-input contract.
#include "daemon/util/utf8.h"

#include <cstdint>

namespace memq {

namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

bool isSurrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// UTF-16 units of a decoded code point (U+FFFD counts as one, like the character JavaScript would hold).
size_t unitsOf(char32_t cp) { return cp > 0xFFFF ? 2 : 1; }

}  // namespace

char32_t decodeUtf8At(std::string_view text, size_t& pos) {
  const auto byteAt = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t b0 = byteAt(pos);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  size_t need = 0;
  char32_t cp = 0;
  // The bounds of the first continuation byte exclude overlongs, surrogates and values above U+10FFFF up front,
  // which is what makes the "maximal subpart" rule fall out naturally.
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    ++pos;
    return kReplacementChar;
  }
  size_t i = pos + 1;
  for (size_t k = 0; k < need; ++k, ++i) {
    if (i >= text.size()) {
      pos = i;
      return kReplacementChar;
    }
    const uint8_t b = byteAt(i);
    if (b < lo || b > hi) {
      pos = i;  // the offending byte starts the next sequence
      return kReplacementChar;
    }
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
  }
  pos = i;
  return cp;
}

bool isValidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // Fast path: eight ASCII bytes at a time would complicate this for little gain on 200-char summaries; a
    // byte-wise ASCII skip is enough.
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t start = pos;
    const char32_t cp = decodeUtf8At(text, pos);
    // A genuine U+FFFD is three bytes (EF BF BD); a substituted one is shorter or starts elsewhere.
    if (cp == kReplacementChar &&
        !(pos - start == 3 && static_cast<uint8_t>(text[start]) == 0xEF)) {
      return false;
    }
  }
  return true;
}

void appendUtf8(std::string& out, char32_t cp) {
  if (cp > kMaxCodePoint || isSurrogate(cp)) cp = kReplacementChar;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void appendUtf16(std::u16string& out, char32_t cp) {
  if (cp > kMaxCodePoint || isSurrogate(cp)) cp = kReplacementChar;
  if (cp < 0x10000) {
    out.push_back(static_cast<char16_t>(cp));
  } else {
    cp -= 0x10000;
    out.push_back(static_cast<char16_t>(0xD800 | (cp >> 10)));
    out.push_back(static_cast<char16_t>(0xDC00 | (cp & 0x3FF)));
  }
}

std::u32string decodeUtf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) out.push_back(decodeUtf8At(text, pos));
  return out;
}

std::u16string toUtf16(std::string_view utf8) {
  std::u16string out;
  out.reserve(utf8.size());
  size_t pos = 0;
  while (pos < utf8.size()) {
    const auto b = static_cast<uint8_t>(utf8[pos]);
    if (b < 0x80) {
      out.push_back(b);
      ++pos;
    } else {
      appendUtf16(out, decodeUtf8At(utf8, pos));
    }
  }
  return out;
}

std::string toUtf8(std::u16string_view utf16) {
  std::string out;
  out.reserve(utf16.size());
  for (size_t i = 0; i < utf16.size(); ++i) {
    const char16_t u = utf16[i];
    if (u < 0x80) {
      out.push_back(static_cast<char>(u));
    } else if (u >= 0xD800 && u <= 0xDBFF && i + 1 < utf16.size() && utf16[i + 1] >= 0xDC00 &&
               utf16[i + 1] <= 0xDFFF) {
      appendUtf8(out, 0x10000 + ((char32_t(u) - 0xD800) << 10) + (char32_t(utf16[i + 1]) - 0xDC00));
      ++i;
    } else {
      appendUtf8(out, u);  // a lone surrogate becomes U+FFFD inside appendUtf8
    }
  }
  return out;
}

size_t utf16Length(std::string_view utf8) {
  size_t units = 0;
  size_t pos = 0;
  while (pos < utf8.size()) {
    if (static_cast<uint8_t>(utf8[pos]) < 0x80) {
      ++units;
      ++pos;
    } else {
      units += unitsOf(decodeUtf8At(utf8, pos));
    }
  }
  return units;
}

size_t codePointCount(std::string_view utf8) {
  size_t count = 0;
  size_t pos = 0;
  while (pos < utf8.size()) {
    if (static_cast<uint8_t>(utf8[pos]) < 0x80) {
      ++pos;
    } else {
      decodeUtf8At(utf8, pos);
    }
    ++count;
  }
  return count;
}

std::string truncateUtf16(std::string_view text, size_t maxUnits) {
  const bool fits = utf16Length(text) <= maxUnits;
  const size_t keepUnits = fits ? maxUnits : (maxUnits >= 3 ? maxUnits - 3 : maxUnits);
  std::string out;
  out.reserve(text.size() < 4 * maxUnits ? text.size() : 4 * maxUnits);
  size_t units = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto b = static_cast<uint8_t>(text[pos]);
    if (b < 0x80) {
      if (units + 1 > keepUnits) break;
      out.push_back(static_cast<char>(b));
      ++units;
      ++pos;
      continue;
    }
    const char32_t cp = decodeUtf8At(text, pos);
    const size_t u = unitsOf(cp);
    if (units + u > keepUnits) break;  // an astral character straddling the cut is dropped whole
    appendUtf8(out, cp);
    units += u;
  }
  if (!fits && maxUnits >= 3) out += "...";
  return out;
}

}  // namespace memq
