// Recall over a real store: lanes, selection, and the rule that hidden, superseded and rejected memories never
// come back — matched by text, by file, or by embedding.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <random>
#include <unordered_map>

#include "daemon/embed/hashbag.h"
#include "daemon/recall/recall_engine.h"
#include "daemon/store/memory_store.h"

namespace memq {
namespace {

namespace fs = std::filesystem;

class FakeRepo : public RepoSignals {
 public:
  std::unordered_map<std::string, std::vector<CoChangeNeighbor>> neighbours;
  std::unordered_map<std::string, int> radius;
  std::vector<CoChangeNeighbor> cochangeNeighbors(const std::string& path, size_t limit) override {
    auto v = neighbours[path];
    if (v.size() > limit) v.resize(limit);
    return v;
  }
  int blastRadius(const std::string& path) override { return radius.count(path) ? radius[path] : 0; }
  std::optional<std::string> currentBlobId(const std::string&) override { return std::nullopt; }
};

// The work tree as staleness sees it: fixed blob ids, and how many times each path was asked for.
class CountingRepo : public FakeRepo {
 public:
  std::unordered_map<std::string, std::string> ids;
  std::unordered_map<std::string, int> asked;
  std::optional<std::string> currentBlobId(const std::string& path) override {
    ++asked[path];
    auto it = ids.find(path);
    return it == ids.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
};

// Staleness over many hits asks each file's current blob id once (a file edited moments ago is read on every ask),
// and each hit is judged on it: changed, missing, fresh.
TEST(StalenessTest, HitsSharingAFileAskItsBlobIdOnce) {
  CountingRepo repo;
  repo.ids = {{"a.c", "new"}, {"b.c", "same"}};
  std::vector<RecallHit> hits(3);
  auto ref = [](const std::string& path, const std::string& blob) {
    FileRef f;
    f.path = path;
    f.blobId = blob;
    return f;
  };
  for (auto& h : hits) h.memory.files = {ref("a.c", "old"), ref("b.c", "same")};
  hits[2].memory.files.push_back(ref("gone.c", "x"));
  CurrentBlobIds current(repo);
  for (auto& h : hits) annotateStaleness(h, current);
  EXPECT_EQ(repo.asked["a.c"], 1);
  EXPECT_EQ(repo.asked["b.c"], 1);
  EXPECT_EQ(repo.asked["gone.c"], 1);
  for (const auto& h : hits) {
    EXPECT_TRUE(h.stale);
    EXPECT_EQ(h.changedFiles, std::vector<std::string>{"a.c"});
  }
  EXPECT_EQ(hits[2].missingFiles, std::vector<std::string>{"gone.c"});
  EXPECT_TRUE(hits[0].missingFiles.empty());
}

class RecallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("memq-recall-" + std::to_string(std::random_device{}()));
    store_ = std::move(*MemoryStore::open(options()));
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  std::string save(const std::string& summary, std::vector<std::string> files = {}, const std::string& details = "") {
    SaveInput in{.summary = summary, .details = details, .files = {files.begin(), files.end()}};
    auto n = normalizeSave(in, dir_.string());
    std::vector<FileRef> refs;
    for (const auto& f : n->files) refs.push_back({f, std::nullopt});
    return store_->save(*n, refs, actor_)->id;
  }
  std::vector<std::string> recallIds(RecallRequest r, RepoSignals* repo = nullptr) {
    auto q = prepareQuery(r, embedder_, repo);
    auto c = gatherCandidates(*store_, r, q, repo);
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    auto hits = rankAndSelect(std::move(*c), r);
    EXPECT_TRUE(loadHitRows(*store_, hits).isOk());
    std::vector<std::string> ids;
    for (const auto& h : hits) ids.push_back(h.memory.id);
    return ids;
  }
  // The one candidate the query "mirror probe" finds.
  Candidate probe() {
    RecallRequest r{.query = "mirror probe"};
    auto c = gatherCandidates(*store_, r, prepareQuery(r, embedder_, nullptr), nullptr);
    EXPECT_TRUE(c.isOk());
    EXPECT_EQ(c->size(), 1u);
    return c->empty() ? Candidate{} : c->front();
  }
  StoreOptions options() const {
    StoreOptions o;
    o.path = (dir_ / "m.db").string();
    o.projectRoot = dir_.string();
    o.embedder = &embedder_;
    return o;
  }

