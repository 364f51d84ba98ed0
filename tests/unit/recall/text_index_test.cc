// The in-memory unicode lane against the real thing: random corpora in a real FTS5 table (declared as memories_fts
// is), random queries built by unicodeMatch with both rankers' options, and the same rows, order and bm25 from
// TextIndex — before and after updates, deletes and state changes. This is what proves the lane did not change.
#include <gtest/gtest.h>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <random>

#include "daemon/recall/fts_query.h"
#include "daemon/store/text_index.h"

namespace memq {
namespace {

namespace fs = std::filesystem;

// Words the corpora are made of: ASCII (with shared prefixes), case and diacritic variants, non-Latin scripts,
// punctuation-joined tokens that unicode61 splits, and stop words.
const std::vector<std::string> kWords = {
    "token",   "tokens",  "tokenizer", "tok",      "jwt",        "src",        "ts",       "src/jwt.ts", "foo_bar",
    "foo",     "bar",     "barrier",   "error",    "errors",     "ERROR",      "re",       "read",       "ready",
    "reader",  "a.b.c",   "x-y",       "Ärger",    "ärger",      "arger",      "café",     "cafe",       "CAFÉ",
    "naïve",   "naive",   "Straße",    "strasse",  "東京",       "東京都",     "résumé",   "resume",     "Crème",
    "creme",   "the",     "and",       "of",       "a",          "I",          "iproute2", "ip",         "link",
    "link-up", "route",   "routes",    "rtnl",     "netlink",    "v4.19",      "4",        "19",         "ÅSA",
    "åsa",     "ñ",       "n",         "über",     "uber",       "—",          "x",        "config.h",   "Makefile"};

// Query words add prefixes and words absent from every corpus.
const std::vector<std::string> kQueryExtras = {"to",  "tokeni", "err",   "rea",  "caf", "Ä",     "ärg",  "東",
                                               "src/", "src/jwt", "jwt.t", "foo_", "zzz", "routing", "na", "str"};

std::string randomText(std::mt19937& rng, size_t maxWords) {
  std::uniform_int_distribution<size_t> len(0, maxWords);
  std::uniform_int_distribution<size_t> pick(0, kWords.size() - 1);
  std::uniform_int_distribution<int> sep(0, 9);
  std::string out;
  size_t n = len(rng);
  for (size_t i = 0; i < n; ++i) {
    if (i) out += sep(rng) == 0 ? ", " : sep(rng) == 1 ? "\n" : " ";
    out += kWords[pick(rng)];
  }
  return out;
}

std::string randomQuery(std::mt19937& rng) {
  std::uniform_int_distribution<size_t> len(1, 7);
  std::uniform_int_distribution<int> fromExtras(0, 3);
  std::uniform_int_distribution<size_t> pickW(0, kWords.size() - 1);
  std::uniform_int_distribution<size_t> pickE(0, kQueryExtras.size() - 1);
  std::string out;
  size_t n = len(rng);
  for (size_t i = 0; i < n; ++i) {
    if (i) out += " ";
    out += fromExtras(rng) == 0 ? kQueryExtras[pickE(rng)] : kWords[pickW(rng)];
  }
  return out;
}

struct Row {
  std::string summary, details, topics;
  bool active = true;
};

class TextIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("memq-textindex-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    db_ = std::make_unique<SQLite::Database>((dir_ / "fts.db").string(),
                                             SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db_->exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF");
    db_->exec("CREATE VIRTUAL TABLE fts USING fts5(summary, details, topics_text, "
              "tokenize = 'unicode61 remove_diacritics 2')");
    index_ = TextIndex::create(db_->getHandle());
    ASSERT_NE(index_, nullptr);
  }
  void TearDown() override {
    index_.reset();
    db_.reset();
    fs::remove_all(dir_);
  }

  void put(int64_t pk, Row row) {
    SQLite::Statement del(*db_, "DELETE FROM fts WHERE rowid = ?");
    del.bind(1, pk);
    del.exec();
    SQLite::Statement ins(*db_, "INSERT INTO fts(rowid, summary, details, topics_text) VALUES (?, ?, ?, ?)");
    ins.bind(1, pk);
    ins.bind(2, row.summary);
    ins.bind(3, row.details);
    ins.bind(4, row.topics);
    ins.exec();
    index_->upsert(pk, row.summary, row.details, row.topics, row.active);
    rows_[pk] = std::move(row);
  }
  void setActive(int64_t pk, bool active) {
    auto& r = rows_.at(pk);
    r.active = active;
    index_->upsert(pk, r.summary, r.details, r.topics, r.active);  // as the store does: refresh the whole row
  }
  void erase(int64_t pk) {
    SQLite::Statement del(*db_, "DELETE FROM fts WHERE rowid = ?");
    del.bind(1, pk);
    del.exec();
    index_->remove(pk);
    rows_.erase(pk);
  }

