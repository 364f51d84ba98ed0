// Repository signals over libgit2; see git_repo_signals.h.
#include "daemon/git/git_repo_signals.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <mutex>
#include <tuple>
#include <utility>

#include "daemon/model/file_path.h"
#include "daemon/util/read_file.h"

namespace memq {
namespace {

// The file at `path` when it holds at most `limit` bytes and can be read.
std::optional<std::string> readWholeFile(const std::string& path, size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> bytes = readAllAndClose(fd, limit);
  if (bytes && bytes->size() > limit) return std::nullopt;
  return bytes;
}

// The blob id of `bytes` as the file at `repoPath` would be stored: through the filters git_repository_hashfile
// applies (GIT_FILTER_TO_ODB, its flags), then hashed.
int hashAsStored(git_repository* repository, const std::string& repoPath, const std::string& bytes, git_oid& oid) {
  git_filter_list* filters = nullptr;
  if (const int rc = git_filter_list_load(&filters, repository, nullptr, repoPath.c_str(), GIT_FILTER_TO_ODB,
                                          GIT_FILTER_DEFAULT);
      rc < 0) {
    return rc;
  }
  if (filters == nullptr) return git_odb_hash(&oid, bytes.data(), bytes.size(), GIT_OBJECT_BLOB);
  git_buf filtered = GIT_BUF_INIT;
  int rc = git_filter_list_apply_to_buffer(&filtered, filters, bytes.data(), bytes.size());
  if (rc == 0) rc = git_odb_hash(&oid, filtered.ptr, filtered.size, GIT_OBJECT_BLOB);
  git_buf_dispose(&filtered);
  git_filter_list_free(filters);
  return rc;
}

using Clock = std::chrono::steady_clock;

// Project-root-relative path in canonical form ("a/b"), or nullopt for an absolute path, an empty one, or one
// that climbs out of the root. Memories store normalised paths already; this guards the daemon against a
// client sending something else.
std::optional<std::string> cleanRelative(const std::string& path) {
  std::string out;
  if (path.empty() || path[0] == '/' || !lexicallyNormalize(path, out) || out.empty()) return std::nullopt;
  return out;
}

RepositoryPtr openRepository(const std::string& workTreeTop, Status& status) {
  git_repository* raw = nullptr;
  const int rc = git_repository_open_ext(&raw, workTreeTop.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
  if (rc < 0) {
    status = gitStatus(rc, "opening repository " + workTreeTop);
    return nullptr;
  }
  return RepositoryPtr(raw);
}

// The worktree's name inside the common dir ("worktrees/x"), or "" for the main work tree.
std::string worktreeKey(const ProjectLocation& loc) {
  if (loc.gitDir == loc.gitCommonDir) return "";
  const std::string prefix = loc.gitCommonDir + "/";
  if (loc.gitDir.compare(0, prefix.size(), prefix) == 0) return loc.gitDir.substr(prefix.size());
  return loc.gitDir;
}

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct TreeFile {
  std::string path;
  git_oid oid;
  SourceLanguage language;
};

int collectTreeFile(const char* root, const git_tree_entry* entry, void* payload) {
  if (git_tree_entry_type(entry) != GIT_OBJECT_BLOB) return 0;  // trees are descended into, gitlinks skipped
  const git_filemode_t mode = git_tree_entry_filemode(entry);
  if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE) return 0;  // symlinks hold no code
  auto* files = static_cast<std::vector<TreeFile>*>(payload);
  std::string path = std::string(root) + git_tree_entry_name(entry);
  const SourceLanguage lang = languageOf(path);
  files->push_back({std::move(path), *git_tree_entry_id(entry), lang});
  return 0;
}

// How both views built lazily from HEAD (the co-change snapshot, the dependency graph) are kept fresh: the
// published view when it matches HEAD; otherwise one thread rebuilds it under `refreshMu`, and a caller that already
// has a view answers from it rather than wait behind that rebuild (only the very first lookup, with no view yet,
// waits). `published` reads the view and whether it matches HEAD; it runs with `snapMu` held. `rebuildLocked` runs
// with `refreshMu` held and returns the new view, published. Lock order: refreshMu → snapMu. The two callables
// declare the lock they need (REQUIRES); the analysis cannot tie this function's reference parameters to the
// members they name, so it is left out here and checked in the callables.
template <class View, class Published, class Rebuild>
std::shared_ptr<const View> currentOrRebuilt(Mutex& refreshMu, Mutex& snapMu, Published published,
                                             Rebuild rebuildLocked) NO_THREAD_SAFETY_ANALYSIS {
  std::shared_ptr<const View> current;
  bool fresh = false;
  {
    std::lock_guard lock(snapMu);
    std::tie(current, fresh) = published();
  }
  if (current && fresh) return current;
  std::unique_lock refreshLock(refreshMu, std::defer_lock);
  if (current) {
    if (!refreshLock.try_lock()) return current;
  } else {
    refreshLock.lock();
  }
  {
    // Another thread may have rebuilt while this one waited.
    std::lock_guard lock(snapMu);
    std::tie(current, fresh) = published();
  }
  if (current && fresh) return current;
  return rebuildLocked();
}

}  // namespace

GitRepoSignals::GitRepoSignals(ProjectLocation location, GitSignalsOptions options)
    : location_(std::move(location)), options_(std::move(options)) {
  ensureLibgit2();
  if (!location_.inGit) {
    openStatus_ = Status::notFound(location_.root + " is not inside a git work tree");
    spdlog::info("memq: {} is not in a git repository; co-change and blast radius stay empty", location_.root);
    return;
  }
  walkRepo_ = openRepository(location_.gitWorkTreeTop, openStatus_);
  if (walkRepo_) quickRepo_ = openRepository(location_.gitWorkTreeTop, openStatus_);
  if (!openStatus_.isOk()) {
    walkRepo_.reset();
    quickRepo_.reset();
    spdlog::warn("memq: repository signals disabled for {}: {}", location_.root, openStatus_.message());
    return;
  }
  cache_ = std::make_unique<CoChangeCache>(location_.dbPath, worktreeKey(location_));
  renames_ = RenameMap::open(location_);
  Status copiesStatus;
  if (auto repo = openRepository(location_.gitWorkTreeTop, copiesStatus)) {
    copies_ = std::make_unique<CopySources>(std::move(repo));
  }
}

RepoRefreshInfo GitRepoSignals::refresh() {
  RepoRefreshInfo info = refreshDetailed();
  if (renames_) renames_->refresh();
  return info;
}

void GitRepoSignals::followRenames() {
  if (renames_) renames_->refresh();
}

std::vector<RenamedPath> GitRepoSignals::renamedFrom(const std::vector<std::string>& paths) {
  if (!renames_) return {};
  std::vector<std::string> clean;
  for (const auto& p : paths) {
    if (auto c = cleanRelative(p)) clean.push_back(std::move(*c));
  }
  std::vector<RenamedPath> out = renames_->renamedFrom(clean);
  for (const auto& path : clean) {
    if (std::any_of(out.begin(), out.end(), [&](const RenamedPath& r) { return r.path == path; })) continue;
    auto source = copySourceOf(path);
    if (!source) continue;
    // The copy's source, then whatever that file was renamed from in turn.
    RenamedPath copied{path, {*source}};
    for (auto& earlier : renames_->renamedFrom({*source})) {
      for (auto& p : earlier.earlier) {
        if (p != path) copied.earlier.push_back(std::move(p));
      }
    }
    out.push_back(std::move(copied));
  }
  return out;
}

std::optional<std::string> GitRepoSignals::copySourceOf(const std::string& path) {
  const std::string prefix = location_.repoPrefix.empty() ? "" : location_.repoPrefix + "/";
  // The HEAD other signals see (re-checked at most every headCheckInterval), not a revision parse per lookup.
  const std::string headTree = observeHead(false).tree;
  if (!copies_ || headTree.empty() || copies_->headHas(headTree, prefix + path)) return std::nullopt;
  // Only a file in the work tree is a copy of something: read it (bounded) and hash it as git would.
  const std::string full = location_.root + "/" + path;
  struct stat st {};
  if (::stat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxCopySourceBytes) return std::nullopt;
  // Without blocking and bounded: a FIFO put there after the stat does not hang the request, and a file that grew
  // since is not read whole.
  const std::optional<std::string> content = readWholeFile(full, kMaxCopySourceBytes);
  if (!content) return std::nullopt;
  git_oid oid;
  if (git_odb_hash(&oid, content->data(), content->size(), GIT_OBJECT_BLOB) < 0) return std::nullopt;
  auto source = copies_->sourceOf(headTree, prefix + path, *content, oidHex(oid));
  // A source outside the project root is not followed, as with renames.
  if (!source || source->compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return source->substr(prefix.size());
}

GitRepoSignals::~GitRepoSignals() = default;

GitRepoSignals::HeadView GitRepoSignals::observeHead(bool force) {
  MutexLock lock(quickMu_);
  if (!quickRepo_) return {};
  const auto now = Clock::now();
  if (!force && headChecked_ && now - headCheckedAt_ < options_.headCheckInterval) return head_;
  headChecked_ = true;
  headCheckedAt_ = now;
  // A symbolic HEAD and a detached one alike, through libgit2 only when HEAD's files changed; nullopt when unborn.
  const std::optional<git_oid> resolved = headReader_.read(quickRepo_.get());
  if (!resolved) {
    head_ = {};
    headTree_.reset();
    return head_;
  }
  const git_oid oid = *resolved;
  const std::string commit = oidHex(oid);
  if (commit == head_.commit && headTree_) return head_;
  git_commit* rawCommit = nullptr;
  git_tree* rawTree = nullptr;
  if (git_commit_lookup(&rawCommit, quickRepo_.get(), &oid) < 0) {
    head_ = {};
    headTree_.reset();
    return head_;
  }
  CommitPtr c(rawCommit);
  if (git_commit_tree(&rawTree, c.get()) < 0) {
    head_ = {};
    headTree_.reset();
    return head_;
  }
  headTree_.reset(rawTree);
  head_ = {commit, oidHex(*git_tree_id(rawTree))};
  return head_;
}

std::string GitRepoSignals::head() { return observeHead(false).commit; }

void GitRepoSignals::observeHeadNow() { observeHead(true); }

void GitRepoSignals::publishCochange(std::shared_ptr<const CoChangeSnapshot> snap) {
  MutexLock lock(snapMu_);
  cochange_ = std::move(snap);
}

RefreshStats GitRepoSignals::refreshDetailed() {
  MutexLock lock(refreshMu_);
  RefreshStats stats = refreshLocked();
  observeBuiltHeadLocked();
  return stats;
}

void GitRepoSignals::observeBuiltHeadLocked() {
  // A rebuild reads HEAD live, so it may build for a commit newer than the HEAD the lookups observed (one that
  // landed after their request started). Left at that older observation for up to headCheckInterval, every lookup
  // would find the view not matching it and build again: one whole build per queried file. Observing HEAD after
  // the build gives the HEAD built for (or one newer still, which then costs one more build, not one per lookup),
  // and a view is never older than an observation made before its build.
  observeHead(true);
}

RefreshStats GitRepoSignals::refreshLocked() {
  const auto start = Clock::now();
  snapshotBuilds_.fetch_add(1, std::memory_order_relaxed);  // every path below publishes a snapshot
  RefreshStats stats;
  auto giveUp = [&](Status why, std::string head, bool logAsWarning) REQUIRES(refreshMu_) {
    if (why.message() != lastEmptyReason_) {
      if (logAsWarning) {
        spdlog::warn("memq: co-change for {} is empty: {}", location_.root, why.message());
      } else {
        spdlog::info("memq: co-change for {} is empty: {}", location_.root, why.message());
      }
      lastEmptyReason_ = why.message();
    }
    counts_.clear();
    publishCochange(CoChangeSnapshot::empty(head));
    stats.head = std::move(head);
    stats.status = std::move(why);
    stats.elapsedMs = msSince(start);
    return stats;
  };
  if (!walkRepo_) return giveUp(openStatus_, "", location_.inGit);

  git_oid headOid;
  const int rc = git_reference_name_to_id(&headOid, walkRepo_.get(), "HEAD");
  if (rc < 0) {
    if (git_repository_head_unborn(walkRepo_.get()) == 1 || rc == GIT_ENOTFOUND) {
      return giveUp(Status::notFound("the repository has no commits yet"), "", false);
    }
    return giveUp(gitStatus(rc, "reading HEAD"), "", true);
  }

  const std::string settings = options_.cochange.fingerprint();
  if (!cacheLoaded_) {
    cache_->load(settings, counts_);
    cacheLoaded_ = true;
  }
  const std::string fromHead = counts_.head;
  CoChangeBuilder builder(walkRepo_.get(), options_.cochange);
  Result<CoChangeUpdate> update = builder.update(counts_, headOid);
  if (!update.isOk()) return giveUp(update.status(), oidHex(headOid), true);
  lastEmptyReason_.clear();

  if (update->rebuilt) {
    cache_->saveFull(settings, counts_);
  } else if (update->walkedCommits > 0 || update->evictedCommits > 0) {
    cache_->saveDelta(settings, fromHead, counts_, update->added, update->removedSeqs);
  }
  counts_.clearDirty();

  // Partners deleted since they co-changed would only waste top-k slots: keep files present at HEAD.
  TreePtr tree;
  {
    git_commit* rawCommit = nullptr;
    git_tree* rawTree = nullptr;
    if (git_commit_lookup(&rawCommit, walkRepo_.get(), &headOid) == 0) {
      CommitPtr commit(rawCommit);
      if (git_commit_tree(&rawTree, commit.get()) == 0) tree.reset(rawTree);
    }
  }
  auto existsAtHead = [&tree](const std::string& repoPath) {
    if (!tree) return true;
    git_tree_entry* entry = nullptr;
    if (git_tree_entry_bypath(&entry, tree.get(), repoPath.c_str()) < 0) return false;
    git_tree_entry_free(entry);
    return true;
  };
  auto snap = CoChangeSnapshot::build(counts_, location_.repoPrefix, options_.cochange.minCount, existsAtHead);

  stats.walkedCommits = static_cast<int>(update->walkedCommits);
  stats.readCommits = static_cast<int>(update->readCommits);
  stats.evictedCommits = static_cast<int>(update->evictedCommits);
  stats.rebuilt = update->rebuilt;
  stats.totalCommits = static_cast<int>(counts_.window.size());
  stats.pairs = static_cast<int>(snap->pairCount());
  stats.head = counts_.head;
  publishCochange(std::move(snap));
  stats.elapsedMs = msSince(start);
  spdlog::debug("memq: co-change refresh of {}: walked {} evicted {} window {} pairs {} in {:.1f} ms{}",
                location_.root, stats.walkedCommits, stats.evictedCommits, stats.totalCommits, stats.pairs,
                stats.elapsedMs, stats.rebuilt ? " (rebuilt)" : "");
  return stats;
}

std::shared_ptr<const CoChangeSnapshot> GitRepoSignals::freshCochange() {
  if (!location_.inGit || !quickRepo_) return nullptr;
  const HeadView h = observeHead(false);
  return currentOrRebuilt<CoChangeSnapshot>(
      refreshMu_, snapMu_,
      [&]() REQUIRES(snapMu_) { return std::pair{cochange_, cochange_ && cochange_->head() == h.commit}; },
      [&]() REQUIRES(refreshMu_) {
        refreshLocked();
        observeBuiltHeadLocked();
        MutexLock snapLock(snapMu_);
        return cochange_;
      });
}

std::vector<CoChangeNeighbor> GitRepoSignals::cochangeNeighbors(const std::string& path, size_t limit) {
  auto p = cleanRelative(path);
  if (!p || limit == 0) return {};
  auto snap = freshCochange();
  return snap ? snap->neighbors(*p, limit) : std::vector<CoChangeNeighbor>{};
}

std::shared_ptr<const DependencyGraph> GitRepoSignals::buildDependenciesLocked(std::string& treeOut) {
  const auto start = Clock::now();
  dependencyGraphBuilds_.fetch_add(1, std::memory_order_relaxed);
  treeOut.clear();
  git_oid headOid;
  git_commit* rawCommit = nullptr;
  git_tree* rawTree = nullptr;
  if (git_reference_name_to_id(&headOid, walkRepo_.get(), "HEAD") < 0 ||
      git_commit_lookup(&rawCommit, walkRepo_.get(), &headOid) < 0) {
    return DependencyGraph::build({}, {}, location_.repoPrefix);
  }
  CommitPtr commit(rawCommit);
  if (git_commit_tree(&rawTree, commit.get()) < 0) return DependencyGraph::build({}, {}, location_.repoPrefix);
  TreePtr tree(rawTree);
  treeOut = oidHex(*git_tree_id(tree.get()));

  std::vector<TreeFile> files;
  Status walked = gitStatus(git_tree_walk(tree.get(), GIT_TREEWALK_PRE, collectTreeFile, &files), "listing HEAD");
  if (!walked.isOk()) spdlog::warn("memq: blast radius for {}: {}", location_.root, walked.message());

  std::vector<std::string> tracked;
  std::vector<SourceImports> sources;
  std::unordered_map<std::string, std::vector<ImportRef>> kept;
  tracked.reserve(files.size());
  size_t read = 0;
  for (TreeFile& f : files) {
    tracked.push_back(f.path);
    if (f.language == SourceLanguage::kNone) continue;
    std::string blobId = oidHex(f.oid);
    auto cached = importsByBlob_.find(blobId);
    std::vector<ImportRef> imports;
    if (cached != importsByBlob_.end()) {
      imports = cached->second;
    } else {
      git_blob* rawBlob = nullptr;
      if (git_blob_lookup(&rawBlob, walkRepo_.get(), &f.oid) == 0) {
        BlobPtr blob(rawBlob);
        const auto size = git_blob_rawsize(blob.get());
        if (size <= options_.maxSourceBytes && git_blob_is_binary(blob.get()) == 0) {
          imports = scanImports(
              f.language, std::string_view(static_cast<const char*>(git_blob_rawcontent(blob.get())), size));
        }
      }
      ++read;
    }
    if (!imports.empty()) sources.push_back({f.path, imports});
    kept.emplace(std::move(blobId), std::move(imports));
  }
  // Only this tree's blobs stay cached: the map cannot grow past one tree's worth.
  importsByBlob_ = std::move(kept);
  auto graph = DependencyGraph::build(tracked, sources, location_.repoPrefix);
  spdlog::debug("memq: dependency graph of {} at tree {}: {} files, {} read, {} edges, p95 {} in {:.1f} ms",
                location_.root, treeOut.substr(0, 12), tracked.size(), read, graph->edgeCount(),
                graph->p95Radius(), msSince(start));
  return graph;
}

std::shared_ptr<const DependencyGraph> GitRepoSignals::freshDependencies() {
  if (!location_.inGit || !quickRepo_) return nullptr;
  const HeadView h = observeHead(false);
  return currentOrRebuilt<DependencyGraph>(
      refreshMu_, snapMu_, [&]() REQUIRES(snapMu_) { return std::pair{deps_, deps_ && depsTree_ == h.tree}; },
      [&]() REQUIRES(refreshMu_) {
        std::string tree;
        auto graph = buildDependenciesLocked(tree);
        observeBuiltHeadLocked();
        MutexLock snapLock(snapMu_);
        deps_ = graph;
        depsTree_ = tree;
        return graph;
      });
}

int GitRepoSignals::blastRadius(const std::string& path) {
  auto p = cleanRelative(path);
  if (!p) return 0;
  auto graph = freshDependencies();
  return graph ? graph->radius(*p) : 0;
}

std::vector<std::string> GitRepoSignals::dependents(const std::string& path) {
  auto p = cleanRelative(path);
  if (!p) return {};
  auto graph = freshDependencies();
  return graph ? graph->dependents(*p) : std::vector<std::string>{};
}

double GitRepoSignals::blastDamped(int radius) {
  auto graph = freshDependencies();
  return graph ? graph->damped(radius) : dampBlastRadius(radius, 0);
}

std::optional<std::string> GitRepoSignals::blobIdAtHead(const std::string& path) {
  auto p = cleanRelative(path);
  if (!p || !location_.inGit) return std::nullopt;
  observeHead(false);
  MutexLock lock(quickMu_);
  if (!headTree_) return std::nullopt;
  const std::string repoPath = location_.repoPrefix.empty() ? *p : location_.repoPrefix + "/" + *p;
  git_tree_entry* raw = nullptr;
  if (git_tree_entry_bypath(&raw, headTree_.get(), repoPath.c_str()) < 0) return std::nullopt;
  TreeEntryPtr entry(raw);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  return oidHex(*git_tree_entry_id(entry.get()));
}

std::optional<std::string> GitRepoSignals::workTreeBlobId(const std::string& path) {
  auto p = cleanRelative(path);
  if (!p) return std::nullopt;
  const std::string full = location_.root + "/" + *p;
  struct stat st {};
  if (lstat(full.c_str(), &st) != 0) return std::nullopt;
  git_oid oid;
  if (S_ISLNK(st.st_mode)) {
    // git stores a symlink as a blob of its target text, so hash that rather than what it points to.
    std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096), '\0');
    const ssize_t n = readlink(full.c_str(), target.data(), target.size());
    if (n < 0) return std::nullopt;
    target.resize(static_cast<size_t>(n));
    if (git_odb_hash(&oid, target.data(), target.size(), GIT_OBJECT_BLOB) < 0) return std::nullopt;
    return oidHex(oid);
  }
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  const FileStamp stamp = FileStamp::of(st);
  const int64_t readAt = FileStamp::nowNs();
  if (location_.inGit) {
    MutexLock lock(quickMu_);
    auto known = workTreeIds_.find(full);
    if (known != workTreeIds_.end() && known->second.settled && known->second.stamp == stamp) {
      return known->second.id;
    }
    // Trusted by its stamp only once that had settled before the hash, so a write within the same timestamp tick
    // cannot leave a stale id behind (FileStamp); until then the bytes are read, compared with the last hash's and
    // hashed themselves when they differ.
    const bool settled = stamp.settledAt(readAt);
    std::optional<std::string> bytes;
    if (!settled && static_cast<size_t>(st.st_size) <= kMaxUnsettledBytes / 16) {
      bytes = readWholeFile(full, kMaxUnsettledBytes / 16);
    }
    if (bytes && known != workTreeIds_.end() && !known->second.settled && *bytes == known->second.unsettledBytes) {
      return known->second.id;
    }
    if (quickRepo_) {
      // Through the repository's filters (.gitattributes: eol conversion), as git hashes what it stores: an
      // unchanged file then hashes to the blob id git recorded, instead of looking stale on a CRLF checkout.
      const std::string repoPath = location_.repoPrefix.empty() ? *p : location_.repoPrefix + "/" + *p;
      const int rc = bytes ? hashAsStored(quickRepo_.get(), repoPath, *bytes, oid)
                           : git_repository_hashfile(&oid, quickRepo_.get(), full.c_str(), GIT_OBJECT_BLOB,
                                                     repoPath.c_str());
      if (rc == 0) {
        std::string id = oidHex(oid);
        if (settled || bytes) {
          const size_t kept = bytes ? bytes->size() : 0;
          if (workTreeIds_.size() >= kMaxWorkTreeIds || unsettledBytes_ + kept > kMaxUnsettledBytes) {
            workTreeIds_.clear();
            unsettledBytes_ = 0;
          }
          WorkTreeId& slot = workTreeIds_[full];
          unsettledBytes_ -= slot.unsettledBytes.size();
          slot = {stamp, id, bytes ? std::move(*bytes) : std::string(), settled};
          unsettledBytes_ += slot.unsettledBytes.size();
        }
        return id;
      }
    }
  }
  if (git_odb_hashfile(&oid, full.c_str(), GIT_OBJECT_BLOB) < 0) return std::nullopt;
  return oidHex(oid);
}

