// Lines of a file version as plain data: LineRange, a set of them (LineRanges), and their text form `40-60,72`,
// which the command line, the store and the export write. The rules about ranges (normalisation, validation against
// a file) are daemon/anchors/line_ranges.h's; this header is what every layer may hold without depending on them.
// Pure; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memq {

// Lines `first`..`last` of one file version, 1-based and inclusive.
struct LineRange {
  uint32_t first = 0;
  uint32_t last = 0;

  uint32_t size() const { return last - first + 1; }
  bool contains(uint32_t line) const { return first <= line && line <= last; }
  friend bool operator==(const LineRange&, const LineRange&) = default;
};

// A set of lines as ranges. Normalised means sorted by `first`, with overlapping and adjacent ranges merged, so two
// equal sets have one representation and every line appears once.
using LineRanges = std::vector<LineRange>;

// A path and, optionally, lines of it: the command-line form `path:40-60,72`, or a query's anchored file.
struct PathLines {
  std::string path;
  LineRanges lines;  // empty: the whole file
};

// The text form of `lines` ("40-60,72"); empty for no lines.
std::string formatRanges(const LineRanges& lines);

// Reads the text form back: comma-separated items, each a line number or `a-b`. nullopt when `text` is not of that
// shape (empty, a stray character, an empty item). The ranges come as written: neither validated nor normalised,
// and a number too large for 32 bits reads as line 0, which validation refuses.
std::optional<LineRanges> parseRangeList(std::string_view text);

}  // namespace memq
