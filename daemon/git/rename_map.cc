// Renames from git history and the work tree; see rename_map.h.
#include "daemon/git/rename_map.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <unordered_set>

namespace memq {

void RenameEdges::add(const std::string& from, const std::string& to) {
  if (from == to) return;
  auto& list = earlier_[to];
  if (std::find(list.begin(), list.end(), from) == list.end()) list.push_back(from);
}

const std::vector<std::string>* RenameEdges::earlierOf(const std::string& path) const {
  auto it = earlier_.find(path);
  return it == earlier_.end() ? nullptr : &it->second;
}

std::vector<std::string> earlierPaths(const std::string& path, const std::vector<const RenameEdges*>& layers,
                                      size_t limit, const std::function<bool(const std::string&)>& follow) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen{path};
  // Breadth first, so the nearest renames come first and a cycle (a→b, later b→a) ends.
  std::vector<std::string> frontier{path};
  while (!frontier.empty() && out.size() < limit) {
    std::vector<std::string> next;
    for (const std::string& p : frontier) {
      for (const RenameEdges* layer : layers) {
        const std::vector<std::string>* earlier = layer->earlierOf(p);
        if (earlier == nullptr) continue;
        for (const std::string& e : *earlier) {
          if (!seen.insert(e).second || (follow && !follow(e))) continue;
          out.push_back(e);
          next.push_back(e);
          if (out.size() == limit) return out;
        }
      }
    }
    frontier = std::move(next);
  }
  return out;
}

namespace {

using DiffPtr = GitPtr<git_diff, git_diff_free>;
using RevwalkPtr = GitPtr<git_revwalk, git_revwalk_free>;
using ConfigPtr = GitPtr<git_config, git_config_free>;

// The user's excludes file as git finds it: core.excludesFile, else $XDG_CONFIG_HOME/git/ignore, else
// ~/.config/git/ignore. Empty when none can be named.
std::string userExcludesFile(git_repository* repository) {
  git_config* raw = nullptr;
  if (git_repository_config_snapshot(&raw, repository) == 0) {
    ConfigPtr config(raw);
    git_buf path = GIT_BUF_INIT;
    if (git_config_get_path(&path, config.get(), "core.excludesfile") == 0) {
      std::string out(path.ptr, path.size);
      git_buf_dispose(&path);
      return out;
    }
  }
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/git/ignore";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.config/git/ignore";
  }
  return {};
}

}  // namespace

std::unique_ptr<RenameMap> RenameMap::open(const ProjectLocation& location, RenameOptions options) {
  if (!location.inGit) return nullptr;
  ensureLibgit2();
  RepositoryPtr handles[2];
  for (auto& handle : handles) {
    git_repository* raw = nullptr;
    const int rc = git_repository_open_ext(&raw, location.gitWorkTreeTop.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH,
                                           nullptr);
    if (rc < 0) {
      spdlog::warn("memq: renames not followed in {}: {}", location.root,
                   gitStatus(rc, "open repository").message());
      return nullptr;
    }
    handle.reset(raw);
  }
  std::vector<std::string> ignoreFiles{location.gitCommonDir + "/info/exclude"};
  if (std::string user = userExcludesFile(handles[0].get()); !user.empty()) ignoreFiles.push_back(std::move(user));
  return std::unique_ptr<RenameMap>(
      new RenameMap(location, std::move(handles[0]), std::move(handles[1]), options, std::move(ignoreFiles)));
}

RenameMap::RenameMap(ProjectLocation location, RepositoryPtr repository, RepositoryPtr walkRepository,
                     RenameOptions options, std::vector<std::string> ignoreFilesOutsideTree)
    : location_(std::move(location)),
      options_(options),
      ignoreFilesOutsideTree_(std::move(ignoreFilesOutsideTree)),
      repository_(std::move(repository)),
      walkRepository_(std::move(walkRepository)) {}

std::optional<std::string> RenameMap::rootRelative(const char* repoPath) const {
  if (repoPath == nullptr) return std::nullopt;
  const std::string_view p(repoPath);
  if (location_.repoPrefix.empty()) return std::string(p);
  const std::string prefix = location_.repoPrefix + "/";
  if (p.substr(0, prefix.size()) != prefix) return std::nullopt;
  return std::string(p.substr(prefix.size()));
}

std::string RenameMap::repoPath(const std::string& rootRelative) const {
  return location_.repoPrefix.empty() ? rootRelative : location_.repoPrefix + "/" + rootRelative;
}

