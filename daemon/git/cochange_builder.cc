// History walking and per-commit diffs for the co-change graph; see cochange_builder.h.
#include "daemon/git/cochange_builder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <queue>
#include <unordered_map>

#include "daemon/git/libgit2.h"

namespace memq {

std::string CoChangeOptions::fingerprint() const {
  PathFilter filter(ignoreGlobs);
  return "window=" + std::to_string(window) + ";max_files=" + std::to_string(maxFilesPerCommit) +
         ";globs=" + filter.fingerprint();
}

CoChangeBuilder::CoChangeBuilder(git_repository* repo, const CoChangeOptions& options)
    : repo_(repo), options_(options), filter_(options.ignoreGlobs) {}

namespace {

// A commit-date-ordered history walk that tolerates missing objects: libgit2 1.5's revwalk fails outright in a
// shallow clone (it parses the parents of the boundary commit, which are not there), so this walk treats a
// missing parent as the end of that line of history. With a `hide` commit it returns the commits reachable from
// head but not from hide, painting hide's ancestry "uninteresting" like git's own limited walk, and reports
// whether hide was reached (head descends from it).
class HistoryWalk {
 public:
  explicit HistoryWalk(git_repository* repo) : repo_(repo) {}

  // Non-merge commits, newest first. Without hide: at most `limit`. With hide: sawAll = false (and the list is
  // incomplete) when there are more than `limit`.
  void run(const git_oid& head, const git_oid* hide, size_t limit, std::vector<git_oid>& out, bool& sawAll,
           bool& reachedHide) {
    out.clear();
    sawAll = true;
    reachedHide = false;
    if (hide != nullptr) hideKey_ = key(*hide);
    enqueue(head, false);
    if (hide != nullptr) enqueue(*hide, true);
    std::vector<const git_oid*> candidates;
    // With hide, the walk also pops hide's own ancestry until it meets head's: when head is an ancestor of hide
    // (HEAD moved back: a checkout of an old tag, a bisect step) that is every commit between them, however many,
    // and a merge of a branch that forked long ago takes it back to the fork. Past several windows' worth it gives
    // up (gaveUp()): the caller then rebuilds, which reads one window from head, about what a window's diffs cost.
    const size_t maxPops = hide != nullptr ? 8 * limit + 1024 : std::numeric_limits<size_t>::max();
    size_t pops = 0;
    gaveUp_ = false;
    while (!queue_.empty()) {
      if (hide != nullptr && interestingQueued_ == 0) break;  // only hide's ancestry is left
      if (++pops > maxPops) {
        gaveUp_ = true;
        sawAll = false;
        reachedHide = false;
        candidates.clear();
        break;
      }
      const Entry top = queue_.top();
      queue_.pop();
      // References into an unordered_map survive the insertions enqueue makes.
      Node& node = nodes_.at(top.key);
      node.queued = false;
      if (!node.uninteresting) {
        --interestingQueued_;
        if (!node.merge) {
          candidates.push_back(&node.oid);
          // Without hide the window is full. With hide there are more new commits than the window holds.
          if (candidates.size() > limit || (hide == nullptr && candidates.size() == limit)) {
            sawAll = false;
            break;
          }
        }
      }
      for (const git_oid& p : node.parents) {
        if (hide != nullptr && !node.uninteresting && key(p) == hideKey_) reachedHide = true;
        enqueue(p, node.uninteresting);
      }
    }
    for (const git_oid* c : candidates) {
      // A commit output early may have been reached from hide later (clock skew): drop it now.
      if (!nodes_.at(key(*c)).uninteresting) out.push_back(*c);
    }
    if (hide != nullptr && nodes_.count(hideKey_) == 0) reachedHide = false;  // hide itself unreadable
  }

  // The commits this walk read from the repository.
  size_t commitsRead() const { return nodes_.size(); }
  // Whether the last run stopped at its bound on commits before it could tell whether head descends from hide.
  bool gaveUp() const { return gaveUp_; }

