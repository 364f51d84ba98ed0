// The JSONL lines of export and import; see jsonl_transfer.h.
#include "daemon/service/jsonl_transfer.h"

#include <algorithm>
#include <cmath>

#include "daemon/anchors/line_ranges.h"
#include "daemon/model/memory_input.h"
#include "daemon/service/file_anchors.h"
#include "daemon/util/base64.h"
#include "daemon/util/clock.h"
#include "daemon/util/uuid.h"

namespace memq {

namespace {

using json = nlohmann::json;

Status scrubLineField(const ImportLineOptions& options, size_t line, std::string& text, const std::string& field) {
  Status st = options.scrub(text, field);
  if (st) return st;
  // A refused credential is a line error like any other (data.field "jsonl", data.line), keeping its kinds.
  json data = importLineError(line, field, st.message()).data();
  if (st.data().is_object() && st.data().contains("kinds")) data["kinds"] = st.data()["kinds"];
  return Status(st.code(), st.message(), std::move(data));
}

std::string dumpLine(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Reads one line's fields, each error naming the line and the field.
class LineReader {
 public:
  LineReader(const json& object, size_t line) : j_(object), line_(line) {}

  Status error(const std::string& field, const std::string& message) const {
    return importLineError(line_, field, message);
  }
  const json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  // A string field; nullopt when absent (or null, if `nullable`).
  Result<std::optional<std::string>> optString(const char* key, bool nullable) const {
    const json* v = find(key);
    if (v == nullptr || (nullable && v->is_null())) return std::optional<std::string>{};
    if (!v->is_string()) return error(key, std::string("must be a string") + (nullable ? " or null" : ""));
    return std::optional<std::string>(v->get<std::string>());
  }
  // The timestamp in the store's one form (UTC, milliseconds: 2026-11-29T14:33:25.605Z), whatever offset or
  // fraction the line wrote it with: lists and exports order by that text, and recency reads it.
  Result<std::optional<std::string>> optTimestamp(const char* key) const {
    auto s = optString(key, false);
    if (!s) return s.status();
    if (!*s) return s;
    const auto instant = parseIsoInstant(**s, IsoTimeForm::kTimestamp);
    const auto canonical = instant ? formatIsoInstant(*instant) : std::nullopt;
    if (!canonical) {
      return error(key, "must be a timestamp like 2026-11-29T14:33:25.605Z (a real date and time, then Z or an offset)");
    }
    return std::optional<std::string>(*canonical);
  }
  Result<std::optional<std::string>> optId(const char* key, bool nullable) const {
    auto s = optString(key, nullable);
    if (!s) return s.status();
    if (*s && !isMemoryId(**s)) {
      return error(key, "must be a memory id: 4 to 64 lowercase letters, digits, '-' or '_', starting with a letter "
                        "or digit");
    }
    return s;
  }

 private:
  const json& j_;
  size_t line_;
};

#define MEMQ_ASSIGN_OR_RETURN_LINE(lhs, expr) \
  auto lhs##_result = (expr);                 \
  if (!lhs##_result) return lhs##_result.status(); \
  auto lhs = std::move(*lhs##_result)

Result<int64_t> readUseCount(const json& v, const LineReader& r) {
  const std::string range = "must be a whole number from 0 to " + std::to_string(kMaxImportedUseCount);
  if (v.is_number_unsigned()) {
    const auto n = v.get<uint64_t>();
    if (n > static_cast<uint64_t>(kMaxImportedUseCount)) return r.error("use_count", range);
    return static_cast<int64_t>(n);
  }
  if (v.is_number_integer()) {
    const auto n = v.get<int64_t>();
    if (n < 0 || n > kMaxImportedUseCount) return r.error("use_count", range);
    return n;
  }
  if (v.is_number_float()) {
    // Compared as a double before any conversion: 1e300 or NaN must not wrap into some int.
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < 0 || d > static_cast<double>(kMaxImportedUseCount)) {
      return r.error("use_count", range);
    }
    return static_cast<int64_t>(d);
  }
  return r.error("use_count", range);
}

// The anchor of an exported file ref ({…, lines, blob, kept?}), checked as a save would check it where the line can
// say: the lines against the kept content when the line carries it (which must be the blob's), else on their own
// (the blob is the repository's, which the importing machine may not have yet).
Result<std::optional<FileAnchor>> readAnchor(const json& f, const std::string& field, const LineReader& r) {
  auto linesIt = f.find("lines");
  if (linesIt == f.end() || linesIt->is_null()) {
    if (f.contains("blob") || f.contains("kept")) return r.error(field + ".lines", "is required with blob");
    return std::optional<FileAnchor>{};
  }
  const std::string linesField = field + ".lines";
  const std::string pairs = "must be an array of [first, last] line pairs";
  if (!linesIt->is_array()) return r.error(linesField, pairs);
  LineRanges lines;
  for (const auto& p : *linesIt) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_unsigned() || !p[1].is_number_unsigned() ||
        p[0].get<uint64_t>() > UINT32_MAX || p[1].get<uint64_t>() > UINT32_MAX) {
      return r.error(linesField, pairs);
    }
    lines.push_back({static_cast<uint32_t>(p[0].get<uint64_t>()), static_cast<uint32_t>(p[1].get<uint64_t>())});
  }
  auto blob = f.find("blob");
  if (blob == f.end() || !blob->is_string() || !isStoredBlobId(blob->get<std::string>())) {
    return r.error(field + ".blob", "must be a blob id (40 lowercase hexadecimal digits)");
  }
  FileAnchor anchor{{}, blob->get<std::string>(), nullptr};
  Status valid;
  if (auto kept = f.find("kept"); kept != f.end() && !kept->is_null()) {
    std::optional<std::string> bytes = kept->is_string() ? base64Decode(kept->get<std::string>()) : std::nullopt;
    if (!bytes) return r.error(field + ".kept", "must be the version's content in base64");
    if (gitBlobId(*bytes) != anchor.blob) return r.error(field + ".kept", "is not the content of blob " + anchor.blob);
    valid = validateRangesInContent(lines, *bytes, linesField);
    anchor.keptContent = std::make_shared<const std::string>(std::move(*bytes));
  } else {
    valid = validateRanges(lines, linesField);
  }
  if (!valid) {
    const json& data = valid.data();
    const std::string at = data.is_object() && data.contains("field") ? data["field"].get<std::string>() : linesField;
    std::string message = valid.message();
    if (message.rfind(at + ": ", 0) == 0) message.erase(0, at.size() + 2);  // the line's error names the field
    return r.error(at, message);
  }
  anchor.lines = normalizeRanges(std::move(lines));
  return std::optional<FileAnchor>(std::move(anchor));
}

Result<ImportLine> readTombstone(const json& j, size_t line, const ImportLineOptions& options) {
  LineReader r(j, line);
  ImportLine out;
  out.line = line;
  out.isTombstone = true;
  Tombstone& t = out.tombstone;
  MEMQ_ASSIGN_OR_RETURN_LINE(hash, r.optString("content_hash", false));
  if (!hash) return r.error("content_hash", "is required on a tombstone line");
  if (!isContentHash(*hash)) return r.error("content_hash", "must be 64 lowercase hexadecimal digits (SHA-256)");
  t.contentHash = *hash;
  MEMQ_ASSIGN_OR_RETURN_LINE(memoryId, r.optString("memory_id", true));
  if (memoryId && !memoryId->empty() && !isMemoryId(*memoryId)) {
    return r.error("memory_id", "must be empty or a memory id: 4 to 64 lowercase letters, digits, '-' or '_'");
  }
  t.memoryId = memoryId.value_or("");
  MEMQ_ASSIGN_OR_RETURN_LINE(reason, r.optString("reason", true));
  t.reason = reason.value_or("");
  MEMQ_ASSIGN_OR_RETURN_LINE(actor, r.optString("actor", true));
  t.actor = actor.value_or(options.actor);
  MEMQ_ASSIGN_OR_RETURN_LINE(at, r.optTimestamp("at"));
  t.at = at.value_or(options.now);
  const std::string prefix = "jsonl[line " + std::to_string(line) + "].";
  if (options.scrub) {
    MEMQ_RETURN_IF_ERROR(scrubLineField(options, line, t.reason, prefix + "reason"));
    MEMQ_RETURN_IF_ERROR(scrubLineField(options, line, t.actor, prefix + "actor"));
  }
  return out;
}

Result<ImportLine> readMemory(const json& j, size_t line, const ImportLineOptions& options) {
  LineReader r(j, line);
  const std::string prefix = "jsonl[line " + std::to_string(line) + "].";
  ImportLine out;
  out.line = line;
  Memory& m = out.memory;

  SaveInput in;
  MEMQ_ASSIGN_OR_RETURN_LINE(summary, r.optString("summary", false));
  if (!summary) return r.error("summary", "is required on a memory line");
  in.summary = *summary;
  MEMQ_ASSIGN_OR_RETURN_LINE(details, r.optString("details", true));
  in.details = details.value_or("");
  MEMQ_ASSIGN_OR_RETURN_LINE(category, r.optString("category", true));
  in.category = category;
  if (const json* topics = r.find("topics"); topics != nullptr && !topics->is_null()) {
    if (!topics->is_array()) return r.error("topics", "must be an array of strings");
    for (const auto& t : *topics) {
      if (!t.is_string()) return r.error("topics", "must be an array of strings");
      in.topics.push_back(t.get<std::string>());
    }
  }
  std::vector<std::optional<std::string>> blobs;
  std::vector<std::optional<FileAnchor>> anchors;
  if (const json* files = r.find("files"); files != nullptr && !files->is_null()) {
    if (!files->is_array()) return r.error("files", "must be an array of paths or {path, blob_id} objects");
    for (size_t i = 0; i < files->size(); ++i) {
      const json& f = (*files)[i];
      const std::string field = "files[" + std::to_string(i) + "]";
      if (f.is_string()) {
        in.files.push_back(f.get<std::string>());
        blobs.push_back(std::nullopt);
        anchors.push_back(std::nullopt);
        continue;
      }
      if (!f.is_object() || !f.contains("path") || !f["path"].is_string()) {
        return r.error(field, "must be a path or a {path, blob_id} object");
      }
      in.files.push_back(f["path"].get<std::string>());
      auto blob = f.find("blob_id");
      if (blob != f.end() && !blob->is_null() && !blob->is_string()) {
        return r.error(field + ".blob_id", "must be a string or null");
      }
      blobs.push_back(blob != f.end() && blob->is_string() ? std::optional<std::string>(blob->get<std::string>())
                                                          : std::nullopt);
      MEMQ_ASSIGN_OR_RETURN_LINE(anchor, readAnchor(f, field, r));
      anchors.push_back(std::move(anchor));
    }
  }
  MEMQ_ASSIGN_OR_RETURN_LINE(source, r.optString("source", false));
  in.source = source.value_or("agent");
  MEMQ_ASSIGN_OR_RETURN_LINE(sessionId, r.optString("session_id", true));
  MEMQ_ASSIGN_OR_RETURN_LINE(stateReason, r.optString("state_reason", true));
  if (options.scrub) {
    // An import is a save too: every free-text field goes through the same scan, named by line.
    MEMQ_RETURN_IF_ERROR(scrubLineField(options, line, in.summary, prefix + "summary"));
    MEMQ_RETURN_IF_ERROR(scrubLineField(options, line, in.details, prefix + "details"));
    for (size_t i = 0; i < in.topics.size(); ++i) {
      MEMQ_RETURN_IF_ERROR(scrubLineField(options, line, in.topics[i], prefix + "topics[" + std::to_string(i) + "]"));
    }
    if (sessionId) MEMQ_RETURN_IF_ERROR(scrubLineField(options, line, *sessionId, prefix + "session_id"));
    if (stateReason) MEMQ_RETURN_IF_ERROR(scrubLineField(options, line, *stateReason, prefix + "state_reason"));
  }
  auto n = normalizeSave(in, options.projectRoot);
  if (!n) {
    const json& data = n.status().data();
    std::string field = data.is_object() && data.contains("field") && data["field"].is_string()
                            ? data["field"].get<std::string>()
                            : std::string("summary");
    return r.error(field, n.status().message());
  }

  MEMQ_ASSIGN_OR_RETURN_LINE(id, r.optId("id", true));
  m.id = id ? *id : newUuidV4();
  m.category = n->category;
  m.summary = n->summary;
  m.details = n->details;
  m.topics = n->topics;
  // Blob ids and anchors follow their path by position: an export's paths are already normalised, so none moves.
  // Paths that normalise to one (`src/a.ts` and `./src/a.ts`) would shift the ones after them onto other files.
  const bool carriesVersions =
      std::any_of(blobs.begin(), blobs.end(), [](const auto& b) { return b.has_value(); }) ||
      std::any_of(anchors.begin(), anchors.end(), [](const auto& a) { return a.has_value(); });
  if (carriesVersions && n->files.size() != in.files.size()) {
    return r.error("files", "names one file twice (paths that are the same once normalised); name each file once");
  }
  for (size_t i = 0; i < n->files.size(); ++i) {
    m.files.push_back({n->files[i], i < blobs.size() ? blobs[i] : std::nullopt,
                       i < anchors.size() ? anchors[i] : std::nullopt});
  }
  m.source = n->source;
  m.sessionId = sessionId;
  MEMQ_ASSIGN_OR_RETURN_LINE(createdAt, r.optTimestamp("created_at"));
  m.createdAt = createdAt.value_or(options.now);
  MEMQ_ASSIGN_OR_RETURN_LINE(updatedAt, r.optTimestamp("updated_at"));
  m.updatedAt = updatedAt.value_or(m.createdAt);
  MEMQ_ASSIGN_OR_RETURN_LINE(lastUsedAt, r.optTimestamp("last_used_at"));
  m.lastUsedAt = lastUsedAt.value_or(m.createdAt);
  if (const json* useCount = r.find("use_count"); useCount != nullptr) {
    auto count = readUseCount(*useCount, r);
    if (!count) return count.status();
    m.useCount = *count;
  }
  if (const json* pinned = r.find("pinned"); pinned != nullptr) {
    if (!pinned->is_boolean()) return r.error("pinned", "must be true or false");
    m.pinned = pinned->get<bool>();
  }
  MEMQ_ASSIGN_OR_RETURN_LINE(state, r.optString("state", false));
  if (state) {
    auto parsed = parseState(*state);
    if (!parsed) return r.error("state", "must be active, hidden, superseded or rejected");
    m.state = *parsed;
  }
  MEMQ_ASSIGN_OR_RETURN_LINE(supersededBy, r.optId("superseded_by", true));
  if (supersededBy && *supersededBy == m.id) return r.error("superseded_by", "names the memory itself");
  m.supersededBy = supersededBy;
  m.stateReason = stateReason;
  MEMQ_ASSIGN_OR_RETURN_LINE(hash, r.optString("content_hash", true));
  if (hash && !isContentHash(*hash)) return r.error("content_hash", "must be 64 lowercase hexadecimal digits (SHA-256)");
  // The hash stored is always the one of the text stored (after the scan and normalisation), never the line's.
  m.contentHash = n->contentHash;
  return out;
}

#undef MEMQ_ASSIGN_OR_RETURN_LINE

}  // namespace

std::string memoryLine(const Memory& m) {
  json j = memoryToJson(m);
  j["type"] = "memory";
  json files = json::array();
  for (const auto& f : m.files) {
    json ref = {{"path", f.path}, {"blob_id", f.blobId ? json(*f.blobId) : json()}};
    if (f.anchor) {
      ref["lines"] = lineRangesToJson(f.anchor->lines);
      ref["blob"] = f.anchor->blob;
      // The bytes of a version memq keeps (base64: they need not be UTF-8), so that the anchor can be carried
      // wherever the line is imported.
      if (f.anchor->keptContent) ref["kept"] = base64Encode(*f.anchor->keptContent);
    }
    files.push_back(std::move(ref));
  }
  j["files"] = files;
  if (m.stateReason) j["state_reason"] = *m.stateReason;
  return dumpLine(j);
}

std::string tombstoneLine(const Tombstone& t, const std::string& scope) {
  return dumpLine(json{{"type", "tombstone"}, {"scope", scope},   {"content_hash", t.contentHash},
                       {"memory_id", t.memoryId}, {"reason", t.reason}, {"actor", t.actor}, {"at", t.at}});
}

bool isMemoryId(std::string_view id) {
  // At least 4: the shortest id or prefix a method takes (the schemas' minLength), so that every imported memory
  // can be got, hidden, rejected and purged.
  if (id.size() < 4 || id.size() > 64) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(id.front())) return false;
  for (char c : id) {
    if (!alnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

bool isTimestamp(std::string_view text) { return parseIsoInstant(text, IsoTimeForm::kTimestamp).has_value(); }

bool isContentHash(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status importLineError(size_t line, const std::string& field, const std::string& message) {
  return Status(ErrorCode::kInvalidParams, "jsonl[line " + std::to_string(line) + "]." + field + ": " + message,
                json{{"field", "jsonl"}, {"line", line}});
}

Result<std::optional<ImportLine>> parseImportLine(std::string_view text, size_t line,
                                                  const ImportLineOptions& options) {
  if (text.find_first_not_of(" \t\r") == std::string_view::npos) return std::optional<ImportLine>{};
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) {
    return Status(ErrorCode::kInvalidParams, "jsonl[line " + std::to_string(line) + "] is not a JSON object",
                  json{{"field", "jsonl"}, {"line", line}});
  }
  auto type = j.find("type");
  if (type != j.end() && !(type->is_string() && (*type == "memory" || *type == "tombstone"))) {
    return importLineError(line, "type", "must be memory or tombstone");
  }
  auto parsed = type != j.end() && *type == "tombstone" ? readTombstone(j, line, options)
                                                        : readMemory(j, line, options);
  if (!parsed) return parsed.status();
  return std::optional<ImportLine>(std::move(*parsed));
}

Status stageImportLines(std::string_view jsonl, const ImportLineOptions& options, size_t& lines, ImportBatch& batch) {
  for (size_t start = 0; start < jsonl.size();) {
    size_t end = jsonl.find('\n', start);
    if (end == std::string_view::npos) end = jsonl.size();
    auto parsed = parseImportLine(jsonl.substr(start, end - start), ++lines, options);
    start = end + 1;
    if (!parsed) return parsed.status();
    if (!*parsed) continue;
    if ((*parsed)->isTombstone) {
      batch.tombstones.push_back({std::move((*parsed)->tombstone), (*parsed)->line});
    } else {
      batch.memories.push_back({std::move((*parsed)->memory), (*parsed)->line});
    }
  }
  return Status::ok();
}

std::string ExportCursor::encode() const {
  return json::array({"export-v1", scope, tombstones ? "tombstones" : "memories", afterKey, afterSubkey}).dump();
}

std::optional<ExportCursor> ExportCursor::decode(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_array() || j.size() != 5) return std::nullopt;
  for (const auto& v : j) {
    if (!v.is_string()) return std::nullopt;
  }
  if (j[0] != "export-v1" || (j[1] != "project" && j[1] != "global" && j[1] != "team") ||
      (j[2] != "memories" && j[2] != "tombstones")) {
    return std::nullopt;
  }
  ExportCursor c;
  c.scope = j[1].get<std::string>();
  c.tombstones = j[2] == "tombstones";
  c.afterKey = j[3].get<std::string>();
  c.afterSubkey = j[4].get<std::string>();
  return c;
}

}  // namespace memq
