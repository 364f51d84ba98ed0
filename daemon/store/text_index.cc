// The in-memory unicode full-text lane; see text_index.h for what it must match and why.
#include "daemon/store/text_index.h"

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace memq {

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

bool startsWith(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::memcmp(s.data(), prefix.data(), prefix.size()) == 0;
}

// fts5Bm25Function's constants and arithmetic, term by term in the same order, so the doubles come out the same.
constexpr double kK1 = 1.2;
constexpr double kB = 0.75;

double idfOf(int64_t nRow, size_t hits) {
  const auto nHit = static_cast<int64_t>(hits);
  double idf = std::log((static_cast<double>(nRow - nHit) + 0.5) / (static_cast<double>(nHit) + 0.5));
  return idf <= 0.0 ? 1e-6 : idf;
}

// The length part of bm25's denominator for a row of D tokens.
double lengthNorm(size_t D, double avgdl) { return kK1 * (1 - kB + kB * static_cast<double>(D) / avgdl); }

// One phrase's term of the sum, for a row (of lengthNorm `norm`) where it occurs `count` times.
double phraseScore(double idf, uint32_t count, double norm) {
  const double freq = static_cast<double>(count);
  return idf * ((freq * (kK1 + 1.0)) / (freq + norm));
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

std::optional<uint32_t> TextIndex::termId(std::string_view text) const {
  auto it = termIds_.find(text);
  if (it == termIds_.end()) return std::nullopt;
  return it->second;
}

uint32_t TextIndex::internTerm(std::string_view text) {
  // Every token of every indexed row comes through here (a store open at 100k rows: tens of millions), so the
  // lookup is a hash probe; the sorted dictionary is touched only for a term never seen before.
  auto it = termIds_.find(text);
  if (it != termIds_.end()) return it->second;
  auto id = static_cast<uint32_t>(terms_.size());
  auto inserted = dictionary_.emplace(std::string(text), id).first;
  termIds_.emplace(std::string_view(inserted->first), id);
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
    auto it = dictionary_.lower_bound(std::string_view(last));
    std::vector<uint32_t> touched;
    for (; it != dictionary_.end() && startsWith(it->first, last); ++it) {
      for (const auto& p : terms_[it->second].postings) {
        if (freqScratch_[p.slot] == 0) touched.push_back(p.slot);
        freqScratch_[p.slot] += p.count;
      }
    }
    for (uint32_t slot : touched) {
      out.emplace_back(slot, freqScratch_[slot]);
      freqScratch_[slot] = 0;
    }
    return;
  }
  // Several tokens: adjacent positions within one column, the last token exact or a prefix.
  std::vector<uint32_t> ids(n - 1);
  std::vector<uint32_t> exact;  // the exact tokens' term ids
  for (size_t j = 0; j + 1 < n; ++j) {
    auto id = termId(phrase.tokens[j]);
    if (!id) return;
    ids[j] = *id;
    exact.push_back(*id);
  }
  std::optional<uint32_t> lastId;
  if (!phrase.prefix) {
    lastId = termId(last);
    if (!lastId) return;
    exact.push_back(*lastId);
  } else {
    auto it = dictionary_.lower_bound(std::string_view(last));
    if (it == dictionary_.end() || !startsWith(it->first, last)) return;
  }
  // The rarest token drives: only its rows are read. Reading a row's positions costs a cache miss where a posting
  // costs next to nothing, so the other tokens' postings (unless far longer) first mark the rows holding all of
  // them (filterScratch_[slot] == k after k filters).
  std::sort(exact.begin(), exact.end(), [&](uint32_t a, uint32_t b) {
    const size_t na = terms_[a].postings.size(), nb = terms_[b].postings.size();
    return na != nb ? na < nb : a < b;  // a repeated token's ids end up side by side, for unique()
  });
  exact.erase(std::unique(exact.begin(), exact.end()), exact.end());
  const uint32_t driverId = exact.front();
  const std::vector<Posting>& driver = terms_[driverId].postings;
  std::vector<const std::vector<Posting>*> filters;
  for (size_t k = 1; k < exact.size() && filters.size() < 3; ++k) {
    const auto& postings = terms_[exact[k]].postings;
    if (postings.size() <= 32 * driver.size()) filters.push_back(&postings);
  }
  if (filterScratch_.size() < docs_.size()) filterScratch_.resize(docs_.size(), 0);
  for (size_t k = 0; k < filters.size(); ++k) {
    for (const auto& p : *filters[k]) {
      if (filterScratch_[p.slot] == k) filterScratch_[p.slot] = static_cast<uint8_t>(k + 1);
    }
  }
  // Each instance starting at s holds the driver at s + driverAt (its first place in the phrase), so the instances
  // are found from the driver's positions; the posting's count says when the last one has been seen.
  size_t driverAt = 0;
  while (driverAt + 1 < n && ids[driverAt] != driverId) ++driverAt;
  const size_t nDriver = driver.size();
  for (size_t i = 0; i < nDriver; ++i) {
    // Rows are read a few postings ahead of their turn, so their positions arrive while earlier rows are scanned.
    if (i + 8 < nDriver) __builtin_prefetch(&docs_[driver[i + 8].slot]);
    if (i + 4 < nDriver && filterScratch_[driver[i + 4].slot] == filters.size()) {
      __builtin_prefetch(docs_[driver[i + 4].slot].terms.data());
    }
    const Posting& posting = driver[i];
    if (filterScratch_[posting.slot] != filters.size()) continue;
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
      const uint32_t start = q - static_cast<uint32_t>(driverAt);
      if (start + n > doc.columnEnd[column]) continue;
      size_t j = 0;
      while (j + 1 < n && doc.terms[start + j] == ids[j]) ++j;
      if (j + 1 < n) continue;
      uint32_t t = doc.terms[start + n - 1];
      if (lastId ? t == *lastId : startsWith(*terms_[t].text, last)) ++instances;
    }
    if (instances > 0) out.emplace_back(posting.slot, instances);
  }
  if (!filters.empty()) {
    for (const auto& p : *filters.front()) filterScratch_[p.slot] = 0;
  }
}