  // The store's SQL for the lane (rankedActive): the `limit` + inactive best rows by bm25, active ones kept.
  std::vector<std::pair<int64_t, double>> sqlBest(const std::string& match, size_t limit) {
    int64_t inactive = 0;
    for (const auto& [pk, r] : rows_) inactive += r.active ? 0 : 1;
    SQLite::Statement q(*db_, "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?");
    q.bind(1, match);
    q.bind(2, static_cast<int64_t>(limit) + inactive);
    std::vector<std::pair<int64_t, double>> out;
    while (out.size() < limit && q.executeStep()) {
      int64_t pk = q.getColumn(0).getInt64();
      if (rows_.at(pk).active) out.emplace_back(pk, q.getColumn(1).getDouble());
    }
    return out;
  }
  std::map<int64_t, double> sqlAll(const std::string& match) {
    SQLite::Statement q(*db_, "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ?");
    q.bind(1, match);
    std::map<int64_t, double> out;
    while (q.executeStep()) out[q.getColumn(0).getInt64()] = q.getColumn(1).getDouble();
    return out;
  }

  static void expectClose(double expected, double actual, const std::string& what) {
    EXPECT_LE(std::abs(expected - actual), 1e-9 * std::abs(expected)) << what << ": " << expected << " vs " << actual;
  }

  // Checks `queries` random queries (both option sets); returns how many matched at least one row.
  int checkQueries(std::mt19937& rng, int queries, size_t limit) {
    int nonEmpty = 0;
    FtsQueryOptions reference;
    reference.dropStopWords = false;
    reference.dropSingleChars = false;
    reference.dedupe = false;
    reference.maxTokens = kMaxReferenceQueryTokens;
    for (int i = 0; i < queries; ++i) {
      std::string text = randomQuery(rng);
      for (const auto& opts : {FtsQueryOptions{}, reference}) {
        std::string match = unicodeMatch(text, opts);
        if (match.empty()) continue;
        SCOPED_TRACE("query: " + match);
        auto phrases = index_->parse(match);
        EXPECT_TRUE(phrases.has_value());
        if (!phrases) continue;
        auto matches = index_->evaluate(*phrases);
        auto all = sqlAll(match);
        EXPECT_EQ(matches.size(), all.size());
        for (const auto& [pk, bm25] : all) {
          auto mine = matches.bm25Of(pk);
          EXPECT_TRUE(mine.has_value()) << "row " << pk << " missing";
          if (mine) expectClose(bm25, *mine, "row " + std::to_string(pk));
        }
        // The paths recall takes: the best rows without the full evaluation, and point scores for any rows. Same
        // rows, ties and doubles (exact equality), inactive rows never among the best.
        EXPECT_EQ(index_->best(*phrases, limit), matches.best(limit));
        if (!all.empty()) {
          const int64_t excluded = std::next(all.begin(), static_cast<long>(rng() % all.size()))->first;
          EXPECT_EQ(index_->best(*phrases, limit, excluded), matches.best(limit, excluded)) << "excluding " << excluded;
        }
        std::vector<int64_t> probe = {-7};  // every row, matching or not, active or not, and one that does not exist
        for (const auto& [pk, r] : rows_) probe.push_back(pk);
        if (probe.size() > 2) {  // and rows asked for twice
          probe.push_back(probe[1]);
          probe.push_back(probe[probe.size() / 2]);
        }
        auto points = index_->bm25Of(*phrases, probe);
        EXPECT_EQ(points.size(), probe.size());
        for (size_t k = 0; k < std::min(points.size(), probe.size()); ++k) {
          EXPECT_EQ(points[k], matches.bm25Of(probe[k])) << "row " << probe[k];
        }
        auto expected = sqlBest(match, limit);
        auto actual = matches.best(limit);
        EXPECT_EQ(expected.size(), actual.size());
        for (size_t k = 0; k < std::min(expected.size(), actual.size()); ++k) {
          EXPECT_EQ(expected[k].first, actual[k].first) << "position " << k;
          expectClose(expected[k].second, actual[k].second, "position " + std::to_string(k));
        }
        if (!all.empty()) ++nonEmpty;
      }
    }
    return nonEmpty;
  }