namespace {

bool parseBlobId(const std::string& blobId, git_oid& oid) {
  return blobId.size() == GIT_OID_HEXSZ && git_oid_fromstr(&oid, blobId.c_str()) == 0;
}

}  // namespace

bool GitRepoSignals::hasBlob(const std::string& blobId) {
  git_oid oid;
  if (!parseBlobId(blobId, oid)) return false;
  MutexLock lock(quickMu_);
  if (!quickRepo_) return false;
  git_odb* raw = nullptr;
  if (git_repository_odb(&raw, quickRepo_.get()) < 0) return false;
  GitPtr<git_odb, git_odb_free> odb(raw);
  size_t size = 0;
  git_object_t type = GIT_OBJECT_INVALID;
  // The header only: existence and type, without inflating the object.
  return git_odb_read_header(&size, &type, odb.get(), &oid) == 0 && type == GIT_OBJECT_BLOB;
}

std::optional<std::string> GitRepoSignals::blobContent(const std::string& blobId) {
  git_oid oid;
  if (!parseBlobId(blobId, oid)) return std::nullopt;
  MutexLock lock(quickMu_);
  if (!quickRepo_) return std::nullopt;
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, quickRepo_.get(), &oid) < 0) return std::nullopt;
  BlobPtr blob(raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     static_cast<size_t>(git_blob_rawsize(blob.get())));
}

std::optional<std::string> GitRepoSignals::currentBlobId(const std::string& path) {
  // The work tree is what the user sees: a file deleted there (committed or not) makes the memory's ref dead.
  // Only a project without a work tree on disk (nothing checked out) falls back to HEAD.
  if (auto id = workTreeBlobId(path)) return id;
  struct stat st {};
  if (::stat(location_.root.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return std::nullopt;
  return blobIdAtHead(path);
}

}  // namespace memq
