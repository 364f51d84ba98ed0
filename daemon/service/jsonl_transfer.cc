// The JSONL lines of export and import; see jsonl_transfer.h.
#include "daemon/service/jsonl_transfer.h"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

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
// say: the lines against the kept content when the line carries it (`kept` a string, the content in base64, as
// exports wrote it before version lines; it must be the blob's), else on their own: the blob is the repository's,
// which the importing machine may not have yet, or (`kept` true) a version the import's version lines carry, whose
// content finishImportLines checks the lines against.
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
  auto kept = f.find("kept");
  if (kept != f.end() && !kept->is_null() && !kept->is_boolean() && !kept->is_string()) {
    return r.error(field + ".kept", "must be true (the version is in the import's version lines) or the version's "
                                    "content in base64");
  }
  if (kept != f.end() && kept->is_string()) {
    std::optional<std::string> bytes = base64Decode(kept->get<std::string>());
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
  // A superseded memory names its replacement, and only a superseded one does (docs/design.md). A line that does
  // not hold to that is made to, not refused: such rows exist in databases written before imports checked it, and
  // their exports must restore. A replacement named by another state is dropped (it would block the replacement's
  // purge with nothing to restore); a superseded memory naming none comes in hidden (a save of its text would be
  // answered with a replacement no method finds), as an import from the reference does.
  if (supersededBy && m.state != MemoryState::kSuperseded) supersededBy.reset();
  if (!supersededBy && m.state == MemoryState::kSuperseded) m.state = MemoryState::kHidden;
  m.supersededBy = supersededBy;
  m.stateReason = stateReason;
  MEMQ_ASSIGN_OR_RETURN_LINE(hash, r.optString("content_hash", true));
  if (hash && !isContentHash(*hash)) return r.error("content_hash", "must be 64 lowercase hexadecimal digits (SHA-256)");
  // The hash stored is always the one of the text stored (after the scan and normalisation), never the line's.
  m.contentHash = n->contentHash;
  return out;
}

#undef MEMQ_ASSIGN_OR_RETURN_LINE

// The most version lines one kept version takes: what kMaxAnchoredFileBytes, the largest version anchored, takes.
constexpr size_t kMaxVersionParts = (kMaxAnchoredFileBytes + kVersionPartBytes - 1) / kVersionPartBytes;

// A part of a kept version: {"type": "version", "blob", "part", "parts", "data", "scope"?}. The scope is the one
// the version was kept in, for the CLI to send the line with that scope's memories; the daemon writes every line of
// an import to the import's scope.
Result<ImportLine> readVersionPart(const json& j, size_t line) {
  LineReader r(j, line);
  ImportLine out;
  out.line = line;
  out.isVersionPart = true;
  VersionPart& v = out.versionPart;
  const json* blob = r.find("blob");
  if (blob == nullptr || !blob->is_string() || !isStoredBlobId(blob->get<std::string>())) {
    return r.error("blob", "must be a blob id (40 lowercase hexadecimal digits)");
  }
  v.blob = blob->get<std::string>();
  auto count = [&](const char* key, size_t most) -> Result<size_t> {
    const json* n = r.find(key);
    if (n == nullptr || !n->is_number_unsigned() || n->get<uint64_t>() < 1 || n->get<uint64_t>() > most) {
      return r.error(key, "must be a whole number from 1 to " + std::to_string(most));
    }
    return static_cast<size_t>(n->get<uint64_t>());
  };
  auto parts = count("parts", kMaxVersionParts);
  if (!parts) return parts.status();
  v.parts = *parts;
  auto part = count("part", v.parts);
  if (!part) return part.status();
  v.part = *part;
  const json* data = r.find("data");
  std::optional<std::string> bytes =
      data != nullptr && data->is_string() ? base64Decode(data->get<std::string>()) : std::nullopt;
  if (!bytes) return r.error("data", "must be the part's bytes in base64");
  if (bytes->size() > kVersionPartBytes) {
    return r.error("data", "holds " + std::to_string(bytes->size()) + " bytes; a part holds at most " +
                               std::to_string(kVersionPartBytes));
  }
  v.bytes = std::move(*bytes);
  return out;
}

// The anchors of a memory line that say `"kept": true`, by their index in `files` (which is their index in the
// memory's files: a line whose files carry anchors is refused when normalising its paths would move one).
std::vector<size_t> keptInVersionLines(const json& j) {
  std::vector<size_t> out;
  auto files = j.find("files");
  if (files == j.end() || !files->is_array()) return out;
  for (size_t i = 0; i < files->size(); ++i) {
    const json& f = (*files)[i];
    if (!f.is_object()) continue;
    auto kept = f.find("kept");
    if (kept != f.end() && kept->is_boolean() && kept->get<bool>()) out.push_back(i);
  }
  return out;
}

