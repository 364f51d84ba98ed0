// JSON form and name tables of the memory record.
#include "daemon/model/memory.h"

#include <algorithm>

namespace memq {

std::string_view stateName(MemoryState state) {
  switch (state) {
    case MemoryState::kActive: return "active";
    case MemoryState::kHidden: return "hidden";
    case MemoryState::kSuperseded: return "superseded";
    case MemoryState::kRejected: return "rejected";
  }
  return "active";
}

std::optional<MemoryState> parseState(std::string_view name) {
  if (name == "active") return MemoryState::kActive;
  if (name == "hidden") return MemoryState::kHidden;
  if (name == "superseded") return MemoryState::kSuperseded;
  if (name == "rejected") return MemoryState::kRejected;
  return std::nullopt;
}

bool isValidCategory(std::string_view category) {
  return std::find(std::begin(kCategories), std::end(kCategories), category) != std::end(kCategories);
}

nlohmann::json lineRangesToJson(const LineRanges& lines) {
  nlohmann::json out = nlohmann::json::array();
  for (const LineRange& r : lines) out.push_back({r.first, r.last});
  return out;
}

nlohmann::json fileRefToJson(const FileRef& ref) {
  if (!ref.anchor) return ref.path;
  return {{"path", ref.path}, {"lines", lineRangesToJson(ref.anchor->lines)}, {"blob", ref.anchor->blob}};
}

nlohmann::json memoryToJson(const Memory& m) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : m.files) files.push_back(fileRefToJson(f));
  nlohmann::json j = {
      {"id", m.id},
      {"scope", m.scope},
      {"category", m.category ? nlohmann::json(*m.category) : nlohmann::json(nullptr)},
      {"summary", m.summary},
      {"details", m.details},
      {"topics", m.topics},
      {"files", files},
      {"source", m.source},
      {"session_id", m.sessionId ? nlohmann::json(*m.sessionId) : nlohmann::json(nullptr)},
      {"created_at", m.createdAt},
      {"updated_at", m.updatedAt},
      {"last_used_at", m.lastUsedAt},
      {"use_count", m.useCount},
      {"pinned", m.pinned},
      {"state", stateName(m.state)},
      {"superseded_by", m.supersededBy ? nlohmann::json(*m.supersededBy) : nlohmann::json(nullptr)},
      {"content_hash", m.contentHash},
  };
  if (m.stateReason) j["state_reason"] = *m.stateReason;
  return j;
}

}  // namespace memq