 private:
  struct Node {
    git_oid oid;
    int64_t time = 0;
    std::vector<git_oid> parents;
    bool merge = false;
    bool uninteresting = false;
    bool queued = false;
  };
  struct Entry {
    int64_t time;
    uint64_t order;  // insertion order breaks ties in commit time, so the walk is deterministic
    std::string key;
    bool operator<(const Entry& o) const { return time != o.time ? time < o.time : order > o.order; }
  };

  static std::string key(const git_oid& oid) {
    return std::string(reinterpret_cast<const char*>(oid.id), GIT_OID_RAWSZ);
  }

  void enqueue(const git_oid& oid, bool uninteresting) {
    const std::string k = key(oid);
    auto it = nodes_.find(k);
    if (it != nodes_.end()) {
      if (uninteresting) markUninteresting(k);
      return;
    }
    git_commit* raw = nullptr;
    // A missing commit (a shallow clone's boundary parent, a pruned object) ends this line of history.
    if (git_commit_lookup(&raw, repo_, &oid) < 0) return;
    CommitPtr commit(raw);
    Node node;
    node.oid = oid;
    node.time = git_commit_time(commit.get());
    const unsigned n = git_commit_parentcount(commit.get());
    node.merge = n > 1;
    for (unsigned i = 0; i < n; ++i) {
      if (const git_oid* p = git_commit_parent_id(commit.get(), i)) node.parents.push_back(*p);
    }
    node.uninteresting = uninteresting;
    node.queued = true;
    if (!uninteresting) ++interestingQueued_;
    queue_.push({node.time, order_++, k});
    nodes_.emplace(k, std::move(node));
  }

  // Everything already seen below an uninteresting commit is uninteresting too.
  void markUninteresting(const std::string& start) {
    std::vector<std::string> stack{start};
    while (!stack.empty()) {
      auto it = nodes_.find(stack.back());
      stack.pop_back();
      if (it == nodes_.end() || it->second.uninteresting) continue;
      it->second.uninteresting = true;
      if (it->second.queued) --interestingQueued_;
      for (const git_oid& p : it->second.parents) stack.push_back(key(p));
    }
  }