// What a staged line holds in memory besides its share of the batch's vectors: the heap its strings and vectors
// took. A string counts its capacity even when it is short enough to live inside the object (a few bytes too many,
// never too few).
size_t heldBytes(const std::string& s) { return s.capacity(); }
size_t heldBytes(const std::optional<std::string>& s) { return s ? s->capacity() : 0; }

size_t heldBytes(const Memory& m) {
  size_t n = heldBytes(m.id) + heldBytes(m.scope) + heldBytes(m.category) + heldBytes(m.summary) +
             heldBytes(m.details) + heldBytes(m.source) + heldBytes(m.sessionId) + heldBytes(m.createdAt) +
             heldBytes(m.updatedAt) + heldBytes(m.lastUsedAt) + heldBytes(m.supersededBy) +
             heldBytes(m.stateReason) + heldBytes(m.contentHash);
  n += m.topics.capacity() * sizeof(std::string);
  for (const auto& t : m.topics) n += heldBytes(t);
  n += m.files.capacity() * sizeof(FileRef);
  for (const auto& f : m.files) {
    n += heldBytes(f.path) + heldBytes(f.blobId);
    if (!f.anchor) continue;
    n += heldBytes(f.anchor->blob) + f.anchor->lines.capacity() * sizeof(LineRange);
    // A version a line carried itself (the older form): its own copy. One from version lines is the staging's.
    if (f.anchor->keptContent) n += f.anchor->keptContent->capacity() + sizeof(std::string);
  }
  return n;
}

size_t heldBytes(const Tombstone& t) {
  return heldBytes(t.contentHash) + heldBytes(t.memoryId) + heldBytes(t.reason) + heldBytes(t.actor) + heldBytes(t.at);
}

// Appends `item`; the bytes the vector's buffer grew by.
template <typename T>
size_t pushBack(std::vector<T>& items, T item) {
  const size_t before = items.capacity();
  items.push_back(std::move(item));
  return (items.capacity() - before) * sizeof(T);
}

// Adds a part to its version (parts go in order, from 1; a version's part 1 again starts it over, as an export whose
// memory changed between two pages may send it); the bytes staging holds the more.
Result<size_t> stageVersionPart(ImportStaging& staging, VersionPart& part, size_t line) {
  // A version sent again (export writes it on each page that needs it) is taken once.
  if (staging.versions.count(part.blob) != 0) return size_t{0};
  auto it = staging.partialVersions.find(part.blob);
  if (part.part == 1) {
    if (it == staging.partialVersions.end()) {
      it = staging.partialVersions.emplace(part.blob, PartialKeptVersion{}).first;
    }
    it->second = PartialKeptVersion{};
    it->second.parts = part.parts;
    // Every part but the last is as long as the first: room for all of them at once.
    it->second.content.reserve(part.parts * part.bytes.size());
  } else if (it == staging.partialVersions.end()) {
    return importLineError(line, "part",
                           "is part " + std::to_string(part.part) + " of version " + part.blob +
                               ", whose part 1 did not come before it: a version's parts go in order, from 1");
  } else if (part.part != it->second.received + 1 || part.parts != it->second.parts) {
    return importLineError(line, "part",
                           "is part " + std::to_string(part.part) + " of " + std::to_string(part.parts) +
                               " of version " + part.blob + ", after its part " +
                               std::to_string(it->second.received) + " of " + std::to_string(it->second.parts) +
                               ": a version's parts go in order, from 1");
  }
  PartialKeptVersion& version = it->second;
  const size_t before = part.part == 1 ? 0 : version.content.capacity();
  version.content += part.bytes;
  version.received = part.part;
  version.line = line;
  const size_t held = version.content.capacity() - before;
  if (version.received < version.parts) return held;
  const std::string id = gitBlobId(version.content);
  if (id != part.blob) {
    return importLineError(line, "data",
                           "the " + std::to_string(version.parts) + " parts of version " + part.blob +
                               " are not its content (theirs is blob " + id + ")");
  }
  staging.versions.emplace(part.blob, std::make_shared<const std::string>(std::move(version.content)));
  staging.partialVersions.erase(it);
  return held;
}