  fs::path dir_;
  std::unique_ptr<SQLite::Database> db_;
  std::unique_ptr<TextIndex> index_;
  std::map<int64_t, Row> rows_;
};

TEST_F(TextIndexTest, TokenizerFoldsLikeFts5) {
  auto tokens = Unicode61Tokenizer::open(db_->getHandle())->tokenize("Ärger über src/jwt.ts foo_bar CAFÉ 東京");
  std::vector<std::string> expected = {"arger", "uber", "src", "jwt", "ts", "foo", "bar", "cafe", "東京"};
  EXPECT_EQ(tokens, expected);
}

TEST_F(TextIndexTest, ParsesOnlyTheShapeUnicodeMatchBuilds) {
  EXPECT_TRUE(index_->parse("\"a\"* OR \"src/jwt.ts\"*").has_value());
  EXPECT_TRUE(index_->parse("\"a\"").has_value());
  EXPECT_FALSE(index_->parse("a OR b").has_value());
  EXPECT_FALSE(index_->parse("\"a\" AND \"b\"").has_value());
  EXPECT_FALSE(index_->parse("\"a\" \"b\"").has_value());
  EXPECT_FALSE(index_->parse("\"a\"\"b\"").has_value());
  EXPECT_FALSE(index_->parse("").has_value());
  auto p = index_->parse("\"src/jwt.t\"*");
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->size(), 1u);
  EXPECT_EQ((*p)[0].tokens, (std::vector<std::string>{"src", "jwt", "t"}));
  EXPECT_TRUE((*p)[0].prefix);
}