  git_repository* repo_;
  std::unordered_map<std::string, Node> nodes_;
  std::priority_queue<Entry> queue_;
  uint64_t order_ = 0;
  size_t interestingQueued_ = 0;
  bool gaveUp_ = false;
  std::string hideKey_;
};

}  // namespace

namespace {

// git's tree order: names compare bytewise, a tree's name as if it ended in '/'. Entries of a tree object are
// stored in this order, which is what lets diffTrees merge two trees in one pass.
int compareEntries(const git_tree_entry* a, const git_tree_entry* b) {
  const char* na = git_tree_entry_name(a);
  const char* nb = git_tree_entry_name(b);
  const size_t la = std::strlen(na);
  const size_t lb = std::strlen(nb);
  const size_t n = std::min(la, lb);
  if (int c = std::memcmp(na, nb, n); c != 0) return c;
  const unsigned char ca = la > n ? na[n] : (git_tree_entry_type(a) == GIT_OBJECT_TREE ? '/' : '\0');
  const unsigned char cb = lb > n ? nb[n] : (git_tree_entry_type(b) == GIT_OBJECT_TREE ? '/' : '\0');
  return static_cast<int>(ca) - static_cast<int>(cb);
}

bool isFile(const git_tree_entry* e) {
  // Submodule pointers (gitlinks) are not files of this repository.
  return git_tree_entry_type(e) == GIT_OBJECT_BLOB;
}

}  // namespace

// Paths of the files that differ between two trees (either may be null: the empty tree). A hand-rolled merge
// of the two sorted entry lists rather than git_diff_tree_to_tree: only paths are needed, and skipping the diff
// machinery (delta objects, pathspecs, sorting, per-file flags) makes the cold walk several times faster.
bool CoChangeBuilder::diffTrees(const git_tree* a, const git_tree* b, std::string& prefix,
                                std::vector<std::string>& out) {
  const size_t na = a != nullptr ? git_tree_entrycount(a) : 0;
  const size_t nb = b != nullptr ? git_tree_entrycount(b) : 0;
  size_t i = 0;
  size_t j = 0;
  while (i < na || j < nb) {
    const git_tree_entry* ea = i < na ? git_tree_entry_byindex(a, i) : nullptr;
    const git_tree_entry* eb = j < nb ? git_tree_entry_byindex(b, j) : nullptr;
    const int c = ea == nullptr ? 1 : eb == nullptr ? -1 : compareEntries(ea, eb);
    const git_tree_entry* only = nullptr;
    if (c < 0) {
      only = ea;
      ++i;
    } else if (c > 0) {
      only = eb;
      ++j;
    } else {
      ++i;
      ++j;
      if (git_oid_equal(git_tree_entry_id(ea), git_tree_entry_id(eb))) continue;
      const bool treeA = git_tree_entry_type(ea) == GIT_OBJECT_TREE;
      const bool treeB = git_tree_entry_type(eb) == GIT_OBJECT_TREE;
      if (treeA && treeB) {
        if (!descend(ea, eb, prefix, out)) return false;
      } else if (isFile(ea) || isFile(eb)) {
        out.push_back(prefix + git_tree_entry_name(ea));
      }
      continue;
    }
    if (git_tree_entry_type(only) == GIT_OBJECT_TREE) {
      // A directory added or removed as a whole: every file below it changed.
      if (!descend(only == ea ? only : nullptr, only == eb ? only : nullptr, prefix, out)) return false;
    } else if (isFile(only)) {
      out.push_back(prefix + git_tree_entry_name(only));
    }
  }
  return true;
}

bool CoChangeBuilder::descend(const git_tree_entry* ea, const git_tree_entry* eb, std::string& prefix,
                              std::vector<std::string>& out) {
  git_tree* rawA = nullptr;
  git_tree* rawB = nullptr;
  if (ea != nullptr && git_tree_lookup(&rawA, repo_, git_tree_entry_id(ea)) < 0) return false;
  TreePtr ta(rawA);
  if (eb != nullptr && git_tree_lookup(&rawB, repo_, git_tree_entry_id(eb)) < 0) return false;
  TreePtr tb(rawB);
  const size_t mark = prefix.size();
  prefix += git_tree_entry_name(ea != nullptr ? ea : eb);
  prefix += '/';
  const bool ok = diffTrees(ta.get(), tb.get(), prefix, out);
  prefix.resize(mark);
  return ok;
}

bool CoChangeBuilder::commitFiles(git_commit* commit, std::vector<std::string>& files) {
  files.clear();
  git_tree* rawTree = nullptr;
  if (git_commit_tree(&rawTree, commit) < 0) return false;
  TreePtr tree(rawTree);
  TreePtr parentTree;
  if (git_commit_parentcount(commit) > 0) {
    git_commit* rawParent = nullptr;
    // Missing in a shallow clone: diffing against the empty tree would claim the commit touched every file.
    if (git_commit_parent(&rawParent, commit, 0) < 0) return false;
    CommitPtr parent(rawParent);
    git_tree* rawParentTree = nullptr;
    if (git_commit_tree(&rawParentTree, parent.get()) < 0) return false;
    parentTree.reset(rawParentTree);
  }
  std::vector<std::string> changed;
  std::string prefix;
  if (!diffTrees(parentTree.get(), tree.get(), prefix, changed)) return false;
  for (std::string& path : changed) {
    if (!filter_.ignored(path)) files.push_back(std::move(path));
  }
  // Tree order is not plain byte order ("a.c" sorts after "a/..." in git's order), and callers want sorted sets.
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.size() > options_.maxFilesPerCommit) {
    files.clear();
    return false;
  }
  return true;
}

void CoChangeBuilder::appendCommits(const std::vector<git_oid>& newestFirst, int64_t seq, CoChangeCounts& counts,
                                    CoChangeUpdate& update) {
  std::vector<std::string> files;
  // Oldest first, so seq grows with recency whether the window is rebuilt or extended.
  for (auto it = newestFirst.rbegin(); it != newestFirst.rend(); ++it) {
    git_commit* raw = nullptr;
    bool counted = false;
    if (git_commit_lookup(&raw, repo_, &*it) == 0) {
      CommitPtr commit(raw);
      counted = commitFiles(commit.get(), files);
      if (counted) counts.addCommit(files);
    }
    counts.window.push_back({seq++, oidHex(*it), counted});
    update.added.push_back(counts.window.back());
  }
  update.walkedCommits += newestFirst.size();
}

