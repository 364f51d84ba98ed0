// Unit tests of carrying: the pure step through hand-written hunks, and LineCarrier over real repositories made
// with the git command line in temporary directories (blob versions, buffer versions, chains, binary and oversized
// versions, the cache, the pinned set and its claim, and the bounds on the bytes of hunks the two hold).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/anchors/line_carrier.h"
#include "daemon/model/memory_input.h"
#include "unit/git/git_fixture.h"

namespace memq {
namespace {

using testing::GitRepo;
using testing::TempDir;

// Lines "<tag> 1" .. "<tag> n", each distinct so the diff has one reading.
std::string numbered(int from, int to, const std::string& tag = "line") {
  std::string out;
  for (int i = from; i <= to; ++i) out += tag + " " + std::to_string(i) + "\n";
  return out;
}

// Lines 1 .. n, the odd ones tagged `tag` and the even ones as numbered() has them: against numbered(1, n), a diff of
// n / 2 one-line hunks, as many for every tag, so that every such diff holds the same bytes.
std::string everyOtherLine(int n, const std::string& tag) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += (i % 2 == 1 ? tag : std::string("line")) + " " + std::to_string(i) + "\n";
  return out;
}

// The bytes the diff from `from` to `to` holds, diffed by a carrier of its own (the carriers under test see it anew).
size_t heldBytesOfDiff(const FileVersion& from, const FileVersion& to) {
  LineCarrier probe(nullptr);
  Result<std::shared_ptr<const VersionDiff>> d = probe.diff(from, to);
  EXPECT_TRUE(d.isOk()) << d.status().toString();
  return d.isOk() ? (*d)->heldBytes() : 0;
}

TEST(CarrySegments, InsertionAtTheTopShiftsEveryLine) {
  const std::vector<CarriedSegment> s = carrySegments({{2, 3}}, {{0, 0, 1, 4}});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].outcome, LineOutcome::kShifted);
  EXPECT_EQ(s[0].to, (LineRange{6, 7}));
}

TEST(CarrySegments, InsertionRightAfterALineLeavesThatLineInPlace) {
  // Two lines inserted after old line 5: line 5 stays, line 6 moves down by two.
  const std::vector<CarriedSegment> s = carrySegments({{5, 6}}, {{5, 0, 6, 2}});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].from, (LineRange{5, 5}));
  EXPECT_EQ(s[0].to, (LineRange{5, 5}));
  EXPECT_EQ(s[1].from, (LineRange{6, 6}));
  EXPECT_EQ(s[1].to, (LineRange{8, 8}));
}

TEST(CarrySegments, SplitsARangeAcrossShiftRewriteAndDelete) {
  // Old 3..4 replaced by new 3..5 (one more line); old 8 deleted (the cut after new line 8).
  const std::vector<CarriedSegment> s = carrySegments({{2, 9}}, {{3, 2, 3, 3}, {8, 1, 8, 0}});
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].outcome, LineOutcome::kShifted);
  EXPECT_EQ(s[0].to, (LineRange{2, 2}));
  EXPECT_EQ(s[1].outcome, LineOutcome::kRewritten);
  EXPECT_EQ(s[1].from, (LineRange{3, 4}));
  EXPECT_EQ(s[1].to, (LineRange{3, 5}));
  EXPECT_EQ(s[2].outcome, LineOutcome::kShifted);
  EXPECT_EQ(s[2].from, (LineRange{5, 7}));
  EXPECT_EQ(s[2].to, (LineRange{6, 8}));
  EXPECT_EQ(s[3].outcome, LineOutcome::kDeleted);
  EXPECT_EQ(s[3].from, (LineRange{8, 8}));
  EXPECT_EQ(s[4].outcome, LineOutcome::kShifted);
  EXPECT_EQ(s[4].to, (LineRange{9, 9}));
}

TEST(CarryThroughHunks, ComposesStepsAndCountsOriginalLines) {
  // Step 1 inserts 2 lines at the top; step 2 rewrites new lines 5..6 into one line.
  const HunkList first{{0, 0, 1, 2}};
  const HunkList second{{5, 2, 5, 1}};
  const CarriedLines c = carryThroughHunks({{2, 5}}, {&first, &second});
  // Old 2..5 -> 4..7 -> 4 shifted, 5..6 rewritten into 5, 7 shifted to 6.
  EXPECT_EQ(c.lines, (LineRanges{{4, 6}}));
  EXPECT_EQ(c.unchanged, (LineRanges{{4, 4}, {6, 6}}));
  EXPECT_EQ(c.counts, (CarryCounts{2, 2, 0}));
}

