// The JSONL form of `export` and `import`: one memory, tombstone or part of a kept version per line, written and read
// here.
//
// Writing: memoryLine, tombstoneLine and versionLine give the exact bytes of a line, so export → import → export is
// byte-identical. A version memq keeps (docs/anchors.md) goes in version lines of at most kVersionPartBytes of its
// content each, before the first memory of an export page that is anchored in it; the memory's anchor then says
// `"kept": true`. So no line grows with the versions a memory keeps (16 of 2 MiB would make a line of 43 MiB), and
// every line fits in one import request.
// Reading: parseImportLine (and stageImportLines, over a request's lines) reads and validates one line on its own (what needs no database): a line that is not a
// JSON object, an unknown `type`, a missing `summary`, an `id` or `superseded_by` that is not a memory id (empty,
// path-like, upper case), a timestamp that is not one, a `use_count` that is not a whole number from 0 to
// kMaxImportedUseCount, a `content_hash` that is not 64 lowercase hex digits, a field of the wrong JSON type. Every
// error is InvalidParams with data {field: "jsonl", line: N}, its message naming the line and the field
// ("jsonl[line 7].use_count: ..."). The version lines are put together as they come, over all the requests of an
// import (ImportStaging), and finishImportLines gives each `"kept": true` anchor its version once the last request
// came. What needs the scope's database (an id that exists with other content, a dangling `superseded_by`, a
// tombstone for text a memory still holds) is checked when the import is written (MemoryStore::importBatch).
// ExportCursor: where the next page of an export starts; opaque to clients.
// Thread-safety: pure functions; an ImportStaging is one import's, used by one request at a time.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/memory.h"
#include "daemon/store/memory_store.h"
#include "protocol/status.h"

