// The in-memory unicode full-text lane; see text_index.h for what it must match and why.
#include "daemon/store/text_index.h"

#include "daemon/store/text_index_bm25.h"

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace memq {

using namespace text_index_detail;

namespace {

constexpr int kFts5MaxTokenSize = 32768;  // FTS5_MAX_TOKEN_SIZE: longer tokens are cut to it, in rows and queries

fts5_api* fts5ApiOf(sqlite3* db) {
  fts5_api* api = nullptr;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &stmt, nullptr) != SQLITE_OK) return nullptr;
  sqlite3_bind_pointer(stmt, 1, static_cast<void*>(&api), "fts5_api_ptr", nullptr);
  sqlite3_step(stmt);
  sqlite3_finalize(stmt);
  return api;
}

struct SinkCall {
  Unicode61Tokenizer::TokenSink sink;
  void* context;
};

int forwardToken(void* ctx, int /*tflags*/, const char* token, int size, int /*start*/, int /*end*/) {
  auto* call = static_cast<SinkCall*>(ctx);
  call->sink(call->context, std::string_view(token, static_cast<size_t>(std::min(size, kFts5MaxTokenSize))));
  return SQLITE_OK;
}

}  // namespace

// --- Unicode61Tokenizer ---

std::unique_ptr<Unicode61Tokenizer> Unicode61Tokenizer::open(sqlite3* db) {
  fts5_api* api = fts5ApiOf(db);
  if (api == nullptr || api->iVersion < 2) return nullptr;
  std::unique_ptr<Unicode61Tokenizer> t(new Unicode61Tokenizer());
  t->api_ = std::make_unique<fts5_tokenizer>();
  void* userData = nullptr;
  if (api->xFindTokenizer(api, "unicode61", &userData, t->api_.get()) != SQLITE_OK) return nullptr;
  const char* args[] = {"remove_diacritics", "2"};  // as memories_fts is declared (0001_core.sql)
  if (t->api_->xCreate(userData, args, 2, &t->instance_) != SQLITE_OK) {
    t->instance_ = nullptr;
    return nullptr;
  }
  return t;
}

Unicode61Tokenizer::~Unicode61Tokenizer() {
  if (instance_ != nullptr) api_->xDelete(instance_);
}

void Unicode61Tokenizer::tokenize(std::string_view text, TokenSink sink, void* context) const {
  if (text.empty()) return;
  SinkCall call{sink, context};
  api_->xTokenize(instance_, &call, FTS5_TOKENIZE_DOCUMENT, text.data(), static_cast<int>(text.size()),
                  forwardToken);
}

std::vector<std::string> Unicode61Tokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> out;
  tokenize(
      text, [](void* ctx, std::string_view token) { static_cast<std::vector<std::string>*>(ctx)->emplace_back(token); },
      &out);
  return out;
}

// --- TextMatches ---

TextMatches::TextMatches(std::vector<Row> rows) : rows_(std::move(rows)) {
  std::sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) { return a.pk < b.pk; });
}

std::vector<std::pair<int64_t, double>> TextMatches::best(size_t limit, std::optional<int64_t> excludePk) const {
  std::vector<std::pair<int64_t, double>> out;
  if (limit == 0) return out;
  std::vector<const Row*> active;
  active.reserve(rows_.size());
  for (const auto& r : rows_) {
    if (r.active && (!excludePk || r.pk != *excludePk)) active.push_back(&r);
  }
  auto better = [](const Row* a, const Row* b) { return a->bm25 != b->bm25 ? a->bm25 < b->bm25 : a->pk < b->pk; };
  const size_t n = std::min(limit, active.size());
  std::partial_sort(active.begin(), active.begin() + static_cast<std::ptrdiff_t>(n), active.end(), better);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.emplace_back(active[i]->pk, active[i]->bm25);
  return out;
}

std::optional<double> TextMatches::bm25Of(int64_t pk) const {
  auto it = std::lower_bound(rows_.begin(), rows_.end(), pk, [](const Row& r, int64_t k) { return r.pk < k; });
  if (it == rows_.end() || it->pk != pk) return std::nullopt;
  return it->bm25;
}

// --- TextIndex ---

TextIndex::TextIndex(std::unique_ptr<Unicode61Tokenizer> tokenizer) : tokenizer_(std::move(tokenizer)) {}

std::unique_ptr<TextIndex> TextIndex::create(sqlite3* db) {
  auto tokenizer = Unicode61Tokenizer::open(db);
  if (!tokenizer) return nullptr;
  return std::unique_ptr<TextIndex>(new TextIndex(std::move(tokenizer)));
}