  HashbagEmbedder embedder_;
  fs::path dir_;
  Actor actor_{"user", "test"};
  std::unique_ptr<MemoryStore> store_;
};

TEST_F(RecallTest, FindsByTextAndByFile) {
  std::string jwt = save("JWT expiry uses the container clock", {"src/jwt.ts"});
  save("Use pnpm, not npm", {"package.json"});
  RecallRequest byText{.query = "why does jwt expiry drift"};
  EXPECT_EQ(recallIds(byText).front(), jwt);
  RecallRequest byFile{.files = {"src/jwt.ts"}};
  EXPECT_EQ(recallIds(byFile), std::vector<std::string>{jwt});
  RecallRequest both{.query = "jwt", .files = {"src/jwt.ts"}, .ranker = Ranker::kReference};
  EXPECT_EQ(recallIds(both).front(), jwt);
}

TEST_F(RecallTest, PutAwayMemoriesNeverComeBack) {
  const std::string text = "Deploy staging with the blue green script";
  std::string hidden = save(text, {"deploy.sh"});
  std::string superseded = save(text + " version one", {"deploy.sh"});
  std::string replacement = save("Deploy with the new pipeline", {});
  std::string rejected = save(text + " always on fridays", {"deploy.sh"});
  ASSERT_TRUE(store_->hide(hidden, std::nullopt, actor_).isOk());
  ASSERT_TRUE(store_->supersede(superseded, replacement, actor_).isOk());
  ASSERT_TRUE(store_->reject(rejected, "wrong", actor_).isOk());
  for (Ranker ranker : {Ranker::kDefault, Ranker::kReference}) {
    for (const auto& query : {text, text + " version one", text + " always on fridays", std::string("deploy")}) {
      RecallRequest r{.query = query, .files = {"deploy.sh"}, .limit = 50, .threshold = -1e9, .ranker = ranker};
      for (const auto& id : recallIds(r)) {
        EXPECT_NE(id, hidden);
        EXPECT_NE(id, superseded);
        EXPECT_NE(id, rejected);
      }
    }
  }
  // The active memory on the same file and words is found: the loops above were not empty for another reason.
  RecallRequest control{.query = "deploy", .files = {"deploy.sh"}, .limit = 50, .threshold = -1e9};
  EXPECT_EQ(recallIds(control), std::vector<std::string>{replacement});
  // Nor by embedding: the index holds active rows only.
  auto vec = embedder_.embed(memoryEmbedSource(text, "", {}));
  for (const auto& h : store_->activeIndex().topK(vec, 50, -1)) {
    auto id = store_->idOf(h.key);
    EXPECT_NE(*id, hidden);
    EXPECT_NE(*id, superseded);
    EXPECT_NE(*id, rejected);
  }
}

TEST_F(RecallTest, DegenerateQueriesReturnNormally) {
  save("Something about a", {});
  EXPECT_TRUE(recallIds(RecallRequest{}).empty());  // empty query, no files: nothing
  for (const std::string& q : std::vector<std::string>{"a", "\" ( ) * : NEAR OR", std::string(100 * 1024, 'x'), "\xff\xfe bad"}) {
    RecallRequest r{.query = q};
    auto prepared = prepareQuery(r, embedder_, nullptr);
    EXPECT_LT(prepared.unicodeMatch.size(), 8192u);
    EXPECT_LT(prepared.trigramMatch.size(), 8192u);
    auto c = gatherCandidates(*store_, r, prepared, nullptr);
    EXPECT_TRUE(c.isOk()) << c.status().toString();
  }
}

TEST_F(RecallTest, SelectionSkipsWhatDoesNotFitInsteadOfStopping) {
  // The big memory ranks first (the queried file is its own, and the whole query is its summary), so a selection
  // that stopped at the first memory past the budget would return nothing.
  std::string big = save("alpha rollout notes", {"rollout.c"}, std::string(1900, 'd'));
  std::string small = save("alpha rollout short", {});
  RecallRequest unbounded{.query = "alpha rollout notes", .files = {"rollout.c"}, .limit = 5, .maxChars = 100000,
                          .threshold = 0};
  auto ranked = recallIds(unbounded);
  ASSERT_EQ(ranked, (std::vector<std::string>{big, small}));
  RecallRequest r = unbounded;
  r.maxChars = 200;
  EXPECT_EQ(recallIds(r), std::vector<std::string>{small});
  // A hit's normalized score is relative to the best hit returned, not to a better candidate left out for its size.
  auto q = prepareQuery(r, embedder_, nullptr);
  auto candidates = gatherCandidates(*store_, r, q, nullptr);
  ASSERT_TRUE(candidates.isOk());
  auto hits = rankAndSelect(std::move(*candidates), r);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_DOUBLE_EQ(hits[0].normalizedScore, 1.0);
}

TEST_F(RecallTest, CochangeLaneTakesTheStrongestNeighbours) {
  std::string strong = save("Parser tables must be regenerated", {"src/tables.c"});
  std::string weak = save("Lexer keeps a global buffer", {"src/lexer.c"});
  FakeRepo repo;
  repo.neighbours["src/parser.c"] = {{"src/aaa.c", 2, 0.1}, {"src/tables.c", 9, 0.9}, {"src/lexer.c", 3, 0.3}};
  RecallRequest r{.files = {"src/parser.c"}, .limit = 5, .threshold = 0};
  auto prepared = prepareQuery(r, embedder_, &repo);
  ASSERT_EQ(prepared.cochange.size(), 2u);  // at most 2 per queried file
  EXPECT_EQ(prepared.cochange[0].path, "src/tables.c");
  auto ids = recallIds(r, &repo);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), strong);
  (void)weak;
}

