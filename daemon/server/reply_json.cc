// Results as replies; see reply_json.h.
#include "daemon/server/reply_json.h"

#include "daemon/server/version.h"
#include "protocol/envelope.h"
#include "protocol/json_writer.h"

namespace memq {
namespace {

void optionalString(JsonWriter& w, const std::optional<std::string>& value) {
  if (value) {
    w.string(*value);
  } else {
    w.null();
  }
}

void stringArray(JsonWriter& w, const std::vector<std::string>& values) {
  w.beginArray();
  for (const auto& v : values) w.string(v);
  w.endArray();
}

// Lines as lineRangesToJson writes them: [[first, last], ...].
void writeLineRanges(JsonWriter& w, const LineRanges& lines) {
  w.beginArray();
  for (const LineRange& r : lines) {
    w.beginArray();
    w.integer(r.first);
    w.integer(r.last);
    w.endArray();
  }
  w.endArray();
}

// A file ref as fileRefToJson writes it: the path, or {blob, lines, path} (keys sorted) for an anchored ref.
void writeFileRef(JsonWriter& w, const FileRef& f) {
  if (!f.anchor) {
    w.string(f.path);
    return;
  }
  w.beginObject();
  w.key("blob");
  w.string(f.anchor->blob);
  w.key("lines");
  writeLineRanges(w, f.anchor->lines);
  w.key("path");
  w.string(f.path);
  w.endObject();
}

// The record's members, and a hit's when `hit` is set, in serializeMessage's key order: object keys sorted byte-wise.
// Keeping one sequence for both is why the hit's members are interleaved here rather than appended.
void writeRecord(JsonWriter& w, const Memory& m, const RecallHit* hit, bool explain) {
  w.beginObject();
  if (hit && !hit->anchoredLines.empty()) {
    w.key("anchored_lines");
    w.beginArray();
    for (const auto& a : hit->anchoredLines) {
      w.beginObject();
      w.key("lines");
      writeLineRanges(w, a.lines);
      w.key("path");
      w.string(a.path);
      if (!a.renamedFrom.empty()) {
        w.key("renamed_from");
        w.string(a.renamedFrom);
      }
      w.key("state");
      w.string(anchoredLinesStateName(a.state));
      w.endObject();
    }
    w.endArray();
  }
  w.key("category");
  optionalString(w, m.category);
  if (hit && !hit->changedFiles.empty()) {
    w.key("changed_files");
    stringArray(w, hit->changedFiles);
  }
  w.key("content_hash");
  w.string(m.contentHash);
  w.key("created_at");
  w.string(m.createdAt);
  w.key("details");
  w.string(m.details);
  if (hit && explain) {
    // Rare (a debugging aid) and small: the ranker's terms stay a nlohmann value, dumped apart.
    w.key("explain");
    w.beginObject();
    w.key("signals");
    w.raw(serializeMessage(hit->signals.toJson()));
    w.key("terms");
    w.raw(serializeMessage(hit->breakdown.terms));
    w.endObject();
  }
  w.key("files");
  w.beginArray();
  for (const auto& f : m.files) writeFileRef(w, f);
  w.endArray();
  w.key("id");
  w.string(m.id);
  w.key("last_used_at");
  w.string(m.lastUsedAt);
  if (hit && !hit->missingFiles.empty()) {
    w.key("missing_files");
    stringArray(w, hit->missingFiles);
  }
  if (hit) {
    w.key("normalized_score");
    w.number(hit->normalizedScore);
  }
  w.key("pinned");
  w.boolean(m.pinned);
  w.key("scope");
  w.string(m.scope);
  if (hit) {
    w.key("score");
    w.number(hit->score);
  }
  w.key("session_id");
  optionalString(w, m.sessionId);
  if (hit) {
    w.key("signals");
    w.beginArray();
    hit->signals.forEachFiredLane([&](const char* lane) { w.string(lane); });
    w.endArray();
  }
  w.key("source");
  w.string(m.source);
  if (hit) {
    w.key("stale");
    w.boolean(hit->stale);
  }
  w.key("state");
  w.string(stateName(m.state));
  if (m.stateReason) {
    w.key("state_reason");
    w.string(*m.stateReason);
  }
  w.key("summary");
  w.string(m.summary);
  w.key("superseded_by");
  optionalString(w, m.supersededBy);
  w.key("topics");
  stringArray(w, m.topics);
  w.key("updated_at");
  w.string(m.updatedAt);
  w.key("use_count");
  w.integer(m.useCount);
  w.endObject();
}

// A record is mostly its text; this covers keys, punctuation and the short fields.
constexpr size_t kRecordOverhead = 512;

size_t textSize(const Memory& m) {
  size_t n = kRecordOverhead + m.summary.size() + m.details.size();
  for (const auto& t : m.topics) n += t.size() + 3;
  for (const auto& f : m.files) n += f.path.size() + 3 + (f.anchor ? 72 + 24 * f.anchor->lines.size() : 0);
  return n;
}

}  // namespace

std::string memoryJsonText(const Memory& memory) {
  std::string out;
  out.reserve(textSize(memory));
  JsonWriter w(out);
  writeRecord(w, memory, nullptr, false);
  return out;
}

std::string recallHitsJsonText(const std::vector<RecallHit>& hits, bool explain,
                               const std::vector<std::string>& warnings) {
  size_t size = 32;
  for (const auto& h : hits) size += textSize(h.memory);
  std::string out;
  out.reserve(size);
  JsonWriter w(out);
  w.beginObject();
  w.key("memories");
  w.beginArray();
  for (const auto& h : hits) writeRecord(w, h.memory, &h, explain);
  w.endArray();
  if (!warnings.empty()) {  // the answer may be incomplete (a team scope answered from its replica while offline)
    w.key("warnings");
    w.beginArray();
    for (const auto& text : warnings) w.string(text);
    w.endArray();
  }
  w.endObject();
  return out;
}

std::string replyText(const SaveResult& r) {
  // Keys sorted byte-wise, as serializeMessage writes a tree. A queued save has no id yet.
  std::string out;
  out.reserve(256 + (r.memory ? textSize(*r.memory) : 0));
  JsonWriter w(out);
  w.beginObject();
  if (!r.anchored.empty()) {
    w.key("anchored");
    w.beginArray();
    for (const auto& a : r.anchored) {
      w.beginObject();
      w.key("lines");
      writeLineRanges(w, a.lines);
      w.key("path");
      w.string(a.path);
      w.endObject();
    }
    w.endArray();
  }
  if (r.hint) {
    w.key("hint");
    w.string(*r.hint);
  }
  w.key("id");
  if (r.status == SaveStatus::kQueued) {
    w.null();
  } else {
    w.string(r.id);
  }
  if (r.memory) {
    w.key("memory");
    writeRecord(w, *r.memory, nullptr, false);
  }
  if (r.reason) {
    w.key("reason");
    w.string(*r.reason);
  }
  w.key("redactions");
  w.beginArray();
  for (const auto& red : r.redactions) {
    w.beginObject();
    w.key("field");
    w.string(red.field);
    w.key("kind");
    w.string(red.kind);
    w.endObject();
  }
  w.endArray();
  w.key("scope");
  w.string(toString(r.scope));
  w.key("similar");
  w.beginArray();
  for (const auto& hint : r.similar) {
    w.beginObject();
    w.key("id");
    w.string(hint.id);
    w.key("kind");
    w.string(hint.kind);
    w.key("summary");
    w.string(hint.summary);
    w.key("weight");
    w.number(hint.weight);
    w.endObject();
  }
  w.endArray();
  w.key("status");
  w.string(toString(r.status));
  if (r.supersededBy) {
    w.key("superseded_by");
    w.string(*r.supersededBy);
  }
  if (r.topicsMerged) {
    w.key("topics_merged");
    w.boolean(true);
  }
  w.key("warnings");
  stringArray(w, r.warnings);
  w.endObject();
  return out;
}

namespace {

using json = nlohmann::json;

json memoriesJson(const std::vector<Memory>& memories) {
  json out = json::array();
  for (const auto& m : memories) out.push_back(memoryToJson(m));
  return out;
}

// A review's memories, each with the files it was flagged for under `filesKey`.
json flaggedJson(const std::vector<FlaggedMemory>& flagged, const char* filesKey) {
  json out = json::array();
  for (const auto& f : flagged) {
    json j = memoryToJson(f.memory);
    j[filesKey] = f.files;
    out.push_back(std::move(j));
  }
  return json{{"memories", std::move(out)}};
}

json redactionsJson(const std::vector<Redaction>& redactions) {
  json out = json::array();
  for (const auto& r : redactions) out.push_back({{"kind", r.kind}, {"field", r.field}});
  return out;
}

}  // namespace

json replyJson(const InitializeResult& r) {
  json project = nullptr;
  if (r.project) project = {{"root", r.project->root}, {"db_path", r.project->dbPath}, {"in_git", r.project->inGit}};
  return json{{"server_version", kMemqdVersion},
              {"protocol_version", kProtocolVersion},
              {"capabilities",
               {{"framing", {"ndjson", "content-length"}},
                {"rankers", {"default", "reference"}},
                {"embedder", r.embedderModel},
                {"notifications", {"memory/changed"}}}},
              {"session", r.session},
              {"project", project}};
}

json replyJson(const Memory& memory) { return memoryToJson(memory); }

json replyJson(const UpdateOutcome& r) {
  json out = memoryToJson(r.memory);
  out["redactions"] = redactionsJson(r.redactions);
  out["warnings"] = r.warnings;
  return out;
}

json replyJson(const ListResult& r) {
  json out{{"memories", memoriesJson(r.memories)}, {"total", r.total}};
  if (!r.warnings.empty()) out["warnings"] = r.warnings;  // the answer may be incomplete
  return out;
}

json replyJson(const SupersedeResult& r) {
  return json{{"old", memoryToJson(r.old)}, {"new", memoryToJson(r.replacement)}};
}

json replyJson(const PurgeResult& r) { return json{{"purged", true}, {"id", r.id}}; }

json replyJson(const HintResult& r) {
  json hints = json::array();
  for (const auto& line : r.hints) {
    hints.push_back({{"id", line.id}, {"label", line.label}, {"summary", line.summary}, {"text", line.text}});
  }
  return json{{"lines", r.lines}, {"hints", std::move(hints)}, {"more", r.more}};
}

json replyJson(const HintTurn& r) { return json{{"turn", r.turn}}; }

json replyJson(const CochangeResult& r) {
  json neighbors = json::array();
  for (const auto& n : r.neighbors) {
    neighbors.push_back({{"path", n.path}, {"count", n.count}, {"strength", n.strength}});
  }
  return json{{"file", r.file}, {"neighbors", std::move(neighbors)}, {"head", r.head}};
}

json replyJson(const BlastRadius& r) {
  return json{{"file", r.file}, {"radius", r.radius}, {"dependents", r.dependents}};
}

json replyJson(const TeamStatusResult& r) {
  json out = {{"configured", r.configured}, {"config_path", r.configPath}};
  if (!r.configured) return out;
  out["conninfo"] = r.conninfo;
  out["online"] = r.online;
  out["role"] = r.role;
  out["last_seq"] = r.lastSeq;
  out["queued"] = r.queued;
  if (!r.lastError.empty()) out["error"] = r.lastError;
  return out;
}

json replyJson(const RepoRefreshResult& r) {
  return json{{"walked_commits", r.info.walkedCommits}, {"total_commits", r.info.totalCommits},
              {"pairs", r.info.pairs},                  {"head", r.info.head},
              {"elapsed_ms", r.info.elapsedMs},         {"rebuilt", r.info.rebuilt},
              {"in_git", r.inGit}};
}

json replyJson(const ClusterReport& r) {
  json clusters = json::array();
  for (const auto& c : r.clusters) {
    clusters.push_back({{"scope", toString(c.scope)}, {"weight", c.weight}, {"memories", memoriesJson(c.memories)}});
  }
  return json{{"clusters", std::move(clusters)}};
}

json replyJson(const StaleReport& r) {
  // An excerpt's lines under "text", and how many were left out under "more" (only when some were).
  auto withExcerpt = [](json side, const LinesExcerpt& e) {
    if (!e.text.empty()) side["text"] = e.text;
    if (e.more > 0) side["more"] = e.more;
    return side;
  };
  json out = json::array();
  for (const auto& m : r.memories) {
    json j = memoryToJson(m.memory);
    j["changed_files"] = m.files;
    json lines = json::array();
    for (const auto& a : m.anchoredLines) {
      lines.push_back(
          {{"path", a.now.path},
           {"state", anchoredLinesStateName(a.now.state)},
           {"then", withExcerpt({{"blob", a.blobThen}, {"lines", lineRangesToJson(a.linesThen)}}, a.textThen)},
           {"now", withExcerpt({{"lines", lineRangesToJson(a.now.lines)}}, a.textNow)}});
    }
    j["anchored_lines"] = std::move(lines);
    out.push_back(std::move(j));
  }
  return json{{"memories", std::move(out)}};
}

json replyJson(const DeadReport& r) { return flaggedJson(r.memories, "missing_files"); }

json replyJson(const AuditPage& r) {
  json events = json::array();
  for (const auto& entry : r.events) {
    const AuditEvent& e = entry.event;
    events.push_back({{"seq", e.seq}, {"at", e.at}, {"scope", toString(entry.scope)}, {"memory_id", e.memoryId},
                      {"action", e.action}, {"actor", e.actor}, {"detail", e.detail}, {"scrubbed", e.scrubbed}});
  }
  return json{{"events", std::move(events)}};
}

json replyJson(const ExportPage& r) {
  json out = {{"jsonl", r.jsonl}};
  if (r.nextCursor) out["next_cursor"] = *r.nextCursor;
  if (!r.warnings.empty()) out["warnings"] = r.warnings;  // the export may be incomplete
  return out;
}

json replyJson(const ImportCounts& r) {
  if (!r.committed) return json{{"staged_lines", r.stagedLines}};
  return json{{"created", r.created},       {"deduped", r.deduped},
              {"rejected", r.rejected},     {"tombstones", r.tombstones},
              {"staged_lines", r.stagedLines}};
}

json replyJson(const StatsReport& r) {
  json scopes = json::object();
  for (const auto& s : r.scopes) {
    json counters = s.counters;
    if (s.cochangeHead) counters["cochange_head"] = *s.cochangeHead;
    scopes[toString(s.scope)] = std::move(counters);
  }
  return json{{"scopes", std::move(scopes)}};
}

std::string replyText(const GetResult& r) {
  if (r.warnings.empty()) return memoryJsonText(r.memory);
  json out = memoryToJson(r.memory);
  out["warnings"] = r.warnings;  // the answer may be incomplete (Service::get)
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string replyText(const RecallHits& r) { return recallHitsJsonText(r.hits, r.explain, r.warnings); }

}  // namespace memq
