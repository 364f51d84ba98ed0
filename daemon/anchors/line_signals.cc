// Line signals: overlap, nearness, newest-wins ownership, the owner's predecessor and oldest-unchanged origin; see
// line_signals.h.
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
                                            const std::vector<LineCandidate>& candidates, Ownership ownership) {
  std::vector<LineSignals> out(candidates.size());
  for (const QueryLines& q : query) {
    // Each candidate's anchors on this path, merged (a memory may name the same file twice). A candidate whose
    // anchor carrying emptied has nothing to be near, so no distance.
    struct OnPath {
      size_t candidate;
      LineRanges lines;
      LineRanges unchanged;
    };
    std::vector<OnPath> onPath;
    for (size_t c = 0; c < candidates.size(); ++c) {
      OnPath p{c, {}, {}};
      bool any = false;
      for (const CarriedAnchor& a : candidates[c].anchors) {
        if (a.path != q.path) continue;
        any = true;
        p.lines.insert(p.lines.end(), a.lines.begin(), a.lines.end());
        p.unchanged.insert(p.unchanged.end(), a.unchanged.begin(), a.unchanged.end());
      }
      if (!any) continue;
      p.lines = normalizeRanges(std::move(p.lines));
      p.unchanged = normalizeRanges(std::move(p.unchanged));
      onPath.push_back(std::move(p));
    }
    if (onPath.empty()) continue;
    // The query's lines are walked one by one only where anchors are: a line below every anchor is farther from each
    // than the query's lowest line at or above it, and covers none, so a range below them all counts its last line
    // only (above them all, its first), and a range across them is cut to their span. A query naming line 1 to
    // 4294967295 costs what the anchors' span costs.
    uint32_t lowest = UINT32_MAX, highest = 0;
    for (const OnPath& p : onPath) {
      if (p.lines.empty()) continue;
      lowest = std::min(lowest, p.lines.front().first);
      highest = std::max(highest, p.lines.back().last);
    }
    if (highest == 0) continue;  // every anchor on the path was emptied: nothing to overlap or be near
    auto newer = [&](size_t a, size_t b) { return candidates[a].anchoredAt >= candidates[b].anchoredAt; };
    for (const LineRange& asked : q.lines) {
      LineRange r = asked;
      if (r.last < lowest) {
        r.first = r.last;
      } else if (r.first > highest) {
        r.last = r.first;
      } else {
        r.first = std::max(r.first, lowest);
        r.last = std::min(r.last, highest);
      }
      for (uint32_t line = r.first; line <= r.last && line != 0; ++line) {
        std::optional<size_t> newest;           // newest covering anchor
        std::optional<size_t> secondNewest;     // newest covering anchor but `newest`
        std::optional<size_t> newestUnchanged;  // newest anchor holding the line unchanged
        std::optional<size_t> oldestUnchanged;  // oldest anchor holding the line unchanged
        for (const OnPath& p : onPath) {
          const std::optional<uint32_t> d = distanceToRanges(p.lines, line);
          if (!d) continue;
          LineSignals& s = out[p.candidate];
          if (!s.distance || *d < *s.distance) s.distance = d;
          if (*d != 0) continue;
          ++s.overlap;
          // onPath is in candidate order, so on equal times the later candidate wins.
          if (!newest || newer(p.candidate, *newest)) {
            secondNewest = newest;
            newest = p.candidate;
          } else if (!secondNewest || newer(p.candidate, *secondNewest)) {
            secondNewest = p.candidate;
          }
          if (containsLine(p.unchanged, line) && (!newestUnchanged || newer(p.candidate, *newestUnchanged))) {
            newestUnchanged = p.candidate;
          }
          if (containsLine(p.unchanged, line) && (!oldestUnchanged || !newer(p.candidate, *oldestUnchanged))) {
            oldestUnchanged = p.candidate;
          }
        }
        const std::optional<size_t> owner =
            ownership == Ownership::kNewestUnchangedFirst && newestUnchanged ? newestUnchanged : newest;
        if (owner) ++out[*owner].owned;
        // The newest covering anchor but the owner's: the memory whose writing the owner took the line over from.
        const std::optional<size_t> prior = owner == newest ? secondNewest : newest;
        if (prior) ++out[*prior].prior;
        if (oldestUnchanged) ++out[*oldestUnchanged].originated;
        if (line == UINT32_MAX) break;
      }
    }
  }
  return out;
}

}  // namespace memq
