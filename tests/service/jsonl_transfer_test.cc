// The JSONL lines of export and import (daemon/service/jsonl_transfer): what a line may hold, the errors that name
// its line and field, the scan of every free-text field, the export cursor, the bytes export writes, kept versions
// in version lines put together over the requests of an import, and the memory a staged import is charged for.
#include "daemon/service/jsonl_transfer.h"

#include <gtest/gtest.h>

#include "daemon/model/content_hash.h"
#include "daemon/service/file_anchors.h"
#include "daemon/util/base64.h"

namespace memq {
namespace {

using json = nlohmann::json;

ImportLineOptions options() {
  ImportLineOptions o;
  o.now = "2026-12-01T00:00:00.000Z";
  o.actor = "user:test";
  return o;
}

Result<std::optional<ImportLine>> parse(const json& line, size_t lineNo = 1, const ImportLineOptions& o = options()) {
  return parseImportLine(line.dump(), lineNo, o);
}

json memory() {
  return {{"type", "memory"}, {"id", "7b934a83-3ded-420e-b11c-5b156ae48a0f"}, {"summary", "Use pnpm"}};
}

// The error of a line that must be refused: InvalidParams, data {field: jsonl, line}, message naming line and field.
void expectRefused(const json& line, const std::string& field) {
  auto r = parse(line, 12);
  ASSERT_FALSE(r.isOk()) << line.dump();
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(r.status().data()["field"], "jsonl");
  EXPECT_EQ(r.status().data()["line"], 12);
  EXPECT_EQ(r.status().message().rfind("jsonl[line 12]." + field + ": ", 0), 0u) << r.status().message();
}

TEST(JsonlTransferTest, MemoryIdsAreWhatMemqHandsOut) {
  EXPECT_TRUE(isMemoryId("7b934a83-3ded-420e-b11c-5b156ae48a0f"));
  EXPECT_TRUE(isMemoryId("a1b2"));
  EXPECT_TRUE(isMemoryId("note_1-x"));
  EXPECT_TRUE(isMemoryId(std::string(64, 'a')));
  for (const char* bad : {"", "a", "n1", "abc", ".", "..", "../x", "a/b", "a\\b", ".a", "-a", "_a", "A1", "a b", "a\nb", "a.b"}) {
    EXPECT_FALSE(isMemoryId(bad)) << bad;
  }
  EXPECT_FALSE(isMemoryId(std::string("a\0b", 3)));
  EXPECT_FALSE(isMemoryId(std::string(65, 'a')));
}

TEST(JsonlTransferTest, TimestampsAreRealDatesAndTimes) {
  for (const char* good : {"2026-11-29T14:33:25.605Z", "2026-11-29T14:33:25Z", "2024-02-29T00:00:00.000Z",
                           "2026-11-29T14:33:25.123456789+02:00", "2026-11-29T14:33:25-05:30"}) {
    EXPECT_TRUE(isTimestamp(good)) << good;
  }
  for (const char* bad : {"", "yesterday", "2026-11-29", "2026-11-29 14:33:25", "2026-11-29T14:33:25",
                          "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
                          "2026-11-29T24:00:00Z", "2026-11-29T14:60:00Z", "2026-11-29T14:33:25.Z",
                          "2026-11-29T14:33:25+25:00", " 2026-11-29T14:33:25Z", "2026-11-29T14:33:25Zjunk"}) {
    EXPECT_FALSE(isTimestamp(bad)) << bad;
  }
}

TEST(JsonlTransferTest, ContentHashesAreSha256InLowercaseHex) {
  EXPECT_TRUE(isContentHash(contentHash("a", "b")));
  EXPECT_FALSE(isContentHash(std::string(63, 'a')));
  EXPECT_FALSE(isContentHash(std::string(65, 'a')));
  EXPECT_FALSE(isContentHash(std::string(64, 'A')));
  EXPECT_FALSE(isContentHash(std::string(64, 'g')));
}

// Timestamps are stored in the one form memq writes (UTC, milliseconds), which lists and exports order by as text.
TEST(JsonlTransferTest, TimestampsAreStoredInUtcWithMilliseconds) {
  json line = memory();
  line["created_at"] = "2026-11-29T16:33:25+02:00";
  line["updated_at"] = "2026-11-29T14:33:25.123456789Z";
  line["last_used_at"] = "2026-11-29T14:33:25Z";
  auto r = parse(line, 1);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((**r).memory.createdAt, "2026-11-29T14:33:25.000Z");
  EXPECT_EQ((**r).memory.updatedAt, "2026-11-29T14:33:25.123Z");
  EXPECT_EQ((**r).memory.lastUsedAt, "2026-11-29T14:33:25.000Z");
}

TEST(JsonlTransferTest, AMemoryLineKeepsWhatItCarries) {
  json line = memory();
  line["details"] = "ask ops";
  line["category"] = "pref";
  line["topics"] = {"tooling"};
  line["files"] = json::array({"package.json", {{"path", "src/a.ts"}, {"blob_id", "abc123"}}});
  line["created_at"] = "2026-11-29T14:33:25.605Z";
  line["updated_at"] = "2026-11-29T15:00:00.000Z";
  line["use_count"] = 41;
  line["pinned"] = true;
  line["state"] = "superseded";
  line["superseded_by"] = "0f000000-0000-4000-8000-000000000001";
  line["state_reason"] = "replaced";
  line["session_id"] = "s-1";
  line["content_hash"] = std::string(64, '0');  // well-formed; the stored hash is computed from the text
  auto r = parse(line, 3);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_TRUE(r->has_value());
  const ImportLine& l = **r;
  EXPECT_FALSE(l.isTombstone);
  EXPECT_EQ(l.line, 3u);
  const Memory& m = l.memory;
  EXPECT_EQ(m.id, "7b934a83-3ded-420e-b11c-5b156ae48a0f");
  EXPECT_EQ(m.summary, "Use pnpm");
  EXPECT_EQ(m.details, "ask ops");
  EXPECT_EQ(m.category, "pref");
  ASSERT_EQ(m.files.size(), 2u);
  EXPECT_EQ(m.files[0].path, "package.json");
  EXPECT_FALSE(m.files[0].blobId.has_value());
  EXPECT_EQ(m.files[1].blobId, "abc123");
  EXPECT_EQ(m.createdAt, "2026-11-29T14:33:25.605Z");
  EXPECT_EQ(m.updatedAt, "2026-11-29T15:00:00.000Z");
  EXPECT_EQ(m.lastUsedAt, m.createdAt);
  EXPECT_EQ(m.useCount, 41);
  EXPECT_TRUE(m.pinned);
  EXPECT_EQ(m.state, MemoryState::kSuperseded);
  EXPECT_EQ(m.supersededBy, "0f000000-0000-4000-8000-000000000001");
  EXPECT_EQ(m.stateReason, "replaced");
  EXPECT_EQ(m.sessionId, "s-1");
  EXPECT_EQ(m.contentHash, contentHash("Use pnpm", "ask ops"));
}

TEST(JsonlTransferTest, AMinimalLineGetsAnIdAndTheImportsTime) {
  auto r = parse({{"summary", "bare"}});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const Memory& m = (*r)->memory;
  EXPECT_TRUE(isMemoryId(m.id)) << m.id;
  EXPECT_EQ(m.createdAt, "2026-12-01T00:00:00.000Z");
  EXPECT_EQ(m.updatedAt, m.createdAt);
  EXPECT_EQ(m.useCount, 0);
  EXPECT_EQ(m.state, MemoryState::kActive);
}

TEST(JsonlTransferTest, UseCountIsAWholeNumberInRange) {
  for (const json& v : {json(1e300), json(-1), json(-2147483648LL), json(2147483648LL), json(2.5), json("3"),
                        json(nullptr), json(true), json(std::numeric_limits<double>::infinity())}) {
    json line = memory();
    line["use_count"] = v;
    expectRefused(line, "use_count");
  }
  for (const auto& [v, want] : std::vector<std::pair<json, int64_t>>{{json(0), 0}, {json(7.0), 7},
                                                                    {json(2147483647), 2147483647}}) {
    json line = memory();
    line["use_count"] = v;
    auto r = parse(line);
    ASSERT_TRUE(r.isOk()) << v.dump() << " " << r.status().toString();
    EXPECT_EQ((*r)->memory.useCount, want);
  }
}

// A file's blob id belongs to that file: paths that normalise to one would shift the others' onto other files.
TEST(JsonlTransferTest, OneFileNamedTwiceWithVersionsIsRefused) {
  json line = memory();
  line["files"] = json::array({{{"path", "src/a.ts"}, {"blob_id", "x1"}}, {{"path", "./src/a.ts"}, {"blob_id", "y2"}},
                               {{"path", "src/b.ts"}, {"blob_id", "z3"}}});
  expectRefused(line, "files");
  // Plain paths carry nothing to shift: the repeat is dropped, as a save drops it.
  json plain = memory();
  plain["files"] = json::array({"src/a.ts", "./src/a.ts", "src/b.ts"});
  auto r = parse(plain);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ((*r)->memory.files.size(), 2u);
}

TEST(JsonlTransferTest, EveryOtherBadFieldNamesItself) {
  auto with = [](const char* key, json v) {
    json line = memory();
    line[key] = std::move(v);
    return line;
  };
  expectRefused(with("id", ""), "id");
  expectRefused(with("id", "../../x"), "id");
  expectRefused(with("id", 5), "id");
  expectRefused(with("created_at", "2026-02-31T00:00:00Z"), "created_at");
  expectRefused(with("updated_at", 5), "updated_at");
  expectRefused(with("last_used_at", "now"), "last_used_at");
  expectRefused(with("content_hash", "abc"), "content_hash");
  expectRefused(with("superseded_by", "a/b"), "superseded_by");
  expectRefused(with("superseded_by", "7b934a83-3ded-420e-b11c-5b156ae48a0f"), "superseded_by");
  expectRefused(with("pinned", 1), "pinned");
  expectRefused(with("state", "gone"), "state");
  expectRefused(with("topics", {1, 2}), "topics");
  expectRefused(with("files", "a.c"), "files");
  expectRefused(with("files", {{{"path", "a.c"}, {"blob_id", 7}}}), "files[0].blob_id");
  expectRefused(with("summary", 3), "summary");
  expectRefused(with("details", json::array()), "details");
  expectRefused(with("category", "opinion"), "category");
  expectRefused(with("state_reason", 3), "state_reason");
  expectRefused(with("type", "note"), "type");
  expectRefused({{"type", "memory"}}, "summary");
  expectRefused({{"type", "tombstone"}}, "content_hash");
  expectRefused({{"type", "tombstone"}, {"content_hash", std::string(64, 'a')}, {"at", "later"}}, "at");
  expectRefused({{"type", "tombstone"}, {"content_hash", std::string(64, 'a')}, {"memory_id", "/etc"}}, "memory_id");
}

TEST(JsonlTransferTest, BlankLinesAreSkippedAndOtherTextIsNotAnObject) {
  auto blank = parseImportLine(" \t\r", 4, options());
  ASSERT_TRUE(blank.isOk());
  EXPECT_FALSE(blank->has_value());
  for (const char* text : {"[1]", "\"memory\"", "{oops", "12"}) {
    auto r = parseImportLine(text, 4, options());
    ASSERT_FALSE(r.isOk()) << text;
    EXPECT_EQ(r.status().data()["line"], 4);
    EXPECT_EQ(r.status().message(), "jsonl[line 4] is not a JSON object");
  }
}

TEST(JsonlTransferTest, ATombstoneLineDefaultsItsActorAndTime) {
  auto r = parse({{"type", "tombstone"}, {"content_hash", std::string(64, 'c')}, {"reason", "wrong"}});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const ImportLine& l = **r;
  EXPECT_TRUE(l.isTombstone);
  EXPECT_EQ(l.tombstone.contentHash, std::string(64, 'c'));
  EXPECT_EQ(l.tombstone.memoryId, "");
  EXPECT_EQ(l.tombstone.reason, "wrong");
  EXPECT_EQ(l.tombstone.actor, "user:test");
  EXPECT_EQ(l.tombstone.at, "2026-12-01T00:00:00.000Z");
}

TEST(JsonlTransferTest, EveryFreeTextFieldGoesThroughTheScan) {
  std::vector<std::string> scanned;
  ImportLineOptions o = options();
  o.scrub = [&](std::string& text, const std::string& field) {
    scanned.push_back(field);
    if (text == "secret") text = "[redacted]";
    return Status::ok();
  };
  json line = memory();
  line["details"] = "secret";
  line["topics"] = {"a", "secret"};
  line["session_id"] = "secret";
  line["state_reason"] = "secret";
  auto r = parse(line, 5, o);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(scanned, (std::vector<std::string>{"jsonl[line 5].summary", "jsonl[line 5].details",
                                               "jsonl[line 5].topics[0]", "jsonl[line 5].topics[1]",
                                               "jsonl[line 5].session_id", "jsonl[line 5].state_reason"}));
  const Memory& m = (*r)->memory;
  EXPECT_EQ(m.details, "[redacted]");
  EXPECT_EQ(m.topics[1], "[redacted]");
  EXPECT_EQ(m.sessionId, "[redacted]");
  EXPECT_EQ(m.stateReason, "[redacted]");
  EXPECT_EQ(m.contentHash, contentHash("Use pnpm", "[redacted]")) << "the hash is of the text stored";

  scanned.clear();
  auto t = parse({{"type", "tombstone"}, {"content_hash", std::string(64, 'd')}, {"reason", "secret"},
                  {"actor", "secret"}},
                 6, o);
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(scanned, (std::vector<std::string>{"jsonl[line 6].reason", "jsonl[line 6].actor"}));
  EXPECT_EQ((*t)->tombstone.reason, "[redacted]");

  // A refusal from the scan is the line's error as is.
  o.scrub = [](std::string&, const std::string& field) { return Status::invalidField(field, "refused " + field); };
  auto refused = parse(memory(), 7, o);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().message(), "refused jsonl[line 7].summary");
}

TEST(JsonlTransferTest, ExportLinesAreExactlyTheseBytes) {
  Memory m;
  m.id = "7b934a83-3ded-420e-b11c-5b156ae48a0f";
  m.scope = "project";
  m.summary = "Use pnpm";
  m.files = {{"a.c", std::string("abc")}, {"b.c", std::nullopt}};
  m.createdAt = m.updatedAt = m.lastUsedAt = "2026-11-29T14:33:25.697Z";
  m.state = MemoryState::kHidden;
  m.stateReason = "not now";
  m.contentHash = contentHash("Use pnpm", "");
  EXPECT_EQ(memoryLine(m),
            "{\"category\":null,\"content_hash\":\"" + m.contentHash +
                "\",\"created_at\":\"2026-11-29T14:33:25.697Z\",\"details\":\"\",\"files\":[{\"blob_id\":\"abc\","
                "\"path\":\"a.c\"},{\"blob_id\":null,\"path\":\"b.c\"}],\"id\":\"" + m.id +
                "\",\"last_used_at\":\"2026-11-29T14:33:25.697Z\",\"pinned\":false,\"scope\":\"project\","
                "\"session_id\":null,\"source\":\"agent\",\"state\":\"hidden\",\"state_reason\":\"not now\","
                "\"summary\":\"Use pnpm\",\"superseded_by\":null,\"topics\":[],\"type\":\"memory\","
                "\"updated_at\":\"2026-11-29T14:33:25.697Z\",\"use_count\":0}");
  Tombstone t{std::string(64, 'e'), m.id, "wrong", "user:cli", "2026-11-29T14:33:25.704Z"};
  EXPECT_EQ(tombstoneLine(t, "global"),
            "{\"actor\":\"user:cli\",\"at\":\"2026-11-29T14:33:25.704Z\",\"content_hash\":\"" + t.contentHash +
                "\",\"memory_id\":\"" + m.id + "\",\"reason\":\"wrong\",\"scope\":\"global\",\"type\":\"tombstone\"}");
  // What export writes, import reads back as the same memory.
  auto back = parseImportLine(memoryLine(m), 1, options());
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  (*back)->memory.scope = m.scope;  // the scope is the one written to, not the line's
  EXPECT_EQ(memoryLine((*back)->memory), memoryLine(m));
}

TEST(JsonlTransferTest, CursorsRoundTripAndAnythingElseIsRefused) {
  ExportCursor c{"global", true, "2026-11-29T14:33:25.704Z", std::string(64, 'f')};
  auto back = ExportCursor::decode(c.encode());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->scope, "global");
  EXPECT_TRUE(back->tombstones);
  EXPECT_EQ(back->afterKey, c.afterKey);
  EXPECT_EQ(back->afterSubkey, c.afterSubkey);
  for (const char* scope : {"project", "global", "team"}) {
    ExportCursor each{scope, false, "k", "s"};
    auto decoded = ExportCursor::decode(each.encode());
    ASSERT_TRUE(decoded.has_value()) << scope;
    EXPECT_EQ(decoded->scope, scope);
  }
  // Inside a memory's lines (its versions' parts filled a page): three more strings.
  ExportCursor inside{"project", false, "2026-11-29T14:33:25.704Z", "7b934a83-3ded-420e-b11c-5b156ae48a0f",
                      "7b934a83-3ded-420e-b11c-5b156ae48a0f", std::string(40, 'a'), 3};
  auto within = ExportCursor::decode(inside.encode());
  ASSERT_TRUE(within.has_value());
  EXPECT_EQ(within->inMemory, inside.inMemory);
  EXPECT_EQ(within->inBlob, inside.inBlob);
  EXPECT_EQ(within->inPart, 3u);
  EXPECT_EQ(json::parse(c.encode()).size(), 5u) << "a cursor between lines is as it was";
  EXPECT_TRUE(back->inMemory.empty());
  for (const char* bad : {"[\"export-v1\",\"project\",\"memories\",\"\",\"\",\"m1m1\",\"b\",\"x\"]",
                          "[\"export-v1\",\"project\",\"memories\",\"\",\"\",\"m1m1\",\"b\",\"0\"]",
                          "[\"export-v1\",\"project\",\"memories\",\"\",\"\",\"\",\"b\",\"1\"]",
                          "[\"export-v1\",\"project\",\"tombstones\",\"\",\"\",\"m1m1\",\"b\",\"1\"]",
                          "[\"export-v1\",\"project\",\"memories\",\"\",\"\",\"m1m1\",\"b\"]"}) {
    EXPECT_FALSE(ExportCursor::decode(bad).has_value()) << bad;
  }
  for (const char* bad : {"", "x", "[]", "[\"export-v1\",\"elsewhere\",\"memories\",\"\",\"\"]",
                          "[\"export-v2\",\"project\",\"memories\",\"\",\"\"]",
                          "[\"export-v1\",\"project\",\"rows\",\"\",\"\"]", "[\"export-v1\",\"project\",\"memories\",1,\"\"]"}) {
    EXPECT_FALSE(ExportCursor::decode(bad).has_value()) << bad;
  }
}