Result<CoChangeUpdate> CoChangeBuilder::rebuild(CoChangeCounts& counts, const git_oid& head) {
  CoChangeUpdate update;
  update.rebuilt = true;
  counts.clear();
  std::vector<git_oid> commits;
  bool sawAll = false;
  bool unused = false;
  HistoryWalk walk(repo_);
  walk.run(head, nullptr, options_.window, commits, sawAll, unused);
  update.readCommits += walk.commitsRead();
  appendCommits(commits, 0, counts, update);
  counts.head = oidHex(head);
  return update;
}

Result<CoChangeUpdate> CoChangeBuilder::update(CoChangeCounts& counts, const git_oid& head) {
  const std::string headHex = oidHex(head);
  if (!counts.head.empty() && counts.head == headHex) return CoChangeUpdate{};
  if (counts.head.empty()) return rebuild(counts, head);

  git_oid old;
  if (git_oid_fromstr(&old, counts.head.c_str()) < 0) return rebuild(counts, head);
  std::vector<git_oid> fresh;
  bool sawAll = false;
  bool descends = false;
  HistoryWalk walk(repo_);
  walk.run(head, &old, options_.window, fresh, sawAll, descends);
  const size_t readByWalk = walk.commitsRead();
  auto rebuildCounting = [&]() -> Result<CoChangeUpdate> {
    auto rebuilt = rebuild(counts, head);
    if (rebuilt) rebuilt->readCommits += readByWalk;
    return rebuilt;
  };
  if (walk.gaveUp()) {
    spdlog::info("memq: HEAD moved from {} to {}; gave up finding the old head after {} commits, rebuilding co-change",
                 counts.head.substr(0, 12), headHex.substr(0, 12), readByWalk);
    return rebuildCounting();
  }
  if (!descends) {
    // Moved sideways or back (rebase, reset, branch switch), or the old head was pruned: start over.
    spdlog::info("memq: HEAD moved from {} to {} without descending from it; rebuilding co-change",
                 counts.head.substr(0, 12), headHex.substr(0, 12));
    return rebuildCounting();
  }
  // More new commits than the window holds: nothing of the old window would survive anyway.
  if (!sawAll) return rebuildCounting();

  CoChangeUpdate update;
  update.readCommits = readByWalk;
  std::vector<std::string> files;
  // Evict first, so the window never holds more than `window` commits.
  const size_t total = counts.window.size() + fresh.size();
  const size_t evict = total > options_.window ? total - options_.window : 0;
  for (size_t i = 0; i < evict && !counts.window.empty(); ++i) {
    const WindowCommit& oldest = counts.window.front();
    if (oldest.counted) {
      git_oid oid;
      git_commit* raw = nullptr;
      if (git_oid_fromstr(&oid, oldest.commit.c_str()) < 0 || git_commit_lookup(&raw, repo_, &oid) < 0) {
        return rebuild(counts, head);
      }
      CommitPtr commit(raw);
      // The same diff and filter as when it was added (the settings fingerprint guarantees the same options). A commit
      // that cannot be diffed any more (its parent pruned since) cannot be taken out: its counts would stay forever,
      // and be saved to the cache, so the window is built again instead.
      if (!commitFiles(commit.get(), files)) return rebuild(counts, head);
      counts.removeCommit(files);
    }
    update.removedSeqs.push_back(oldest.seq);
    counts.window.pop_front();
    ++update.evictedCommits;
  }

  int64_t seq = counts.window.empty() ? 0 : counts.window.back().seq + 1;
  if (!update.removedSeqs.empty()) seq = std::max(seq, update.removedSeqs.back() + 1);
  appendCommits(fresh, seq, counts, update);
  counts.head = headHex;
  return update;
}

}  // namespace memq