TEST(CarryThroughHunks, ARewrittenLineWhoseReplacementIsDeletedLaterIsDeleted) {
  const HunkList rewrite{{3, 1, 3, 2}};  // old 3 -> new 3..4
  const HunkList remove{{3, 2, 2, 0}};   // new 3..4 removed
  const CarriedLines c = carryThroughHunks({{3, 3}}, {&rewrite, &remove});
  EXPECT_TRUE(c.lines.empty());
  EXPECT_EQ(c.counts, (CarryCounts{0, 0, 1}));
}

class LineCarrierTest : public ::testing::Test {
 protected:
  LineCarrierTest() : repo_(dir_.path() + "/repo") {}

  // Commits `content` as `path` and returns its blob id.
  std::string commitFile(const std::string& path, const std::string& content) {
    repo_.commit({{path, content}});
    return testing::trimmed(repo_.git("rev-parse HEAD:" + path));
  }

  std::unique_ptr<LineCarrier> open(LineCarrier::Options options = {}) {
    Result<std::unique_ptr<LineCarrier>> c = LineCarrier::open(repo_.dir(), options);
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.isOk() ? std::move(c.value()) : nullptr;
  }

  TempDir dir_;
  GitRepo repo_;
};

TEST_F(LineCarrierTest, InsertionsAboveShift) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string b = commitFile("f.c", numbered(1, 3, "new") + numbered(1, 10));
  auto carrier = open();
  Result<CarriedLines> c = carrier->carry({{5, 6}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{8, 9}}));
  EXPECT_EQ(c->counts, (CarryCounts{2, 0, 0}));
}

TEST_F(LineCarrierTest, EditsInsideRewriteIntoTheHunksNewLines) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  // Line 5 becomes two lines: the hunk -5,1 +5,2.
  const std::string b = commitFile("f.c", numbered(1, 4) + "five a\nfive b\n" + numbered(6, 10));
  auto carrier = open();
  Result<CarriedLines> c = carrier->carry({{4, 6}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{4, 7}}));  // 4 stays, 5 -> 5..6, 6 -> 7
  EXPECT_EQ(c->unchanged, (LineRanges{{4, 4}, {7, 7}}));
  EXPECT_EQ(c->counts, (CarryCounts{2, 1, 0}));
}

TEST_F(LineCarrierTest, DeletionsDelete) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string b = commitFile("f.c", numbered(1, 4) + numbered(7, 10));
  auto carrier = open();
  Result<CarriedLines> c = carrier->carry({{5, 7}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{5, 5}}));  // old 7 is new 5; old 5..6 are gone
  EXPECT_EQ(c->counts, (CarryCounts{1, 0, 2}));
  Result<CarriedLines> gone = carrier->carry({{5, 6}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_TRUE(gone.isOk());
  EXPECT_TRUE(gone->lines.empty());
}

TEST_F(LineCarrierTest, DeletionsAboveShiftUp) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string b = commitFile("f.c", numbered(4, 10));  // lines 1..3 removed
  auto carrier = open();
  Result<CarriedLines> c = carrier->carry({{6, 8}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{3, 5}}));
  EXPECT_EQ(c->unchanged, (LineRanges{{3, 5}}));
  EXPECT_EQ(c->counts, (CarryCounts{3, 0, 0}));
}

// `numbered` with CRLF line ends.
std::string crlf(const std::string& lf) {
  std::string out;
  for (char ch : lf) {
    if (ch == '\n') out += '\r';
    out += ch;
  }
  return out;
}

