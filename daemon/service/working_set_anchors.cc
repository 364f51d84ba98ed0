// How the service uses a tab's working set; see working_set_anchors.h.
#include "daemon/service/working_set_anchors.h"

#include <algorithm>

namespace memq {

namespace {

// Anchors `ref` to `lines` of the file as it is now; the reason when they do not fit it. What anchoring warns of
// (a version holding a credential, of which memq keeps no copy) goes to `warnings`.
std::optional<std::string> tryAnchor(const AnchorSource& source, const LineRanges& lines, FileRef& ref,
                                     std::vector<std::string>& warnings) {
  std::vector<FileRef> one{ref};
  const Status st = anchorFileRefs({FileEntry(ref.path, lines)}, "files", source, one, &warnings);
  if (!st) {
    // The field names this one-entry request's entry, not the save's: keep the reason alone.
    const std::string& message = st.message();
    const size_t colon = message.find(": ");
    return colon == std::string::npos ? message : message.substr(colon + 2);
  }
  ref.blobId = std::move(one.front().blobId);  // the version the lines are in (anchorFileRefs)
  ref.anchor = std::move(one.front().anchor);
  return std::nullopt;
}

std::string notAnchored(const std::string& path, const LineRanges& lines, const std::string& why) {
  return "files: " + path + " was not anchored to the lines this tab edited (" + formatRanges(lines) + "): " + why;
}

}  // namespace

void noteToolLines(WorkingSet& workingSet, const std::string& root, HintContext context,
                   const std::vector<PathLines>& lines) {
  if (context != HintContext::kRead && context != HintContext::kEdit) return;
  const auto kind = context == HintContext::kRead ? WorkingSet::Kind::kRead : WorkingSet::Kind::kEdited;
  for (const auto& l : lines) workingSet.note(root, l.path, kind, l.lines);
}

void fillFromWorkingSet(const WorkingSet& workingSet, const std::string& root, const std::vector<std::string>& files,
                        std::vector<PathLines>& lines) {
  for (const auto& path : files) {
    if (std::any_of(lines.begin(), lines.end(), [&](const PathLines& l) { return l.path == path; })) continue;
    LineRanges tab = workingSet.linesFor(root, path);
    if (!tab.empty()) lines.push_back({path, std::move(tab)});
  }
}

WorkingSetAnchors anchorToWorkingSet(const WorkingSet& workingSet, const AnchorSource& source,
                                     std::vector<std::string>& files, std::vector<FileRef>& refs) {
  WorkingSetAnchors out;
  if (source.root.empty()) return out;
  if (files.empty() && refs.empty()) {
    auto last = workingSet.lastEdited(source.root);
    if (!last) return out;
    FileRef ref;
    ref.path = last->path;
    if (source.repo) ref.blobId = source.repo->currentBlobId(ref.path);
    if (auto why = tryAnchor(source, last->lines, ref, out.warnings)) {
      out.warnings.push_back(notAnchored(last->path, last->lines, *why));
      return out;
    }
    files.push_back(ref.path);
    refs.push_back(std::move(ref));
    out.anchored.push_back(std::move(*last));
    return out;
  }
  for (auto& ref : refs) {
    if (ref.anchor) continue;  // the save named its lines
    LineRanges edited = workingSet.editedLines(source.root, ref.path);
    if (edited.empty()) continue;
    if (auto why = tryAnchor(source, edited, ref, out.warnings)) {
      out.warnings.push_back(notAnchored(ref.path, edited, *why));
      continue;
    }
    out.anchored.push_back({ref.path, std::move(edited)});
  }
  return out;
}

}  // namespace memq