std::optional<uint32_t> TextIndex::termId(std::string_view text) const { return termIds_.find(text); }

uint32_t TextIndex::internTerm(std::string_view text) {
  // Every token of every indexed row comes through here (a store open at 100k rows: tens of millions), so the
  // lookup is a hash probe; the sorted dictionary is touched only for a term never seen before.
  if (auto known = termIds_.find(text)) return *known;
  auto id = static_cast<uint32_t>(terms_.size());
  auto inserted = dictionary_.emplace(std::string(text), id).first;
  termIds_.insert(inserted->first, id);
  terms_.push_back({&inserted->first, {}});
  return id;
}

void TextIndex::unlinkDoc(uint32_t slot) {
  Doc& doc = docs_[slot];
  std::vector<uint32_t> distinct = doc.terms;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (uint32_t id : distinct) {
    auto& postings = terms_[id].postings;
    // Posting order carries no meaning (frequencies are summed as integers), so removal swaps in the last one.
    for (size_t i = 0; i < postings.size(); ++i) {
      if (postings[i].slot == slot) {
        postings[i] = postings.back();
        postings.pop_back();
        break;
      }
    }
  }
  totalTokens_ -= static_cast<int64_t>(doc.terms.size());
  --liveDocs_;
  doc.live = false;
  doc.terms.clear();
  doc.terms.shrink_to_fit();
}

void TextIndex::upsert(int64_t pk, std::string_view summary, std::string_view details, std::string_view topicsText,
                       bool active) {
  uint32_t slot;
  if (auto it = slots_.find(pk); it != slots_.end()) {
    slot = it->second;
    unlinkDoc(slot);
  } else if (!freeSlots_.empty()) {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
    slots_.emplace(pk, slot);
  } else {
    slot = static_cast<uint32_t>(docs_.size());
    docs_.emplace_back();
    slots_.emplace(pk, slot);
  }
  Doc& doc = docs_[slot];
  doc.pk = pk;
  doc.live = true;
  doc.active = active;
  doc.terms.clear();
  struct Intern {
    TextIndex* index;
    std::vector<uint32_t>* terms;
  } intern{this, &doc.terms};
  const std::string_view columns[3] = {summary, details, topicsText};
  for (int c = 0; c < 3; ++c) {
    tokenizer_->tokenize(
        columns[c],
        [](void* ctx, std::string_view token) {
          auto* in = static_cast<Intern*>(ctx);
          in->terms->push_back(in->index->internTerm(token));
        },
        &intern);
    doc.columnEnd[c] = static_cast<uint32_t>(doc.terms.size());
  }
  doc.terms.shrink_to_fit();
  std::vector<uint32_t> sorted = doc.terms;
  std::sort(sorted.begin(), sorted.end());
  const auto length = static_cast<uint32_t>(doc.terms.size());
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    Term& term = terms_[sorted[i]];
    const auto count = static_cast<uint32_t>(j - i);
    term.postings.push_back({slot, count});
    term.maxCount = std::max(term.maxCount, count);
    term.minLength = std::min(term.minLength, length);
    i = j;
  }
  totalTokens_ += static_cast<int64_t>(doc.terms.size());
  ++liveDocs_;
  ++generation_;
  if (docLengths_.size() < docs_.size()) docLengths_.resize(docs_.size(), 0);
  docLengths_[slot] = static_cast<uint32_t>(doc.terms.size());
  if (activeScratch_.size() < docs_.size()) activeScratch_.resize(docs_.size(), 0);
  activeScratch_[slot] = active ? 1 : 0;
}

void TextIndex::remove(int64_t pk) {
  auto it = slots_.find(pk);
  if (it == slots_.end()) return;
  unlinkDoc(it->second);
  activeScratch_[it->second] = 0;
  freeSlots_.push_back(it->second);
  slots_.erase(it);
  ++generation_;
}

void TextIndex::setActive(int64_t pk, bool active) {
  if (auto it = slots_.find(pk); it != slots_.end()) {
    docs_[it->second].active = active;
    activeScratch_[it->second] = active ? 1 : 0;
  }
}

void TextIndex::clear() {
  termIds_.clear();
  dictionary_.clear();
  terms_.clear();
  docs_.clear();
  freeSlots_.clear();
  slots_.clear();
  totalTokens_ = 0;
  liveDocs_ = 0;
  freqScratch_.clear();
  scoreScratch_.clear();
  touchedScratch_.clear();
  termPhraseBits_.clear();
  filterScratch_.clear();
  docLengths_.clear();
  activeScratch_.clear();
  hitCounts_.clear();
  ++generation_;
}