TEST_F(LineCarrierTest, CrlfFilesCountAndCarryTheirLines) {
  // Committed as bytes (no eol conversion configured), so the blobs hold the CRs.
  const std::string a = commitFile("f.c", crlf(numbered(1, 10)));
  const std::string b = commitFile("f.c", crlf("top 1\ntop 2\n" + numbered(1, 4) + "five\n" + numbered(6, 10)));
  auto carrier = open();
  Result<CarriedLines> c = carrier->carry({{4, 6}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{6, 8}}));
  EXPECT_EQ(c->unchanged, (LineRanges{{6, 6}, {8, 8}}));  // 5 was rewritten into "five"
  EXPECT_EQ(c->counts, (CarryCounts{2, 1, 0}));
  // Ten lines, each ended by CRLF: line 11 is past the end.
  Result<CarriedLines> pastEnd = carrier->carry({{10, 11}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_FALSE(pastEnd.isOk());
  EXPECT_EQ(pastEnd.status().data().value("field", ""), "lines[0]");
}

TEST_F(LineCarrierTest, ALineEndConversionLeavesEveryLineInPlace) {
  // CRLF to LF (and back): the line ends changed, no line's content did. Only the lines really edited are rewritten.
  const std::string a = commitFile("f.c", crlf(numbered(1, 10)));
  const std::string b = commitFile("f.c", "new\n" + numbered(1, 6) + "seven\n" + numbered(8, 10));
  auto carrier = open();
  Result<CarriedLines> c = carrier->carry({{1, 10}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{2, 11}}));
  EXPECT_EQ(c->unchanged, (LineRanges{{2, 7}, {9, 11}}));
  EXPECT_EQ(c->counts, (CarryCounts{9, 1, 0}));
  Result<CarriedLines> back = carrier->carry({{2, 3}}, FileVersion::blob(b), FileVersion::buffer(crlf(numbered(1, 10))));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->lines, (LineRanges{{1, 2}}));
  EXPECT_EQ(back->counts, (CarryCounts{2, 0, 0}));
  // A CR inside a line is content: "x\ry" and "xy" differ.
  LineCarrier bare(nullptr);
  Result<CarriedLines> inside =
      bare.carry({{2, 2}}, FileVersion::buffer("a\nx\ry\nb\n"), FileVersion::buffer("a\nxy\nb\n"));
  ASSERT_TRUE(inside.isOk());
  EXPECT_EQ(inside->counts, (CarryCounts{0, 1, 0}));
}

// A last line without an LF is the same line once one is appended after it (git's "No newline at end of file"): an
// anchor on it moves nowhere and stays unchanged, and the same holds the other way.
TEST_F(LineCarrierTest, ALineAppendedAfterALastLineWithoutANewlineLeavesItUnchanged) {
  LineCarrier bare(nullptr);
  Result<CarriedLines> appended =
      bare.carry({{2, 2}}, FileVersion::buffer("a\nb"), FileVersion::buffer("a\nb\nc\n"));
  ASSERT_TRUE(appended.isOk()) << appended.status().toString();
  EXPECT_EQ(appended->lines, (LineRanges{{2, 2}}));
  EXPECT_EQ(appended->unchanged, (LineRanges{{2, 2}}));
  EXPECT_EQ(appended->counts, (CarryCounts{1, 0, 0}));
  Result<CarriedLines> cut = bare.carry({{1, 2}}, FileVersion::buffer("a\nb\nc\n"), FileVersion::buffer("a\nb"));
  ASSERT_TRUE(cut.isOk()) << cut.status().toString();
  EXPECT_EQ(cut->unchanged, (LineRanges{{1, 2}}));
  // A last line whose text changed is still rewritten.
  Result<CarriedLines> edited = bare.carry({{2, 2}}, FileVersion::buffer("a\nb"), FileVersion::buffer("a\nB\n"));
  ASSERT_TRUE(edited.isOk());
  EXPECT_EQ(edited->counts, (CarryCounts{0, 1, 0}));
}

TEST_F(LineCarrierTest, AFiftyThousandLineFileCarriesExactly) {
  // 100 lines cut at the top, every 1,000th line rewritten, 10 lines inserted after old line 25,000.
  const std::string before = numbered(1, 50000);
  std::string after;
  for (int i = 101; i <= 50000; ++i) {
    after += (i % 1000 == 0 ? "edited " : "line ") + std::to_string(i) + "\n";
    if (i == 25000) after += numbered(1, 10, "inserted");
  }
  const std::string a = commitFile("big.c", before);
  const std::string b = commitFile("big.c", after);
  auto carrier = open();
  // Old n (101 <= n <= 25000) is new n - 100; after 25,000 it is n - 90.
  Result<CarriedLines> c = carrier->carry({{50, 150}, {24990, 25010}, {49990, 50000}}, FileVersion::blob(a),
                                          FileVersion::blob(b));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{1, 50}, {24890, 24920}, {49900, 49910}}));
  EXPECT_EQ(c->unchanged, (LineRanges{{1, 50}, {24890, 24899}, {24911, 24920}, {49900, 49909}}));
  EXPECT_EQ(c->counts, (CarryCounts{50 + 20 + 10, 1 + 1, 51}));
  // The whole file through all of it: 51 hunks, each line accounted for once.
  Result<CarriedLines> whole = carrier->carry({{1, 50000}}, FileVersion::blob(a), FileVersion::blob(b));
  ASSERT_TRUE(whole.isOk());
  EXPECT_EQ(whole->counts, (CarryCounts{50000 - 100 - 50, 50, 100}));
  EXPECT_EQ(whole->lines, (LineRanges{{1, 49910}}));
}