double TextIndex::normOf(size_t length, double avgdl) {
  // A row's norm depends only on its length and avgdl: each length's is computed once per avgdl (the same
  // arithmetic, so the same double), not once per posting.
  if (avgdl != normsAvgdl_) {
    std::fill(normByLength_.begin(), normByLength_.end(), -1.0);
    normsAvgdl_ = avgdl;
  }
  if (length >= normByLength_.size()) normByLength_.resize(length + 1, -1.0);
  double& norm = normByLength_[length];
  if (norm < 0) norm = lengthNorm(length, avgdl);
  return norm;
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

std::vector<uint32_t> TextIndex::singleTokenIds(const Phrase& phrase) const {
  std::vector<uint32_t> ids;
  if (phrase.tokens.size() != 1) return ids;
  const std::string& token = phrase.tokens.front();
  if (!phrase.prefix) {
    if (auto id = termId(token)) ids.push_back(*id);
    return ids;
  }
  for (auto it = dictionary_.lower_bound(std::string_view(token)); it != dictionary_.end() && startsWith(it->first, token);
       ++it) {
    ids.push_back(it->second);
  }
  return ids;
}

size_t TextIndex::countRows(const std::vector<uint32_t>& ids) {
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
    }
    postings += terms_[id].postings.size();
  }
  if (postings < words) {
    for (uint32_t id : ids) {
      for (const auto& p : terms_[id].postings) rowBits_[p.slot >> 6] = 0;
    }
  } else {
    std::fill(rowBits_.begin(), rowBits_.begin() + static_cast<std::ptrdiff_t>(words), uint64_t{0});
  }
  return rows;
}

