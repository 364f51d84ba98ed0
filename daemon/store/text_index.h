// TextIndex: one scope's unicode full-text lane (memories_fts) held in memory, answering the MATCH expressions
// recall builds (fts_query.h unicodeMatch: `"t1"* OR "t2"* ...`) with exactly the rows and bm25 figures FTS5 gives.
//
// Why: FTS5 computes bm25 for every row that matches, and a typical query's words match about half of all rows, so
// `ORDER BY bm25 LIMIT n` in SQLite cost tens of milliseconds at 10k memories. Here the same arithmetic runs over
// in-memory postings.
//
// What "exactly" means (SQLite 3.40 ext/fts5: fts5_aux.c fts5Bm25Function, fts5_expr.c):
//  - Text is tokenised by SQLite's own unicode61 tokenizer (remove_diacritics 2), obtained through the fts5_api of
//    the store's connection, so case and diacritic folding are byte for byte FTS5's.
//  - Every row of `memories` is indexed whatever its state (FTS5's row count and token totals include them all);
//    only active rows are returned by best().
//  - A quoted string is a phrase of adjacent tokens in one column; `*` makes its last token a prefix. A phrase that
//    tokenises to nothing matches nothing but is still a phrase of the query.
//  - bm25: k1 = 1.2, b = 0.75; IDF = log((N - nHit + 0.5) / (nHit + 0.5)), 1e-6 when <= 0, N = rows, nHit = rows
//    where the phrase occurs; freq = the phrase's instances in the row (all three columns, weight 1); D = the row's
//    tokens; avgdl = all tokens / N; bm25 = -(sum over phrases, in query order, of IDF*freq*(k1+1)/(freq+k1*(1-b+b*D/avgdl))).
//  - Ties in bm25 are ordered by rowid, as SQLite's sorter leaves them (rows arrive in rowid order).
// tests/unit/store/text_index_test.cc checks all of this against a real FTS5 table on random corpora.
//
// Invariants: (1) docs_[slot] is live iff slots_ maps its pk to slot; (2) every live doc's distinct terms each have
// exactly one posting for its slot, with the term's count in the doc; (3) totalTokens_ is the sum of live docs'
// lengths, liveDocs_ their number; (4) termIds_ maps exactly dictionary_'s terms to the same ids; (5) each term's
// maxCount / minLength bound the counts / lengths of its postings' rows; activeScratch_[slot] is docs_[slot].active
// for a live doc, 0 otherwise.
//
// Thread-safety: not thread-safe (evaluation uses scratch buffers). The owner (MemoryStore, under its scope's lock)
// serialises every call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/store/term_table.h"
#include "daemon/store/text_index_bm25.h"

struct sqlite3;
struct fts5_tokenizer;
struct Fts5Tokenizer;

namespace memq {

// SQLite's unicode61 tokenizer (remove_diacritics 2), as memories_fts is declared. Valid while its connection is.
class Unicode61Tokenizer {
 public:
  // Null when the connection has no FTS5 or no unicode61 tokenizer.
  static std::unique_ptr<Unicode61Tokenizer> open(sqlite3* db);
  ~Unicode61Tokenizer();
  Unicode61Tokenizer(const Unicode61Tokenizer&) = delete;
  Unicode61Tokenizer& operator=(const Unicode61Tokenizer&) = delete;

  // Calls sink(context, token) for each token of `text` (folded, cut to FTS5's maximum token size), in order.
  using TokenSink = void (*)(void* context, std::string_view token);
  void tokenize(std::string_view text, TokenSink sink, void* context) const;
  std::vector<std::string> tokenize(std::string_view text) const;

 private:
  Unicode61Tokenizer() = default;
  std::unique_ptr<fts5_tokenizer> api_;
  Fts5Tokenizer* instance_ = nullptr;
};

// The rows matching one expression, with their bm25, sorted by pk.
class TextMatches {
 public:
  struct Row {
    int64_t pk;
    double bm25;
    bool active;
  };
  TextMatches() = default;
  explicit TextMatches(std::vector<Row> rows);