TEST_F(LineCarrierTest, AThousandHunksComposeAlongAChain) {
  // Every 50th line rewritten, then every 50th line (offset by 25) rewritten again: 1,000 hunks per step.
  std::string first, second;
  for (int i = 1; i <= 50000; ++i) {
    first += (i % 50 == 0 ? "one " : "line ") + std::to_string(i) + "\n";
    second += (i % 50 == 0 ? "one " : i % 50 == 25 ? "two " : "line ") + std::to_string(i) + "\n";
  }
  LineCarrier bare(nullptr);
  Result<CarriedLines> c = bare.carryAlong(
      {{1, 50000}}, {FileVersion::buffer(numbered(1, 50000)), FileVersion::buffer(first), FileVersion::buffer(second)});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->counts, (CarryCounts{48000, 2000, 0}));
  EXPECT_EQ(c->lines, (LineRanges{{1, 50000}}));
  EXPECT_EQ(c->unchanged.size(), 2000u);  // the runs between the rewritten lines
}

TEST_F(LineCarrierTest, IdenticalBlobsAreIdentity) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  commitFile("other.c", "x\n");  // a later commit that leaves f.c as it was
  const std::string same = testing::trimmed(repo_.git("rev-parse HEAD:f.c"));
  ASSERT_EQ(a, same);
  auto carrier = open();
  Result<std::shared_ptr<const VersionDiff>> d = carrier->diff(FileVersion::blob(a), FileVersion::blob(same));
  ASSERT_TRUE(d.isOk());
  EXPECT_TRUE((*d)->hunks.empty());
  Result<CarriedLines> c = carrier->carry({{1, 2}, {9, 10}}, FileVersion::blob(a), FileVersion::blob(same));
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->lines, (LineRanges{{1, 2}, {9, 10}}));
  EXPECT_EQ(c->counts, (CarryCounts{4, 0, 0}));
}

TEST_F(LineCarrierTest, ABufferEqualToABlobIsThatVersion) {
  const std::string content = numbered(1, 3, "new") + numbered(1, 10);
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string b = commitFile("f.c", content);
  EXPECT_EQ(FileVersion::buffer(content).id(), b);
  auto carrier = open();
  Result<CarriedLines> viaBlob = carrier->carry({{5, 6}}, FileVersion::blob(a), FileVersion::blob(b));
  Result<CarriedLines> viaBuffer = carrier->carry({{5, 6}}, FileVersion::blob(a), FileVersion::buffer(content));
  ASSERT_TRUE(viaBlob.isOk());
  ASSERT_TRUE(viaBuffer.isOk()) << viaBuffer.status().toString();
  EXPECT_EQ(viaBuffer->lines, viaBlob->lines);
}

TEST_F(LineCarrierTest, AKeptVersionIsItsBufferUnderTheIdItWasStoredWith) {
  // A version memq keeps is read back with its blob id: the carrier takes it as that buffer without hashing it.
  const std::string before = numbered(1, 10);
  const std::string workTree = numbered(1, 4, "new") + numbered(1, 10);
  const std::string id = FileVersion::buffer(before).id();
  const FileVersion kept = FileVersion::kept(std::make_shared<const std::string>(before), id);
  EXPECT_EQ(kept.id(), id);
  ASSERT_NE(kept.content(), nullptr);
  EXPECT_EQ(*kept.content(), before);
  LineCarrier bare(nullptr);
  Result<CarriedLines> c = bare.carry({{2, 3}}, kept, FileVersion::buffer(workTree));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{6, 7}}));
  EXPECT_EQ(c->counts, (CarryCounts{2, 0, 0}));
}

TEST_F(LineCarrierTest, CarriesIntoAnUncommittedBufferAndBetweenBuffersWithoutARepository) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string workTree = numbered(1, 2) + numbered(5, 10);  // lines 3..4 deleted, not committed
  auto carrier = open();
  Result<CarriedLines> c = carrier->carry({{6, 6}}, FileVersion::blob(a), FileVersion::buffer(workTree));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{4, 4}}));

  LineCarrier bare(nullptr);
  Result<CarriedLines> buffers =
      bare.carry({{6, 6}}, FileVersion::buffer(numbered(1, 10)), FileVersion::buffer(workTree));
  ASSERT_TRUE(buffers.isOk()) << buffers.status().toString();
  EXPECT_EQ(buffers->lines, (LineRanges{{4, 4}}));
  // The first buffer has blob a's content, so it is that version: the pair is answered from the cache.
  EXPECT_TRUE(bare.carry({{1, 1}}, FileVersion::blob(a), FileVersion::buffer(workTree)).isOk());
  // A blob it has never seen cannot be read without a repository.
  const std::string later = commitFile("f.c", numbered(1, 11));
  Result<CarriedLines> noRepository =
      bare.carry({{1, 1}}, FileVersion::blob(later), FileVersion::buffer(workTree));
  ASSERT_FALSE(noRepository.isOk());
  EXPECT_NE(noRepository.status().message().find("no repository"), std::string::npos);
}

