// The lines a tab recently read and edited; see working_set.h.
#include "daemon/service/working_set.h"

#include <algorithm>

#include "daemon/anchors/line_ranges.h"

namespace memq {

namespace {

// `events` (newest first) cut to what merged() uses, so that what is kept never outgrows what is read.
void trim(std::deque<LineRanges>& events) {
  LineRanges acc;
  for (size_t i = 0; i < events.size(); ++i) {
    LineRanges next = acc;
    next.insert(next.end(), events[i].begin(), events[i].end());
    next = normalizeRanges(std::move(next));
    if (i >= WorkingSet::kMaxEvents || (i > 0 && next.size() > WorkingSet::kMaxRanges)) {
      events.resize(i);
      return;
    }
    acc = std::move(next);
  }
}

}  // namespace

LineRanges WorkingSet::merged(const std::deque<LineRanges>& events) {
  LineRanges acc;
  for (const auto& e : events) acc.insert(acc.end(), e.begin(), e.end());
  return normalizeRanges(std::move(acc));
}

const WorkingSet::File* WorkingSet::find(const std::string& root, const std::string& path) const {
  auto it = std::find_if(files_.begin(), files_.end(),
                         [&](const File& f) { return f.root == root && f.path == path; });
  return it == files_.end() ? nullptr : &*it;
}

void WorkingSet::note(const std::string& root, const std::string& path, Kind kind, const LineRanges& lines) {
  LineRanges event = normalizeRanges(lines);
  if (event.empty()) return;
  // One event of more ranges than a query holds keeps its first ones (the hook never sends more).
  if (event.size() > kMaxRanges) event.resize(kMaxRanges);
  MutexLock lock(mutex_);
  File file;
  auto it = std::find_if(files_.begin(), files_.end(),
                         [&](const File& f) { return f.root == root && f.path == path; });
  if (it != files_.end()) {
    file = std::move(*it);
    files_.erase(it);
  } else {
    file.root = root;
    file.path = path;
  }
  auto& events = kind == Kind::kEdited ? file.edited : file.read;
  events.push_front(std::move(event));
  trim(events);
  if (kind == Kind::kEdited) file.editedAt = ++clock_;
  files_.push_front(std::move(file));
  if (files_.size() > kMaxFiles) files_.pop_back();
}

LineRanges WorkingSet::linesFor(const std::string& root, const std::string& path) const {
  MutexLock lock(mutex_);
  const File* f = find(root, path);
  if (f == nullptr) return {};
  return merged(f->edited.empty() ? f->read : f->edited);
}

LineRanges WorkingSet::editedLines(const std::string& root, const std::string& path) const {
  MutexLock lock(mutex_);
  const File* f = find(root, path);
  return f == nullptr ? LineRanges{} : merged(f->edited);
}

std::optional<PathLines> WorkingSet::lastEdited(const std::string& root) const {
  MutexLock lock(mutex_);
  const File* last = nullptr;
  for (const auto& f : files_) {
    if (f.root == root && f.editedAt > 0 && (last == nullptr || f.editedAt > last->editedAt)) last = &f;
  }
  if (last == nullptr) return std::nullopt;
  return PathLines{last->path, merged(last->edited)};
}

std::vector<std::string> WorkingSet::paths(const std::string& root) const {
  MutexLock lock(mutex_);
  std::vector<std::string> out;
  for (const auto& f : files_) {
    if (f.root == root) out.push_back(f.path);
  }
  return out;
}

}  // namespace memq