void TextIndex::countInRows(const std::vector<Phrase>& phrases, const std::vector<std::vector<uint32_t>>& singleIds,
                            const std::vector<const Doc*>& rows, std::vector<uint32_t>& counts) {
  const size_t nPhrases = phrases.size();
  counts.assign(rows.size() * nPhrases, 0);
  // Single-token phrases, 64 at a time: each term is tagged with the phrases it is an instance of, then each row's
  // positions are read once. A position holds one term, so a prefix phrase counts each position at most once.
  if (termPhraseBits_.size() < terms_.size()) termPhraseBits_.resize(terms_.size(), 0);
  std::vector<uint32_t> tagged;
  for (size_t block = 0; block < nPhrases; block += 64) {
    const size_t blockEnd = std::min(nPhrases, block + 64);
    for (size_t j = block; j < blockEnd; ++j) {
      if (phrases[j].tokens.size() != 1) continue;
      const uint64_t bit = uint64_t{1} << (j - block);
      for (uint32_t id : singleIds[j]) {
        if (termPhraseBits_[id] == 0) tagged.push_back(id);
        termPhraseBits_[id] |= bit;
      }
    }
    if (tagged.empty()) continue;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] == nullptr) continue;
      uint32_t* rowCounts = &counts[i * nPhrases + block];
      for (uint32_t term : rows[i]->terms) {
        for (uint64_t bits = termPhraseBits_[term]; bits != 0; bits &= bits - 1) ++rowCounts[std::countr_zero(bits)];
      }
    }
    for (uint32_t id : tagged) termPhraseBits_[id] = 0;
    tagged.clear();
  }
  // Several tokens: adjacent positions within one column, the last token exact or a prefix (as phraseFrequencies).
  for (size_t j = 0; j < nPhrases; ++j) {
    const Phrase& phrase = phrases[j];
    const size_t n = phrase.tokens.size();
    if (n < 2) continue;
    std::vector<uint32_t> ids(n - 1);
    bool known = true;
    for (size_t k = 0; k + 1 < n && known; ++k) {
      auto id = termId(phrase.tokens[k]);
      if (id) ids[k] = *id;
      known = id.has_value();
    }
    const std::string& last = phrase.tokens.back();
    std::optional<uint32_t> lastId;
    if (!phrase.prefix) lastId = termId(last);
    if (!known || (!phrase.prefix && !lastId)) continue;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] == nullptr) continue;
      const Doc& doc = *rows[i];
      uint32_t instances = 0;
      uint32_t begin = 0;
      for (uint32_t end : doc.columnEnd) {
        for (uint32_t p = begin; p + n <= end; ++p) {
          size_t k = 0;
          while (k + 1 < n && doc.terms[p + k] == ids[k]) ++k;
          if (k + 1 < n) continue;
          uint32_t t = doc.terms[p + n - 1];
          if (lastId ? t == *lastId : startsWith(*terms_[t].text, last)) ++instances;
        }
        begin = end;
      }
      counts[i * nPhrases + j] = instances;
    }
  }
}

namespace {

// The relative margin of best()'s comparisons: far above the rounding of a sum of a few hundred positive terms
// (each within a few ulps), far below any gap between two distinct bm25 figures that matters.
constexpr double kMargin = 1e-9;

// Whether a row whose sum is at most `upper` can still reach a row whose sum is at least `floor` (sums: FTS5's, before
// negation; larger is better). Never false for a tie.
bool canReach(double upper, double floor) { return upper * (1 + kMargin) >= floor * (1 - kMargin); }

}  // namespace

