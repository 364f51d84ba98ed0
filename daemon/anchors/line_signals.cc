// Line signals: overlap, nearness and newest-wins ownership; see line_signals.h.
#include "daemon/anchors/line_signals.h"

#include <algorithm>

namespace memq {

std::optional<uint32_t> distanceToRanges(const LineRanges& normalized, uint32_t line) {
  if (normalized.empty()) return std::nullopt;
  auto it = std::upper_bound(normalized.begin(), normalized.end(), line,
                             [](uint32_t l, const LineRange& r) { return l < r.first; });
  uint32_t best = UINT32_MAX;
  if (it != normalized.end()) best = it->first - line;  // the next range starts below `line`
  if (it != normalized.begin()) {
    const LineRange& before = *std::prev(it);
    best = std::min(best, before.contains(line) ? 0u : line - before.last);
  }
  return best;
}

std::vector<LineSignals> computeLineSignals(const std::vector<QueryLines>& query,
                                            const std::vector<LineCandidate>& candidates) {
  std::vector<LineSignals> out(candidates.size());
  for (const QueryLines& q : query) {
    // Each candidate's anchors on this path, merged (a memory may name the same file twice).
    std::vector<std::pair<size_t, LineRanges>> onPath;
    for (size_t c = 0; c < candidates.size(); ++c) {
      LineRanges merged;
      bool any = false;
      for (const CarriedAnchor& a : candidates[c].anchors) {
        if (a.path != q.path) continue;
        any = true;
        merged.insert(merged.end(), a.lines.begin(), a.lines.end());
      }
      if (any) onPath.emplace_back(c, normalizeRanges(std::move(merged)));
    }
    for (const LineRange& r : q.lines) {
      for (uint32_t line = r.first; line <= r.last && line != 0; ++line) {
        std::optional<size_t> owner;
        for (const auto& [c, lines] : onPath) {
          const std::optional<uint32_t> d = distanceToRanges(lines, line);
          if (!d) continue;
          LineSignals& s = out[c];
          if (!s.distance || *d < *s.distance) s.distance = d;
          if (*d != 0) continue;
          ++s.overlap;
          if (!owner || candidates[c].anchoredAt >= candidates[*owner].anchoredAt) owner = c;
        }
        if (owner) ++out[*owner].owned;
        if (line == UINT32_MAX) break;
      }
    }
    // A candidate with an anchor on the path but emptied by carrying still has no distance: nothing to be near.
  }
  return out;
}

}  // namespace memq
