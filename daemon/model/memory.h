// The memory record (docs/design.md §1) and its states (§2), with their JSON form on the wire.
// Plain data: no storage or transport here.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/line_range.h"

namespace memq {

enum class MemoryState { kActive, kHidden, kSuperseded, kRejected };

std::string_view stateName(MemoryState state);
std::optional<MemoryState> parseState(std::string_view name);

inline constexpr std::string_view kCategories[] = {"pref", "decision", "gotcha", "context"};
bool isValidCategory(std::string_view category);

// The lines of a file a memory is about, in one version of the file (docs/anchors.md).
struct FileAnchor {
  LineRanges lines;  // normalised: sorted, merged, 1 to kMaxAnchorRanges ranges
  std::string blob;  // the git blob id (40 lowercase hex) of the version the lines are in
  // That version's content when memq keeps it itself, because the repository's object database did not have it
  // when the anchor was written (an uncommitted edit, a project outside git). Carried on the way in (a save, an
  // import) and out (an export); null on refs read back for get, list or recall, which never need the bytes.
  std::shared_ptr<const std::string> keptContent;
};

struct FileRef {
  std::string path;                   // project-root relative, POSIX separators
  std::optional<std::string> blobId;  // git blob id when the ref was recorded (staleness)
  std::optional<FileAnchor> anchor;   // the lines it is about; none: the whole file
};

struct Memory {
  int64_t pk = 0;  // storage key (never on the wire)
  std::string id;  // UUID v4
  std::string scope;  // "project" | "global"
  std::optional<std::string> category;
  std::string summary;
  std::string details;
  std::vector<std::string> topics;
  std::vector<FileRef> files;
  std::string source = "agent";
  std::optional<std::string> sessionId;
  std::string createdAt;
  std::string updatedAt;
  std::string lastUsedAt;
  int64_t useCount = 0;
  bool pinned = false;
  MemoryState state = MemoryState::kActive;
  std::optional<std::string> supersededBy;
  std::optional<std::string> stateReason;
  std::string contentHash;
};

// Lines as the protocol writes them: [[first, last], ...].
nlohmann::json lineRangesToJson(const LineRanges& lines);

// A file ref as replies write it: the path alone (a string) for a plain ref, {path, lines, blob} for an anchored one.
nlohmann::json fileRefToJson(const FileRef& ref);

// The full record as docs/protocol.md returns it.
nlohmann::json memoryToJson(const Memory& memory);

// The actor recorded in the audit journal: the request's source plus the client name from `initialize`.
struct Actor {
  std::string source = "agent";  // "user" | "agent"
  std::string client;            // e.g. "memq-cli", "claude-code"
  std::string toString() const { return client.empty() ? source : source + ":" + client; }
};

}  // namespace memq