std::optional<std::vector<TextIndex::Phrase>> TextIndex::parse(std::string_view expr) const {
  // Accepts `"text"` or `"text"*`, joined by ` OR `: the only shape unicodeMatch builds. Anything else (another
  // operator, a bareword, an escaped quote) is left to SQLite.
  std::vector<Phrase> phrases;
  size_t i = 0;
  auto skipSpaces = [&] {
    while (i < expr.size() && (expr[i] == ' ' || expr[i] == '\t' || expr[i] == '\n' || expr[i] == '\r')) ++i;
  };
  skipSpaces();
  while (i < expr.size()) {
    if (!phrases.empty()) {
      if (expr.compare(i, 2, "OR") != 0) return std::nullopt;
      i += 2;
      size_t before = i;
      skipSpaces();
      if (i == before) return std::nullopt;
    }
    if (i >= expr.size() || expr[i] != '"') return std::nullopt;
    size_t close = expr.find('"', i + 1);
    if (close == std::string_view::npos) return std::nullopt;
    if (close + 1 < expr.size() && expr[close + 1] == '"') return std::nullopt;  // `""` is an escaped quote
    Phrase p;
    p.tokens = tokenizer_->tokenize(expr.substr(i + 1, close - i - 1));
    i = close + 1;
    if (i < expr.size() && expr[i] == '*') {
      p.prefix = true;
      ++i;
    }
    phrases.push_back(std::move(p));
    size_t before = i;
    skipSpaces();
    if (i < expr.size() && i == before) return std::nullopt;  // `"a"b`: not our shape
  }
  if (phrases.empty()) return std::nullopt;
  return phrases;
}

std::optional<TextIndex::PhraseTerms> TextIndex::phraseTerms(const Phrase& phrase) const {
  PhraseTerms terms;
  for (size_t j = 0; j + 1 < phrase.tokens.size(); ++j) {
    auto id = termId(phrase.tokens[j]);
    if (!id) return std::nullopt;
    terms.leading.push_back(*id);
  }
  if (!phrase.prefix) {
    terms.lastId = termId(phrase.tokens.back());
    if (!terms.lastId) return std::nullopt;
  }
  return terms;
}

bool TextIndex::instanceAt(const Doc& doc, uint32_t start, uint32_t columnEnd, const Phrase& phrase,
                           const PhraseTerms& terms) const {
  const size_t n = terms.leading.size() + 1;
  if (start + n > columnEnd) return false;
  for (size_t k = 0; k + 1 < n; ++k) {
    if (doc.terms[start + k] != terms.leading[k]) return false;
  }
  const uint32_t last = doc.terms[start + n - 1];
  return terms.lastId ? last == *terms.lastId : startsWith(*terms_[last].text, phrase.tokens.back());
}

