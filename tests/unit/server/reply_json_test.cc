// The hand-written reply text of memory records, recall hits and save results against the nlohmann trees it replaced
// (memoryToJson, recallHitToJson, and saveTree below): the bytes on the wire must not change, whatever they hold.
#include "daemon/server/reply_json.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "protocol/envelope.h"

namespace memq {
namespace {

using nlohmann::json;

std::string treeText(const std::vector<RecallHit>& hits, bool explain) {
  json out = json::array();
  for (const auto& h : hits) out.push_back(recallHitToJson(h, explain));
  return serializeMessage(json{{"memories", std::move(out)}});
}

// memory/save's reply as a tree, as it was built before it was written as text.
std::string saveTree(const SaveResult& r) {
  json similar = json::array();
  for (const auto& s : r.similar) {
    similar.push_back({{"id", s.id}, {"weight", s.weight}, {"summary", s.summary}, {"kind", s.kind}});
  }
  json redactions = json::array();
  for (const auto& red : r.redactions) redactions.push_back({{"kind", red.kind}, {"field", red.field}});
  json out = {{"id", r.status == SaveStatus::kQueued ? json(nullptr) : json(r.id)},
              {"scope", toString(r.scope)},
              {"status", toString(r.status)},
              {"similar", std::move(similar)},
              {"warnings", r.warnings},
              {"redactions", std::move(redactions)}};
  if (r.memory) out["memory"] = memoryToJson(*r.memory);
  if (!r.anchored.empty()) {
    json anchored = json::array();
    for (const auto& a : r.anchored) anchored.push_back({{"path", a.path}, {"lines", lineRangesToJson(a.lines)}});
    out["anchored"] = std::move(anchored);
  }
  if (r.reason) out["reason"] = *r.reason;
  if (r.supersededBy) out["superseded_by"] = *r.supersededBy;
  if (r.hint) out["hint"] = *r.hint;
  if (r.topicsMerged) out["topics_merged"] = true;
  return serializeMessage(out);
}

Memory sampleMemory(int variant) {
  Memory m;
  m.pk = 17;
  m.id = "0b9e2c1a-5d3f-4e7a-9c2b-1f0e8d7c6b5a";
  m.scope = variant % 2 ? "global" : "project";
  if (variant % 3) m.category = "gotcha";
  m.summary = "Quote \" backslash \\ tab\t newline\n é 日本 🚀";
  m.details = std::string("control \x01\x1f\x7f nul ") + std::string(1, '\0') + " invalid \xC3 \xFF end";
  m.topics = variant % 2 ? std::vector<std::string>{} : std::vector<std::string>{"build", "ci/cd", "ünïcode"};
  m.files = {{"src/main.cc", std::string("abc123")}, {"docs/\"odd\" name.md", std::nullopt}};
  if (variant % 4 == 1) m.files.clear();
  if (variant % 4 == 3) {
    // An anchored ref is written as an object; the content memq keeps never reaches a reply.
    m.files.push_back({"src/anchored.cc", std::string("def456"),
                       FileAnchor{{{1, 1}, {40, 60}, {4294967295u, 4294967295u}}, std::string(40, 'e'),
                                  std::make_shared<const std::string>("kept bytes")}});
  }
  m.source = variant % 2 ? "user" : "agent";
  if (variant % 2) m.sessionId = "sess-\xE2\x82";
  m.createdAt = "2026-11-29T21:00:00.000Z";
  m.updatedAt = "2026-11-29T21:00:01.000Z";
  m.lastUsedAt = "2026-11-29T21:00:02.000Z";
  m.useCount = variant == 3 ? std::numeric_limits<int64_t>::max() : variant;
  m.pinned = variant % 2 == 1;
  m.state = static_cast<MemoryState>(variant % 4);
  if (variant % 4 == 2) m.supersededBy = "11111111-2222-4333-8444-555555555555";
  if (variant % 3 == 2) m.stateReason = "duplicate of \"the other one\"";
  m.contentHash = "sha256:0123456789abcdef";
  return m;
}

TEST(ServerReplyJsonTest, MemoryRecordMatchesTheTree) {
  for (int variant = 0; variant < 12; ++variant) {
    Memory m = sampleMemory(variant);
    EXPECT_EQ(memoryJsonText(m), serializeMessage(memoryToJson(m))) << "variant " << variant;
  }
  EXPECT_EQ(memoryJsonText(Memory{}), serializeMessage(memoryToJson(Memory{})));
}

TEST(ServerReplyJsonTest, RecallHitsMatchTheTree) {
  std::mt19937 rng(3);
  std::vector<RecallHit> hits;
  for (int variant = 0; variant < 12; ++variant) {
    RecallHit h;
    h.memory = sampleMemory(variant);
    h.score = variant == 0 ? 0.0 : 1.0 / (variant + 0.3) + 1e-9 * variant;
    h.normalizedScore = variant == 5 ? 1e-300 : static_cast<double>(rng()) / 4294967296.0;
    Signals& s = h.signals;
    s.fileAffinity = variant & 1;
    s.cochangeAffinity = variant & 2;
    if (variant & 4) s.semanticRank = 2, s.semantic = 0.71234;
    if (variant & 8) s.ftsUnicode = 1, s.bm25Unicode = -3.25;
    if (variant % 3 == 0) s.ftsTrigram = 4, s.bm25Trigram = -1.5;
    s.pinned = variant == 7;
    s.blastRadius = variant;
    s.ageDays = 0.5 * variant;
    h.breakdown.terms = {{"text", 0.25 * variant}, {"recency", 1.0 / 3.0}, {"name \"q\"", -0.0}};
    h.stale = variant % 5 == 1;
    if (variant % 5 == 1) h.changedFiles = {"src/main.cc"};
    if (variant % 6 == 1) h.missingFiles = {"gone.txt", "dir/é.md"};
    if (variant % 4 == 2) {
      h.anchoredLines = {{"src/a.c", AnchoredLinesState::kMoved, {{3, 5}, {9, 9}}},
                         {"src/b.c", AnchoredLinesState::kDeleted, {}}};
    }
    if (variant == 9) h.anchoredLines = {{"src/a.c", AnchoredLinesState::kRewritten, {{40, 44}}, "src/old.c"}};
    hits.push_back(h);
  }
  for (bool explain : {false, true}) {
    EXPECT_EQ(recallHitsJsonText(hits, explain), treeText(hits, explain)) << "explain " << explain;
    EXPECT_EQ(recallHitsJsonText({hits[3]}, explain), treeText({hits[3]}, explain));
  }
  EXPECT_EQ(recallHitsJsonText({}, false), serializeMessage(json{{"memories", json::array()}}));
}

TEST(ServerReplyJsonTest, SaveResultsMatchTheTree) {
  const SaveStatus statuses[] = {SaveStatus::kCreated, SaveStatus::kDeduped, SaveStatus::kExistsHidden,
                                 SaveStatus::kExistsSuperseded, SaveStatus::kRejected, SaveStatus::kQueued};
  for (int variant = 0; variant < 24; ++variant) {
    SaveResult r;
    r.id = "0b9e2c1a-5d3f-4e7a-9c2b-1f0e8d7c6b5a";
    r.scope = variant % 3 == 0 ? ScopeKind::kGlobal : variant % 3 == 1 ? ScopeKind::kProject : ScopeKind::kTeam;
    r.status = statuses[variant % 6];
    if (variant % 2 == 0) {
      r.similar = {{"11111111-2222-4333-8444-555555555555", 0.8123456789, "a \"near\" one \xF0", "semantic"},
                   {"22222222-2222-4333-8444-555555555555", variant == 4 ? 1e-300 : 2.0 / 3.0, "é\n", "trigram"}};
    }
    if (variant % 4 == 1) r.warnings = {"similar_rejected: close (cosine 0.91)", "after \"truncation\""};
    if (variant % 5 == 2) r.redactions = {{"aws_access_key", "details"}, {"jwt", "summary"}};
    if (variant % 3 != 2) r.memory = sampleMemory(variant % 12);
    if (variant % 7 == 3) r.anchored = {{"src/a.c", {{3, 5}, {9, 9}}}, {"src/whole.c", {}}};
    if (r.status == SaveStatus::kRejected) r.reason = "wrong: \"never again\"";
    if (r.status == SaveStatus::kExistsSuperseded) r.supersededBy = "33333333-2222-4333-8444-555555555555";
    if (variant % 6 == 5) r.hint = "the team server was not reached; the save is queued";
    r.topicsMerged = variant % 8 == 1;
    EXPECT_EQ(replyText(r), saveTree(r)) << "variant " << variant;
  }
  EXPECT_EQ(replyText(SaveResult{}), saveTree(SaveResult{}));
}

}  // namespace
}  // namespace memq
