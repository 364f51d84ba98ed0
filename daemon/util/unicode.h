// The few Unicode properties memq needs to behave like the JavaScript reference: letters/numbers (the tokenizer's
// /[\p{L}\p{N}]+/u), JavaScript's whitespace set (\s, String.prototype.trim), and String.prototype.toLowerCase.
//
// Tables are generated from Python's unicodedata (see gen_unicode_tables.py; the version is unicodeVersion()).
// JavaScript engines ship whatever ICU they were built with, so characters assigned or re-cased after that Unicode
// version may classify differently than in a given Bun build; everything assigned by Unicode 14 matches.
// Thread-safety: all functions are pure and may be called from any thread.
#pragma once

#include <string>
#include <string_view>

namespace memq {

// General category L* or N*.
bool isLetterOrNumber(char32_t cp);

// JavaScript's \s (and the set String.prototype.trim strips): TAB, LF, VT, FF, CR, SPACE, NBSP, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF.
bool isJsWhitespace(char32_t cp);

// Simple (one-to-one) lowercase mapping of one code point, without context; U+0130 maps to U+0069 here.
char32_t toLowerSimple(char32_t cp);

// String.prototype.toLowerCase (locale-independent): the full lowercase mapping, i.e. the simple mapping plus
// U+0130 -> "i\u0307" and the Final_Sigma rule (a capital sigma at the end of a word becomes U+03C2).
// Lone surrogates pass through unchanged, as in JavaScript.
std::u16string jsToLower(std::u16string_view text);
// The same on UTF-8 (ill-formed bytes become U+FFFD, see utf8.h).
std::string jsToLowerUtf8(std::string_view text);

// Each run of JavaScript whitespace becomes one ASCII space, and whitespace at both ends is removed: the reference's
// `s.replace(/\s+/g, " ").trim()`.
std::u16string jsCollapseWhitespace(std::u16string_view text);
std::string jsCollapseWhitespaceUtf8(std::string_view text);

// String.prototype.trim: strips JavaScript whitespace from both ends.
std::string_view jsTrim(std::string_view utf8);
std::u16string_view jsTrim(std::u16string_view text);

// The Unicode version the tables were generated from, e.g. "14.0.0".
std::string_view unicodeVersion();

}  // namespace memq
