// Params into request types; see request_params.h.
#include "daemon/server/request_params.h"

#include <optional>
#include <string>
#include <vector>

#include "daemon/anchors/line_ranges.h"
#include "daemon/recall/rankers.h"

namespace memq {

namespace {

using json = nlohmann::json;

// A member of the wrong JSON type reads as absent: the schema has refused it already where it matters.
std::optional<std::string> optStr(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::string str(const json& p, const char* key, const std::string& fallback = "") {
  return optStr(p, key).value_or(fallback);
}

std::optional<int64_t> optInt(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::optional<double> optNumber(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<bool> optBool(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

std::vector<std::string> strings(const json& p, const char* key) {
  std::vector<std::string> out;
  auto it = p.find(key);
  if (it == p.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

// The lines of an anchored `files` entry: [[first, last], ...]. The schema has checked the shape and that each
// number is from 0 to 2^32 - 1; what the numbers mean is checked by the service (validateRanges).
// `-0` is read as a signed integer 0: it is line 0 (refused by the service, naming the range), not no range at all.
LineRanges lineRanges(const json& lines) {
  LineRanges out;
  for (const auto& r : lines) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer()) continue;
    out.push_back({static_cast<uint32_t>(r[0].get<int64_t>()), static_cast<uint32_t>(r[1].get<int64_t>())});
  }
  return out;
}

// A `files` list whose entries are a path or {path, lines, blob?} (a file with lines of it anchored).
std::vector<FileEntry> fileEntries(const json& p, const char* key) {
  std::vector<FileEntry> out;
  auto it = p.find(key);
  if (it == p.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) {
      out.emplace_back(v.get<std::string>());
    } else if (v.is_object()) {
      auto lines = v.find("lines");
      out.emplace_back(str(v, "path"),
                       lines != v.end() ? std::optional<LineRanges>(lineRanges(*lines)) : std::nullopt,
                       optStr(v, "blob"));
    }
  }
  return out;
}

// A query's `files` (recall, search, hints): every entry's path, and the lines of those that name some, each set
// checked on its own (validateRanges: there is no version to check them against) and normalised.
Status readQueryFiles(const json& p, std::vector<std::string>& files, std::vector<PathLines>& lines) {
  const std::vector<FileEntry> entries = fileEntries(p, "files");
  for (size_t i = 0; i < entries.size(); ++i) {
    files.push_back(entries[i].path);
    if (!entries[i].lines) continue;
    MEMQ_RETURN_IF_ERROR(validateRanges(*entries[i].lines, "files[" + std::to_string(i) + "].lines"));
    lines.push_back({entries[i].path, normalizeRanges(*entries[i].lines)});
  }
  return Status::ok();
}

Status readReadScope(const json& p, std::optional<ReadScope>& out) {
  auto text = optStr(p, "read_scope");
  if (!text) return Status::ok();
  ReadScope r;
  if (!parseReadScope(*text, r)) return Status::invalidField("read_scope", "read_scope must be project, global, all or none");
  out = r;
  return Status::ok();
}

Status readWriteScope(const json& p, std::optional<WriteScope>& out) {
  auto text = optStr(p, "write_scope");
  if (!text) return Status::ok();
  WriteScope w;
  if (!parseWriteScope(*text, w)) return Status::invalidField("write_scope", "write_scope must be project, global or none");
  out = w;
  return Status::ok();
}

// memory/list's and export's `state`: one state, or "all" (nullopt).
Result<std::optional<MemoryState>> readStateOrAll(const json& p) {
  const std::string state = str(p, "state", "active");
  if (state == "all") return std::optional<MemoryState>{};
  if (auto s = parseState(state)) return std::optional<MemoryState>(*s);
  return Status::invalidField("state", "state must be active, hidden, superseded, rejected or all");
}

Status readRecallQuery(const json& p, size_t defaultLimit, RecallRequest& r) {
  r.query = str(p, "query");
  MEMQ_RETURN_IF_ERROR(readQueryFiles(p, r.files, r.lines));
  r.limit = static_cast<size_t>(optInt(p, "limit").value_or(static_cast<int64_t>(defaultLimit)));
  r.maxChars = static_cast<size_t>(optInt(p, "max_chars").value_or(2400));
  r.threshold = optNumber(p, "threshold");
  if (auto name = optStr(p, "ranker")) {
    if (!parseRanker(*name, r.ranker)) return Status::invalidField("ranker", "ranker must be default or reference");
  }
  r.explain = optBool(p, "explain").value_or(false);
  if (auto sem = optBool(p, "semantic")) r.useSemantic = *sem;
  return Status::ok();
}

}  // namespace

Result<CommonParams> readCommonParams(const json& p) {
  CommonParams out;
  out.projectRoot = optStr(p, "project_root");
  MEMQ_RETURN_IF_ERROR(readReadScope(p, out.readScope));
  MEMQ_RETURN_IF_ERROR(readWriteScope(p, out.writeScope));
  if (auto s = optStr(p, "scope")) {
    out.scope = parseScopeKind(*s);
    if (!out.scope) return Status::invalidField("scope", "scope must be project, global or team");
  }
  if (auto s = optStr(p, "source")) {
    if (*s != "user" && *s != "agent") return Status::invalidField("source", "source must be user or agent");
    out.source = *s;
  }
  return out;
}

Status readParams(const json& p, InitializeRequest& out) {
  out.clientName = str(p, "client_name", "anonymous");
  // client_version is accepted (schema/methods/initialize.json) and not kept: nothing reads it.
  out.projectRoot = optStr(p, "project_root");
  MEMQ_RETURN_IF_ERROR(readReadScope(p, out.readScope));
  MEMQ_RETURN_IF_ERROR(readWriteScope(p, out.writeScope));
  out.source = optStr(p, "source");
  out.parent = str(p, "parent");
  out.tab = str(p, "tab");
  return Status::ok();
}

Status readParams(const json& p, SaveInput& out) {
  out.summary = str(p, "summary");
  out.details = str(p, "details");
  out.category = optStr(p, "category");
  out.topics = strings(p, "topics");
  out.files = fileEntries(p, "files");
  out.source = str(p, "source");  // "": the request's actor (Service::save)
  out.sessionId = optStr(p, "session_id");
  out.mergeTopics = optBool(p, "merge_topics").value_or(false);
  out.anchorToWorkingSet = optBool(p, "anchor").value_or(true);
  return Status::ok();
}

Status readParams(const json& p, MemoryRef& out) {
  out.id = str(p, "id");
  return Status::ok();
}

Status readParams(const json& p, UpdateRequest& out) {
  out.id = str(p, "id");
  out.summary = optStr(p, "summary");
  out.details = optStr(p, "details");
  if (p.contains("category")) out.category = optStr(p, "category");  // null clears it
  if (p.contains("topics")) out.topics = strings(p, "topics");
  if (p.contains("files")) out.files = fileEntries(p, "files");
  out.pinned = optBool(p, "pinned");
  return Status::ok();
}

Status readParams(const json& p, ListFilter& out) {
  if (p.contains("category")) out.category = optStr(p, "category");  // null: uncategorised only
  out.topic = optStr(p, "topic");
  out.pinned = optBool(p, "pinned");
  auto state = readStateOrAll(p);
  if (!state) return state.status();
  out.state = *state;
  out.source = optStr(p, "source");  // a filter here: list is a read, so `source` names no actor
  out.file = optStr(p, "file");
  out.limit = static_cast<int>(optInt(p, "limit").value_or(50));
  out.offset = static_cast<int>(optInt(p, "offset").value_or(0));
  return Status::ok();
}

Status readParams(const json& p, SearchRequest& out) { return readRecallQuery(p, 10, out.query); }

Status readParams(const json& p, RecallParams& out) {
  MEMQ_RETURN_IF_ERROR(readRecallQuery(p, 3, out.query));
  out.markUsed = optBool(p, "mark_used").value_or(true);
  return Status::ok();
}

Status readParams(const json& p, StateChangeRequest& out) {
  out.id = str(p, "id");
  out.reason = optStr(p, "reason");
  return Status::ok();
}

Status readParams(const json& p, SupersedeRequest& out) {
  out.id = str(p, "id");
  out.by = str(p, "by");
  return Status::ok();
}

Status readParams(const json& p, PurgeRequest& out) {
  out.id = str(p, "id");
  out.confirm = optBool(p, "confirm").value_or(false);
  return Status::ok();
}

Status readParams(const json& p, FilesChange& out) {
  out.id = str(p, "id");
  out.files = fileEntries(p, "files");
  return Status::ok();
}

Status readParams(const json& p, HintsRequest& out) {
  out.tool = str(p, "tool");
  MEMQ_RETURN_IF_ERROR(readQueryFiles(p, out.files, out.lines));
  out.query = str(p, "query");
  return Status::ok();
}

Status readParams(const json&, NoParams&) { return Status::ok(); }

Status readParams(const json& p, TeamConnectRequest& out) {
  out.conninfo = str(p, "conninfo");
  return Status::ok();
}

Status readParams(const json& p, CochangeRequest& out) {
  out.file = str(p, "file");
  out.limit = static_cast<size_t>(optInt(p, "limit").value_or(10));
  return Status::ok();
}

Status readParams(const json& p, FileRequest& out) {
  out.file = str(p, "file");
  return Status::ok();
}

Status readParams(const json& p, ClusterRequest& out) {
  out.minWeight = optNumber(p, "min_weight").value_or(0.7);
  return Status::ok();
}

Status readParams(const json& p, ReviewRequest& out) {
  out.limit = static_cast<size_t>(optInt(p, "limit").value_or(50));
  return Status::ok();
}

Status readParams(const json& p, AuditFilter& out) {
  out.memoryId = optStr(p, "id");
  out.sinceSeq = optInt(p, "since_seq").value_or(0);
  out.sinceAt = optStr(p, "since");
  out.limit = static_cast<int>(optInt(p, "limit").value_or(100));
  return Status::ok();
}

Status readParams(const json& p, ExportRequest& out) {
  auto state = readStateOrAll(p);
  if (!state) return state.status();
  out.allStates = !state->has_value();
  out.state = *state;
  out.cursor = optStr(p, "cursor");
  return Status::ok();
}

Status readParams(const json& p, ImportRequest& out) {
  out.jsonl = str(p, "jsonl");
  out.more = optBool(p, "more").value_or(false);
  return Status::ok();
}

Status readParams(const json& p, SubscribeRequest& out) {
  out.scopes = strings(p, "scopes");
  return Status::ok();
}

}  // namespace memq
