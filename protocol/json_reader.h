// A fast reader for the JSON memqd and its clients exchange: text to nlohmann::json without nlohmann's lexer, which
// copies every character one at a time into a token buffer (about 45 µs for a 6.6 KB recall reply). Strings are
// appended in runs, objects filled in order.
//
// It accepts only what nlohmann::json::parse accepts and builds the same value (same types: a non-negative integer
// is number_unsigned, a negative one number_integer, anything with a fraction or exponent number_float; the last of
// duplicate keys wins). Whatever it is not sure of — any syntax error, a byte-order mark, an integer out of 64-bit
// range, a number it cannot convert exactly — it declines, and the caller parses with nlohmann, whose error message
// is the one reported. parseJson (envelope.h) is its caller.
// Thread-safety: a pure function.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace memq {

// True with `out` set when `text` is one JSON value (surrounding whitespace allowed) nested at most maxDepth deep;
// false, with `out` unspecified, when the text must go to nlohmann's parser instead.
bool readJsonFast(std::string_view text, int maxDepth, nlohmann::json& out);

}  // namespace memq
