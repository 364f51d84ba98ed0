// Line ranges: normalisation, validation and the command-line form; see line_ranges.h.
#include "daemon/anchors/line_ranges.h"

#include <git2.h>

#include <algorithm>

namespace memq {

LineRanges normalizeRanges(LineRanges ranges) {
  std::erase_if(ranges, [](const LineRange& r) { return r.first > r.last; });
  std::sort(ranges.begin(), ranges.end(), [](const LineRange& a, const LineRange& b) {
    return a.first < b.first || (a.first == b.first && a.last < b.last);
  });
  LineRanges out;
  for (const LineRange& r : ranges) {
    // Adjacent ranges merge too ([1,2] and [3,4] are lines 1..4): one representation per set of lines.
    if (!out.empty() && static_cast<uint64_t>(r.first) <= static_cast<uint64_t>(out.back().last) + 1) {
      out.back().last = std::max(out.back().last, r.last);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

uint64_t lineCount(const LineRanges& normalized) {
  uint64_t n = 0;
  for (const LineRange& r : normalized) n += r.size();
  return n;
}

bool containsLine(const LineRanges& normalized, uint32_t line) {
  auto it = std::upper_bound(normalized.begin(), normalized.end(), line,
                             [](uint32_t l, const LineRange& r) { return l < r.first; });
  return it != normalized.begin() && std::prev(it)->contains(line);
}

uint32_t countLines(std::string_view content) {
  if (content.empty()) return 0;
  const auto newlines = static_cast<uint32_t>(std::count(content.begin(), content.end(), '\n'));
  return content.back() == '\n' ? newlines : newlines + 1;
}

bool isBinaryContent(std::string_view content) {
  // libgit2's own rule, so a version this accepts is one its line diff treats as text.
  return git_blob_data_is_binary(content.data(), content.size()) != 0;
}

Status validateLineNumbers(const LineRanges& ranges, const std::string& field, std::optional<uint32_t> fileLines) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    const LineRange& r = ranges[i];
    const std::string element = field + "[" + std::to_string(i) + "]";
    if (r.first == 0 || r.last == 0) {
      return Status::invalidField(element, element + ": line 0 does not exist; lines are numbered from 1");
    }
    if (r.first > r.last) {
      return Status::invalidField(element, element + ": first line " + std::to_string(r.first) +
                                               " is after last line " + std::to_string(r.last));
    }
    if (fileLines && r.last > *fileLines) {
      return Status::invalidField(element, element + ": line " + std::to_string(r.last) +
                                               " is past the end of the file, which has " +
                                               std::to_string(*fileLines) + " lines");
    }
  }
  return Status::ok();
}

Status validateRanges(const LineRanges& ranges, const std::string& field, std::optional<uint32_t> fileLines) {
  if (ranges.empty()) return Status::invalidField(field, field + ": no lines given; name at least one line");
  MEMQ_RETURN_IF_ERROR(validateLineNumbers(ranges, field, fileLines));
  const size_t merged = normalizeRanges(ranges).size();
  if (merged > kMaxAnchorRanges) {
    return Status::invalidField(field, field + ": " + std::to_string(merged) + " separate ranges; at most " +
                                           std::to_string(kMaxAnchorRanges) + " are kept per file");
  }
  return Status::ok();
}

Status validateRangesInContent(const LineRanges& ranges, std::string_view content, const std::string& field) {
  const bool binary = isBinaryContent(content);
  return validateRangesInFile(ranges, binary, binary ? 0 : countLines(content), field);
}

Status validateRangesInFile(const LineRanges& ranges, bool binary, uint32_t lineCount, const std::string& field) {
  if (binary) return Status::invalidField(field, field + ": the file is binary; only text files have lines to anchor");
  return validateRanges(ranges, field, lineCount);
}

Result<PathLines> parsePathLines(std::string_view text, const std::string& field) {
  PathLines out;
  const size_t colon = text.rfind(':');
  std::optional<LineRanges> ranges;
  if (colon != std::string_view::npos) ranges = parseRangeList(text.substr(colon + 1));
  if (ranges) {
    out.path = std::string(text.substr(0, colon));
    MEMQ_RETURN_IF_ERROR(validateRanges(*ranges, field + ".lines"));
    out.lines = normalizeRanges(std::move(*ranges));
  } else {
    out.path = std::string(text);
  }
  if (out.path.empty()) return Status::invalidField(field, field + ": no path before the line list");
  return out;
}

}  // namespace memq
