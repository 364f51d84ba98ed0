// Co-change tallies; see cochange_counts.h.
#include "daemon/git/cochange_counts.h"

namespace memq {

uint32_t CoChangeCounts::idFor(const std::string& path) {
  auto [it, inserted] = ids_.try_emplace(path, static_cast<uint32_t>(paths_.size()));
  if (inserted) {
    paths_.push_back(path);
    changes_.push_back(0);
  }
  return it->second;
}

void CoChangeCounts::apply(const std::vector<std::string>& files, int delta) {
  std::vector<uint32_t> ids;
  ids.reserve(files.size());
  for (const std::string& f : files) {
    const uint32_t id = idFor(f);
    changes_[id] += delta;
    dirtyFiles_.insert(id);
    ids.push_back(id);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t j = i + 1; j < ids.size(); ++j) {
      const uint64_t key = pairKey(ids[i], ids[j]);
      int& count = pairs_[key];
      count += delta;
      if (count <= 0) pairs_.erase(key);
      dirtyPairs_.insert(key);
    }
  }
}

void CoChangeCounts::setFile(uint32_t id, const std::string& path, int changes) {
  if (id >= paths_.size()) {
    paths_.resize(id + 1);
    changes_.resize(id + 1, 0);
  }
  paths_[id] = path;
  changes_[id] = changes;
  ids_[path] = id;
}

void CoChangeCounts::setPair(uint32_t a, uint32_t b, int count) {
  if (count > 0) pairs_[pairKey(a, b)] = count;
}

int CoChangeCounts::pairCount(const std::string& a, const std::string& b) const {
  auto ia = ids_.find(a);
  auto ib = ids_.find(b);
  if (ia == ids_.end() || ib == ids_.end()) return 0;
  auto it = pairs_.find(pairKey(ia->second, ib->second));
  return it == pairs_.end() ? 0 : it->second;
}

void CoChangeCounts::clear() {
  paths_.clear();
  changes_.clear();
  ids_.clear();
  pairs_.clear();
  window.clear();
  head.clear();
  clearDirty();
}

void CoChangeCounts::clearDirty() {
  dirtyFiles_.clear();
  dirtyPairs_.clear();
}

}  // namespace memq