bool RenameMap::fileInWorkTree(const std::string& rootRelative) const {
  struct stat st {};
  const std::string full = location_.root + "/" + rootRelative;
  return lstat(full.c_str(), &st) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
}

void RenameMap::collectRenames(git_diff* diff, bool untracked, Edges& out) const {
  // Detection compares every removed file with every added one: only worth it when the diff has both.
  const size_t removed = git_diff_num_deltas_of_type(diff, GIT_DELTA_DELETED);
  const size_t added = git_diff_num_deltas_of_type(diff, GIT_DELTA_ADDED) +
                       (untracked ? git_diff_num_deltas_of_type(diff, GIT_DELTA_UNTRACKED) : 0);
  if (removed == 0 || added == 0) return;
  git_diff_find_options find;
  git_diff_find_options_init(&find, GIT_DIFF_FIND_OPTIONS_VERSION);
  find.flags = GIT_DIFF_FIND_RENAMES | (untracked ? GIT_DIFF_FIND_FOR_UNTRACKED : 0);
  // libgit2's rename_limit only caps the removed files tried per added one, so a commit moving 20,000 edited files
  // would still compare up to 1,000 × 20,000 pairs by content, with lookups waiting when one of them walks. As git's
  // diff.renameLimit does, a diff of more than renameLimit² pairs looks for exact renames only: equal blob ids.
  const auto limit = static_cast<double>(options_.renameLimit);
  if (options_.renameLimit > 0 && static_cast<double>(removed) * static_cast<double>(added) > limit * limit) {
    find.flags |= GIT_DIFF_FIND_EXACT_MATCH_ONLY;
  }
  find.rename_threshold = options_.similarity;
  find.rename_limit = options_.renameLimit;
  if (const int rc = git_diff_find_similar(diff, &find); rc < 0) {
    spdlog::debug("memq: rename detection in {} failed: {}", location_.root, gitStatus(rc, "find").message());
    return;
  }
  const size_t n = git_diff_num_deltas(diff);
  for (size_t i = 0; i < n; ++i) {
    const git_diff_delta* d = git_diff_get_delta(diff, i);
    if (d->status != GIT_DELTA_RENAMED) continue;
    auto from = rootRelative(d->old_file.path);
    auto to = rootRelative(d->new_file.path);
    if (from && to) out.emplace_back(std::move(*from), std::move(*to));
  }
}

void RenameMap::commitRenames(git_repository* repository, git_commit* commit, Edges& out) {
  if (git_commit_parentcount(commit) == 0) return;  // a root commit only adds files
  git_commit* rawParent = nullptr;
  if (git_commit_parent(&rawParent, commit, 0) < 0) return;  // a shallow clone's boundary
  CommitPtr parent(rawParent);
  git_tree* rawOld = nullptr;
  git_tree* rawNew = nullptr;
  if (git_commit_tree(&rawOld, parent.get()) < 0) return;
  TreePtr oldTree(rawOld);
  if (git_commit_tree(&rawNew, commit) < 0) return;
  TreePtr newTree(rawNew);
  git_diff_options opts;
  git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
  git_diff* raw = nullptr;
  if (git_diff_tree_to_tree(&raw, repository, oldTree.get(), newTree.get(), &opts) < 0) return;
  DiffPtr diff(raw);
  collectRenames(diff.get(), false, out);
}

RenameMap::Walk RenameMap::walkHistory(git_repository* repository, const git_oid& head,
                                       const std::optional<git_oid>& known, size_t limit) {
  Walk walk;
  walk.head = head;
  RevwalkPtr revwalk;
  {
    git_revwalk* raw = nullptr;
    if (git_revwalk_new(&raw, repository) < 0) return walk;
    revwalk.reset(raw);
  }
  git_revwalk_simplify_first_parent(revwalk.get());
  if (git_revwalk_push(revwalk.get(), &head) < 0) return walk;
  // Newest first along the first parents; when the walk meets the HEAD already read, what is behind it is known.
  git_oid oid;
  bool ended = false;
  while (walk.commits.size() < limit) {
    if (git_revwalk_next(&oid, revwalk.get()) != 0) {
      ended = true;  // the start of history (or of a shallow clone)
      break;
    }
    if (known && git_oid_equal(&oid, &*known)) {
      walk.metKnown = true;
      break;
    }
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repository, &oid) < 0) break;
    CommitPtr commit(raw);
    commitRenames(repository, commit.get(), walk.commits.emplace_back());
  }
  walk.complete = walk.metKnown || ended || walk.commits.size() >= static_cast<size_t>(options_.maxCommits);
  return walk;
}

