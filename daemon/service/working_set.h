// WorkingSet: the lines one tab (an agent session, TabHints) has recently read and edited, per project file, as its
// hook reports them with hints/for_tool (docs/agents.md, "The working set"). Recall and hints fill a queried file
// without lines from it, and a save without anchors is anchored to the lines the tab edited last.
// Bounded: the kMaxFiles files touched last (newest first; the least recently touched is dropped), and per file and
// kind (read, edited) the lines of its last kMaxEvents events, merged into at most kMaxRanges ranges (older events
// go first when more would not fit). Lines are kept as the hook saw them: memqd does not carry them through later
// edits of the file.
// Thread-safety: thread-safe (one mutex); connections sharing a tab may use it at the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/line_range.h"
#include "daemon/util/thread_annotations.h"

namespace memq {

class WorkingSet {
 public:
  static constexpr size_t kMaxFiles = 32;
  static constexpr size_t kMaxEvents = 16;
  static constexpr size_t kMaxRanges = 64;  // what one anchor or query may hold (validateRanges)

  enum class Kind { kRead, kEdited };

  // Records that lines `lines` of `path` (relative to the project at `root`) were read or edited now. Empty
  // `lines` records nothing: an event without lines says nothing about where the agent works.
  void note(const std::string& root, const std::string& path, Kind kind, const LineRanges& lines);

  // The lines of `path` a query should use: the edited lines when the tab edited any, else the read ones; empty
  // when the tab has neither.
  LineRanges linesFor(const std::string& root, const std::string& path) const;
  // The edited lines of `path`, normalised; empty when none.
  LineRanges editedLines(const std::string& root, const std::string& path) const;
  // The file of `root` edited last, with its edited lines; nullopt when the tab edited nothing there.
  std::optional<PathLines> lastEdited(const std::string& root) const;
  // The files the tab holds, newest first (tests and diagnostics).
  std::vector<std::string> paths(const std::string& root) const;

 private:
  struct File {
    std::string root;
    std::string path;
    std::deque<LineRanges> read;    // newest first
    std::deque<LineRanges> edited;  // newest first
    uint64_t editedAt = 0;          // the clock of its last edit (0: never edited)
  };
  const File* find(const std::string& root, const std::string& path) const REQUIRES(mutex_);
  static LineRanges merged(const std::deque<LineRanges>& events);

  mutable Mutex mutex_;
  std::deque<File> files_ GUARDED_BY(mutex_);  // most recently touched first
  uint64_t clock_ GUARDED_BY(mutex_) = 0;
};

}  // namespace memq
