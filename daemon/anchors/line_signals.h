// Line signals for recall: how a candidate memory's anchors, carried to the version of each file the query is in,
// meet the query's lines: overlap (query lines covered), nearness (distance to the nearest anchored line when
// nothing overlaps), ownership (query lines whose newest covering anchor is this memory's, as blame assigns a
// line to the last change that wrote it), the owner's predecessor and origin. Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/anchors/line_ranges.h"

namespace memq {

// The lines a query is about in one file, in the version of the file the query is in.
struct QueryLines {
  std::string path;
  LineRanges lines;  // normalised
};

// One memory's anchored lines in one file, already carried to the query's version of that file.
struct CarriedAnchor {
  std::string path;
  LineRanges lines;      // normalised
  LineRanges unchanged;  // the part of `lines` carried unchanged (CarriedLines::unchanged); all of it when fresh
};

// Which anchor owns a query line that several cover.
enum class Ownership {
  // The newest covering anchor, whatever carrying made of it.
  kNewest,
  // The newest anchor that holds the line unchanged; only when none does, the newest whose rewritten hunk covers
  // it. An anchor that still has the very line is better evidence than one whose lines were replaced by it.
  kNewestUnchangedFirst,
};

struct LineCandidate {
  // When the anchors were written (e.g. the memory's creation time, any monotonic unit): the newest anchor covering
  // a line owns it. Equal times: the candidate later in the list owns it, so a list in history order breaks ties
  // the way history does.
  int64_t anchoredAt = 0;
  std::vector<CarriedAnchor> anchors;
};

struct LineSignals {
  uint32_t overlap = 0;  // query lines inside one of the candidate's anchors, over all paths
  uint32_t owned = 0;    // of those, lines this candidate owns (Ownership)
  // Of those, lines whose newest covering anchor other than their owner's is this candidate's: what the owner took
  // the line over from, blame's step back past the last change. The last change to a line is often a cleanup, a
  // rename or a reformat over the change that made it what it is.
  uint32_t prior = 0;
  // Of those, lines whose oldest anchor holding them unchanged is this candidate's: the memory that wrote the line
  // first as far as the anchors know (where the line came from), as against the one that touched it last.
  uint32_t originated = 0;
  // Lines between a query line and the nearest anchored line of the same path, over all paths; 0 when they
  // overlap, unset when the candidate has no anchor on any query path.
  std::optional<uint32_t> distance;
};

// The signals of every candidate (same order as `candidates`) against the query's lines.
std::vector<LineSignals> computeLineSignals(const std::vector<QueryLines>& query,
                                            const std::vector<LineCandidate>& candidates,
                                            Ownership ownership = Ownership::kNewestUnchangedFirst);

// Lines from `line` to the nearest line of `normalized` (0 inside it); unset for an empty set.
std::optional<uint32_t> distanceToRanges(const LineRanges& normalized, uint32_t line);

}  // namespace memq
