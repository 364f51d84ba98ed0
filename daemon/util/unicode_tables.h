// Declarations of the generated Unicode tables (defined in unicode_tables.cc, written by gen_unicode_tables.py).
// Internal to daemon/util/unicode.cc; other code uses the functions of unicode.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memq::unicode_tables {

// Inclusive code point range; arrays of these are sorted and non-overlapping, for binary search.
struct CodePointRange {
  char32_t first;
  char32_t last;
};

// Code points first, first + stride, ..., first + (count - 1) * stride each lowercase to themselves plus delta.
// Strides of 2 capture the alternating upper/lower layout of Latin Extended, Cyrillic and friends.
struct LowerRun {
  char32_t first;
  uint16_t count;
  int32_t delta;
  uint8_t stride;
};

extern const char kUnicodeVersion[];
extern const CodePointRange kLetterOrNumber[];
extern const size_t kLetterOrNumberSize;
extern const CodePointRange kCased[];
extern const size_t kCasedSize;
extern const CodePointRange kCaseIgnorable[];
extern const size_t kCaseIgnorableSize;
extern const LowerRun kLowerRuns[];
extern const size_t kLowerRunsSize;

}  // namespace memq::unicode_tables