TEST_F(LineCarrierTest, ChainsCompose) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string b = commitFile("f.c", "top\n" + numbered(1, 10));             // A->B: insert at the top
  const std::string c = commitFile("f.c", "top\n" + numbered(1, 8) + "end\n");   // B->C: old 9..10 -> "end"
  auto carrier = open();
  Result<CarriedLines> along = carrier->carryAlong(
      {{2, 3}, {9, 9}}, {FileVersion::blob(a), FileVersion::blob(b), FileVersion::blob(c)});
  ASSERT_TRUE(along.isOk()) << along.status().toString();
  EXPECT_EQ(along->lines, (LineRanges{{3, 4}, {10, 10}}));
  EXPECT_EQ(along->counts, (CarryCounts{2, 1, 0}));
  // The single diff A->C says the same for this history.
  Result<CarriedLines> direct = carrier->carry({{2, 3}, {9, 9}}, FileVersion::blob(a), FileVersion::blob(c));
  ASSERT_TRUE(direct.isOk());
  EXPECT_EQ(direct->lines, along->lines);
}

TEST_F(LineCarrierTest, BinaryVersionsAreRefused) {
  const std::string text = commitFile("f.bin", "a\nb\n");
  const std::string binary = commitFile("f.bin", std::string("a\0b\n", 4));
  auto carrier = open();
  Result<CarriedLines> c = carrier->carry({{1, 1}}, FileVersion::blob(text), FileVersion::blob(binary));
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidParams);
  EXPECT_NE(c.status().message().find("binary"), std::string::npos) << c.status().message();
}

TEST_F(LineCarrierTest, AVersionLargerThanTheLargestAnchoredFileIsRefusedLikeABinaryOne) {
  // Two long lines, so that a diff, were one run, would be quick whatever the size.
  const auto twoLines = [](size_t bytes) {
    const size_t first = bytes / 2;
    return std::string(first - 1, 'x') + "\n" + std::string(bytes - first - 1, 'y') + "\n";
  };
  const std::string small = commitFile("f.c", numbered(1, 10));
  const std::string atBound = commitFile("f.c", twoLines(kMaxAnchoredFileBytes));
  const std::string pastBound = commitFile("f.c", twoLines(kMaxAnchoredFileBytes + 1));
  auto carrier = open();
  Result<CarriedLines> largest = carrier->carry({{1, 1}}, FileVersion::blob(small), FileVersion::blob(atBound));
  ASSERT_TRUE(largest.isOk()) << largest.status().toString();
  EXPECT_EQ(largest->counts, (CarryCounts{0, 1, 0}));
  for (const FileVersion& tooLarge :
       {FileVersion::blob(pastBound), FileVersion::buffer(twoLines(kMaxAnchoredFileBytes + 1))}) {
    SCOPED_TRACE(tooLarge.isBuffer() ? "buffer" : "blob");
    Result<CarriedLines> into = carrier->carry({{1, 1}}, FileVersion::blob(small), tooLarge);
    ASSERT_FALSE(into.isOk());
    EXPECT_EQ(into.status().code(), ErrorCode::kInvalidParams);
    EXPECT_EQ(into.status().data().value("field", ""), "version");
    EXPECT_NE(into.status().message().find(tooLarge.id()), std::string::npos) << into.status().message();
    Result<CarriedLines> from = carrier->carry({{1, 1}}, tooLarge, FileVersion::blob(small));
    ASSERT_FALSE(from.isOk());
    EXPECT_EQ(from.status().data().value("field", ""), "version");
  }
  // A re-base's pair into it is left out of the pinned set, as a binary version's is; the other pair's diff is held
  // already, from the carry above.
  EXPECT_EQ(carrier->pin({{FileVersion::blob(small), FileVersion::blob(pastBound)},
                          {FileVersion::blob(small), FileVersion::blob(atBound)}},
                         "head"),
            0u);
  EXPECT_EQ(carrier->pinnedCount(), 1u);
}

