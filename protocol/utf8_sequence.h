// The one definition of a well-formed UTF-8 sequence the JSON reader and writer share (Unicode Table 3-7: no
// overlong forms, no surrogates, nothing above U+10FFFF), which is also what nlohmann's parser accepts and what its
// dump replaces when it is broken.
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <string_view>

namespace memq {

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