void TextIndex::phraseFrequencies(const Phrase& phrase, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  const size_t n = phrase.tokens.size();
  if (n == 0) return;  // FTS5: an empty phrase matches nothing
  const std::string& last = phrase.tokens.back();
  if (n == 1 && !phrase.prefix) {
    auto id = termId(last);
    if (!id) return;
    for (const auto& p : terms_[*id].postings) out.emplace_back(p.slot, p.count);
    return;
  }
  if (n == 1) {
    // Prefix: every term in the prefix's range; a position holds one term, so counts add up to instances.
    std::vector<uint32_t> touched;
    forEachTermWithPrefix(last, [&](uint32_t id) {
      for (const auto& p : terms_[id].postings) {
        if (freqScratch_[p.slot] == 0) touched.push_back(p.slot);
        freqScratch_[p.slot] += p.count;
      }
      return true;
    });
    for (uint32_t slot : touched) {
      out.emplace_back(slot, freqScratch_[slot]);
      freqScratch_[slot] = 0;
    }
    return;
  }
  // Several tokens: adjacent positions within one column, the last token exact or a prefix.
  const std::optional<PhraseTerms> terms = phraseTerms(phrase);
  if (!terms) return;
  const std::vector<uint32_t>& ids = terms->leading;
  std::vector<uint32_t> exact = ids;  // the exact tokens' term ids
  if (terms->lastId) {
    exact.push_back(*terms->lastId);
  } else {
    bool anyTerm = false;
    forEachTermWithPrefix(last, [&](uint32_t) {
      anyTerm = true;
      return false;  // one is enough
    });
    if (!anyTerm) return;
  }
  // The rarest exact token drives: only its rows are read. Reading a row's positions costs a cache miss where a
  // posting costs next to nothing, so the other tokens' postings (unless far longer) first mark the rows holding all
  // of them (filterScratch_[slot] == k after k filters). A filter is a union of posting lists: one exact token's, or
  // every term of the prefix (a row holding none of them holds no instance).
  std::sort(exact.begin(), exact.end(), [&](uint32_t a, uint32_t b) {
    const size_t na = terms_[a].postings.size(), nb = terms_[b].postings.size();
    return na != nb ? na < nb : a < b;  // a repeated token's ids end up side by side, for unique()
  });
  exact.erase(std::unique(exact.begin(), exact.end()), exact.end());
  const uint32_t driverId = exact.front();
  const std::vector<Posting>& driver = terms_[driverId].postings;
  using Filter = std::vector<const std::vector<Posting>*>;
  std::vector<Filter> filters;
  const size_t filterBound = 32 * driver.size();  // postings walked to spare reading the driver's rows
  for (size_t k = 1; k < exact.size() && filters.size() < 3; ++k) {
    const auto& postings = terms_[exact[k]].postings;
    if (postings.size() <= filterBound) filters.push_back({&postings});
  }
  if (phrase.prefix) {
    // The prefix's terms are walked only as far as their postings stay within the bound: a short prefix stands for
    // thousands of terms, and the walk would cost more than the rows it spares.
    Filter anyTerm;
    size_t postings = 0;
    forEachTermWithPrefix(last, [&](uint32_t id) {
      postings += terms_[id].postings.size();
      if (postings > filterBound) {
        anyTerm.clear();
        return false;
      }
      anyTerm.push_back(&terms_[id].postings);
      return true;
    });
    if (!anyTerm.empty()) filters.push_back(std::move(anyTerm));
  }
  if (filterScratch_.size() < docs_.size()) filterScratch_.resize(docs_.size(), 0);
  for (size_t k = 0; k < filters.size(); ++k) {
    for (const std::vector<Posting>* list : filters[k]) {
      for (const auto& p : *list) {
        if (filterScratch_[p.slot] == k) filterScratch_[p.slot] = static_cast<uint8_t>(k + 1);
      }
    }
  }
  // Each instance starting at s holds the driver at s + driverAt (its first place in the phrase), so the instances
  // are found from the driver's positions; the posting's count says when the last one has been seen.
  size_t driverAt = 0;
  while (driverAt + 1 < n && ids[driverAt] != driverId) ++driverAt;
  // The postings whose rows hold every filter's token, first: they are the rows read, and knowing them ahead lets
  // each row be fetched a few rows before its turn (its Doc, then its first positions once the Doc has arrived),
  // however many postings the filters skip in between. Reading rows is waiting on memory, not computing.
  std::vector<uint32_t> passing;  // indexes into driver
  const size_t nDriver = driver.size();
  for (size_t i = 0; i < nDriver; ++i) {
    if (filterScratch_[driver[i].slot] == filters.size()) passing.push_back(static_cast<uint32_t>(i));
  }
  constexpr size_t kDocAhead = 8;    // rows ahead whose Doc is fetched
  constexpr size_t kTermsAhead = 4;  // rows ahead whose first positions are fetched (their Doc fetched by then)
  constexpr size_t kTermsLines = 4;  // cache lines of positions fetched per row
  const size_t nPassing = passing.size();
  for (size_t k = 0; k < nPassing; ++k) {
    if (k + kDocAhead < nPassing) __builtin_prefetch(&docs_[driver[passing[k + kDocAhead]].slot]);
    if (k + kTermsAhead < nPassing) {
      const std::vector<uint32_t>& ahead = docs_[driver[passing[k + kTermsAhead]].slot].terms;
      constexpr size_t kPerLine = 64 / sizeof(uint32_t);
      for (size_t line = 0; line < kTermsLines && line * kPerLine < ahead.size(); ++line) {
        __builtin_prefetch(ahead.data() + line * kPerLine);
      }
    }
    const Posting& posting = driver[passing[k]];
    const Doc& doc = docs_[posting.slot];
    uint32_t instances = 0;
    uint32_t remaining = posting.count;
    size_t column = 0;
    for (uint32_t q = 0; remaining > 0 && q < doc.terms.size(); ++q) {
      if (doc.terms[q] != driverId) continue;
      --remaining;
      while (q >= doc.columnEnd[column]) ++column;
      const uint32_t columnBegin = column == 0 ? 0 : doc.columnEnd[column - 1];
      if (q < columnBegin + driverAt) continue;
      if (instanceAt(doc, q - static_cast<uint32_t>(driverAt), doc.columnEnd[column], phrase, *terms)) ++instances;
    }
    if (instances > 0) out.emplace_back(posting.slot, instances);
  }
  if (!filters.empty()) {  // every marked row is in the first filter
    for (const std::vector<Posting>* list : filters.front()) {
      for (const auto& p : *list) filterScratch_[p.slot] = 0;
    }
  }
}

