// Validation and normalisation of what a client asks to store: trimming, truncation with warnings,
// topic de-duplication, category and source checks, path normalisation, UTF-8 checks, and the content hash.
// Pure apart from the symlink check in normalizeFilePath. Errors name the offending field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/line_range.h"
#include "protocol/status.h"

namespace memq {

inline constexpr size_t kMaxSummaryUnits = 200;   // UTF-16 units, as the reference counts
inline constexpr size_t kMaxDetailsUnits = 2000;
inline constexpr size_t kMaxTopics = 8;
inline constexpr size_t kMaxTopicCodePoints = 32;
inline constexpr size_t kMaxFiles = 16;  // the files one memory holds
// The largest file version whose lines are anchored: a kept version travels in the save journal and in export
// lines, and every version is read whole to count its lines.
inline constexpr size_t kMaxAnchoredFileBytes = size_t{2} << 20;
// The files one query may name (memory/recall, hints/for_tool): a change touches more files than a memory is about.
inline constexpr size_t kMaxQueryFiles = 256;

// A file as a request names it: a path, or a path with lines of it and, optionally, the version they are in
// (docs/anchors.md). The lines are as the client wrote them; the service validates them against the version.
struct FileEntry {
  std::string path;
  std::optional<LineRanges> lines;  // unset: the whole file
  std::optional<std::string> blob;  // the version's git blob id; unset: the file in the work tree now

  FileEntry() = default;
  FileEntry(std::string p) : path(std::move(p)) {}  // NOLINT: a plain path is a file entry
  FileEntry(const char* p) : path(p) {}             // NOLINT
  FileEntry(std::string p, std::optional<LineRanges> l, std::optional<std::string> b = std::nullopt)
      : path(std::move(p)), lines(std::move(l)), blob(std::move(b)) {}
};

// The paths of `entries`, in order.
std::vector<std::string> filePaths(const std::vector<FileEntry>& entries);

struct SaveInput {
  std::string summary;
  std::string details;
  std::optional<std::string> category;
  std::vector<std::string> topics;
  std::vector<FileEntry> files;  // anchors are resolved by the service (daemon/service/file_anchors.h)
  std::string source = "agent";
  std::optional<std::string> sessionId;
  bool mergeTopics = false;
  // memory/save's `anchor`: false keeps the service from anchoring the save to the lines its tab edited
  // (daemon/service/working_set_anchors.h).
  bool anchorToWorkingSet = true;
};

struct NormalizedSave {
  std::string summary;
  std::string details;
  std::optional<std::string> category;
  std::vector<std::string> topics;
  std::vector<std::string> files;  // normalised, de-duplicated, project-root relative
  std::string source;
  std::optional<std::string> sessionId;
  bool mergeTopics = false;
  bool truncated = false;  // summary or details was cut
  std::vector<std::string> warnings;
  std::string contentHash;
};

Result<NormalizedSave> normalizeSave(const SaveInput& input, std::string_view projectRoot);

// Shared pieces, also used by memory/update and attach.
Result<std::string> normalizeSummary(std::string_view summary, std::vector<std::string>& warnings, bool& truncated);
Result<std::string> normalizeDetails(std::string_view details, std::vector<std::string>& warnings, bool& truncated);
Result<std::vector<std::string>> normalizeTopics(const std::vector<std::string>& topics,
                                                 std::vector<std::string>& warnings);
// Each path through normalizeFilePath, de-duplicated; more than maxFiles is refused naming `field`.
Result<std::vector<std::string>> normalizeFiles(const std::vector<std::string>& files, std::string_view projectRoot,
                                                const std::string& field = "files", size_t maxFiles = kMaxFiles);
Status checkCategory(const std::optional<std::string>& category);
// A save of existing text keeps the memory's category: the warning that says so when the save asked for another,
// or nullopt when it asked for none or the same. `howToChange` ends the sentence ("memory/update changes it").
std::optional<std::string> categoryKeptWarning(const std::optional<std::string>& asked, const std::string& id,
                                               const std::optional<std::string>& kept, std::string_view howToChange);

// Trims ASCII and Unicode white space from both ends.
std::string trimText(std::string_view text);
// Topics joined by spaces, as the FTS lanes index them.
std::string topicsText(const std::vector<std::string>& topics);

}  // namespace memq