TEST_F(RecallTest, DefaultRanksFileCandidatesByTextRelevance) {
  // Several memories on the queried file: the one whose text matches the query's subject line wins, though it is
  // the oldest (the file lane alone would list it last), and though its text is outside the FTS lanes' top list.
  std::string target = save("tc: fix filter parsing of u32 handles", {"tc/f_u32.c"}, "handles were parsed as decimal");
  for (int i = 0; i < 40; ++i) save("tc: unrelated change number " + std::to_string(i), {"tc/f_u32.c"});
  RecallRequest r{.query = "u32: handles parsed wrongly\n\nThe filter parsing broke because of handles.",
                  .files = {"tc/f_u32.c"}, .limit = 3, .threshold = 0};
  auto ids = recallIds(r);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), target);
}

TEST_F(RecallTest, QuerySubjectIsTheFirstLineOfAMultiLineQuery) {
  EXPECT_EQ(querySubject("  fix the parser \n\nbody text"), "fix the parser");
  EXPECT_EQ(querySubject("\n\n subject\nbody"), "subject");
  EXPECT_EQ(querySubject("one line only"), "");
  EXPECT_EQ(querySubject(""), "");
}

TEST_F(RecallTest, ReferenceRankerKeepsItsOwnCandidateLimits) {
  // The default ranker reads more file candidates; the reference keeps the reference's 30.
  for (int i = 0; i < 40; ++i) save("note " + std::to_string(i), {"a.c"});
  RecallRequest ref{.files = {"a.c"}, .limit = 100, .threshold = 0, .ranker = Ranker::kReference};
  EXPECT_EQ(recallIds(ref).size(), static_cast<size_t>(kFileCandidateLimit));
  RecallRequest def{.files = {"a.c"}, .limit = 100, .threshold = 0};
  EXPECT_EQ(recallIds(def).size(), 40u);
}