void RenameMap::applyLocked(Walk walk) {
  if (!walk.metKnown) perCommit_.clear();  // HEAD moved elsewhere (reset, rebase, checkout): the window is `walk`
  for (auto it = walk.commits.rbegin(); it != walk.commits.rend(); ++it) perCommit_.push_front(std::move(*it));
  while (perCommit_.size() > static_cast<size_t>(options_.maxCommits)) perCommit_.pop_back();
  head_ = walk.head;
  walked_ = true;
  tooFarHead_.reset();
  history_ = RenameEdges();
  for (const Edges& commit : perCommit_) {
    for (const auto& [from, to] : commit) history_.add(from, to);
  }
}

std::optional<git_oid> RenameMap::readHead(git_repository* repository) {
  git_oid head;
  if (git_reference_name_to_id(&head, repository, "HEAD") < 0) return std::nullopt;  // unborn
  return head;
}

void RenameMap::followHeadLocked(const std::optional<git_oid>& head) {
  if (!head) {  // unborn: no history, nothing renamed
    perCommit_.clear();
    history_ = RenameEdges();
    walked_ = false;
    return;
  }
  if (walked_ && git_oid_equal(&*head, &head_)) return;
  // On the request path only a short step forward is walked (or the first walk, which has nothing to fall back
  // on); a longer or sideways move keeps the renames known so far until refresh() walks it off the request path,
  // and is not walked again by every lookup meanwhile.
  if (walked_ && tooFarHead_ && git_oid_equal(&*head, &*tooFarHead_)) return;
  const size_t limit = walked_ ? kRequestWalk : static_cast<size_t>(options_.maxCommits);
  ++lookupWalks_;
  Walk walk = walkHistory(repository_.get(), *head, walked_ ? std::optional<git_oid>(head_) : std::nullopt, limit);
  if (walk.complete) {
    applyLocked(std::move(walk));
  } else {
    tooFarHead_ = *head;
  }
}

PathStamps RenameMap::ignoreFileStamps(const std::vector<std::string>& targets) const {
  // Each directory's .gitignore from the top down (git reads them all for a path), once however many targets share it.
  std::set<std::string> files{location_.gitWorkTreeTop + "/.gitignore"};
  for (const std::string& target : targets) {
    const std::string path = repoPath(target);
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      files.insert(location_.gitWorkTreeTop + "/" + path.substr(0, slash) + "/.gitignore");
    }
  }
  PathStamps out;
  for (const std::string& file : files) out.add(file);
  for (const std::string& file : ignoreFilesOutsideTree_) out.add(file);
  return out;
}

std::vector<std::string> RenameMap::treeDirectories(git_tree* headTree) const {
  struct Walk {
    std::string prefix;  // the root's repository path with a trailing '/', or "" at the work tree's top
    std::string top;
    std::vector<std::string> out;
  } walk{location_.repoPrefix.empty() ? "" : location_.repoPrefix + "/", location_.gitWorkTreeTop, {}};
  walk.out.push_back(location_.root);
  git_tree_walk(
      headTree, GIT_TREEWALK_PRE,
      [](const char* parent, const git_tree_entry* entry, void* payload) -> int {
        auto* w = static_cast<Walk*>(payload);
        if (git_tree_entry_type(entry) != GIT_OBJECT_TREE) return 0;
        const std::string dir = std::string(parent) + git_tree_entry_name(entry) + "/";
        const bool inRoot = dir.compare(0, w->prefix.size(), w->prefix) == 0;
        const bool aboveRoot = !inRoot && w->prefix.compare(0, dir.size(), dir) == 0;
        if (!inRoot && !aboveRoot) return 1;  // beside the root: none of its files can be a memory's refs
        if (inRoot && dir.size() > w->prefix.size()) w->out.push_back(w->top + "/" + dir.substr(0, dir.size() - 1));
        return 0;
      },
      &walk);
  return std::move(walk.out);
}

