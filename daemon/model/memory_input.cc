// Validation and normalisation of save input; see memory_input.h.
#include "daemon/model/memory_input.h"

#include <unordered_set>

#include "daemon/model/content_hash.h"
#include "daemon/model/file_path.h"
#include "daemon/model/memory.h"
#include "daemon/util/unicode.h"
#include "daemon/util/utf8.h"

namespace memq {

namespace {

bool isSpace(char32_t cp) { return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || isJsWhitespace(cp); }

// The first `maxCodePoints` code points of s.
std::string cutCodePoints(std::string_view s, size_t maxCodePoints) {
  size_t i = 0, n = 0;
  while (i < s.size() && n < maxCodePoints) {
    decodeUtf8At(s, i);
    ++n;
  }
  return std::string(s.substr(0, i));
}

Status checkUtf8(std::string_view text, const std::string& field) {
  if (!isValidUtf8(text)) return Status::invalidField(field, field + " is not valid UTF-8");
  if (text.find('\0') != std::string_view::npos) return Status::invalidField(field, field + " contains a NUL byte");
  return Status::ok();
}

}  // namespace

std::string trimText(std::string_view text) {
  size_t begin = 0;
  size_t end = text.size();
  // leading
  while (begin < end) {
    size_t i = begin;
    char32_t cp = decodeUtf8At(text, i);
    if (!isSpace(cp)) break;
    begin = i;
  }
  // trailing: walk back to the start of the last code point
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t i = start;
    char32_t cp = decodeUtf8At(text, i);
    if (!isSpace(cp)) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::string topicsText(const std::vector<std::string>& topics) {
  std::string out;
  for (const auto& t : topics) {
    if (!out.empty()) out.push_back(' ');
    out += t;
  }
  return out;
}

std::optional<std::string> categoryKeptWarning(const std::optional<std::string>& asked, const std::string& id,
                                               const std::optional<std::string>& kept, std::string_view howToChange) {
  if (!asked || asked == kept) return std::nullopt;
  return "category " + *asked + " not applied: memory " + id + " keeps " +
         (kept ? "its category " + *kept : std::string("no category")) + " (" + std::string(howToChange) + ")";
}

Result<std::string> normalizeSummary(std::string_view summary, std::vector<std::string>& warnings, bool& truncated) {
  MEMQ_RETURN_IF_ERROR(checkUtf8(summary, "summary"));
  std::string s = trimText(summary);
  if (s.empty()) return Status::invalidField("summary", "summary is required and must not be empty");
  size_t units = utf16Length(s);
  if (units > kMaxSummaryUnits) {
    s = truncateUtf16(s, kMaxSummaryUnits);
    truncated = true;
    warnings.push_back("summary truncated to " + std::to_string(kMaxSummaryUnits) + " characters (was " +
                       std::to_string(units) + ")");
  }
  return s;
}

Result<std::string> normalizeDetails(std::string_view details, std::vector<std::string>& warnings, bool& truncated) {
  MEMQ_RETURN_IF_ERROR(checkUtf8(details, "details"));
  std::string d = trimText(details);
  size_t units = utf16Length(d);
  if (units > kMaxDetailsUnits) {
    d = truncateUtf16(d, kMaxDetailsUnits);
    truncated = true;
    warnings.push_back("details truncated to " + std::to_string(kMaxDetailsUnits) + " characters (was " +
                       std::to_string(units) + ")");
  }
  return d;
}

Result<std::vector<std::string>> normalizeTopics(const std::vector<std::string>& topics,
                                                 std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  size_t dropped = 0;
  for (size_t i = 0; i < topics.size(); ++i) {
    std::string field = "topics[" + std::to_string(i) + "]";
    MEMQ_RETURN_IF_ERROR(checkUtf8(topics[i], field));
    std::string t = cutCodePoints(trimText(topics[i]), kMaxTopicCodePoints);
    t = trimText(t);
    if (t.empty()) continue;
    std::string key = jsToLowerUtf8(t);
    if (!seen.insert(key).second) continue;
    if (out.size() >= kMaxTopics) {
      ++dropped;
      continue;
    }
    out.push_back(std::move(t));
  }
  if (dropped > 0) {
    warnings.push_back("only the first " + std::to_string(kMaxTopics) + " topics were kept (" +
                       std::to_string(dropped) + " dropped)");
  }
  return out;
}

Result<std::vector<std::string>> normalizeFiles(const std::vector<std::string>& files, std::string_view projectRoot,
                                                const std::string& field, size_t maxFiles) {
  if (files.size() > maxFiles) {
    return Status::invalidField(field, field + " has " + std::to_string(files.size()) + " entries; at most " +
                                           std::to_string(maxFiles) +
                                           (maxFiles == kMaxFiles ? " files may be attached" : " files may be named"));
  }
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  std::optional<std::string> rootOnDisk;  // the root's real path, resolved once for all the paths
  for (size_t i = 0; i < files.size(); ++i) {
    std::string itemField = field + "[" + std::to_string(i) + "]";
    MEMQ_RETURN_IF_ERROR(checkUtf8(files[i], itemField));
    auto normalized = normalizeFilePath(files[i], projectRoot, itemField, &rootOnDisk);
    if (!normalized) return normalized.status();
    if (seen.insert(*normalized).second) out.push_back(std::move(*normalized));
  }
  return out;
}

std::vector<std::string> filePaths(const std::vector<FileEntry>& entries) {
  std::vector<std::string> out;
  out.reserve(entries.size());
  for (const auto& e : entries) out.push_back(e.path);
  return out;
}

Status checkCategory(const std::optional<std::string>& category) {
  if (category && !isValidCategory(*category)) {
    return Status::invalidField("category", "category must be one of pref, decision, gotcha, context (got '" +
                                                *category + "')");
  }
  return Status::ok();
}

Result<NormalizedSave> normalizeSave(const SaveInput& input, std::string_view projectRoot) {
  NormalizedSave out;
  auto summary = normalizeSummary(input.summary, out.warnings, out.truncated);
  if (!summary) return summary.status();
  out.summary = std::move(*summary);
  auto details = normalizeDetails(input.details, out.warnings, out.truncated);
  if (!details) return details.status();
  out.details = std::move(*details);
  MEMQ_RETURN_IF_ERROR(checkCategory(input.category));
  out.category = input.category;
  auto topics = normalizeTopics(input.topics, out.warnings);
  if (!topics) return topics.status();
  out.topics = std::move(*topics);
  auto files = normalizeFiles(filePaths(input.files), projectRoot);
  if (!files) return files.status();
  out.files = std::move(*files);
  if (input.source != "user" && input.source != "agent") {
    return Status::invalidField("source", "source must be 'user' or 'agent'");
  }
  out.source = input.source;
  if (input.sessionId) MEMQ_RETURN_IF_ERROR(checkUtf8(*input.sessionId, "session_id"));
  out.sessionId = input.sessionId;
  out.mergeTopics = input.mergeTopics;
  out.contentHash = contentHash(out.summary, out.details);
  return out;
}

}  // namespace memq
