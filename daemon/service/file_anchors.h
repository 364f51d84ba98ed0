// Line anchors of the files a write names (docs/anchors.md): for each entry of `files` that gives lines, the version
// they are in (the blob it names, else the file in the work tree now), the validation of the lines against that
// version, and whether memq keeps the version's content itself (the repository's object database lacks it). The
// lines of a query's files (recall, hints) are checked on their own. All of it runs before the scope's lock is
// taken and before anything is written, so an error refuses the whole request and stores nothing.
// Thread-safety: pure apart from reading the work tree and the repository (RepoSignals is thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/memory.h"
#include "daemon/model/memory_input.h"
#include "daemon/recall/repo_signals.h"
#include "protocol/status.h"

namespace memq {

struct AnchorSource {
  std::string root;             // the project root; "" for the global scope, where anchors are refused
  RepoSignals* repo = nullptr;  // the work tree's repository; null outside git
};

// The blob id git would give `content` (40 lowercase hex): a work-tree file equal to a committed blob is that version.
std::string gitBlobId(const std::string& content);

// The file at `path` under `root` as it is now: a regular file (a symlink is followed; normalizeFilePath has made
// sure it stays inside the project), read whole. InvalidParams naming `field` when it is not a file or is over
// kMaxAnchoredFileBytes.
Result<std::string> readWorkTreeFile(const std::string& root, const std::string& path, const std::string& field);

// A work-tree file as read: its content, the blob id git would give it, and what line validation needs.
struct WorkTreeFile {
  std::shared_ptr<const std::string> content;  // never null
  std::string blobId;
  uint32_t lines = 0;  // countLines
  bool binary = false;  // isBinaryContent
};

// readWorkTreeFile's file with its blob id and line count, shared. A file read before whose stamp (FileStamp) is
// unchanged and was settled when it was read comes from a bounded process-wide cache, without being read or hashed
// again: anchored saves and recalls with lines name the same few files over and over. A file changed moments ago is
// read every time, and hashed and counted again only when its bytes differ from the last read's.
Result<std::shared_ptr<const WorkTreeFile>> readWorkTreeVersion(const std::string& root, const std::string& path,
                                                                const std::string& field);

// Whether `text` is a blob id as memq stores them: 40 lowercase hexadecimal digits.
bool isStoredBlobId(const std::string& text);

// The kind of the first credential in the version `blob`, a file version memq would keep itself because the
// repository does not hold it (often a file git ignores, such as .env), or nullopt. Such a version is not kept: a
// kept version is stored, exported and synced byte for byte (its bytes must stay its blob's, so they cannot be
// redacted), so its anchor keeps its lines and blob id without the content, and its lines are no longer carried once
// the file changes. A blob id names its content, so the answer is remembered by blob (for the last 4,096 asked, in
// the process): `content` is called, and the version scanned (up to 2 MiB), only for a blob not asked before.
std::optional<std::string> credentialInKeptVersion(const std::string& blob,
                                                   const std::function<std::shared_ptr<const std::string>()>& content);

// Sets the anchor of each ref of `refs` (a request's files, normalised and de-duplicated, with their blob ids) that
// an entry of `entries` (the request's files as sent, named `field`) gives lines for. Errors name the entry:
// `files[2].lines[0]` (a bad range, validateRangesInContent), `files[2].lines` (a binary file, more than 64 ranges),
// `files[2].blob` (not a blob id, or not in the repository), `files[2]` (no such file in the work tree, too large,
// or anchors in the global scope); all InvalidParams. Two entries of one path merge their lines when they name the
// same version, and are refused when they do not. A version not kept for a credential in it
// (credentialInKeptVersion) adds a warning naming the entry to `warnings`, when given.
Status anchorFileRefs(const std::vector<FileEntry>& entries, const std::string& field, const AnchorSource& source,
                      std::vector<FileRef>& refs, std::vector<std::string>* warnings = nullptr);

}  // namespace memq
