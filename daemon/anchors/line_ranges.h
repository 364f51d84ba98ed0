// Line ranges of a file version (the LineRange type and the text form `40-60,72` are daemon/model/line_range.h's):
// the normalised form of a set of ranges, the validation of an anchor's ranges against the content of its file, and
// the parse of the command-line form `path:40-60,72`.
// Pure functions, no state; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/line_range.h"
#include "protocol/status.h"

namespace memq {

// An anchor holds at most this many ranges (after normalisation): enough for a change spread over a file, small
// enough that recall over many anchors stays cheap.
inline constexpr size_t kMaxAnchorRanges = 64;

// Sorted, overlapping and adjacent ranges merged. Ranges with first > last are kept out (validate first to refuse
// them with a message).
LineRanges normalizeRanges(LineRanges ranges);

// Number of lines in the set.
uint64_t lineCount(const LineRanges& normalized);

// Whether `line` is in the normalised set (binary search).
bool containsLine(const LineRanges& normalized, uint32_t line);

// Number of lines of `content` as a line diff counts them: a last line without its newline still counts.
uint32_t countLines(std::string_view content);

// Whether `content` is binary by git's rule (a NUL byte, or too many non-text bytes, in its first 8000 bytes):
// such a file has no lines to anchor.
bool isBinaryContent(std::string_view content);

// Refuses, naming `field` (e.g. "anchors[0].lines"), a set that has a line 0, a range whose first line is after its
// last, more than kMaxAnchorRanges ranges once normalised, no range at all, or (when `fileLines` is given) a line past
// the end of the file. Element errors name the element: "anchors[0].lines[2]".
Status validateRanges(const LineRanges& ranges, const std::string& field,
                      std::optional<uint32_t> fileLines = std::nullopt);

// The per-element part of validateRanges: no line 0, no range backwards, nothing past `fileLines` when given. An
// empty set passes.
Status validateLineNumbers(const LineRanges& ranges, const std::string& field,
                           std::optional<uint32_t> fileLines = std::nullopt);

// validateRanges against the content of the file version the ranges are in; binary content is refused.
Status validateRangesInContent(const LineRanges& ranges, std::string_view content, const std::string& field);
// validateRangesInContent for a file already counted: `binary` (isBinaryContent) and its `lineCount` (countLines).
Status validateRangesInFile(const LineRanges& ranges, bool binary, uint32_t lineCount, const std::string& field);

// Parses `path:40-60,72` into the path and its normalised, validated ranges. Without a `:suffix` that reads as a
// range list (digits, `a-b`, commas), the whole text is the path, so a path that contains ':' (`a:b.c`, `x:1y`) is a
// plain file. A suffix that reads as a range list but is not a valid one (`f.c:0`, `f.c:9-3`) is refused rather than
// taken as part of the path. Errors name `field`.
Result<PathLines> parsePathLines(std::string_view text, const std::string& field);

}  // namespace memq