TEST_F(LineCarrierTest, UnknownBlobsAndLinesPastTheEndAreRefused) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  auto carrier = open();
  Result<CarriedLines> missing =
      carrier->carry({{1, 1}}, FileVersion::blob(a), FileVersion::blob(std::string(40, 'e')));
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  Result<CarriedLines> malformed = carrier->carry({{1, 1}}, FileVersion::blob(a), FileVersion::blob("HEAD"));
  EXPECT_EQ(malformed.status().code(), ErrorCode::kInvalidParams);
  Result<CarriedLines> pastEnd = carrier->carry({{9, 11}}, FileVersion::blob(a), FileVersion::blob(a));
  ASSERT_FALSE(pastEnd.isOk());
  EXPECT_EQ(pastEnd.status().data().value("field", ""), "lines[0]");
}

TEST_F(LineCarrierTest, ACacheHitGivesTheSameAnswer) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string b = commitFile("f.c", numbered(1, 4) + "five\n" + numbered(7, 10));
  auto carrier = open();
  Result<CarriedLines> first = carrier->carry({{3, 8}}, FileVersion::blob(a), FileVersion::blob(b));
  const LineCarrier::CacheStats afterFirst = carrier->cacheStats();
  Result<CarriedLines> second = carrier->carry({{3, 8}}, FileVersion::blob(a), FileVersion::blob(b));
  const LineCarrier::CacheStats afterSecond = carrier->cacheStats();
  ASSERT_TRUE(first.isOk());
  ASSERT_TRUE(second.isOk());
  EXPECT_EQ(afterFirst.misses, 1u);
  EXPECT_EQ(afterSecond.hits, afterFirst.hits + 1);
  EXPECT_EQ(afterSecond.misses, 1u);
  EXPECT_EQ(second->lines, first->lines);
  EXPECT_EQ(second->counts, first->counts);
}

TEST_F(LineCarrierTest, TheCacheKeepsOnlyTheMostRecentPairs) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string b = commitFile("f.c", numbered(1, 9));
  const std::string c = commitFile("f.c", numbered(1, 8));
  auto carrier = open({.cacheEntries = 1});
  ASSERT_TRUE(carrier->diff(FileVersion::blob(a), FileVersion::blob(b)).isOk());
  ASSERT_TRUE(carrier->diff(FileVersion::blob(b), FileVersion::blob(c)).isOk());  // evicts a->b
  EXPECT_EQ(carrier->cacheStats().entries, 1u);
  ASSERT_TRUE(carrier->diff(FileVersion::blob(a), FileVersion::blob(b)).isOk());
  EXPECT_EQ(carrier->cacheStats().misses, 3u);
  EXPECT_EQ(carrier->cacheStats().hits, 0u);
}

// Bounded by bytes as well as by count: diffs of a thousand hunks each, under a byte bound of two and a half of them
// and the default count bound, leave the two newest cached however many are carried.
TEST_F(LineCarrierTest, TheCacheKeepsItsBytesWithinTheBoundAndTheNewestDiffs) {
  const FileVersion base = FileVersion::buffer(numbered(1, 2000));
  const size_t diffBytes = heldBytesOfDiff(base, FileVersion::buffer(everyOtherLine(2000, "v0")));
  ASSERT_GT(diffBytes, 1000 * sizeof(DiffHunk));
  const size_t bound = 2 * diffBytes + diffBytes / 2;
  LineCarrier carrier(nullptr, {.cacheBytes = bound});
  std::vector<FileVersion> versions;
  for (int k = 1; k <= 10; ++k) {
    versions.push_back(FileVersion::buffer(everyOtherLine(2000, "v" + std::to_string(k))));
    Result<CarriedLines> c = carrier.carry({{1, 4}}, base, versions.back());
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    EXPECT_EQ(c->counts, (CarryCounts{2, 2, 0}));
    EXPECT_LE(carrier.cacheStats().bytes, bound) << "after " << k << " diffs";
  }
  EXPECT_EQ(carrier.cacheStats().entries, 2u);
  EXPECT_EQ(carrier.cacheStats().bytes, 2 * diffBytes);
  const uint64_t misses = carrier.cacheStats().misses;
  ASSERT_TRUE(carrier.diff(base, versions[9]).isOk());
  ASSERT_TRUE(carrier.diff(base, versions[8]).isOk());
  EXPECT_EQ(carrier.cacheStats().misses, misses);  // the two newest are cached
  ASSERT_TRUE(carrier.diff(base, versions[0]).isOk());
  EXPECT_EQ(carrier.cacheStats().misses, misses + 1);  // the oldest was evicted
  EXPECT_LE(carrier.cacheStats().bytes, bound);
}