const std::vector<std::string>& RenameMap::deletedFilesLocked(git_tree* headTree) {
  const git_oid* tree = git_tree_id(headTree);
  const std::string indexPath = std::string(git_repository_path(repository_.get())) + "index";
  if (deleted_ && deleted_->settled && git_oid_equal(tree, &deleted_->headTree) &&
      FileStamp::ofPath(indexPath) == deleted_->index &&
      (deleted_->watch ? !deleted_->watch->changed() : deleted_->directoryStamps.unchanged())) {
    return deleted_->paths;
  }
  // Watched or stamped before the diff reads them: a change while it runs shows next time.
  DeletedFiles now;
  git_oid_cpy(&now.headTree, tree);
  now.index = FileStamp::ofPath(indexPath);
  const bool sameTree = deleted_ && git_oid_equal(tree, &deleted_->headTree);
  std::vector<std::string> directories;
  std::unique_ptr<DirectoryWatch> kept;  // the same tree's watch: the same directories, the same inotify instance
  if (sameTree) {
    directories = std::move(deleted_->directories);
    kept = std::move(deleted_->watch);
  } else {
    directories = treeDirectories(headTree);
  }
  deleted_.reset();  // its watch, if not kept, before a new one that may need the user's watches it holds
  // Watched only at the work tree's top: a root below it could be moved away with its parents, which no watch of
  // its own directories sees. A watch kept is armed again rather than closed (closing one waits for the kernel).
  if (options_.watchDirectories && location_.repoPrefix.empty()) {
    if (kept && kept->rearm(directories)) {
      now.watch = std::move(kept);
    } else {
      kept.reset();
      now.watch = DirectoryWatch::open(directories);
    }
  }
  const int64_t stampedAt = FileStamp::nowNs();
  if (!now.watch) {
    for (const std::string& d : directories) now.directoryStamps.add(d);
  }
  now.directories = std::move(directories);
  // A change shortly before the stamp may share its clock tick with a later one; such stamps prove nothing.
  now.settled = (!now.index || now.index->settledAt(stampedAt, options_.settle.count())) &&
                now.directoryStamps.settledAt(stampedAt, options_.settle.count());
  ++workTreeReads_;
  git_diff_options opts;
  git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
  // Only deleted entries are read: a submodule's own work tree (libgit2 opens each one to tell whether it is
  // modified) cannot make one, while a gitlink removed from the index or the work tree is still reported deleted.
  opts.flags = GIT_DIFF_IGNORE_SUBMODULES;
  std::string root = location_.repoPrefix + "/";  // only the root's files can be a memory's refs
  char* rootSpec[] = {root.data()};
  if (!location_.repoPrefix.empty()) opts.pathspec = {rootSpec, 1};
  git_diff* raw = nullptr;
  if (const int rc = git_diff_tree_to_workdir_with_index(&raw, repository_.get(), headTree, &opts); rc < 0) {
    spdlog::debug("memq: work-tree renames in {} not read: {}", location_.root, gitStatus(rc, "diff").message());
    now.settled = false;
  } else {
    DiffPtr diff(raw);
    for (size_t i = 0; i < git_diff_num_deltas(diff.get()); ++i) {
      const git_diff_delta* d = git_diff_get_delta(diff.get(), i);
      if (d->status == GIT_DELTA_DELETED) now.paths.emplace_back(d->old_file.path);
    }
  }
  deleted_ = std::move(now);
  return deleted_->paths;
}

size_t RenameMap::workTreeReads() {
  MutexLock lock(mutex_);
  return workTreeReads_;
}

size_t RenameMap::lookupWalks() {
  MutexLock lock(mutex_);
  return lookupWalks_;
}

size_t RenameMap::renameSearches() {
  MutexLock lock(mutex_);
  return renameSearches_;
}

