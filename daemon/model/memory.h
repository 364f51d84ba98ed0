// The memory record (docs/design.md §1) and its states (§2), with their JSON form on the wire.
// Plain data: no storage or transport here.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memq {

enum class MemoryState { kActive, kHidden, kSuperseded, kRejected };

std::string_view stateName(MemoryState state);
std::optional<MemoryState> parseState(std::string_view name);

inline constexpr std::string_view kCategories[] = {"pref", "decision", "gotcha", "context"};
bool isValidCategory(std::string_view category);

struct FileRef {
  std::string path;                   // project-root relative, POSIX separators
  std::optional<std::string> blobId;  // git blob id when the ref was recorded
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

// The full record as docs/protocol.md returns it.
nlohmann::json memoryToJson(const Memory& memory);

// The actor recorded in the audit journal: the request's source plus the client name from `initialize`.
struct Actor {
  std::string source = "agent";  // "user" | "agent"
  std::string client;            // e.g. "memq-cli", "claude-code"
  std::string toString() const { return client.empty() ? source : source + ":" + client; }
};

}  // namespace memq