// A diff larger than the whole byte bound is its caller's answer, but the cache does not keep it (it would evict
// every other entry and still pass the bound); a small diff is cached as before.
TEST_F(LineCarrierTest, ADiffLargerThanTheByteBoundIsReturnedButNotCached) {
  const FileVersion base = FileVersion::buffer(numbered(1, 2000));
  const FileVersion rewritten = FileVersion::buffer(everyOtherLine(2000, "v1"));
  const size_t diffBytes = heldBytesOfDiff(base, rewritten);
  LineCarrier carrier(nullptr, {.cacheBytes = diffBytes - 1});
  for (uint64_t round = 1; round <= 2; ++round) {
    Result<std::shared_ptr<const VersionDiff>> d = carrier.diff(base, rewritten);
    ASSERT_TRUE(d.isOk()) << d.status().toString();
    EXPECT_EQ((*d)->hunks.size(), 1000u);
    EXPECT_EQ((*d)->hunks.front(), (DiffHunk{1, 1, 1, 1}));
    EXPECT_EQ((*d)->hunks.back(), (DiffHunk{1999, 1, 1999, 1}));
    EXPECT_EQ(carrier.cacheStats().entries, 0u);
    EXPECT_EQ(carrier.cacheStats().bytes, 0u);
    EXPECT_EQ(carrier.cacheStats().misses, round);  // diffed again each time
  }
  Result<CarriedLines> c = carrier.carry({{1, 4}, {1999, 2000}}, base, rewritten);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->lines, (LineRanges{{1, 4}, {1999, 2000}}));
  EXPECT_EQ(c->counts, (CarryCounts{3, 3, 0}));
  ASSERT_TRUE(carrier.diff(base, FileVersion::buffer(numbered(1, 2001))).isOk());  // one hunk
  EXPECT_EQ(carrier.cacheStats().entries, 1u);
}

