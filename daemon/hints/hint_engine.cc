// Hint policy; see hint_engine.h.
#include "daemon/hints/hint_engine.h"

#include <algorithm>

#include "daemon/util/utf8.h"

namespace memq {

void HintState::nextTurn() {
  ++turn;
  surfacedThisTurn.clear();
  actedThisTurn = false;
  volumeLineShownThisTurn = false;
  for (auto it = recentlySurfaced.begin(); it != recentlySurfaced.end();) {
    if (turn - it->second > kHintCooldownTurns) it = recentlySurfaced.erase(it);
    else ++it;
  }
}

std::unordered_set<std::string> HintState::seenSet() const {
  std::unordered_set<std::string> out = surfacedThisTurn;
  for (const auto& [id, t] : recentlySurfaced) out.insert(id);
  out.insert(inheritedFromParent.begin(), inheritedFromParent.end());
  return out;
}

HintContext hintContextForTool(const std::string& tool) {
  if (tool == "read" || tool == "grep" || tool == "view" || tool == "open") return HintContext::kRead;
  if (tool == "edit" || tool == "write" || tool == "multi_edit" || tool == "multiedit" || tool == "create") {
    return HintContext::kEdit;
  }
  if (tool == "diff" || tool == "status" || tool == "show") return HintContext::kDiff;
  if (tool == "commit") return HintContext::kCommit;
  return HintContext::kOther;
}

int hintRank(const HintCandidate& c) {
  int category = 4;
  if (c.category) {
    if (*c.category == "gotcha") category = 0;
    else if (*c.category == "pref") category = 1;
    else if (*c.category == "decision") category = 2;
    else if (*c.category == "context") category = 3;
  }
  return (c.pinned ? 0 : 10) + category;
}

bool hintBefore(const HintCandidate& a, const HintCandidate& b) {
  if (hintRank(a) != hintRank(b)) return hintRank(a) < hintRank(b);
  // Origin weighs twice ownership, as in the default ranker (rankers.cc).
  const uint32_t aLines = 2 * a.linesOriginated + a.linesOwned, bLines = 2 * b.linesOriginated + b.linesOwned;
  if (aLines != bLines) return aLines > bLines;
  if (a.lineOverlap != b.lineOverlap) return a.lineOverlap > b.lineOverlap;
  if (a.lineDistance != b.lineDistance) {
    return a.lineDistance.has_value() && (!b.lineDistance || *a.lineDistance < *b.lineDistance);
  }
  return false;
}

namespace {

bool isLoud(const HintCandidate& c) {
  return c.pinned || (c.category && (*c.category == "gotcha" || *c.category == "pref"));
}
bool bypassesCooldown(const HintCandidate& c) { return c.pinned || (c.category && *c.category == "pref"); }

std::string labelFor(const HintCandidate& c) {
  std::string cat = c.category.value_or("");
  if (c.pinned) return cat.empty() ? "pinned" : "pinned " + cat;
  if (cat == "gotcha" || cat == "pref" || cat == "decision") return cat;
  return "";
}

// One line of a hint: a summary's line breaks, tabs and other control characters become spaces (runs of them one),
// so that a memory's text can neither spread over more lines than the hint's three nor write a hint line of its own.
// Unicode's line breaks count (NEL U+0085, LINE and PARAGRAPH SEPARATOR U+2028/U+2029, the C1 controls): a renderer
// that honours them would show a second line.
std::string oneLine(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const char32_t cp = decodeUtf8At(text, pos);
    const bool control = cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029;
    if (!control) {
      out.append(text, start, pos - start);
    } else if (!out.empty() && out.back() != ' ') {
      out.push_back(' ');
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string shortSummary(const std::string& raw) {
  const std::string summary = oneLine(raw);
  if (codePointCount(summary) <= kHintSummaryMax) return summary;
  // Cut at a code point boundary, trim trailing spaces, then mark the cut.
  size_t i = 0, n = 0;
  while (i < summary.size() && n < kHintSummaryMax - 1) {
    unsigned char c = static_cast<unsigned char>(summary[i]);
    i += c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    ++n;
  }
  std::string out = summary.substr(0, std::min(i, summary.size()));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out + "…";
}

std::string imperativeFor(HintContext context) {
  switch (context) {
    case HintContext::kRead: return " — review before editing";
    case HintContext::kEdit: return " — check before editing";
    case HintContext::kDiff: return " — review before commit";
    default: return "";
  }
}

}  // namespace

HintResult selectHints(HintState& state, std::vector<HintCandidate> candidates, HintContext context) {
  HintResult result;
  if (state.actedThisTurn || context == HintContext::kCommit) return result;  // commit: too late to help
  if (context == HintContext::kEdit) {
    // Edits get the warnings that matter for the file being changed, nothing else.
    std::erase_if(candidates, [](const HintCandidate& c) {
      return !(c.directFile && c.category && *c.category == "gotcha");
    });
  }
  const size_t total = candidates.size();
  if (total == 0) return result;
  std::stable_sort(candidates.begin(), candidates.end(), hintBefore);

  const bool budgetSpent = state.budgetUsed >= state.budgetLimit;
  std::vector<HintCandidate> fresh;
  for (auto& c : candidates) {
    if (budgetSpent && !isLoud(c)) continue;  // pinned, gotcha and pref slip through a spent budget
    if (state.surfacedThisTurn.count(c.id)) continue;
    // Pinned and pref rules skip the cooldown (and what a parent saw), but not the per-turn dedup above.
    if (!bypassesCooldown(c) && (state.recentlySurfaced.count(c.id) || state.inheritedFromParent.count(c.id))) {
      continue;
    }
    fresh.push_back(std::move(c));
  }
  if (fresh.empty()) {
    if (total >= 3 && !state.volumeLineShownThisTurn && !budgetSpent) {
      state.volumeLineShownThisTurn = true;
      result.lines.push_back("· " + std::to_string(total) + " memories — memory(search) recommended");
    }
    return result;
  }
  std::vector<HintCandidate> loud, quiet;
  for (auto& c : fresh) (isLoud(c) ? loud : quiet).push_back(std::move(c));
  std::vector<HintCandidate> picked;
  for (size_t i = 0; i < loud.size() && picked.size() < kMaxHintLines; ++i) picked.push_back(loud[i]);
  size_t quietUsed = 0;
  if (picked.empty() && !quiet.empty()) {
    picked.push_back(quiet[0]);
    quietUsed = 1;
  }
  result.more = static_cast<int>(loud.size() - std::min(loud.size(), picked.size() - quietUsed) +
                                 (quiet.size() - quietUsed));
  const std::string imperative = imperativeFor(context);
  for (const auto& c : picked) {
    HintLine line;
    line.id = c.id;
    line.label = labelFor(c);
    line.summary = c.summary;
    line.text = "· " + (line.label.empty() ? "" : line.label + " ") + "\"" + shortSummary(c.summary) + "\" [" +
                c.id.substr(0, 8) + "]" + imperative;
    result.lines.push_back(line.text);
    result.hints.push_back(std::move(line));
    state.surfacedThisTurn.insert(c.id);
    state.recentlySurfaced[c.id] = state.turn;
    ++state.budgetUsed;
  }
  if (result.more > 0) result.lines.push_back("+" + std::to_string(result.more) + " more");
  return result;
}

}  // namespace memq
