// How StoreSql maps rows: the memory columns every read selects, a row to a Memory, and the binding of optional
// text. Private to store_sql*.cc.
#pragma once

#include <SQLiteCpp/Column.h>
#include <SQLiteCpp/Statement.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/model/memory.h"

namespace memq::sqlrows {

inline constexpr const char* kMemoryColumns =
    "pk, id, category, summary, details, topics, source, session_id, created_at, updated_at, last_used_at, "
    "use_count, pinned, state, superseded_by, state_reason, content_hash";

inline std::optional<std::string> optText(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getString();
}

inline std::vector<std::string> parseTopics(const std::string& text) {
  std::vector<std::string> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& t : j) {
    if (t.is_string()) out.push_back(t.get<std::string>());
  }
  return out;
}

// The file ref columns every read of refs selects, after whatever the statement selects first.
inline constexpr const char* kFileRefColumns = "path, blob_id, anchor_lines, anchor_blob";

// A file ref selected with kFileRefColumns from column `first` on. An anchor whose stored lines do not read back
// (a hand-edited file) is left out rather than failing the read: the ref still names its file.
inline FileRef fileRefFromRow(SQLite::Statement& q, int first) {
  FileRef f{q.getColumn(first).getString(), optText(q.getColumn(first + 1)), std::nullopt};
  auto lines = optText(q.getColumn(first + 2));
  auto blob = optText(q.getColumn(first + 3));
  if (lines && blob) {
    if (auto ranges = parseRangeList(*lines); ranges && !ranges->empty()) {
      f.anchor = FileAnchor{std::move(*ranges), *blob, nullptr};
    }
  }
  return f;
}

// A row selected with kMemoryColumns, without its file refs.
inline Memory memoryFromRow(SQLite::Statement& q, const std::string& scope) {
  Memory m;
  m.pk = q.getColumn(0).getInt64();
  m.id = q.getColumn(1).getString();
  m.category = optText(q.getColumn(2));
  m.summary = q.getColumn(3).getString();
  m.details = q.getColumn(4).getString();
  m.topics = parseTopics(q.getColumn(5).getString());
  m.source = q.getColumn(6).getString();
  m.sessionId = optText(q.getColumn(7));
  m.createdAt = q.getColumn(8).getString();
  m.updatedAt = q.getColumn(9).getString();
  m.lastUsedAt = q.getColumn(10).getString();
  m.useCount = q.getColumn(11).getInt64();
  m.pinned = q.getColumn(12).getInt() != 0;
  m.state = parseState(q.getColumn(13).getString()).value_or(MemoryState::kActive);
  m.supersededBy = optText(q.getColumn(14));
  m.stateReason = optText(q.getColumn(15));
  m.contentHash = q.getColumn(16).getString();
  m.scope = scope;
  return m;
}

inline void bindOpt(SQLite::Statement& q, int index, const std::optional<std::string>& v) {
  if (v) {
    q.bind(index, *v);
  } else {
    q.bind(index);
  }
}

}  // namespace memq::sqlrows