TEST_F(LineCarrierTest, ThreadsSharingACarrierGetTheSameAnswers) {
  std::vector<std::string> blobs{commitFile("f.c", numbered(1, 40))};
  for (int v = 1; v <= 6; ++v) blobs.push_back(commitFile("f.c", numbered(1, v, "new") + numbered(1, 40)));
  auto carrier = open({.cacheEntries = 3});  // small, so threads also evict each other's entries
  std::vector<LineRanges> expected;
  for (size_t v = 1; v < blobs.size(); ++v) {
    Result<CarriedLines> c = carrier->carry({{1, 40}}, FileVersion::blob(blobs[0]), FileVersion::blob(blobs[v]));
    ASSERT_TRUE(c.isOk());
    ASSERT_EQ(c->lines, (LineRanges{{static_cast<uint32_t>(v + 1), static_cast<uint32_t>(v + 40)}}));
    expected.push_back(c->lines);
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (size_t v = 1; v < blobs.size(); ++v) {
          Result<CarriedLines> c =
              carrier->carry({{1, 40}}, FileVersion::blob(blobs[0]), FileVersion::blob(blobs[v]));
          if (!c.isOk() || c->lines != expected[v - 1]) ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  EXPECT_LE(carrier->cacheStats().entries, 3u);
}

TEST_F(LineCarrierTest, HeadAndItsBlobsFollowHeadAsItMoves) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  auto carrier = open();
  const std::string first = carrier->head();
  EXPECT_EQ(first, repo_.rev("HEAD"));
  EXPECT_EQ(carrier->blobAtHead("f.c"), a);
  EXPECT_EQ(carrier->blobAtHead("missing.c"), std::nullopt);
  const std::string b = commitFile("f.c", numbered(1, 11));
  EXPECT_NE(carrier->head(), first);
  EXPECT_EQ(carrier->blobAtHead("f.c"), b);
  LineCarrier bare(nullptr);
  EXPECT_EQ(bare.head(), "");
  EXPECT_EQ(bare.blobAtHead("f.c"), std::nullopt);
}

TEST_F(LineCarrierTest, PinnedDiffsAreNeverEvictedAndAreReplacedAsAWhole) {
  const std::string a = commitFile("f.c", numbered(1, 10));
  const std::string b = commitFile("f.c", numbered(1, 9));
  const std::string c = commitFile("f.c", numbered(1, 8));
  auto carrier = open({.cacheEntries = 1});
  EXPECT_EQ(carrier->pin({{FileVersion::blob(a), FileVersion::blob(c)}, {FileVersion::blob(b), FileVersion::blob(c)},
                          {FileVersion::blob(a), FileVersion::blob(c)}},
                         "head 1"),
            2u);
  EXPECT_EQ(carrier->pinnedTag(), "head 1");
  EXPECT_EQ(carrier->pinnedCount(), 2u);
  ASSERT_TRUE(carrier->diff(FileVersion::blob(a), FileVersion::blob(b)).isOk());  // fills the one-entry LRU
  ASSERT_TRUE(carrier->diff(FileVersion::blob(c), FileVersion::blob(a)).isOk());  // and replaces it
  const uint64_t misses = carrier->cacheStats().misses;
  Result<CarriedLines> held = carrier->carry({{1, 9}}, FileVersion::blob(a), FileVersion::blob(c));
  ASSERT_TRUE(held.isOk());
  EXPECT_EQ(held->lines, (LineRanges{{1, 8}}));
  EXPECT_EQ(carrier->cacheStats().misses, misses);  // answered from the pinned set
  // A new set keeps what it shares with the old one (nothing recomputed) and drops the rest.
  EXPECT_EQ(carrier->pin({{FileVersion::blob(b), FileVersion::blob(c)}}, "head 2"), 0u);
  EXPECT_EQ(carrier->pinnedCount(), 1u);
  ASSERT_TRUE(carrier->diff(FileVersion::blob(a), FileVersion::blob(c)).isOk());
  EXPECT_EQ(carrier->cacheStats().misses, misses + 1);
  // A pair that cannot be diffed is left out.
  EXPECT_EQ(carrier->pin({{FileVersion::blob(std::string(40, 'e')), FileVersion::blob(c)}}, "head 3"), 0u);
  EXPECT_EQ(carrier->pinnedCount(), 0u);
}

// The pinned set is bounded by bytes: a pair whose diff would take it past the bound is left out (and carried by a
// diff computed when the carry needs it), in the order the pairs come, so a smaller diff after it is still held.
TEST_F(LineCarrierTest, PinningPastItsByteBoundLeavesPairsOut) {
  const FileVersion base = FileVersion::buffer(numbered(1, 2000));
  std::vector<FileVersion> large;
  for (int k = 1; k <= 4; ++k) large.push_back(FileVersion::buffer(everyOtherLine(2000, "v" + std::to_string(k))));
  const FileVersion small = FileVersion::buffer(numbered(1, 2001));  // one hunk
  const size_t largeBytes = heldBytesOfDiff(base, large[0]);
  const size_t smallBytes = heldBytesOfDiff(base, small);
  ASSERT_LT(smallBytes, largeBytes / 2);
  const size_t bound = 2 * largeBytes + largeBytes / 2;
  LineCarrier carrier(nullptr, {.pinnedBytes = bound});
  EXPECT_EQ(carrier.pin({{base, large[0]}, {base, large[1]}, {base, large[2]}, {base, large[3]}, {base, small}},
                        "head"),
            3u);
  EXPECT_EQ(carrier.pinnedCount(), 3u);
  EXPECT_EQ(carrier.cacheStats().pinnedBytes, 2 * largeBytes + smallBytes);
  EXPECT_LE(carrier.cacheStats().pinnedBytes, bound);
  const uint64_t misses = carrier.cacheStats().misses;
  for (const FileVersion& held : {large[0], large[1], small}) {
    ASSERT_TRUE(carrier.carry({{1, 4}}, base, held).isOk());
  }
  EXPECT_EQ(carrier.cacheStats().misses, misses);  // answered from the pinned set
  Result<CarriedLines> leftOut = carrier.carry({{1, 4}}, base, large[2]);
  ASSERT_TRUE(leftOut.isOk()) << leftOut.status().toString();
  EXPECT_EQ(leftOut->counts, (CarryCounts{2, 2, 0}));
  EXPECT_EQ(carrier.cacheStats().misses, misses + 1);  // diffed by the carry
}

TEST_F(LineCarrierTest, ThePinningClaimIsHeldByOneCallerAtATime) {
  commitFile("f.c", numbered(1, 10));
  auto carrier = open();
  std::optional<LineCarrier::PinningClaim> next;
  {
    LineCarrier::PinningClaim first = carrier->claimPinning();
    ASSERT_TRUE(first);
    EXPECT_FALSE(carrier->claimPinning());
    EXPECT_FALSE(carrier->claimPinning());  // a refused claim gives back nothing when it goes
    {
      const LineCarrier::PinningClaim moved(std::move(first));
      EXPECT_TRUE(moved);
      EXPECT_FALSE(carrier->claimPinning());
    }
    next.emplace(carrier->claimPinning());  // given back by the claim it was moved to, when that went
    EXPECT_TRUE(*next);
  }
  EXPECT_FALSE(carrier->claimPinning());  // the moved-from claim gave back nothing when it went
  next.reset();
  EXPECT_TRUE(carrier->claimPinning());
}

}  // namespace
}  // namespace memq