  // The `limit` best active rows (lowest bm25, ties by pk), excluding `excludePk`; best first.
  std::vector<std::pair<int64_t, double>> best(size_t limit, std::optional<int64_t> excludePk = std::nullopt) const;
  std::optional<double> bm25Of(int64_t pk) const;
  size_t size() const { return rows_.size(); }

 private:
  std::vector<Row> rows_;
};

class TextIndex {
 public:
  // Null when the tokenizer is unavailable (the caller keeps using SQL).
  static std::unique_ptr<TextIndex> create(sqlite3* db);

  // Indexes (or re-indexes) one row of `memories`.
  void upsert(int64_t pk, std::string_view summary, std::string_view details, std::string_view topicsText,
              bool active);
  void remove(int64_t pk);
  // A state change: the row stays counted (FTS5 counts every row), it is just returned by best() or not.
  void setActive(int64_t pk, bool active);
  void clear();
  size_t size() const { return liveDocs_; }
  bool contains(int64_t pk) const { return slots_.contains(pk); }

  // A parsed expression: nullopt when it is not of the shape unicodeMatch builds (the caller then asks SQLite).
  struct Phrase {
    std::vector<std::string> tokens;  // folded
    bool prefix = false;              // the last token is a prefix
    bool operator==(const Phrase&) const = default;
  };
  std::optional<std::vector<Phrase>> parse(std::string_view matchExpression) const;

  // Every row matching any of the phrases (OR), with FTS5's bm25.
  TextMatches evaluate(const std::vector<Phrase>& phrases);
  // evaluate(phrases).best(limit, excludePk), without scoring every matching row: the same rows, ties and bm25
  // figures, best first. Exact top-k with MaxScore pruning. Each phrase's term of the sum has an upper bound (at most
  // its IDF, at the largest count over the shortest row among its postings). The phrases are walked by descending
  // bound, each adding its terms into partial sums, until the bounds of the phrases left add up to less than the
  // limit-th best partial sum of a returnable row: no row not reached by then can enter. The phrases left are walked
  // only for the returnable rows whose partial sum plus those bounds can still reach it (every other posting is
  // skipped unscored); the rows whose whole sum can reach the limit-th are then scored exactly from their own tokens,
  // in query order (as bm25Of), best first, until no sum left reaches the limit-th exact score. Every comparison
  // keeps a relative margin for the rounding of the partial sums (added in another order than FTS5's), and a row that
  // ties the limit-th score is never dropped, so ties are ordered by pk as before.
  std::vector<std::pair<int64_t, double>> best(const std::vector<Phrase>& phrases, size_t limit,
                                               std::optional<int64_t> excludePk = std::nullopt);
  // The same rows as best(), from every matching row's full score (no pruning): what best() is checked against, and
  // what it falls back to when pruning cannot help.
  std::vector<std::pair<int64_t, double>> bestExhaustive(const std::vector<Phrase>& phrases, size_t limit,
                                                         std::optional<int64_t> excludePk = std::nullopt);
  // What the last best() did, for tests and benchmarks.
  struct BestStats {
    size_t phrases = 0;     // phrases that occur in some row
    size_t walked = 0;      // of them, the ones whose postings were scored
    size_t touched = 0;     // rows given a partial sum
    size_t candidates = 0;  // rows whose bound could still reach the limit-th score
    size_t scored = 0;      // rows scored exactly
  };
  const BestStats& lastBestStats() const { return bestStats_; }
  // evaluate(phrases).bm25Of(pk) for each of `pks` (nullopt: no phrase occurs in the row, or no such row), computed
  // from those rows' own tokens: recall rescores a few dozen candidates, not the half of the table that matches.
  std::vector<std::optional<double>> bm25Of(const std::vector<Phrase>& phrases, const std::vector<int64_t>& pks);

 private:
  struct Posting {
    uint32_t slot;
    uint32_t count;
  };
  struct Term {
    const std::string* text;  // the dictionary's key
    std::vector<Posting> postings;
    // Bounds over the postings (best()'s upper bounds): never lowered (maxCount) or raised (minLength) when a posting
    // goes, so they stay bounds, only looser.
    uint32_t maxCount = 0;
    uint32_t minLength = UINT32_MAX;
  };
  struct Doc {
    int64_t pk = 0;
    bool live = false;
    bool active = false;
    uint32_t columnEnd[3] = {0, 0, 0};  // terms[columnEnd[c-1] .. columnEnd[c]) are column c's
    std::vector<uint32_t> terms;        // term ids in position order, all columns
  };

