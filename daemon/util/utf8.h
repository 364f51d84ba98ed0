// UTF-8 handling for memq: validation, decoding to code points, UTF-8 <-> UTF-16 conversion, and the reference's
// UTF-16-unit length and truncation rules. The reference is a JavaScript program, so every length it enforces is in
// UTF-16 code units; these helpers let C++ code reproduce those lengths without materialising UTF-16 strings.
//
// Invalid input: memq validates UTF-8 at the protocol edge, but nothing here trusts that. Every function treats each
// maximal ill-formed subsequence (Unicode 15 §3.9, "U+FFFD substitution of maximal subparts", the WHATWG
// TextDecoder behaviour) as one U+FFFD, so lengths and conversions agree with one another on any byte string.
// Thread-safety: all functions are pure and may be called from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memq {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool isValidUtf8(std::string_view text);

// Decodes the code point starting at byte `pos` and advances `pos` past it. On ill-formed input it yields U+FFFD and
// advances past the maximal subpart. REQUIRES: pos < text.size().
char32_t decodeUtf8At(std::string_view text, size_t& pos);

// Appends the UTF-8 encoding of `cp`; surrogates and values above U+10FFFF are written as U+FFFD.
void appendUtf8(std::string& out, char32_t cp);

// Appends `cp` as one or two UTF-16 code units (U+FFFD for values that are not scalar values).
void appendUtf16(std::u16string& out, char32_t cp);

// All code points of `text` (ill-formed parts as U+FFFD).
std::u32string decodeUtf8(std::string_view text);

std::u16string toUtf16(std::string_view utf8);
// Lone surrogates become U+FFFD, as JavaScript's TextEncoder (and Bun's SQLite binding) do.
std::string toUtf8(std::u16string_view utf16);

// Length in UTF-16 code units (JavaScript's String.length) of the UTF-8 text.
size_t utf16Length(std::string_view utf8);
size_t codePointCount(std::string_view utf8);

// The reference's truncation (tool:238-241): text longer than `maxUnits` UTF-16 units becomes its first
// maxUnits - 3 units followed by "...". Text that fits is returned unchanged (ill-formed bytes still become U+FFFD).
//
// Deliberate difference: JavaScript's slice can cut a surrogate pair in half, and the lone high surrogate would then
// be stored as U+FFFD. We never split a pair: when the cut falls inside one, the whole astral character is dropped,
// so the result has maxUnits - 1 units and contains no replacement character the user never typed.
// For maxUnits < 3 there is no room for the ellipsis; the result is then the first maxUnits units (pairs not split).
std::string truncateUtf16(std::string_view text, size_t maxUnits);

}  // namespace memq
