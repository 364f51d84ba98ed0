// Fuzz target for daemon/recall/fts_query: arbitrary bytes as a recall query. Every MATCH string the three lanes
// build must be bounded in size, valid UTF-8, made only of quoted phrases joined by " OR " (so quotes balance and
// no FTS5 operator of the input survives), and accepted by a real FTS5 table with the tokenizer of its lane.
#include <sqlite3.h>

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/recall/fts_query.h"
#include "daemon/util/utf8.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// The two FTS5 tables of schema/migrations/0001_core.sql, with their tokenizers, over a few rows so MATCH runs.
sqlite3* openIndex() {
  sqlite3* db = nullptr;
  MEMQ_FUZZ_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK, "an in-memory database opens");
  const char* schema =
      "CREATE VIRTUAL TABLE memories_fts USING fts5(summary, details, topics_text,"
      "  tokenize = 'unicode61 remove_diacritics 2');"
      "CREATE VIRTUAL TABLE memories_fts_tri USING fts5(summary, details, topics_text,"
      "  tokenize = 'trigram case_sensitive 0');"
      "INSERT INTO memories_fts VALUES ('use flock for the build lock', 'ninja -j2 under flock', 'build');"
      "INSERT INTO memories_fts VALUES ('Résumé parsing: überprüfen', 'naïve café 東京 данные', 'i18n');"
      "INSERT INTO memories_fts_tri SELECT * FROM memories_fts;";
  char* error = nullptr;
  int rc = sqlite3_exec(db, schema, nullptr, nullptr, &error);
  MEMQ_FUZZ_CHECK(rc == SQLITE_OK, "the FTS5 schema loads");
  return db;
}

sqlite3* index() {
  static sqlite3* db = openIndex();
  return db;
}

// The whole grammar the builders may produce: `"phrase"` or `"phrase"*`, joined by " OR ", no quote inside.
bool isOrOfQuotedPhrases(std::string_view match) {
  std::size_t i = 0;
  bool first = true;
  while (i < match.size()) {
    if (!first) {
      if (match.substr(i, 4) != " OR ") return false;
      i += 4;
    }
    first = false;
    if (i >= match.size() || match[i] != '"') return false;
    std::size_t close = match.find('"', i + 1);
    if (close == std::string_view::npos) return false;
    i = close + 1;
    if (i < match.size() && match[i] == '*') ++i;
  }
  return !first;
}

void checkMatch(const std::string& match, std::size_t maxBytes, const char* table) {
  if (match.empty()) return;  // "nothing to search": the caller skips the lane
  MEMQ_FUZZ_CHECK(match.size() <= maxBytes, "a MATCH string is bounded by the token caps");
  MEMQ_FUZZ_CHECK(memq::isValidUtf8(match), "a MATCH string is valid UTF-8");
  MEMQ_FUZZ_CHECK(match.find('\0') == std::string::npos, "a MATCH string holds no NUL");
  MEMQ_FUZZ_CHECK(isOrOfQuotedPhrases(match), "a MATCH string is quoted phrases OR-ed (balanced quotes)");

  std::string sql = std::string("SELECT rowid, bm25(") + table + ") FROM " + table + " WHERE " + table + " MATCH ?";
  sqlite3_stmt* stmt = nullptr;
  MEMQ_FUZZ_CHECK(sqlite3_prepare_v2(index(), sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK, "the query prepares");
  sqlite3_bind_text(stmt, 1, match.data(), static_cast<int>(match.size()), SQLITE_TRANSIENT);
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
  }
  if (rc != SQLITE_DONE) {
    std::fprintf(stderr, "FTS5 refused MATCH [%s] on %s: %s\n", match.c_str(), table, sqlite3_errmsg(index()));
  }
  MEMQ_FUZZ_CHECK(rc == SQLITE_DONE, "FTS5 accepts every MATCH string the builders produce");
  sqlite3_finalize(stmt);
}

// Upper bounds from the caps in fts_query.h: each kept token is at most kMaxTokenBytes inside quotes, plus "*" or
// the bigram lane's two phrases, plus " OR " between tokens.
constexpr std::size_t perToken(std::size_t phraseBytes) { return phraseBytes + 4; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view query(reinterpret_cast<const char*>(data), size);
  constexpr std::size_t kPhrase = memq::kMaxTokenBytes + 2;

  memq::FtsQueryOptions defaults;
  checkMatch(memq::unicodeMatch(query, defaults), defaults.maxTokens * perToken(kPhrase + 1), "memories_fts");

  // The reference ranker's options: no stop words dropped, single characters kept, no dedup, a looser cap.
  memq::FtsQueryOptions reference;
  reference.dropStopWords = false;
  reference.dropSingleChars = false;
  reference.dedupe = false;
  reference.maxTokens = memq::kMaxReferenceQueryTokens;
  checkMatch(memq::unicodeMatch(query, reference), reference.maxTokens * perToken(kPhrase + 1), "memories_fts");

  for (std::size_t maxTokens : {memq::kMaxQueryTokens, memq::kMaxReferenceQueryTokens}) {
    checkMatch(memq::trigramMatch(query, maxTokens), maxTokens * perToken(kPhrase), "memories_fts_tri");
    checkMatch(memq::trigramBigramMatch(query, maxTokens), maxTokens * perToken(2 * (kPhrase + 1) + 4),
               "memories_fts_tri");
  }

  for (const std::string& token : memq::ftsTokens(query, memq::kMaxQueryTokens)) {
    MEMQ_FUZZ_CHECK(!token.empty() && token.size() <= memq::kMaxTokenBytes, "a token is non-empty and capped");
    MEMQ_FUZZ_CHECK(token.find_first_of("\"()*:") == std::string::npos, "no FTS5 special survives in a token");
  }
  return 0;
}