std::vector<std::pair<int64_t, double>> TextIndex::bestExhaustive(const std::vector<Phrase>& phrases, size_t limit,
                                                        std::optional<int64_t> excludePk) {
  // Every matching row scored (accumulate, in query order), the best kept in a heap.
  std::vector<std::pair<int64_t, double>> heap;  // (pk, bm25); front = the worst kept
  if (liveDocs_ == 0 || limit == 0) return heap;
  std::vector<uint32_t> matched;
  accumulate(phrases, matched);
  // TextMatches::best's order: lowest bm25 first, ties by pk.
  auto better = [](const std::pair<int64_t, double>& a, const std::pair<int64_t, double>& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  };
  heap.reserve(limit + 1);
  for (uint32_t slot : matched) {
    const double bm25 = -1.0 * scoreScratch_[slot];
    scoreScratch_[slot] = 0.0;
    touchedScratch_[slot] = 0;
    if (heap.size() == limit && bm25 > heap.front().second) continue;  // the row itself need not be read
    const Doc& doc = docs_[slot];
    const std::pair<int64_t, double> row{doc.pk, bm25};
    if (!doc.active || (excludePk && doc.pk == *excludePk)) continue;
    if (heap.size() < limit) {
      heap.push_back(row);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(row, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = row;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  return heap;
}

std::vector<std::pair<int64_t, double>> TextIndex::best(const std::vector<Phrase>& phrases, size_t limit,
                                                        std::optional<int64_t> excludePk) {
  bestStats_ = {};
  std::vector<std::pair<int64_t, double>> heap;  // (pk, bm25); front = the worst kept
  if (liveDocs_ == 0 || limit == 0) return heap;
  sizeScratch();
  const int64_t nRow = liveDocs_;
  const double avgdl = static_cast<double>(totalTokens_) / static_cast<double>(nRow);
  const size_t nPhrases = phrases.size();

  // 1. Each phrase's upper bound on its term of the sum. A phrase of several tokens has its rows found now (there is
  // no other way to its nHit) and is walked first. A prefix of several terms has at least as many rows as its
  // largest posting list, so at most that IDF; its own nHit is counted when it is walked, or when it is not.
  struct Plan {
    double idf = 0;     // exact once `known`
    double bound = 0;   // the term of the sum is at most this in any row
    bool known = false;  // nHit (so idf) is exact
    bool listed = false;                                // freqs holds its rows
    std::vector<std::pair<uint32_t, uint32_t>> freqs;  // (slot, instances), when listed
  };
  std::vector<Plan> plans(nPhrases);
  std::vector<std::vector<uint32_t>> singleIds(nPhrases);
  std::vector<size_t> order;  // the phrases that occur somewhere, in the order they are walked
  auto learnRows = [&](size_t j, size_t rows) {
    rememberHitCount(phrases[j], rows);
    plans[j].idf = idfOf(nRow, rows);
    plans[j].known = true;
  };
  for (size_t j = 0; j < nPhrases; ++j) {
    const Phrase& phrase = phrases[j];
    Plan& plan = plans[j];
    if (phrase.tokens.size() >= 2) {
      phraseFrequencies(phrase, plan.freqs);
      plan.listed = true;
      learnRows(j, plan.freqs.size());
      if (plan.freqs.empty()) continue;
      plan.bound = std::numeric_limits<double>::infinity();
      order.push_back(j);
      continue;
    }
    if (phrase.tokens.empty()) {
      learnRows(j, 0);
      continue;
    }
    singleIds[j] = singleTokenIds(phrase);
    const auto& ids = singleIds[j];
    size_t largest = 0;
    double maxCount = 0;
    uint32_t minLength = UINT32_MAX;
    for (uint32_t id : ids) {
      const Term& term = terms_[id];
      if (term.postings.empty()) continue;
      largest = std::max(largest, term.postings.size());
      // The largest count a row can have (the prefix's terms' largest counts added up) over the shortest row: the
      // term of the sum grows with the count and shrinks with the length.
      maxCount += term.maxCount;
      minLength = std::min(minLength, term.minLength);
    }
    if (ids.size() == 1 || largest == 0) learnRows(j, largest);
    if (largest == 0) continue;
    // idfOf falls with nHit except where it is clamped to 1e-6, so the bound of an unknown nHit >= largest is the
    // larger of the two.
    const double idf = plan.known ? plan.idf : std::max(idfOf(nRow, largest), 1e-6);
    plan.bound = idf * ((maxCount * (kK1 + 1.0)) / (maxCount + lengthNorm(minLength, avgdl)));
    order.push_back(j);
  }
  bestStats_.phrases = order.size();
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return plans[a].bound > plans[b].bound; });
  // left[i]: the bounds of the i-th phrase walked and all after it, added up (infinite while a listed phrase is left:
  // those are walked first, whatever the bounds).
  std::vector<double> left(order.size() + 1, 0.0);
  for (size_t i = order.size(); i-- > 0;) left[i] = left[i + 1] + plans[order[i]].bound;

  // 2. Walk the phrases into partial sums (scoreScratch_) until the rows not reached cannot enter.
  std::vector<uint32_t> matched;
  double maxPartial = 0;
  double floor = 0;  // the limit-th best partial sum of a returnable row (0: fewer such rows)
  uint32_t excludedSlot = UINT32_MAX;
  if (excludePk) {
    if (auto it = slots_.find(*excludePk); it != slots_.end()) excludedSlot = it->second;
  }
  auto eligible = [&](uint32_t slot) { return activeScratch_[slot] != 0 && slot != excludedSlot; };
  auto add = [&](uint32_t slot, uint32_t count, double idf) {
    double& sum = scoreScratch_[slot];
    sum += phraseScore(idf, count, normOf(docLengths_[slot], avgdl));
    maxPartial = std::max(maxPartial, sum);
    if (!touchedScratch_[slot]) {
      touchedScratch_[slot] = 1;
      matched.push_back(slot);
    }
  };
  // The limit-th largest partial sum of a returnable row (of a candidate, when candidatesOnly), if above `above`;
  // else 0. Only sums above `above` are gathered: the caller needs the floor only when it is above that.
  std::vector<double> partials;
  auto limitthPartial = [&](bool candidatesOnly, double above) -> double {
    partials.clear();
    for (uint32_t slot : matched) {
      const double sum = scoreScratch_[slot];
      if (sum <= above) continue;
      if (candidatesOnly ? touchedScratch_[slot] == 2 : eligible(slot)) partials.push_back(sum);
    }
    if (partials.size() < limit) return 0.0;
    auto nth = partials.begin() + static_cast<std::ptrdiff_t>(limit - 1);
    std::nth_element(partials.begin(), nth, partials.end(), std::greater<>());
    return *nth;
  };
  std::vector<uint32_t> reachedRows;
  size_t walked = 0;
  bool pruned = false;
  for (; walked < order.size(); ++walked) {
    const size_t j = order[walked];
    Plan& plan = plans[j];
    const auto& ids = singleIds[j];
    if (plan.listed) {
      for (const auto& [slot, count] : plan.freqs) add(slot, count, plan.idf);
    } else if (ids.size() == 1) {
      for (const auto& p : terms_[ids.front()].postings) add(p.slot, p.count, plan.idf);
    } else {
      // A prefix of several terms: its counts merged per row (freqScratch_), from the ids found above.
      reachedRows.clear();
      for (uint32_t id : ids) {
        for (const auto& p : terms_[id].postings) {
          if (freqScratch_[p.slot] == 0) reachedRows.push_back(p.slot);
          freqScratch_[p.slot] += p.count;
        }
      }
      learnRows(j, reachedRows.size());
      for (uint32_t slot : reachedRows) {
        add(slot, freqScratch_[slot], plan.idf);
        freqScratch_[slot] = 0;
      }
    }
    const double rest = left[walked + 1];
    if (rest == 0.0) continue;
    // The rows not reached have at most `rest`; worth checking only when some partial sum is already above it.
    if (!canReach(rest, maxPartial)) {
      floor = limitthPartial(false, rest);
      if (!canReach(rest, floor)) {
        ++walked;
        pruned = true;
        break;
      }
    }
  }
  bestStats_.walked = walked;
  bestStats_.touched = matched.size();

  // 3. Pruned: the returnable rows reached whose partial sum and the bounds left can still reach the floor are the
  // candidates (touchedScratch_ 2). The phrases left are walked for them only: a posting of any other row is
  // skipped unscored. A prefix of several terms is counted (nHit) on the way.
  if (pruned) {
    const double rest = left[walked];
    for (uint32_t slot : matched) {
      if (canReach(scoreScratch_[slot] + rest, floor) && eligible(slot)) touchedScratch_[slot] = 2;
    }
    std::vector<uint32_t> reached;
    for (size_t w = walked; w < order.size(); ++w) {
      const size_t j = order[w];
      Plan& plan = plans[j];
      const auto& ids = singleIds[j];
      if (ids.size() == 1) {
        for (const auto& p : terms_[ids.front()].postings) {
          if (touchedScratch_[p.slot] == 2) {
            scoreScratch_[p.slot] += phraseScore(plan.idf, p.count, normOf(docLengths_[p.slot], avgdl));
          }
        }
        continue;
      }
      const size_t words = (docs_.size() + 63) / 64;
      if (rowBits_.size() < words) rowBits_.resize(words, 0);
      size_t rows = 0;
      reached.clear();
      for (uint32_t id : ids) {
        for (const auto& p : terms_[id].postings) {
          uint64_t& word = rowBits_[p.slot >> 6];
          const uint64_t bit = uint64_t{1} << (p.slot & 63);
          rows += (word & bit) == 0 ? 1 : 0;
          word |= bit;
          if (touchedScratch_[p.slot] == 2) {
            if (freqScratch_[p.slot] == 0) reached.push_back(p.slot);
            freqScratch_[p.slot] += p.count;
          }
        }
      }
      std::fill(rowBits_.begin(), rowBits_.begin() + static_cast<std::ptrdiff_t>(words), uint64_t{0});
      learnRows(j, rows);
      for (uint32_t slot : reached) {
        scoreScratch_[slot] += phraseScore(plan.idf, freqScratch_[slot], normOf(docLengths_[slot], avgdl));
        freqScratch_[slot] = 0;
      }
    }
  }
  // Now every partial sum is the row's whole sum (added in another order than FTS5's).
  floor = limitthPartial(pruned, 0.0);

  // 4. The rows that can still enter, by descending sum, scored exactly (from their tokens, in query order) until no
  // sum left reaches the limit-th exact score.
  struct Candidate {
    uint32_t slot;
    double upper;
  };
  std::vector<Candidate> candidates;
  for (uint32_t slot : matched) {
    const double upper = scoreScratch_[slot];
    const bool candidate = pruned ? touchedScratch_[slot] == 2 : eligible(slot);
    scoreScratch_[slot] = 0.0;
    touchedScratch_[slot] = 0;
    if (candidate && canReach(upper, floor)) candidates.push_back({slot, upper});
  }
  bestStats_.candidates = candidates.size();
  // Fewer returnable rows than the limit (or a crowd of ties at it): every candidate would be read again from its
  // tokens, which costs more than scoring the postings once more in query order.
  if (candidates.size() > 2 * limit + 256) return bestExhaustive(phrases, limit, excludePk);
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.upper != b.upper ? a.upper > b.upper : a.slot < b.slot;
  });
  auto better = [](const std::pair<int64_t, double>& a, const std::pair<int64_t, double>& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  };
  heap.reserve(limit + 1);
  constexpr size_t kBatch = 32;
  std::vector<const Doc*> rows;
  std::vector<uint32_t> counts;
  for (size_t begin = 0; begin < candidates.size(); begin += kBatch) {
    // Stop once the heap is full and even the best sum left is below its worst.
    if (heap.size() == limit && !canReach(candidates[begin].upper, -1.0 * heap.front().second)) break;
    const size_t end = std::min(candidates.size(), begin + kBatch);
    rows.clear();
    for (size_t c = begin; c < end; ++c) rows.push_back(&docs_[candidates[c].slot]);
    countInRows(phrases, singleIds, rows, counts);
    bestStats_.scored += rows.size();
    for (size_t c = begin; c < end; ++c) {
      const size_t i = c - begin;
      const uint32_t slot = candidates[c].slot;
      // The sum in query order, as accumulate() adds it: the same double.
      double score = 0.0;
      for (size_t j = 0; j < nPhrases; ++j) {
        const uint32_t count = counts[i * nPhrases + j];
        if (count == 0) continue;
        score += phraseScore(plans[j].idf, count, normOf(docLengths_[slot], avgdl));
      }
      const std::pair<int64_t, double> row{docs_[slot].pk, -1.0 * score};
      if (heap.size() < limit) {
        heap.push_back(row);
        std::push_heap(heap.begin(), heap.end(), better);
      } else if (better(row, heap.front())) {
        std::pop_heap(heap.begin(), heap.end(), better);
        heap.back() = row;
        std::push_heap(heap.begin(), heap.end(), better);
      }
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  return heap;
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
  std::vector<std::vector<uint32_t>> singleIds(nPhrases);
  for (size_t j = 0; j < nPhrases; ++j) singleIds[j] = singleTokenIds(phrases[j]);
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