TEST(JsonlTransferTest, AnchoredRefsComeThroughLosslesslyAndAreChecked) {
  const std::string content = "one\ntwo\nthree\n";
  const std::string blob = gitBlobId(content);
  const std::string kept = "b25lCnR3bwp0aHJlZQo=";  // base64 of `content`
  json line = memory();
  line["files"] = {{{"path", "src/a.c"}, {"blob_id", nullptr}, {"lines", {{2, 3}}}, {"blob", blob}, {"kept", kept}},
                   {{"path", "src/b.c"},
                    {"blob_id", "1234"},
                    {"lines", {{9, 9}, {1, 4}}},
                    {"blob", std::string(40, 'a')}},
                   "src/c.c"};
  auto r = parse(line);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const Memory& m = (*r)->memory;
  ASSERT_EQ(m.files.size(), 3u);
  ASSERT_TRUE(m.files[0].anchor.has_value());
  EXPECT_EQ(m.files[0].anchor->lines, (LineRanges{{2, 3}}));
  ASSERT_NE(m.files[0].anchor->keptContent, nullptr);
  EXPECT_EQ(*m.files[0].anchor->keptContent, content);
  EXPECT_EQ(m.files[1].anchor->lines, (LineRanges{{1, 4}, {9, 9}}));  // normalised
  EXPECT_EQ(m.files[1].anchor->keptContent, nullptr);  // a blob of the repository: nothing kept
  EXPECT_FALSE(m.files[2].anchor.has_value());
  // Written back, the line is what it was (lines normalised), but for the kept content: it goes in version lines
  // now, and the anchor only says that it is kept.
  line["files"][1]["lines"] = {{1, 4}, {9, 9}};
  line["files"][2] = {{"path", "src/c.c"}, {"blob_id", nullptr}};
  line["files"][0]["kept"] = true;
  EXPECT_EQ(json::parse(memoryLine(m))["files"], line["files"]);

  auto refused = [&](const json& file, const std::string& field) {
    json l = memory();
    l["files"] = {file};
    expectRefused(l, field);
  };
  refused({{"path", "a.c"}, {"lines", {{0, 1}}}, {"blob", blob}}, "files[0].lines[0]");
  refused({{"path", "a.c"}, {"lines", {{1}}}, {"blob", blob}}, "files[0].lines");
  refused({{"path", "a.c"}, {"lines", {{1, 1}}}}, "files[0].blob");
  refused({{"path", "a.c"}, {"lines", {{1, 1}}}, {"blob", "HEAD"}}, "files[0].blob");
  refused({{"path", "a.c"}, {"blob", blob}}, "files[0].lines");
  refused({{"path", "a.c"}, {"lines", {{1, 4}}}, {"blob", blob}, {"kept", kept}}, "files[0].lines[0]");  // 3 lines
  refused({{"path", "a.c"}, {"lines", {{1, 1}}}, {"blob", std::string(40, 'a')}, {"kept", kept}}, "files[0].kept");
  refused({{"path", "a.c"}, {"lines", {{1, 1}}}, {"blob", blob}, {"kept", "not base64!"}}, "files[0].kept");
  refused({{"path", "a.c"}, {"lines", {{1, 1}}}, {"blob", blob}, {"kept", 5}}, "files[0].kept");
}

