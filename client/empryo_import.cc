// Reads a reference (Empryo/SoulForge) memory.db (its schema version 3) and turns it into memq's export
// JSONL, so `memq import --from-empryo` brings every memory over with its state (hidden → hidden, superseded →
// superseded), files and topics. File refs memqd would refuse (absolute, or outside the project) and those past the
// 16 a memory keeps are left out and counted, for the CLI to say so; so is a superseded memory whose replacement the
// database no longer holds, which comes over hidden (memqd refuses a superseded memory that names no replacement).
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "client/commands.h"
#include "daemon/model/memory_input.h"

namespace memq::cli {

namespace {

using json = nlohmann::json;

// The reference writes ISO-8601 with 'Z'; rows inserted by raw SQL carry SQLite's "YYYY-MM-DD HH:MM:SS".
std::string isoTimestamp(const std::string& t) {
  if (t.size() == 19 && t[10] == ' ') return t.substr(0, 10) + "T" + t.substr(11) + ".000Z";
  return t;
}

// A reference file ref as memqd would store it: `\` as `/`, without `.`, `..` or doubled separators; nullopt for one
// that is absolute, climbs out of the project (`../x`, `src/../../x`) or names the project itself. memqd refuses
// those, and one refused line fails the whole import. The reference stored the paths it was given, and absolute or
// outside ones never matched a file of the project.
std::optional<std::string> projectRelativePath(std::string path) {
  std::replace(path.begin(), path.end(), '\\', '/');
  if (path.empty() || path.front() == '/') return std::nullopt;
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  if (parts.empty()) return std::nullopt;
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : "/") + part;
  return out;
}

}  // namespace

Result<std::string> empryoToJsonl(const std::string& path, EmpryoRefsLeftOut& leftOut) {
  leftOut = {};
  try {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    if (!db.tableExists("memories")) return Status::invalidField("from-empryo", path + " has no memories table");
    std::map<std::string, json> files;
    if (db.tableExists("memory_files")) {
      SQLite::Statement q(db, "SELECT memory_id, path FROM memory_files ORDER BY memory_id, path");
      while (q.executeStep()) {
        const auto p = projectRelativePath(q.getColumn(1).getString());
        if (!p) {
          ++leftOut.notInProject;
          continue;
        }
        auto& list = files[q.getColumn(0).getString()];
        if (!list.is_array()) list = json::array();
        if (std::find(list.begin(), list.end(), *p) != list.end()) continue;  // `./a` and `a`: one file
        if (list.size() < kMaxFiles) {
          list.push_back(*p);
        } else {
          ++leftOut.pastLimit;
        }
      }
    }
    SQLite::Statement q(db,
                        "SELECT id, category, summary, details, topics, source, session_id, created_at, last_used_at, "
                        "use_count, pinned, hidden, superseded_by FROM memories ORDER BY created_at, id");
    // The ids a superseded_by may name: import refuses one that names nothing.
    std::set<std::string> ids;
    {
      SQLite::Statement all(db, "SELECT id FROM memories");
      while (all.executeStep()) ids.insert(all.getColumn(0).getString());
    }
    std::string out;
    while (q.executeStep()) {
      json m;
      m["type"] = "memory";
      m["id"] = q.getColumn(0).getString();
      m["category"] = q.getColumn(1).isNull() ? json() : json(q.getColumn(1).getString());
      m["summary"] = q.getColumn(2).getString();
      m["details"] = q.getColumn(3).getString();
      json topics = json::parse(q.getColumn(4).getString(), nullptr, false);
      json cleanTopics = json::array();
      if (topics.is_array()) {
        for (const auto& t : topics) {
          if (t.is_string()) cleanTopics.push_back(t);
        }
      }
      m["topics"] = cleanTopics;
      m["source"] = q.getColumn(5).getString() == "user" ? "user" : "agent";
      if (!q.getColumn(6).isNull()) m["session_id"] = q.getColumn(6).getString();
      m["created_at"] = isoTimestamp(q.getColumn(7).getString());
      m["last_used_at"] = isoTimestamp(q.getColumn(8).getString());
      m["updated_at"] = m["last_used_at"];
      m["use_count"] = q.getColumn(9).getInt64();
      m["pinned"] = q.getColumn(10).getInt() != 0;
      const bool hidden = q.getColumn(11).getInt() != 0;
      // A superseded memory names its replacement (docs/design.md), and import checks it does. One whose replacement
      // is gone (or is itself) comes over hidden: out of recall as it was, and restorable; the CLI says how many.
      const bool superseded = hidden && !q.getColumn(12).isNull();
      const std::string by = superseded ? q.getColumn(12).getString() : std::string();
      const bool replaced = superseded && by != m["id"].get<std::string>() && ids.count(by) > 0;
      if (superseded && !replaced) ++leftOut.supersededAsHidden;
      m["state"] = replaced ? "superseded" : hidden ? "hidden" : "active";
      if (replaced) m["superseded_by"] = by;
      m["files"] = files.count(m["id"]) ? files[m["id"]] : json::array();
      out += m.dump() + "\n";
    }
    return out;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInvalidParams, "cannot read " + path + ": " + e.what(),
                  json{{"field", "from-empryo"}});
  }
}

}  // namespace memq::cli