namespace memq {

// The largest use_count an import keeps (a 32-bit count: far beyond any real use, and safe to increment).
inline constexpr int64_t kMaxImportedUseCount = 2147483647;

// The content one version line carries at most: its base64 (4/3 of it, about 683 KiB) and the rest of the line stay
// well inside one import request (1 MiB) and the 768 KiB of escaped lines the CLI puts in one.
inline constexpr size_t kVersionPartBytes = size_t{512} << 10;

// The line `export` writes for a memory (no trailing newline). An anchor in a version memq keeps is written with
// `"kept": true` (its content goes in version lines); `kept` says which anchors those are, and without it, the ones
// that carry their content (FileAnchor::keptContent).
std::string memoryLine(const Memory& memory, const std::function<bool(const FileAnchor&)>& kept = {});
// The version lines a kept version of `contentBytes` bytes takes: one per kVersionPartBytes, and one for an empty file.
size_t versionPartCount(size_t contentBytes);
// The line `export` writes for part `part` (1 to versionPartCount) of the version `blob` memq keeps in `scope`, whose
// content is `content` (no trailing newline): {"blob", "data" (that part's bytes in base64), "part", "parts",
// "scope", "type": "version"}.
std::string versionLine(const std::string& scope, const std::string& blob, std::string_view content, size_t part);
// versionLine(...).size(), from the content's length alone: export plans a page before it reads any version.
size_t versionLineLength(const std::string& scope, const std::string& blob, size_t contentBytes, size_t part);
// The line `export` writes for a tombstone of `scope` (no trailing newline).
std::string tombstoneLine(const Tombstone& tombstone, const std::string& scope);

// A memory id as memq hands them out: 4 to 64 characters of [a-z0-9_-], starting with a letter or digit. Nothing
// path-like ('/', '.', '\\', white space, control characters) and nothing a prefix lookup would miss (upper case).
bool isMemoryId(std::string_view id);
// A point in time as export writes it (IsoTimeForm::kTimestamp, daemon/util/clock.h): a real date and time.
bool isTimestamp(std::string_view text);
// 64 lowercase hexadecimal digits (SHA-256, content_hash.h).
bool isContentHash(std::string_view text);

struct ImportLineOptions {
  std::string projectRoot;  // for file paths: "" for the global scope
  std::string now;          // the time given to a memory or tombstone line without timestamps
  std::string actor;        // a tombstone line's actor when it names none
  // Runs one free-text field through the secret scanner (rewriting it, or refusing the line); `field` names it,
  // e.g. "jsonl[line 3].state_reason".
  std::function<Status(std::string& text, const std::string& field)> scrub;
};

// One part of a kept version, as a version line carries it.
struct VersionPart {
  std::string blob;   // the version's git blob id
  size_t part = 0;    // 1 to parts
  size_t parts = 0;   // 1 to what kMaxAnchoredFileBytes takes
  std::string bytes;  // this part of the content, decoded
};

// One line, read and validated: a memory (its id given or new), a tombstone or a part of a kept version.
struct ImportLine {
  size_t line = 0;  // 1-based, counted over everything the import was sent
  bool isTombstone = false;
  bool isVersionPart = false;
  Memory memory;
  Tombstone tombstone;
  VersionPart versionPart;
  // The files of `memory` (indexes into memory.files, which are the line's `files` indexes) whose anchor says
  // `"kept": true`: its content is in the import's version lines, and keptContent is still null.
  std::vector<size_t> keptInVersionLines;
};

// The InvalidParams error for line `line`: "jsonl[line N].field: message", data {field: "jsonl", line: N}.
Status importLineError(size_t line, const std::string& field, const std::string& message);

// nullopt for a blank line (only spaces, tabs or a carriage return).
Result<std::optional<ImportLine>> parseImportLine(std::string_view text, size_t line, const ImportLineOptions& options);

// A kept version of an import whose first parts came: parts 1 to `received` of `parts` are in `content`.
struct PartialKeptVersion {
  size_t parts = 0;
  size_t received = 0;
  std::string content;
  size_t line = 0;  // the line of the last part received
};

// An anchor of a staged memory that says `"kept": true`: it gets its version once every line came.
struct KeptAnchorRef {
  size_t memory = 0;  // index into ImportBatch::memories
  size_t file = 0;    // index into that memory's files
};

// An import as read so far, over all its requests: its memories and tombstones, the kept versions its version lines
// carried, and the memory all of it holds.
struct ImportStaging {
  ImportBatch batch;
  size_t lines = 0;  // every line received, blank ones included: the numbers errors give
  // What the staged lines hold in memory (an estimate: the strings' capacities, the batch's vectors, the versions'
  // bytes), not their length as JSONL: a line of 16 bytes ({"summary":"a"}) is a memory of several hundred.
  size_t bytes = 0;
  // The versions whose parts have all come, each checked against its blob id: by blob id.
  std::map<std::string, std::shared_ptr<const std::string>> versions;
  // The versions whose first parts have come: by blob id.
  std::map<std::string, PartialKeptVersion> partialVersions;
  // The `"kept": true` anchors, which get their version at the end (a version line may come after its memory).
  std::vector<KeptAnchorRef> keptAnchors;
};

// Reads every line of `jsonl` (split at '\n'; blank lines are counted and skipped) into `staging`, numbering them on
// from staging.lines, which it advances; the first line in error stops it with that line's error. A version part is
// added to its version (a version whose parts have all come is checked against its blob id; one sent again, as
// export does on each page that needs it, is taken once). `charge`, when given, is told what each line adds to
// staging.bytes as it is read, and its error stops the import there (memqd's bounds on what imports stage).
Status stageImportLines(std::string_view jsonl, const ImportLineOptions& options, ImportStaging& staging,
                        const std::function<Status(size_t bytes)>& charge = {});

// Once the import's last line came, before it is written: gives each `"kept": true` anchor its version, checking
// its lines against it. A line error for an anchor whose version no line carried (`files[i].kept`), whose lines the
// version does not have (`files[i].lines…`), or a version whose parts stopped short (`part`, on its last part's line).
// A version holding a credential is then let go, as a save keeps no copy of one (credentialInKeptVersion).
Status finishImportLines(ImportStaging& staging);

// Where the next page of an export starts: in scope `scope`, its memories after (createdAt, id) in export order,
// or (tombstones) its tombstones after (at, contentHash).
struct ExportCursor {
  std::string scope;
  bool tombstones = false;
  std::string afterKey;     // created_at, or a tombstone's at
  std::string afterSubkey;  // id, or a tombstone's content_hash
  // When the page ended inside the lines of the memory after those keys (its versions' parts fill more than a page):
  // that memory's id, and the version and part the page wrote last. Empty (and 0) otherwise.
  std::string inMemory;
  std::string inBlob;
  size_t inPart = 0;
  std::string encode() const;
  // nullopt when `text` is not a cursor encode() wrote.
  static std::optional<ExportCursor> decode(const std::string& text);
};

}  // namespace memq