TEST_F(TextIndexTest, SameRowsOrderAndBm25AsFts5OnRandomCorpora) {
  for (unsigned seed : {1u, 2u, 3u, 4u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    rows_.clear();
    db_->exec("DELETE FROM fts");
    index_->clear();
    const int n = 150 + static_cast<int>(seed) * 50;
    std::uniform_int_distribution<int> coin(0, 9);
    for (int pk = 1; pk <= n; ++pk) {
      Row r;
      // Every tenth row repeats an earlier one: equal bm25, so the order of ties is checked too.
      if (pk > 10 && coin(rng) == 0) {
        auto earlier = rows_.begin();
        std::advance(earlier, static_cast<long>(rng() % rows_.size()));
        r = earlier->second;
      } else {
        r = {randomText(rng, 12), randomText(rng, 40), randomText(rng, 4), true};
      }
      r.active = coin(rng) != 0;
      put(pk * 3, r);  // gaps in the rowids
    }
    EXPECT_GT(checkQueries(rng, 150, 30), 100);
    EXPECT_GT(checkQueries(rng, 30, 3), 15);

    // Updates, deletes and state changes, then again.
    for (int k = 0; k < n / 3; ++k) {
      int64_t pk = 3 * (1 + static_cast<int64_t>(rng() % static_cast<unsigned>(n)));
      if (!rows_.count(pk)) continue;
      switch (rng() % 4) {
        case 0: put(pk, {randomText(rng, 12), randomText(rng, 40), randomText(rng, 4), true}); break;
        case 1: setActive(pk, !rows_.at(pk).active); break;
        case 2: erase(pk); break;
        default: put(pk + 1, {randomText(rng, 6), "", randomText(rng, 3), coin(rng) != 0}); break;  // new rowid
      }
    }
    EXPECT_GT(checkQueries(rng, 150, 30), 100);
  }
}

// best() prunes (MaxScore); bestExhaustive() and evaluate().best() score every matching row. On larger corpora with
// a skewed vocabulary (so queries mix rare and frequent words and pruning has work to do), exact duplicates (ties),
// inactive rows and an excluded pk, the three agree exactly, for many queries and limits; and pruning did happen.
TEST_F(TextIndexTest, PruningGivesExactlyTheRowsOfExhaustiveScoring) {
  std::mt19937 rng(77);
  // A Zipf-like vocabulary: word w drawn with weight 1 / (w + 1); shared prefixes through the word shapes.
  std::vector<std::string> vocabulary;
  for (int w = 0; w < 600; ++w) {
    const std::string stem = std::string(1, static_cast<char>('a' + w % 26)) + static_cast<char>('a' + (w / 26) % 26);
    vocabulary.push_back(stem + (w % 3 == 0 ? "" : w % 3 == 1 ? "er" : "ing") + std::to_string(w / 78));
  }
  std::vector<double> weights;
  for (size_t w = 0; w < vocabulary.size(); ++w) weights.push_back(1.0 / static_cast<double>(w + 1));
  std::discrete_distribution<size_t> zipf(weights.begin(), weights.end());
  auto text = [&](size_t maxWords) {
    std::uniform_int_distribution<size_t> len(1, maxWords);
    std::string out;
    const size_t n = len(rng);
    for (size_t i = 0; i < n; ++i) {
      if (i) out += rng() % 17 == 0 ? "." : " ";  // "x.y": one word that unicode61 splits into two tokens
      out += vocabulary[zipf(rng)];
    }
    return out;
  };
  std::vector<std::array<std::string, 3>> written;
  std::vector<int64_t> pks;
  for (int64_t pk = 1; pk <= 4000; ++pk) {
    std::array<std::string, 3> row;
    if (pk > 20 && rng() % 8 == 0) {
      row = written[rng() % written.size()];  // an exact duplicate: the same bm25
    } else {
      row = {text(10), text(60), text(4)};
    }
    const bool active = rng() % 6 != 0;
    index_->upsert(pk * 2, row[0], row[1], row[2], active);
    written.push_back(row);
    pks.push_back(pk * 2);
  }
  for (int k = 0; k < 300; ++k) index_->remove(pks[rng() % pks.size()]);  // slots reused, bounds left loose

  auto queryText = [&] {
    std::string q;
    const size_t n = 1 + rng() % 9;
    for (size_t i = 0; i < n; ++i) {
      std::string word = vocabulary[rng() % 4 == 0 ? zipf(rng) : rng() % vocabulary.size()];
      if (rng() % 5 == 0) word = word.substr(0, 1 + rng() % 2);  // a short prefix: many terms
      if (rng() % 11 == 0) word += "." + vocabulary[zipf(rng)];   // a phrase of two tokens
      q += (i ? " " : "") + word;
    }
    return q;
  };
  size_t queries = 0, prunedQueries = 0;
  for (int i = 0; i < 400; ++i) {
    FtsQueryOptions opts;
    opts.dedupe = i % 2 == 0;  // without: repeated phrases, each counted
    const std::string match = unicodeMatch(queryText(), opts);
    if (match.empty()) continue;
    SCOPED_TRACE("query: " + match);
    auto phrases = index_->parse(match);
    ASSERT_TRUE(phrases.has_value());
    const TextMatches matches = index_->evaluate(*phrases);
    for (const size_t limit : {size_t{1}, size_t{3}, size_t{10}, size_t{30}, size_t{200}}) {
      const auto pruned = index_->best(*phrases, limit);
      const TextIndex::BestStats stats = index_->lastBestStats();
      EXPECT_EQ(pruned, index_->bestExhaustive(*phrases, limit)) << "limit " << limit;
      EXPECT_EQ(pruned, matches.best(limit)) << "limit " << limit;
      ++queries;
      if (stats.walked < stats.phrases) ++prunedQueries;
      if (!pruned.empty()) {
        const int64_t excluded = pruned[rng() % pruned.size()].first;
        EXPECT_EQ(index_->best(*phrases, limit, excluded), matches.best(limit, excluded)) << "excluding " << excluded;
      }
    }
  }
  EXPECT_GT(queries, 1500u);
  EXPECT_GT(prunedQueries, queries / 5) << "pruning hardly ever skipped a phrase: the test checks little";
}

TEST_F(TextIndexTest, PhrasesOfRepeatedAndExactTokensCountAsFts5Does) {
  // unicodeMatch always ends a phrase with `*`; parse also takes exact phrases, and a phrase may repeat a token.
  put(1, {"foo foo foo bar", "x y x y x", "", true});
  put(2, {"foo bar foo", "x, y. x", "foo", true});
  put(3, {"bar foo", "y x y", "foo foo", false});
  put(4, {"foo", "foo", "x", true});  // a phrase never spans two columns
  for (int pk = 5; pk < 40; ++pk) put(pk, {"filler words", pk % 3 ? "foo" : "x y", "", true});
  for (const std::string match : {"\"foo foo\"", "\"foo foo\"*", "\"x y x\"", "\"y x\"* OR \"foo\"", "\"foo bar foo\"",
                                  "\"x y\" OR \"foo foo\"* OR \"bar\"", "\"fo fo\"*", "\"foo fo\"*",
                                  "\"foo bar\" OR \"foo\"* OR \"foo foo\""}) {
    SCOPED_TRACE(match);
    auto phrases = index_->parse(match);
    ASSERT_TRUE(phrases.has_value());
    auto matches = index_->evaluate(*phrases);
    auto all = sqlAll(match);
    EXPECT_EQ(matches.size(), all.size());
    for (const auto& [pk, bm25] : all) {
      auto mine = matches.bm25Of(pk);
      ASSERT_TRUE(mine.has_value()) << "row " << pk;
      expectClose(bm25, *mine, "row " + std::to_string(pk));
    }
    EXPECT_EQ(index_->best(*phrases, 5), matches.best(5));
    std::vector<int64_t> pks = {1, 2, 3, 4, 5, 6, 2, 4};
    auto points = index_->bm25Of(*phrases, pks);
    for (size_t k = 0; k < pks.size(); ++k) EXPECT_EQ(points[k], matches.bm25Of(pks[k])) << "row " << pks[k];
  }
}

TEST_F(TextIndexTest, PointScoresFollowChangesToTheRows) {
  // bm25Of remembers each phrase's row count, and the terms of its prefixes, between calls: a change to the rows must
  // not leave them stale.
  for (int pk = 1; pk <= 20; ++pk) put(pk, {pk % 4 == 0 ? "token reader" : "filler", "words", "", true});
  auto phrases = index_->parse("\"token\"* OR \"read\"*");
  ASSERT_TRUE(phrases.has_value());
  const std::vector<int64_t> pks = {4, 8, 5};
  auto before = index_->bm25Of(*phrases, pks);
  ASSERT_TRUE(before[0].has_value());
  EXPECT_FALSE(before[2].has_value());
  EXPECT_EQ(before[0], index_->evaluate(*phrases).bm25Of(4));
  EXPECT_EQ(index_->best(*phrases, 5), index_->evaluate(*phrases).best(5));
  // More rows hold both phrases, through terms new to the prefixes' ranges ("tokens", "ready").
  for (int pk = 21; pk <= 30; ++pk) put(pk, {"tokens", "ready", "", true});
  auto after = index_->bm25Of(*phrases, pks);
  auto full = index_->evaluate(*phrases);
  EXPECT_EQ(after[0], full.bm25Of(4));
  EXPECT_EQ(after[1], full.bm25Of(8));
  EXPECT_NE(after[0], before[0]);
  ASSERT_TRUE(full.bm25Of(21).has_value());
  EXPECT_EQ(index_->bm25Of(*phrases, {21})[0], full.bm25Of(21));
  EXPECT_EQ(index_->best(*phrases, 5), full.best(5));
  erase(8);
  after = index_->bm25Of(*phrases, pks);
  full = index_->evaluate(*phrases);
  EXPECT_EQ(after[0], full.bm25Of(4));
  EXPECT_FALSE(after[1].has_value());
  // A hidden row still counts (FTS5 counts every row) and still has its bm25; best() leaves it out.
  setActive(4, false);
  EXPECT_EQ(index_->bm25Of(*phrases, pks)[0], index_->evaluate(*phrases).bm25Of(4));
  for (const auto& [pk, bm25] : index_->best(*phrases, 100)) EXPECT_NE(pk, 4);
}

TEST_F(TextIndexTest, EmptyIndexAndUnmatchedQueriesReturnNothing) {
  auto phrases = index_->parse("\"token\"*");
  ASSERT_TRUE(phrases.has_value());
  EXPECT_EQ(index_->evaluate(*phrases).size(), 0u);
  put(1, {"token", "", "", true});
  phrases = index_->parse("\"zzz\"* OR \"—\"*");
  ASSERT_TRUE(phrases.has_value());
  EXPECT_EQ(index_->evaluate(*phrases).size(), 0u);
  EXPECT_EQ(sqlAll("\"zzz\"* OR \"—\"*").size(), 0u);
  erase(1);
  EXPECT_EQ(index_->size(), 0u);
  phrases = index_->parse("\"token\"*");
  EXPECT_EQ(index_->evaluate(*phrases).size(), 0u);
  EXPECT_TRUE(index_->best(*phrases, 30).empty());
  EXPECT_EQ(index_->bm25Of(*phrases, {1}), (std::vector<std::optional<double>>{std::nullopt}));
}

}  // namespace
}  // namespace memq
