// What the JSON reader and writer share about a string's bytes: the one definition of a well-formed UTF-8 sequence
// (Unicode Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), which is also what nlohmann's
// parser accepts and what its dump replaces when it is broken, and the plain bytes that a JSON string holds as they
// are (printable ASCII but the quote and the backslash).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace memq {

inline bool plainJsonByte(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

// The end of the run of plain bytes that starts at text[i] (i itself when text[i] is not plain). Eight bytes are
// tested at once, as most of a record's text is such runs: each term below is the exact "some byte of the word is
// below n" test (zero after the xor, for the quote and the backslash).
inline std::size_t plainJsonRunEnd(std::string_view text, std::size_t i) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  while (i + 8 <= text.size()) {
    std::uint64_t w;
    std::memcpy(&w, text.data() + i, sizeof w);
    const std::uint64_t quote = w ^ (kOnes * '"');
    const std::uint64_t backslash = w ^ (kOnes * '\\');
    const std::uint64_t special =
        ((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | w;
    if ((special & kHigh) != 0) break;
    i += 8;
  }
  while (i < text.size() && plainJsonByte(static_cast<unsigned char>(text[i]))) ++i;
  return i;
}

// The length of the well-formed sequence that starts at text[i] (a byte >= 0x80), or 0 when it is ill-formed; then
// `bad` is the index of the first byte that makes it so (text.size() when the text ends inside the sequence).
inline std::size_t wellFormedUtf8Length(std::string_view text, std::size_t i, std::size_t& bad) {
  const auto lead = static_cast<unsigned char>(text[i]);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte; later bytes are always 80..BF
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    bad = i;
    return 0;
  }
  for (std::size_t k = 1; k < length; ++k) {
    if (i + k >= text.size()) {
      bad = text.size();
      return 0;
    }
    const auto c = static_cast<unsigned char>(text[i + k]);
    if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF)) {
      bad = i + k;
      return 0;
    }
  }
  return length;
}

}  // namespace memq
