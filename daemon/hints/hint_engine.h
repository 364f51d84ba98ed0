// Inline hints on an agent's tool results (docs/design.md §9: the reference system's hints with their faults fixed).
// HintState is one connection's ("tab's") memory of what it has been shown; selectHints is the pure policy:
// per-turn dedup, a 10-turn cooldown counted in real turns (hints/turn), budgets (60 per tab, 10 per subagent)
// that pinned/gotcha/pref slip through, at most 3 lines plus "+N more", one category order everywhere, a volume
// line at most once per turn, and silence for the rest of a turn after the agent acted on memory itself. Within one
// category rank, a memory anchored on the lines the tool names comes first.
// Thread-safety: a HintState is guarded by its owner (ClientState::mutex).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace memq {

inline constexpr int kHintCooldownTurns = 10;
inline constexpr int kTabHintBudget = 60;
inline constexpr int kSubagentHintBudget = 10;
inline constexpr size_t kMaxHintLines = 3;
inline constexpr size_t kHintSummaryMax = 60;

struct HintState {
  int64_t turn = 0;
  std::unordered_set<std::string> surfacedThisTurn;
  std::unordered_map<std::string, int64_t> recentlySurfaced;  // id → turn it was last shown
  // A subagent starts knowing what its parent saw; pinned and pref rules still reach it once.
  std::unordered_set<std::string> inheritedFromParent;
  int budgetUsed = 0;
  int budgetLimit = kTabHintBudget;
  bool actedThisTurn = false;
  bool volumeLineShownThisTurn = false;

  // A real user turn begins.
  void nextTurn();
  // Everything this tab has been shown recently (what a subagent inherits).
  std::unordered_set<std::string> seenSet() const;
};

struct HintCandidate {
  std::string id;
  std::string summary;
  std::optional<std::string> category;
  bool pinned = false;
  bool directFile = false;  // attached to one of the tool's files
  // When the tool names lines of its files: the line signals of recall (daemon/anchors/line_signals.h) for this
  // memory's anchors carried to the work tree — the tool's lines they cover, of those the lines it originated (the
  // oldest anchor holding a line) and owns (the newest), and the distance to its nearest anchored line (unset
  // without an anchor on those files).
  uint32_t lineOverlap = 0;
  uint32_t linesOriginated = 0;
  uint32_t linesOwned = 0;
  std::optional<uint32_t> lineDistance;
};

enum class HintContext { kRead, kEdit, kDiff, kCommit, kOther };

HintContext hintContextForTool(const std::string& tool);

struct HintLine {
  std::string id;
  std::string label;
  std::string summary;
  std::string text;
};

struct HintResult {
  std::vector<HintLine> hints;
  std::vector<std::string> lines;  // the text lines to append to the tool result (hint lines, "+N more", volume)
  int more = 0;
};

// Category rank used everywhere (lower first): pinned first, then gotcha, pref, decision, context, none.
int hintRank(const HintCandidate& c);
// The order hints are considered in: by hintRank, then, within one rank, by the tool's lines — more of them
// originated (counted twice) and owned, then more covered, then nearer — as recall's line terms order them.
bool hintBefore(const HintCandidate& a, const HintCandidate& b);

// Applies the policy to `candidates` (already restricted to readable, active memories) and records what is shown.
HintResult selectHints(HintState& state, std::vector<HintCandidate> candidates, HintContext context);

}  // namespace memq