void TextIndex::sizeScratch() {
  if (freqScratch_.size() < docs_.size()) {
    freqScratch_.resize(docs_.size(), 0);
    scoreScratch_.resize(docs_.size(), 0.0);
    touchedScratch_.resize(docs_.size(), 0);
  }
}

std::string TextIndex::phraseKey(const Phrase& phrase) {
  std::string key(1, phrase.prefix ? '*' : '=');
  for (const auto& t : phrase.tokens) {
    const auto n = static_cast<uint32_t>(t.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
    key += t;
  }
  return key;
}

void TextIndex::rememberHitCount(const Phrase& phrase, size_t nHit) {
  if (hitCountsGeneration_ != generation_ || hitCounts_.size() >= 4096) {
    hitCounts_.clear();
    hitCountsGeneration_ = generation_;
  }
  hitCounts_[phraseKey(phrase)] = nHit;
}

size_t TextIndex::hitCount(const Phrase& phrase) {
  if (hitCountsGeneration_ == generation_) {
    if (auto it = hitCounts_.find(phraseKey(phrase)); it != hitCounts_.end()) return it->second;
  }
  sizeScratch();
  std::vector<std::pair<uint32_t, uint32_t>> freqs;
  phraseFrequencies(phrase, freqs);
  rememberHitCount(phrase, freqs.size());
  return freqs.size();
}

void TextIndex::accumulate(const std::vector<Phrase>& phrases, std::vector<uint32_t>& matched) {
  sizeScratch();
  const int64_t nRow = liveDocs_;
  const double avgdl = static_cast<double>(totalTokens_) / static_cast<double>(nRow);
  std::vector<std::pair<uint32_t, uint32_t>> freqs;
  for (const auto& phrase : phrases) {
    freqs.clear();
    phraseFrequencies(phrase, freqs);
    rememberHitCount(phrase, freqs.size());
    const double idf = idfOf(nRow, freqs.size());
    for (const auto& [slot, count] : freqs) {
      scoreScratch_[slot] += phraseScore(idf, count, normOf(docLengths_[slot], avgdl));
      if (!touchedScratch_[slot]) {
        touchedScratch_[slot] = 1;
        matched.push_back(slot);
      }
    }
  }
}

TextMatches TextIndex::evaluate(const std::vector<Phrase>& phrases) {
  std::vector<TextMatches::Row> rows;
  if (liveDocs_ == 0) return TextMatches(std::move(rows));
  std::vector<uint32_t> matched;
  accumulate(phrases, matched);
  rows.reserve(matched.size());
  for (uint32_t slot : matched) {
    rows.push_back({docs_[slot].pk, -1.0 * scoreScratch_[slot], docs_[slot].active});
    scoreScratch_[slot] = 0.0;
    touchedScratch_[slot] = 0;
  }
  return TextMatches(std::move(rows));
}

std::vector<std::optional<double>> TextIndex::bm25Of(const std::vector<Phrase>& phrases,
                                                     const std::vector<int64_t>& pks) {
  std::vector<std::optional<double>> out(pks.size());
  if (liveDocs_ == 0 || phrases.empty() || pks.empty()) return out;
  std::vector<const Doc*> rows(pks.size(), nullptr);
  for (size_t i = 0; i < pks.size(); ++i) {
    if (auto it = slots_.find(pks[i]); it != slots_.end()) rows[i] = &docs_[it->second];
  }
  // Instances of phrase j in row i: counts[i * nPhrases + j].
  const size_t nPhrases = phrases.size();
  const std::vector<std::vector<uint32_t>>& singleIds = singleIdsOf(phrases);
  std::vector<uint32_t> counts;
  countInRows(phrases, singleIds, rows, counts);
  // The sum in query order, as accumulate() adds it; IDF only for phrases that occur in some row asked about.
  const int64_t nRow = liveDocs_;
  const double avgdl = static_cast<double>(totalTokens_) / static_cast<double>(nRow);
  std::vector<std::optional<double>> idf(nPhrases);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] == nullptr) continue;
    double score = 0.0;
    bool occurs = false;
    for (size_t j = 0; j < nPhrases; ++j) {
      const uint32_t count = counts[i * nPhrases + j];
      if (count == 0) continue;
      if (!idf[j]) idf[j] = idfOf(nRow, hitCount(phrases[j]));
      score += phraseScore(*idf[j], count, normOf(rows[i]->terms.size(), avgdl));
      occurs = true;
    }
    if (occurs) out[i] = -1.0 * score;
  }
  return out;
}

}  // namespace memq