// A range error of `validateRangesInContent`, as the error of line `line`: named by the element it names.
Status rangesLineError(size_t line, const Status& valid, const std::string& linesField) {
  const json& data = valid.data();
  const std::string at = data.is_object() && data.contains("field") && data["field"].is_string()
                             ? data["field"].get<std::string>()
                             : linesField;
  std::string message = valid.message();
  if (message.rfind(at + ": ", 0) == 0) message.erase(0, at.size() + 2);  // the line's error names the field
  return importLineError(line, at, message);
}

}  // namespace

std::string memoryLine(const Memory& m, const std::function<bool(const FileAnchor&)>& kept) {
  json j = memoryToJson(m);
  j["type"] = "memory";
  json files = json::array();
  for (const auto& f : m.files) {
    json ref = {{"path", f.path}, {"blob_id", f.blobId ? json(*f.blobId) : json()}};
    if (f.anchor) {
      ref["lines"] = lineRangesToJson(f.anchor->lines);
      ref["blob"] = f.anchor->blob;
      // A version memq keeps travels in version lines of its own (versionLine), so that the anchor can be carried
      // wherever the line is imported: in the line, only that it does. (Its bytes here made one line of up to 43 MiB,
      // more than an import request or an export page may carry.)
      if (kept ? kept(*f.anchor) : f.anchor->keptContent != nullptr) ref["kept"] = true;
    }
    files.push_back(std::move(ref));
  }
  j["files"] = files;
  if (m.stateReason) j["state_reason"] = *m.stateReason;
  return dumpLine(j);
}

size_t versionPartCount(size_t contentBytes) {
  return contentBytes == 0 ? 1 : (contentBytes + kVersionPartBytes - 1) / kVersionPartBytes;
}

namespace {

// A version line with its data left out: what versionLineLength adds the base64 to.
json versionLineShell(const std::string& scope, const std::string& blob, size_t part, size_t parts) {
  return json{{"type", "version"}, {"scope", scope}, {"blob", blob}, {"part", part}, {"parts", parts}, {"data", ""}};
}

}  // namespace

std::string versionLine(const std::string& scope, const std::string& blob, std::string_view content, size_t part) {
  const size_t from = std::min(content.size(), (part - 1) * kVersionPartBytes);
  json j = versionLineShell(scope, blob, part, versionPartCount(content.size()));
  j["data"] = base64Encode(content.substr(from, kVersionPartBytes));
  return dumpLine(j);
}

size_t versionLineLength(const std::string& scope, const std::string& blob, size_t contentBytes, size_t part) {
  const size_t from = std::min(contentBytes, (part - 1) * kVersionPartBytes);
  const size_t partBytes = std::min(kVersionPartBytes, contentBytes - from);
  // Base64 needs no escape in JSON: the line is the shell and the encoded bytes.
  return dumpLine(versionLineShell(scope, blob, part, versionPartCount(contentBytes))).size() +
         (partBytes + 2) / 3 * 4;
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
  if (type != j.end() && !(type->is_string() && (*type == "memory" || *type == "tombstone" || *type == "version"))) {
    return importLineError(line, "type", "must be memory, tombstone or version");
  }
  const bool isTombstone = type != j.end() && *type == "tombstone";
  const bool isVersion = type != j.end() && *type == "version";
  auto parsed = isTombstone ? readTombstone(j, line, options)
                : isVersion ? readVersionPart(j, line)
                            : readMemory(j, line, options);
  if (!parsed) return parsed.status();
  if (!isTombstone && !isVersion) parsed->keptInVersionLines = keptInVersionLines(j);
  return std::optional<ImportLine>(std::move(*parsed));
}

Status stageImportLines(std::string_view jsonl, const ImportLineOptions& options, ImportStaging& staging,
                        const std::function<Status(size_t bytes)>& charge) {
  ImportBatch& batch = staging.batch;
  for (size_t start = 0; start < jsonl.size();) {
    size_t end = jsonl.find('\n', start);
    if (end == std::string_view::npos) end = jsonl.size();
    auto parsed = parseImportLine(jsonl.substr(start, end - start), ++staging.lines, options);
    start = end + 1;
    if (!parsed) return parsed.status();
    if (!*parsed) continue;
    ImportLine& l = **parsed;
    size_t held = 0;
    if (l.isVersionPart) {
      auto added = stageVersionPart(staging, l.versionPart, l.line);
      if (!added) return added.status();
      held = *added;
    } else if (l.isTombstone) {
      held = heldBytes(l.tombstone);  // before the move below
      held += pushBack(batch.tombstones, ImportedTombstone{std::move(l.tombstone), l.line});
    } else {
      for (size_t file : l.keptInVersionLines) {
        held += pushBack(staging.keptAnchors, KeptAnchorRef{batch.memories.size(), file});
      }
      held += heldBytes(l.memory);  // before the move below
      held += pushBack(batch.memories, ImportedMemory{std::move(l.memory), l.line});
    }
    staging.bytes += held;
    if (charge) MEMQ_RETURN_IF_ERROR(charge(held));
  }
  return Status::ok();
}