  explicit TextIndex(std::unique_ptr<Unicode61Tokenizer> tokenizer);
  // Instances of `phrase` per row, appended to `out` as (slot, freq).
  void phraseFrequencies(const Phrase& phrase, std::vector<std::pair<uint32_t, uint32_t>>& out);
  // A phrase of several tokens as term ids: those of the tokens before the last (all exact), and the last's when it
  // is exact (a prefix otherwise). nullopt when one of its exact tokens is in no row: the phrase has no instance.
  struct PhraseTerms {
    std::vector<uint32_t> leading;
    std::optional<uint32_t> lastId;
  };
  std::optional<PhraseTerms> phraseTerms(const Phrase& phrase) const;
  // Whether `phrase` (of several tokens; `terms` its phraseTerms) has an instance starting at position `start` of
  // `doc`, within the column that ends at `columnEnd`: adjacent positions, the last token exact or a prefix.
  bool instanceAt(const Doc& doc, uint32_t start, uint32_t columnEnd, const Phrase& phrase,
                  const PhraseTerms& terms) const;
  // Scores every row matching the phrases into scoreScratch_ (FTS5's sum, before negation) and lists their slots in
  // `matched`; the caller zeroes both scratch entries of each listed slot.
  void accumulate(const std::vector<Phrase>& phrases, std::vector<uint32_t>& matched);
  // Rows where the phrase occurs (bm25's nHit). accumulate() remembers each phrase's count until the next
  // upsert/remove/clear, so bm25Of after best on the same phrases (as recall does) does not walk the postings again.
  size_t hitCount(const Phrase& phrase);
  void rememberHitCount(const Phrase& phrase, size_t nHit);
  static std::string phraseKey(const Phrase& phrase);
  void sizeScratch();
  // The rows holding any of `ids` (a prefix's terms), counted with rowBits_ (zero again when it returns), calling
  // `onPosting` with each of their postings on the way.
  template <typename OnPosting>
  size_t countRows(const std::vector<uint32_t>& ids, OnPosting&& onPosting) {
    const size_t words = (docs_.size() + 63) / 64;
    if (rowBits_.size() < words) rowBits_.resize(words, 0);
    size_t rows = 0;
    size_t postings = 0;
    for (uint32_t id : ids) {
      for (const auto& p : terms_[id].postings) {
        uint64_t& word = rowBits_[p.slot >> 6];
        const uint64_t bit = uint64_t{1} << (p.slot & 63);
        rows += (word & bit) == 0 ? 1 : 0;
        word |= bit;
        onPosting(p);
      }
      postings += terms_[id].postings.size();
    }
    // Clearing only the words touched is cheaper than the whole bitmap when the postings are few.
    if (postings < words) {
      for (uint32_t id : ids) {
        for (const auto& p : terms_[id].postings) rowBits_[p.slot >> 6] = 0;
      }
    } else {
      std::fill(rowBits_.begin(), rowBits_.begin() + static_cast<std::ptrdiff_t>(words), uint64_t{0});
    }
    return rows;
  }
  size_t countRows(const std::vector<uint32_t>& ids) {
    return countRows(ids, [](const auto&) {});
  }
  // Instances of each of `phrases` in each of `rows` (counts[i * phrases.size() + j]), read from the rows' tokens.
  // singleIds[j]: the term ids a single-token phrase j stands for (its term, or its prefix's), ignored otherwise.
  void countInRows(const std::vector<Phrase>& phrases, const std::vector<std::vector<uint32_t>>& singleIds,
                   const std::vector<const Doc*>& rows, std::vector<uint32_t>& counts);
  // Asks memory for the first lines of rows[i]'s terms (countInRows reads them next); nothing past the end or for null.
  static void prefetchTerms(const std::vector<const Doc*>& rows, size_t i);
  // The term ids a single-token phrase stands for: its term, or every term in its prefix's range.
  std::vector<uint32_t> singleTokenIds(const Phrase& phrase) const;
  // singleTokenIds of each phrase (empty for a phrase of several tokens). The last call's answer is kept until the
  // text changes: recall asks for the same phrases' ids in best() and again in bm25Of(), and a prefix's range is a
  // walk through the dictionary's tree.
  const std::vector<std::vector<uint32_t>>& singleIdsOf(const std::vector<Phrase>& phrases);
  // Calls visit(id) for each term starting with `prefix`, in dictionary order, until visit returns false.
  template <typename Visit>
  void forEachTermWithPrefix(std::string_view prefix, Visit&& visit) const {
    for (auto it = dictionary_.lower_bound(prefix);
         it != dictionary_.end() && text_index_detail::startsWith(it->first, prefix); ++it) {
      if (!visit(it->second)) return;
    }
  }
  // bm25's length norm of a row of `length` tokens (lengthNorm). A row's norm depends only on its length and avgdl:
  // each length's is computed once per avgdl (the same arithmetic, so the same double), not once per posting. Inline:
  // best() calls it for every posting it scores.
  double normOf(size_t length, double avgdl) {
    if (avgdl != normsAvgdl_) [[unlikely]] {
      std::fill(normByLength_.begin(), normByLength_.end(), -1.0);
      normsAvgdl_ = avgdl;
    }
    if (length >= normByLength_.size()) [[unlikely]] normByLength_.resize(length + 1, -1.0);
    double& norm = normByLength_[length];
    if (norm < 0) [[unlikely]] norm = text_index_detail::lengthNorm(length, avgdl);
    return norm;
  }
  std::optional<uint32_t> termId(std::string_view text) const;
  uint32_t internTerm(std::string_view text);
  void unlinkDoc(uint32_t slot);