TEST_F(RecallTest, CandidatesCarryTheRowsCurrentUsePinAndLength) {
  // Candidates are built without loading rows: each write must reach what ranking and selection read.
  std::string id = save("mirror probe", {}, "three");
  int64_t pk = *store_->pkOf(id);
  Candidate c = probe();
  EXPECT_EQ(c.pk, pk);
  EXPECT_EQ(c.scope, "project");
  EXPECT_EQ(c.signals.useCount, 0);
  EXPECT_FALSE(c.signals.pinned);
  EXPECT_EQ(c.cost, std::string("mirror probe").size() + 5);
  ASSERT_TRUE(store_->markUsed({pk, pk}).isOk());
  EXPECT_EQ(probe().signals.useCount, 2);
  ASSERT_TRUE(store_->setPinned(id, true, actor_).isOk());
  EXPECT_TRUE(probe().signals.pinned);
  UpdateInput longer;
  longer.details = "\xF0\x9F\x98\x80 é";  // a surrogate pair and one BMP character: 2 + 1 + 1 UTF-16 units
  ASSERT_TRUE(store_->update(id, longer, actor_).isOk());
  EXPECT_EQ(probe().cost, std::string("mirror probe").size() + 4);
  EXPECT_EQ(probe().signals.useCount, 2);
  EXPECT_TRUE(probe().signals.pinned);
  // A write by another connection reaches it too.
  auto other = MemoryStore::open(options());
  ASSERT_TRUE(other.isOk());
  ASSERT_TRUE((*other)->setPinned(id, false, actor_).isOk());
  EXPECT_FALSE(probe().signals.pinned);
}

// A store as recall sees it, which records every textBm25 question.
class RecordingSource : public RecallSource {
 public:
  explicit RecordingSource(MemoryStore& store) : store_(store) {}
  std::vector<std::vector<int64_t>> asked;  // the pks of each textBm25 call, in order

  const std::string& scope() const override { return store_.scope(); }
  bool holdsNoRows() override { return store_.holdsNoRows(); }
  Result<std::vector<FtsHit>> searchFts(FtsLane lane, const std::string& expression, int limit) override {
    return store_.searchFts(lane, expression, limit);
  }
  Result<std::vector<std::optional<double>>> textBm25(const std::string& expression,
                                                      const std::vector<int64_t>& pks) override {
    asked.push_back(pks);
    return store_.textBm25(expression, pks);
  }
  Result<std::vector<FileHit>> findByPaths(const std::vector<std::string>& paths, int limit) override {
    return store_.findByPaths(paths, limit);
  }
  Result<std::vector<std::vector<FileHit>>> findByEachPath(const std::vector<std::string>& paths, int limit) override {
    return store_.findByEachPath(paths, limit);
  }
  std::future<std::vector<VectorIndex::Hit>> beginNearestActive(std::vector<float> query, size_t k,
                                                                float minScore) override {
    return store_.beginNearestActive(std::move(query), k, minScore);
  }
  std::optional<std::vector<const MirroredRow*>> mirroredRows(const std::vector<int64_t>& pks) override {
    return store_.mirroredRows(pks);
  }
  Result<std::vector<Memory>> loadMany(const std::vector<int64_t>& pks) override { return store_.loadMany(pks); }

 private:
  MemoryStore& store_;
};

TEST_F(RecallTest, EveryCandidateGetsItsBm25AndTheTextLanesHitsAreNotScoredTwice) {
  // More text matches than the unicode lane keeps, and file candidates that match the text and that do not.
  for (int i = 0; i < 45; ++i) {
    save("retry budget for the gateway client " + std::to_string(i), {i % 3 == 0 ? "gw/client.cc" : "other.cc"});
  }
  for (int i = 0; i < 10; ++i) save("unrelated note " + std::to_string(i), {"gw/client.cc"});
  RecallRequest r{.query = "gateway retry budget", .files = {"gw/client.cc"}, .limit = 5, .threshold = 0};
  const PreparedQuery q = prepareQuery(r, embedder_, nullptr);
  RecordingSource source(*store_);
  auto c = gatherCandidates(source, r, q, nullptr);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  size_t textHits = 0, fileOnlyMatching = 0, fileOnlyNotMatching = 0;
  std::vector<int64_t> all;
  for (const Candidate& cand : *c) all.push_back(cand.pk);
  auto full = store_->textBm25(q.unicodeMatch, all);  // every candidate's figure, asked of the store directly
  ASSERT_TRUE(full.isOk());
  ASSERT_EQ(source.asked.size(), 1u);  // a one-line query: no subject rescore
  const std::vector<int64_t>& asked = source.asked.front();
  for (size_t i = 0; i < c->size(); ++i) {
    const Candidate& cand = (*c)[i];
    EXPECT_EQ(cand.signals.textBm25, (*full)[i]) << "pk " << cand.pk;
    EXPECT_EQ(cand.signals.subjectBm25, (*full)[i]) << "pk " << cand.pk;
    const bool wasAsked = std::find(asked.begin(), asked.end(), cand.pk) != asked.end();
    if (cand.signals.ftsUnicode) {
      ++textHits;
      EXPECT_FALSE(wasAsked) << "pk " << cand.pk << " was scored by the unicode lane already";
    } else {
      EXPECT_TRUE(wasAsked) << "pk " << cand.pk;
      ++((*full)[i] ? fileOnlyMatching : fileOnlyNotMatching);
    }
  }
  // The case is the one meant: the lane's full top list, and file candidates of both kinds beside it.
  EXPECT_EQ(textHits, static_cast<size_t>(kDefaultFtsCandidateLimit));
  EXPECT_GT(fileOnlyMatching, 0u);
  EXPECT_GT(fileOnlyNotMatching, 0u);
}

