// The in-memory unicode full-text lane; see text_index.h for what it must match and why.
#include "daemon/store/text_index.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstring>

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
  auto it = dictionary_.find(text);
  if (it == dictionary_.end()) return std::nullopt;
  return it->second;
}

uint32_t TextIndex::internTerm(std::string_view text) {
  auto it = dictionary_.find(text);
  if (it != dictionary_.end()) return it->second;
  auto id = static_cast<uint32_t>(terms_.size());
  auto inserted = dictionary_.emplace(std::string(text), id).first;
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
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    terms_[sorted[i]].postings.push_back({slot, static_cast<uint32_t>(j - i)});
    i = j;
  }
  totalTokens_ += static_cast<int64_t>(doc.terms.size());
  ++liveDocs_;
}

void TextIndex::remove(int64_t pk) {
  auto it = slots_.find(pk);
  if (it == slots_.end()) return;
  unlinkDoc(it->second);
  freeSlots_.push_back(it->second);
  slots_.erase(it);
}

void TextIndex::setActive(int64_t pk, bool active) {
  if (auto it = slots_.find(pk); it != slots_.end()) docs_[it->second].active = active;
}

void TextIndex::clear() {
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
  const std::vector<Posting>* driver = nullptr;
  for (size_t j = 0; j + 1 < n; ++j) {
    auto id = termId(phrase.tokens[j]);
    if (!id) return;
    ids[j] = *id;
    const auto& postings = terms_[*id].postings;
    if (driver == nullptr || postings.size() < driver->size()) driver = &postings;
  }
  std::optional<uint32_t> lastId;
  if (!phrase.prefix) {
    lastId = termId(last);
    if (!lastId) return;
  } else {
    auto it = dictionary_.lower_bound(std::string_view(last));
    if (it == dictionary_.end() || !startsWith(it->first, last)) return;
  }
  for (const auto& posting : *driver) {
    const Doc& doc = docs_[posting.slot];
    uint32_t instances = 0;
    uint32_t begin = 0;
    for (uint32_t end : doc.columnEnd) {
      for (uint32_t p = begin; p + n <= end; ++p) {
        size_t j = 0;
        while (j + 1 < n && doc.terms[p + j] == ids[j]) ++j;
        if (j + 1 < n) continue;
        uint32_t t = doc.terms[p + n - 1];
        if (lastId ? t == *lastId : startsWith(*terms_[t].text, last)) ++instances;
      }
      begin = end;
    }
    if (instances > 0) out.emplace_back(posting.slot, instances);
  }
}

TextMatches TextIndex::evaluate(const std::vector<Phrase>& phrases) {
  std::vector<TextMatches::Row> rows;
  if (liveDocs_ == 0) return TextMatches(std::move(rows));
  if (freqScratch_.size() < docs_.size()) {
    freqScratch_.resize(docs_.size(), 0);
    scoreScratch_.resize(docs_.size(), 0.0);
    touchedScratch_.resize(docs_.size(), 0);
  }
  // fts5Bm25Function's constants and arithmetic, term by term in the same order, so the doubles come out the same.
  const double k1 = 1.2;
  const double b = 0.75;
  const int64_t nRow = liveDocs_;
  const double avgdl = static_cast<double>(totalTokens_) / static_cast<double>(nRow);
  std::vector<uint32_t> matched;
  std::vector<std::pair<uint32_t, uint32_t>> freqs;
  for (const auto& phrase : phrases) {
    freqs.clear();
    phraseFrequencies(phrase, freqs);
    const auto nHit = static_cast<int64_t>(freqs.size());
    double idf = std::log((static_cast<double>(nRow - nHit) + 0.5) / (static_cast<double>(nHit) + 0.5));
    if (idf <= 0.0) idf = 1e-6;
    for (const auto& [slot, count] : freqs) {
      const double freq = static_cast<double>(count);
      const double D = static_cast<double>(docs_[slot].terms.size());
      scoreScratch_[slot] += idf * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * D / avgdl)));
      if (!touchedScratch_[slot]) {
        touchedScratch_[slot] = 1;
        matched.push_back(slot);
      }
    }
  }
  rows.reserve(matched.size());
  for (uint32_t slot : matched) {
    rows.push_back({docs_[slot].pk, -1.0 * scoreScratch_[slot], docs_[slot].active});
    scoreScratch_[slot] = 0.0;
    touchedScratch_[slot] = 0;
  }
  return TextMatches(std::move(rows));
}

}  // namespace memq