RenameEdges RenameMap::uncommittedLocked(git_tree* headTree, const std::vector<std::string>& targets) {
  RenameEdges edges;
  if (headTree == nullptr || targets.empty()) return edges;  // nothing committed: nothing to have been renamed
  // First the files HEAD has that the index or the work tree lacks: usually none, and then nothing was renamed.
  std::vector<std::string> specs = deletedFilesLocked(headTree);
  if (specs.empty()) return edges;
  // An answer for the same paths over the same deleted files stands while none of the queried files changed.
  RenameAnswer answer;
  answer.deletedRead = workTreeReads_;
  const int64_t stampedAt = FileStamp::nowNs();
  for (const auto& t : targets) answer.targets.add(location_.root + "/" + t);
  answer.ignoreFiles = ignoreFileStamps(targets);
  for (auto it = answers_.begin(); it != answers_.end(); ++it) {
    if (it->deletedRead == answer.deletedRead && it->targets == answer.targets &&
        it->ignoreFiles == answer.ignoreFiles) {
      for (const auto& [from, to] : it->edges) edges.add(from, to);
      if (it != answers_.begin()) std::rotate(answers_.begin(), it, std::next(it));
      return edges;
    }
  }
  const bool settled = answer.targets.settledAt(stampedAt, options_.settle.count()) &&
                       answer.ignoreFiles.settledAt(stampedAt, options_.settle.count());
  ++renameSearches_;
  // Then rename detection between those and the queried paths alone (staged, or untracked: moved on disk).
  for (const auto& t : targets) specs.push_back(repoPath(t));
  std::vector<char*> spec;
  for (auto& p : specs) spec.push_back(p.data());
  git_diff_options opts;
  git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
  opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS | GIT_DIFF_DISABLE_PATHSPEC_MATCH;
  opts.pathspec = {spec.data(), spec.size()};
  git_diff* raw = nullptr;
  if (const int rc = git_diff_tree_to_workdir_with_index(&raw, repository_.get(), headTree, &opts); rc < 0) {
    spdlog::debug("memq: work-tree renames in {} not read: {}", location_.root, gitStatus(rc, "diff").message());
    return edges;
  }
  DiffPtr diff(raw);
  collectRenames(diff.get(), true, answer.edges);
  for (const auto& [from, to] : answer.edges) edges.add(from, to);
  if (!settled) return edges;  // a queried file changed moments ago: its stamp proves nothing next time
  // Answers over an earlier read of the deleted files can match no more, and one for the same paths is this one's
  // older self.
  std::erase_if(answers_, [&](const RenameAnswer& kept) {
    return kept.deletedRead != answer.deletedRead ||
           kept.targets.samePaths(answer.targets);
  });
  answers_.push_front(std::move(answer));
  if (answers_.size() > kKeptAnswers) answers_.pop_back();
  return edges;
}

std::vector<RenamedPath> RenameMap::renamedFrom(const std::vector<std::string>& paths) {
  std::vector<RenamedPath> out;
  if (paths.empty()) return out;
  MutexLock lock(mutex_);
  const std::optional<git_oid> head = headReader_.read(repository_.get());
  git_tree* headTree = head ? headTree_.of(repository_.get(), *head) : nullptr;
  followHeadLocked(head);
  // The paths HEAD's tree lacks: only those may be an uncommitted rename's target.
  std::vector<std::string> newPaths;
  for (const std::string& path : paths) {
    git_tree_entry* entry = nullptr;
    const bool atHead = headTree && git_tree_entry_bypath(&entry, headTree, repoPath(path).c_str()) == 0;
    TreeEntryPtr owned(entry);
    if (!atHead) newPaths.push_back(path);
  }
  const RenameEdges uncommitted = uncommittedLocked(headTree, newPaths);
  const auto follow = [this](const std::string& p) { return !fileInWorkTree(p); };
  for (const std::string& path : paths) {
    std::vector<std::string> earlier = earlierPaths(path, {&uncommitted, &history_}, options_.maxEarlierPaths, follow);
    if (!earlier.empty()) out.push_back({path, std::move(earlier)});
  }
  return out;
}

int RenameMap::refresh() {
  // The walk runs on its own repository handle under walkMutex_, so lookups go on meanwhile; the result is taken
  // only if no lookup moved the state on in the meantime (else the next refresh starts from there).
  MutexLock walking(walkMutex_);
  const std::optional<git_oid> head = readHead(walkRepository_.get());
  std::optional<git_oid> known;
  bool walked = false;
  {
    MutexLock lock(mutex_);
    if (!head) {
      followHeadLocked(head);
      return 0;
    }
    if (walked_ && git_oid_equal(&*head, &head_)) return 0;
    walked = walked_;
    if (walked_) known = head_;
  }
  Walk walk = walkHistory(walkRepository_.get(), *head, known, static_cast<size_t>(options_.maxCommits));
  const int diffed = static_cast<int>(walk.commits.size());
  MutexLock lock(mutex_);
  const bool unchanged = walked_ == walked && (!walked_ || (known && git_oid_equal(&head_, &*known)));
  if (unchanged) applyLocked(std::move(walk));
  return diffed;
}

}  // namespace memq