// A hit names the ranker's terms only when the request asks to explain it; without explain they are never built
// (every hit's terms null), and the score is the same either way.
TEST_F(RecallTest, HitsNameTheirScoreTermsOnlyWhenExplained) {
  save("rollout checklist for the gateway", {"gw.conf"});
  save("rollout notes for the gateway canary", {"gw.conf"});
  for (Ranker ranker : {Ranker::kDefault, Ranker::kReference}) {
    RecallRequest r{.query = "rollout checklist gateway", .files = {"gw.conf"}, .limit = 5, .threshold = 0};
    r.ranker = ranker;
    // One set of candidates ranked both ways: gathering again would age them by the time in between.
    auto candidates = gatherCandidates(*store_, r, prepareQuery(r, embedder_, nullptr), nullptr);
    ASSERT_TRUE(candidates.isOk());
    auto plain = rankAndSelect(*candidates, r);
    r.explain = true;
    auto explained = rankAndSelect(*candidates, r);
    ASSERT_EQ(plain.size(), 2u) << rankerName(ranker);
    ASSERT_EQ(explained.size(), plain.size()) << rankerName(ranker);
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_TRUE(plain[i].breakdown.terms.is_null()) << rankerName(ranker) << " " << plain[i].breakdown.terms.dump();
      ASSERT_TRUE(explained[i].breakdown.terms.is_object()) << rankerName(ranker);
      EXPECT_FALSE(explained[i].breakdown.terms.empty()) << rankerName(ranker);
      EXPECT_EQ(explained[i].memory.pk, plain[i].memory.pk);
      EXPECT_EQ(explained[i].score, plain[i].score);
    }
  }
}

TEST_F(RecallTest, AHitPutAwayAfterRankingIsDroppedWhenLoaded) {
  std::string kept = save("rollout checklist for the gateway", {"gw.conf"}, "drain first");
  std::string hidden = save("rollout checklist for the gateway canary", {"gw.conf"});
  RecallRequest r{.query = "rollout checklist gateway", .limit = 5, .threshold = 0};
  auto c = gatherCandidates(*store_, r, prepareQuery(r, embedder_, nullptr), nullptr);
  ASSERT_TRUE(c.isOk());
  auto hits = rankAndSelect(std::move(*c), r);
  ASSERT_EQ(hits.size(), 2u);
  // Another connection hides one between ranking and loading (the service releases the scope's lock in between).
  auto other = MemoryStore::open(options());
  ASSERT_TRUE(other.isOk());
  ASSERT_TRUE((*other)->hide(hidden, std::nullopt, actor_).isOk());
  ASSERT_TRUE(loadHitRows(*store_, hits).isOk());
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].memory.id, kept);
  EXPECT_EQ(hits[0].memory.details, "drain first");
  ASSERT_EQ(hits[0].memory.files.size(), 1u);
  EXPECT_EQ(hits[0].memory.files[0].path, "gw.conf");
  EXPECT_GT(hits[0].score, 0);
}

}  // namespace
}  // namespace memq