  std::unique_ptr<Unicode61Tokenizer> tokenizer_;
  std::map<std::string, uint32_t, std::less<>> dictionary_;  // sorted: a prefix is a range
  TermTable termIds_;  // the same terms (the long ones' text owned by dictionary_), hashed
  std::vector<Term> terms_;
  std::vector<Doc> docs_;
  std::vector<uint32_t> freeSlots_;
  std::unordered_map<int64_t, uint32_t> slots_;
  int64_t totalTokens_ = 0;
  int64_t liveDocs_ = 0;
  // Scratch for evaluate(), sized to docs_ (zero between calls).
  std::vector<uint32_t> freqScratch_;
  std::vector<double> scoreScratch_;
  std::vector<char> touchedScratch_;
  std::vector<uint8_t> filterScratch_;  // phraseFrequencies: rows holding each of a phrase's rarer tokens
  std::vector<uint64_t> rowBits_;       // countRows: a bit per slot (zero between calls)
  BestStats bestStats_;
  std::vector<uint8_t> activeScratch_;  // docs_[slot].active of a live doc (0 for a free slot), dense: best() reads it
  std::vector<uint32_t> docLengths_;  // docs_[slot].terms.size(), dense: scoring reads it for every posting
  // normOf's memo: bm25's length norm (> 0) by row length, for normsAvgdl_; -1 = not computed yet.
  std::vector<double> normByLength_;
  double normsAvgdl_ = -1;
  // Scratch for bm25Of(), sized to terms_ (zero between calls): bit j set = the term is phrase j's (of a block of 64).
  std::vector<uint64_t> termPhraseBits_;
  // singleIdsOf's last answer: for singleIdsPhrases_, valid while generation_ is singleIdsGeneration_.
  std::vector<Phrase> singleIdsPhrases_;
  std::vector<std::vector<uint32_t>> singleIds_;
  uint64_t singleIdsGeneration_ = UINT64_MAX;
  // Rows where each phrase occurs (bm25's nHit), by phraseKey, valid while generation_ is hitCountsGeneration_.
  std::unordered_map<std::string, size_t> hitCounts_;
  uint64_t generation_ = 0;  // bumped by every change of the rows' text
  uint64_t hitCountsGeneration_ = 0;
};

}  // namespace memq
