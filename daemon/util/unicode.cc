// Unicode property lookups and JavaScript-compatible lowercasing over the generated tables (unicode_tables.cc).
#include "daemon/util/unicode.h"

#include <algorithm>
#include <cstdint>

#include "daemon/util/unicode_tables.h"
#include "daemon/util/utf8.h"

namespace memq {

namespace {

using unicode_tables::CodePointRange;
using unicode_tables::LowerRun;

constexpr char32_t kCapitalSigma = 0x03A3;
constexpr char32_t kSmallSigma = 0x03C3;
constexpr char32_t kFinalSigma = 0x03C2;
constexpr char32_t kCapitalIWithDot = 0x0130;
constexpr char16_t kCombiningDotAbove = 0x0307;

bool inRanges(const CodePointRange* ranges, size_t size, char32_t cp) {
  const CodePointRange* end = ranges + size;
  // First range whose last >= cp; the ranges are sorted and disjoint.
  const CodePointRange* it =
      std::lower_bound(ranges, end, cp, [](const CodePointRange& r, char32_t c) { return r.last < c; });
  return it != end && it->first <= cp;
}

bool isCased(char32_t cp) {
  return inRanges(unicode_tables::kCased, unicode_tables::kCasedSize, cp);
}

bool isCaseIgnorable(char32_t cp) {
  return inRanges(unicode_tables::kCaseIgnorable, unicode_tables::kCaseIgnorableSize, cp);
}

bool isHighSurrogate(char16_t u) { return u >= 0xD800 && u <= 0xDBFF; }
bool isLowSurrogate(char16_t u) { return u >= 0xDC00 && u <= 0xDFFF; }

// Code point starting at `i`, and its length in units (a lone surrogate is returned as itself).
char32_t codePointAt(std::u16string_view s, size_t i, size_t& len) {
  const char16_t u = s[i];
  if (isHighSurrogate(u) && i + 1 < s.size() && isLowSurrogate(s[i + 1])) {
    len = 2;
    return 0x10000 + ((char32_t(u) - 0xD800) << 10) + (char32_t(s[i + 1]) - 0xDC00);
  }
  len = 1;
  return u;
}

// Code point ending just before `end` (end > 0); sets `start` to where it begins.
char32_t codePointBefore(std::u16string_view s, size_t end, size_t& start) {
  const char16_t u = s[end - 1];
  if (isLowSurrogate(u) && end >= 2 && isHighSurrogate(s[end - 2])) {
    start = end - 2;
    return 0x10000 + ((char32_t(s[end - 2]) - 0xD800) << 10) + (char32_t(u) - 0xDC00);
  }
  start = end - 1;
  return u;
}

// Unicode 3.13 Final_Sigma: preceded by a cased letter (skipping case-ignorables) and not followed by one.
// Skipping ignorables before testing cased-ness matches ICU (which Bun's toLowerCase uses) for characters that are
// both, such as modifier letters.
bool isFinalSigma(std::u16string_view s, size_t sigmaIndex) {
  bool precededByCased = false;
  size_t pos = sigmaIndex;
  while (pos > 0) {
    size_t start = 0;
    const char32_t cp = codePointBefore(s, pos, start);
    pos = start;
    if (isCaseIgnorable(cp)) continue;
    precededByCased = isCased(cp);
    break;
  }
  if (!precededByCased) return false;
  pos = sigmaIndex + 1;
  while (pos < s.size()) {
    size_t len = 0;
    const char32_t cp = codePointAt(s, pos, len);
    pos += len;
    if (isCaseIgnorable(cp)) continue;
    return !isCased(cp);
  }
  return true;
}

}  // namespace

bool isLetterOrNumber(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  }
  return inRanges(unicode_tables::kLetterOrNumber, unicode_tables::kLetterOrNumberSize, cp);
}

bool isJsWhitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x00A0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