namespace {

// An imported version memq would keep is not kept when it holds a credential, as a save would not keep it
// (credentialInKeptVersion, which scans each version once, however many anchors share it): an export written
// before that rule, or by hand, may carry one. The import checked each version is the blob it names.
void dropKeptVersionsHoldingCredentials(ImportBatch& batch) {
  size_t dropped = 0;
  for (ImportedMemory& item : batch.memories) {
    for (FileRef& file : item.memory.files) {
      if (!file.anchor || !file.anchor->keptContent) continue;
      const std::shared_ptr<const std::string>& content = file.anchor->keptContent;
      if (!credentialInKeptVersion(file.anchor->blob, [&] { return content; })) continue;
      file.anchor->keptContent = nullptr;
      ++dropped;
    }
  }
  if (dropped > 0) {
    spdlog::warn("import: {} anchor(s) name a file version holding a credential; memq keeps no copy of such a "
                 "version (their lines and blob ids are kept)",
                 dropped);
  }
}

}  // namespace

Status finishImportLines(ImportStaging& staging) {
  // A version left partial that no memory of the import needs is let go: an export whose page ended inside a
  // version, with that memory changed before the next page (hidden, purged, re-based), writes part of a version that
  // no later line uses. One a memory needs is an error.
  for (const auto& [blob, version] : staging.partialVersions) {
    const std::string& partial = blob;  // clang 14 lets no lambda capture a structured binding
    const bool needed = std::any_of(staging.keptAnchors.begin(), staging.keptAnchors.end(), [&](const KeptAnchorRef& k) {
      const ImportedMemory& item = staging.batch.memories[k.memory];
      return k.file < item.memory.files.size() && item.memory.files[k.file].anchor &&
             item.memory.files[k.file].anchor->blob == partial;
    });
    if (!needed) continue;
    return importLineError(version.line, "part",
                           "version " + blob + " has " + std::to_string(version.received) + " of its " +
                               std::to_string(version.parts) + " parts: the import ended before the others");
  }
  for (const KeptAnchorRef& k : staging.keptAnchors) {
    ImportedMemory& item = staging.batch.memories[k.memory];
    if (k.file >= item.memory.files.size() || !item.memory.files[k.file].anchor) continue;  // `kept` needs lines
    FileRef& file = item.memory.files[k.file];
    const std::string field = "files[" + std::to_string(k.file) + "]";
    auto version = staging.versions.find(file.anchor->blob);
    if (version == staging.versions.end()) {
      return importLineError(item.line, field + ".kept",
                             "is true, but no version line of this import carries blob " + file.anchor->blob +
                                 " (export writes its {\"type\": \"version\"} lines, with the same scope, before "
                                 "the memory)");
    }
    const std::string linesField = field + ".lines";
    if (Status valid = validateRangesInContent(file.anchor->lines, *version->second, linesField); !valid) {
      return rangesLineError(item.line, valid, linesField);
    }
    file.anchor->keptContent = version->second;
  }
  dropKeptVersionsHoldingCredentials(staging.batch);
  return Status::ok();
}

std::string ExportCursor::encode() const {
  json j = json::array({"export-v1", scope, tombstones ? "tombstones" : "memories", afterKey, afterSubkey});
  // Inside a memory's lines: three more, so that a cursor between lines reads as it always did.
  if (!inMemory.empty()) {
    j.push_back(json(inMemory));
    j.push_back(json(inBlob));
    j.push_back(json(std::to_string(inPart)));
  }
  return j.dump();
}

std::optional<ExportCursor> ExportCursor::decode(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_array() || (j.size() != 5 && j.size() != 8)) return std::nullopt;
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
  if (j.size() == 8) {
    const std::string part = j[7].get<std::string>();
    if (c.tombstones || j[5].get<std::string>().empty() || part.empty() || part.size() > 3 ||
        part.find_first_not_of("0123456789") != std::string::npos || std::stoul(part) == 0) {
      return std::nullopt;
    }
    c.inMemory = j[5].get<std::string>();
    c.inBlob = j[6].get<std::string>();
    c.inPart = std::stoul(part);
  }
  return c;
}

}  // namespace memq