// Text of about `bytes` bytes in numbered lines (a kept version of that size).
std::string numberedText(size_t bytes) {
  std::string out;
  for (size_t n = 1; out.size() < bytes; ++n) out += "line " + std::to_string(n) + " of a file memq keeps whole\n";
  return out;
}

// The error of a line an import refuses: InvalidParams, data {field: jsonl, line}, message naming line and field.
void expectLineError(const Status& st, size_t line, const std::string& field) {
  ASSERT_FALSE(st.isOk()) << "line " << line << " " << field;
  EXPECT_EQ(st.code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(st.data()["field"], "jsonl");
  EXPECT_EQ(st.data()["line"], line) << st.message();
  EXPECT_EQ(st.message().rfind("jsonl[line " + std::to_string(line) + "]." + field + ": ", 0), 0u) << st.message();
}

// `lines` as one import in one request, then finished as its last request finishes it.
Status stageAndFinish(const std::vector<std::string>& lines) {
  ImportStaging staging;
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  Status st = stageImportLines(text, options(), staging);
  return st.isOk() ? finishImportLines(staging) : st;
}

// A kept version of 1.2 MiB goes in three version lines, each well inside one import request and the CLI's 768 KiB of
// escaped lines, and comes together again over two requests of one import, after its memory's line; sent again, it
// is taken once. (One line holding the content, as before, was 1.6 MiB: no import could carry it.)
TEST(JsonlTransferTest, AKeptVersionTravelsInPartsAndComesTogetherOverTheRequestsOfAnImport) {
  const std::string content = numberedText(size_t{1200} << 10);
  const std::string blob = gitBlobId(content);
  const size_t parts = versionPartCount(content.size());
  ASSERT_EQ(parts, 3u);
  EXPECT_EQ(versionPartCount(0), 1u);
  EXPECT_EQ(versionPartCount(kVersionPartBytes), 1u);
  EXPECT_EQ(versionPartCount(kVersionPartBytes + 1), 2u);
  EXPECT_EQ(versionPartCount(kMaxAnchoredFileBytes), 4u);
  std::vector<std::string> versionLines;
  std::string joined;
  for (size_t p = 1; p <= parts; ++p) {
    versionLines.push_back(versionLine("project", blob, content, p));
    const std::string& l = versionLines.back();
    EXPECT_EQ(l.size(), versionLineLength("project", blob, content.size(), p)) << "part " << p;
    EXPECT_LE(json(l).dump().size(), size_t{768} << 10) << "part " << p << ", escaped as the CLI sends it";
    const json j = json::parse(l);
    EXPECT_EQ(j["type"], "version");
    EXPECT_EQ(j["scope"], "project");
    EXPECT_EQ(j["blob"], blob);
    EXPECT_EQ(j["part"], p);
    EXPECT_EQ(j["parts"], parts);
    auto bytes = base64Decode(j["data"].get<std::string>());
    ASSERT_TRUE(bytes.has_value());
    joined += *bytes;
  }
  EXPECT_EQ(joined, content);
  // The first part of the largest version an anchor may have is no longer.
  EXPECT_LE(versionLineLength("project", blob, kMaxAnchoredFileBytes, 1) + 64, size_t{768} << 10);

  json anchored = memory();
  anchored["files"] = {{{"path", "src/big.txt"}, {"blob_id", nullptr}, {"lines", {{2, 3}}}, {"blob", blob}, {"kept", true}}};
  ImportStaging staging;
  Status st = stageImportLines(versionLines[0] + "\n" + anchored.dump() + "\n", options(), staging);
  ASSERT_TRUE(st.isOk()) << st.toString();
  st = stageImportLines(versionLines[1] + "\n" + versionLines[2] + "\n" + versionLines[0] + "\n" + versionLines[1] +
                            "\n" + versionLines[2] + "\n",
                        options(), staging);
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(staging.lines, 7u);
  ASSERT_EQ(staging.batch.memories.size(), 1u);
  EXPECT_EQ(staging.versions.size(), 1u);
  EXPECT_TRUE(staging.partialVersions.empty());
  st = finishImportLines(staging);
  ASSERT_TRUE(st.isOk()) << st.toString();
  const Memory& m = staging.batch.memories[0].memory;
  ASSERT_EQ(m.files.size(), 1u);
  ASSERT_TRUE(m.files[0].anchor.has_value());
  EXPECT_EQ(m.files[0].anchor->blob, blob);
  EXPECT_EQ(m.files[0].anchor->lines, (LineRanges{{2, 3}}));
  ASSERT_NE(m.files[0].anchor->keptContent, nullptr);
  EXPECT_TRUE(*m.files[0].anchor->keptContent == content);
  // Written back, the memory's line says the version is kept, and stays short.
  const std::string back = memoryLine(m);
  EXPECT_EQ(json::parse(back)["files"][0]["kept"], true);
  EXPECT_LT(back.size(), size_t{1024});
}

TEST(JsonlTransferTest, VersionLinesThatDoNotMakeTheirVersionAreRefusedByLine) {
  const std::string content = "one\ntwo\nthree\n";
  const std::string blob = gitBlobId(content);
  const std::string version = versionLine("project", blob, content, 1);
  json anchored = memory();
  anchored["files"] = {{{"path", "a.c"}, {"lines", {{2, 3}}}, {"blob", blob}, {"kept", true}}};
  // The version before or after its memory.
  EXPECT_TRUE(stageAndFinish({version, anchored.dump()}).isOk());
  EXPECT_TRUE(stageAndFinish({anchored.dump(), version}).isOk());
  // No line carries it.
  expectLineError(stageAndFinish({anchored.dump()}), 1, "files[0].kept");
  // Lines past its end, checked once it is there.
  json past = anchored;
  past["files"][0]["lines"] = {{3, 4}};
  expectLineError(stageAndFinish({version, past.dump()}), 2, "files[0].lines[0]");
  // Parts whose content is not the blob they name.
  expectLineError(stageAndFinish({versionLine("project", blob, "one\ntwo\n", 1)}), 1, "data");

  // A version of two parts: in order from part 1 (part 1 again starts it over), and all of them.
  const std::string big = std::string(kVersionPartBytes, 'a') + "\nend\n";
  const std::string bigBlob = gitBlobId(big);
  const std::string p1 = versionLine("project", bigBlob, big, 1);
  const std::string p2 = versionLine("project", bigBlob, big, 2);
  EXPECT_TRUE(stageAndFinish({p1, p2}).isOk());
  EXPECT_TRUE(stageAndFinish({p1, p1, p2}).isOk());
  expectLineError(stageAndFinish({p2, p1}), 1, "part");
  // The import ended before part 2: an error when a memory needs the version, let go when none does (an export
  // page that ended inside a version whose memory changed before the next page).
  json needsBig = memory();
  needsBig["files"] = {{{"path", "big.txt"}, {"lines", {{1, 1}}}, {"blob", bigBlob}, {"kept", true}}};
  expectLineError(stageAndFinish({needsBig.dump(), p1}), 2, "part");
  EXPECT_TRUE(stageAndFinish({memory().dump(), p1}).isOk());

  // A version line's own fields.
  const json v = json::parse(version);
  auto with = [&](const char* key, json value) {
    json l = v;
    l[key] = std::move(value);
    return l.dump();
  };
  expectLineError(stageAndFinish({with("blob", "HEAD")}), 1, "blob");
  expectLineError(stageAndFinish({with("parts", 0)}), 1, "parts");
  expectLineError(stageAndFinish({with("parts", 5)}), 1, "parts");  // more than a version of 2 MiB takes
  expectLineError(stageAndFinish({with("part", 2)}), 1, "part");    // of 1
  expectLineError(stageAndFinish({with("data", "not base64!")}), 1, "data");
  expectLineError(stageAndFinish({with("data", base64Encode(std::string(kVersionPartBytes + 1, 'a')))}), 1, "data");
  expectLineError(stageAndFinish({with("type", "versions")}), 1, "type");
}

// An import is charged for the memory its lines take once read, not for their bytes of JSONL: 20,000 lines of about
// 25 bytes are 20,000 memories of several hundred bytes each. memqd bounds staged imports by this count.
TEST(JsonlTransferTest, StagedLinesAreChargedForTheMemoryTheyTakeNotTheirBytes) {
  std::string jsonl;
  for (int n = 0; n < 20000; ++n) jsonl += json{{"summary", "note " + std::to_string(n)}}.dump() + "\n";
  ImportStaging staging;
  size_t charged = 0;
  size_t calls = 0;
  Status st = stageImportLines(jsonl, options(), staging, [&](size_t bytes) {
    charged += bytes;
    ++calls;
    return Status::ok();
  });
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(calls, 20000u) << "one charge per line, as it is read";
  EXPECT_EQ(charged, staging.bytes);
  EXPECT_GE(staging.bytes, 20000 * sizeof(ImportedMemory));
  EXPECT_GT(staging.bytes, 10 * jsonl.size()) << staging.bytes << " bytes charged for " << jsonl.size()
                                              << " bytes of JSONL";
  // A charge's error stops the import at that line.
  ImportStaging stopped;
  size_t seen = 0;
  st = stageImportLines(jsonl, options(), stopped,
                        [&](size_t) { return ++seen == 3 ? Status::invalidField("jsonl", "full") : Status::ok(); });
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.message(), "full");
  EXPECT_EQ(stopped.lines, 3u);
}

}  // namespace
}  // namespace memq
