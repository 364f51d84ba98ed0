// The JSONL form of `export` and `import`: one memory or tombstone per line, written and read here.
//
// Writing: memoryLine and tombstoneLine give the exact bytes of a line, so export → import → export is byte-identical.
// Reading: parseImportLine (and stageImportLines, over a request's lines) reads and validates one line on its own (what needs no database): a line that is not a
// JSON object, an unknown `type`, a missing `summary`, an `id` or `superseded_by` that is not a memory id (empty,
// path-like, upper case), a timestamp that is not one, a `use_count` that is not a whole number from 0 to
// kMaxImportedUseCount, a `content_hash` that is not 64 lowercase hex digits, a field of the wrong JSON type. Every
// error is InvalidParams with data {field: "jsonl", line: N}, its message naming the line and the field
// ("jsonl[line 7].use_count: ..."). What needs the scope's database (an id that exists with other content, a
// dangling `superseded_by`, a tombstone for text a memory still holds) is checked when the import is written
// (MemoryStore::importBatch).
// ExportCursor: where the next page of an export starts; opaque to clients.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/model/memory.h"
#include "daemon/store/memory_store.h"
#include "protocol/status.h"

namespace memq {

// The largest use_count an import keeps (a 32-bit count: far beyond any real use, and safe to increment).
inline constexpr int64_t kMaxImportedUseCount = 2147483647;

// The line `export` writes for a memory (no trailing newline).
std::string memoryLine(const Memory& memory);
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

// One line, read and validated: a memory (its id given or new) or a tombstone.
struct ImportLine {
  size_t line = 0;  // 1-based, counted over everything the import was sent
  bool isTombstone = false;
  Memory memory;
  Tombstone tombstone;
};

// The InvalidParams error for line `line`: "jsonl[line N].field: message", data {field: "jsonl", line: N}.
Status importLineError(size_t line, const std::string& field, const std::string& message);

// nullopt for a blank line (only spaces, tabs or a carriage return).
Result<std::optional<ImportLine>> parseImportLine(std::string_view text, size_t line, const ImportLineOptions& options);

// Reads every line of `jsonl` (split at '\n'; blank lines are counted and skipped) into `batch`, numbering them on
// from `lines`, which it advances; the first line in error stops it with that line's error.
Status stageImportLines(std::string_view jsonl, const ImportLineOptions& options, size_t& lines, ImportBatch& batch);

// Where the next page of an export starts: in scope `scope`, its memories after (createdAt, id) in export order,
// or (tombstones) its tombstones after (at, contentHash).
struct ExportCursor {
  std::string scope;
  bool tombstones = false;
  std::string afterKey;     // created_at, or a tombstone's at
  std::string afterSubkey;  // id, or a tombstone's content_hash
  std::string encode() const;
  // nullopt when `text` is not a cursor encode() wrote.
  static std::optional<ExportCursor> decode(const std::string& text);
};

}  // namespace memq