char32_t toLowerSimple(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  // The only character whose full mapping is longer (U+0130 -> "i\u0307") is left out of the generated runs.
  if (cp == kCapitalIWithDot) return U'i';
  const LowerRun* begin = unicode_tables::kLowerRuns;
  const LowerRun* end = begin + unicode_tables::kLowerRunsSize;
  // Last run starting at or before cp; runs never interleave (the generator checks), so only it can contain cp.
  const LowerRun* it = std::upper_bound(begin, end, cp, [](char32_t c, const LowerRun& r) { return c < r.first; });
  if (it == begin) return cp;
  --it;
  const char32_t offset = cp - it->first;
  if (offset % it->stride != 0 || offset / it->stride >= it->count) return cp;
  return static_cast<char32_t>(static_cast<int64_t>(cp) + it->delta);
}

std::u16string jsToLower(std::u16string_view text) {
  std::u16string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char16_t u = text[i];
    if (u < 0x80) {
      out.push_back((u >= 'A' && u <= 'Z') ? char16_t(u + 32) : u);
      ++i;
      continue;
    }
    size_t len = 0;
    const char32_t cp = codePointAt(text, i, len);
    if (cp == kCapitalIWithDot) {
      out.push_back(u'i');
      out.push_back(kCombiningDotAbove);
    } else if (cp == kCapitalSigma) {
      out.push_back(static_cast<char16_t>(isFinalSigma(text, i) ? kFinalSigma : kSmallSigma));
    } else if (len == 1 && (isHighSurrogate(u) || isLowSurrogate(u))) {
      out.push_back(u);  // lone surrogate: JavaScript keeps it as is
    } else {
      appendUtf16(out, toLowerSimple(cp));
    }
    i += len;
  }
  return out;
}

std::string jsToLowerUtf8(std::string_view text) {
  const bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    std::string out(text);
    for (char& c : out) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    }
    return out;
  }
  // Final_Sigma needs context in both directions, which UTF-16 gives cheaply; summaries are short.
  return toUtf8(jsToLower(toUtf16(text)));
}

std::u16string jsCollapseWhitespace(std::u16string_view text) {
  std::u16string out;
  out.reserve(text.size());
  bool pendingSpace = false;
  // Every JavaScript whitespace character is in the BMP, so testing single code units is exact.
  for (const char16_t u : text) {
    if (isJsWhitespace(u)) {
      pendingSpace = !out.empty();
      continue;
    }
    if (pendingSpace) {
      out.push_back(u' ');
      pendingSpace = false;
    }
    out.push_back(u);
  }
  return out;
}

std::string jsCollapseWhitespaceUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pendingSpace = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const auto b = static_cast<unsigned char>(text[pos]);
    const char32_t cp = b < 0x80 ? (++pos, char32_t(b)) : decodeUtf8At(text, pos);
    if (isJsWhitespace(cp)) {
      pendingSpace = !out.empty();
      continue;
    }
    if (pendingSpace) {
      out.push_back(' ');
      pendingSpace = false;
    }
    if (cp == kReplacementChar) {
      appendUtf8(out, cp);  // keeps the output well-formed when the input was not
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  return out;
}

std::string_view jsTrim(std::string_view utf8) {
  size_t begin = 0;
  while (begin < utf8.size()) {
    size_t pos = begin;
    if (!isJsWhitespace(decodeUtf8At(utf8, pos))) break;
    begin = pos;
  }
  size_t end = utf8.size();
  while (end > begin) {
    // Step back to the start of the last code point: skip continuation bytes (at most three).
    size_t start = end - 1;
    while (start > begin && end - start < 4 && (static_cast<unsigned char>(utf8[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    const char32_t cp = decodeUtf8At(utf8, pos);
    if (pos != end || !isJsWhitespace(cp)) break;
    end = start;
  }
  return utf8.substr(begin, end - begin);
}

std::u16string_view jsTrim(std::u16string_view text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && isJsWhitespace(text[begin])) ++begin;
  while (end > begin && isJsWhitespace(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

std::string_view unicodeVersion() { return unicode_tables::kUnicodeVersion; }

}  // namespace memq
