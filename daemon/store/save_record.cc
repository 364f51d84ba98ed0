// SaveRecord's JSON form: written directly for every save (on the thread that answers it), read back by a replay;
// and the record that voids one.
#include "daemon/store/save_record.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <stdexcept>
#include <string_view>

#include "daemon/util/base64.h"
#include "protocol/json_writer.h"

namespace memq {

namespace {

std::optional<std::string> optFromJson(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<std::string>();
}

}  // namespace

std::string SaveRecord::toJson() const {
  // Written directly (JsonWriter), not through a nlohmann tree: this runs for every save, on the thread that answers
  // it. The same text nlohmann's dump gives (keys in byte order, invalid UTF-8 replaced).
  std::string out;
  out.reserve(256 + input.summary.size() + input.details.size());
  JsonWriter w(out);
  auto optString = [&w](const std::optional<std::string>& v) {
    if (v) {
      w.string(*v);
    } else {
      w.null();
    }
  };
  w.beginObject();
  w.key("actor_client");
  w.string(actor.client);
  w.key("actor_source");
  w.string(actor.source);
  w.key("at");
  w.string(at);
  w.key("category");
  optString(input.category);
  w.key("content_hash");
  w.string(input.contentHash);
  w.key("details");
  w.string(input.details);
  w.key("files");
  w.beginArray();
  for (const auto& f : files) {
    w.beginObject();
    if (f.anchor) {
      w.key("anchor_blob");
      w.string(f.anchor->blob);
      w.key("anchor_lines");
      w.string(formatRanges(f.anchor->lines));
    }
    w.key("blob_id");
    optString(f.blobId);
    if (f.anchor && f.anchor->keptContent) {
      // The bytes of a version memq keeps, so that a replay writes it too. Base64: the content need not be UTF-8,
      // and the writer would replace what is not.
      w.key("kept");
      w.string(base64Encode(*f.anchor->keptContent));
    }
    w.key("path");
    w.string(f.path);
    w.endObject();
  }
  w.endArray();
  w.key("id");
  w.string(id);
  w.key("merge_topics");
  w.boolean(input.mergeTopics);
  w.key("seq");
  w.integer(static_cast<int64_t>(seq));
  w.key("session_id");
  optString(input.sessionId);
  w.key("source");
  w.string(input.source);
  w.key("summary");
  w.string(input.summary);
  w.key("topics");
  w.beginArray();
  for (const auto& t : input.topics) w.string(t);
  w.endArray();
  w.key("truncated");
  w.boolean(input.truncated);
  w.endObject();
  return out;
}

SaveRecord SaveRecord::fromJson(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  // Checked first, so that such a journal is named for what it is, not for the first field an older record lacks.
  if (!j.is_object() || !j.contains("seq")) {
    throw std::runtime_error(
        "its records have no sequence numbers: it was written by an older memq, which numbered batches, and which of "
        "its saves the database already holds cannot be told; move the file aside to open the database without them");
  }
  SaveRecord r;
  r.id = j.at("id").get<std::string>();
  r.at = j.at("at").get<std::string>();
  r.input.summary = j.at("summary").get<std::string>();
  r.input.details = j.at("details").get<std::string>();
  r.input.category = optFromJson(j.at("category"));
  r.input.topics = j.at("topics").get<std::vector<std::string>>();
  r.input.source = j.at("source").get<std::string>();
  r.input.sessionId = optFromJson(j.at("session_id"));
  r.input.mergeTopics = j.at("merge_topics").get<bool>();
  r.input.truncated = j.at("truncated").get<bool>();
  r.input.contentHash = j.at("content_hash").get<std::string>();
  for (const auto& f : j.at("files")) {
    FileRef ref{f.at("path").get<std::string>(), optFromJson(f.at("blob_id")), std::nullopt};
    if (auto lines = f.find("anchor_lines"); lines != f.end()) {
      auto ranges = parseRangeList(lines->get<std::string>());
      if (!ranges || ranges->empty()) throw std::runtime_error("save record with malformed anchor lines");
      ref.anchor = FileAnchor{std::move(*ranges), f.at("anchor_blob").get<std::string>(), nullptr};
      if (auto kept = f.find("kept"); kept != f.end()) {
        auto bytes = base64Decode(kept->get<std::string>());
        if (!bytes) throw std::runtime_error("save record with a malformed kept version");
        ref.anchor->keptContent = std::make_shared<const std::string>(std::move(*bytes));
      }
    }
    r.files.push_back(std::move(ref));
    r.input.files.push_back(r.files.back().path);
  }
  r.actor.source = j.at("actor_source").get<std::string>();
  r.actor.client = j.at("actor_client").get<std::string>();
  r.seq = j.at("seq").get<uint64_t>();
  return r;
}

std::string voidRecordText(uint64_t seq) { return "{\"void\":" + std::to_string(seq) + "}"; }

std::optional<uint64_t> voidedSeq(const std::string& text) {
  constexpr std::string_view kPrefix = "{\"void\":";
  if (text.size() < kPrefix.size() + 2 || text.compare(0, kPrefix.size(), kPrefix) != 0 || text.back() != '}') {
    return std::nullopt;
  }
  uint64_t seq = 0;
  const char* first = text.data() + kPrefix.size();
  const char* last = text.data() + text.size() - 1;
  auto [end, ec] = std::from_chars(first, last, seq);
  if (ec != std::errc() || end != last) return std::nullopt;
  return seq;
}

}  // namespace memq
