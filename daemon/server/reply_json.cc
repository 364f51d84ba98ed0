// Memory records and recall hits as JSON text; see reply_json.h.
#include "daemon/server/reply_json.h"

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

// The record's members, and a hit's when `hit` is set, in serializeMessage's key order: object keys sorted byte-wise.
// Keeping one sequence for both is why the hit's members are interleaved here rather than appended.
void writeRecord(JsonWriter& w, const Memory& m, const RecallHit* hit, bool explain) {
  w.beginObject();
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
  for (const auto& f : m.files) w.string(f.path);
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
  for (const auto& f : m.files) n += f.path.size() + 3;
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

std::string recallHitsJsonText(const std::vector<RecallHit>& hits, bool explain) {
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
  w.endObject();
  return out;
}

}  // namespace memq
