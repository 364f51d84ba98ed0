// The unicode lane's top k (TextIndex::best and bestExhaustive, declared in text_index.h): rows scored exactly as
// FTS5's bm25 would score them, either all of them or with MaxScore pruning, which stops scoring the phrases that can
// no longer lift a row into the k best. Both give FTS5's values and order, ties included.
#include "daemon/store/text_index.h"

#include "daemon/store/text_index_bm25.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace memq {

using namespace text_index_detail;

namespace {

// TextMatches::best's order: lowest bm25 first, ties by pk.
bool better(const std::pair<int64_t, double>& a, const std::pair<int64_t, double>& b) {
  return a.second != b.second ? a.second < b.second : a.first < b.first;
}

// Keeps `row` (pk, bm25) if it is among the `limit` best seen: `heap` is a heap by `better`, its front the worst kept.
void offerTopK(std::vector<std::pair<int64_t, double>>& heap, const std::pair<int64_t, double>& row, size_t limit) {
  if (heap.size() < limit) {
    heap.push_back(row);
    std::push_heap(heap.begin(), heap.end(), better);
  } else if (better(row, heap.front())) {
    std::pop_heap(heap.begin(), heap.end(), better);
    heap.back() = row;
    std::push_heap(heap.begin(), heap.end(), better);
  }
}

}  // namespace

// The rows are the caller's candidates, scattered over the heap and cold: a row's terms are asked of memory while
// the row before it is counted, instead of when the count reaches them.
void TextIndex::prefetchTerms(const std::vector<const Doc*>& rows, size_t i) {
  // The row after it too, so that finding where its terms are does not wait for memory next time.
  if (i + 1 < rows.size() && rows[i + 1] != nullptr) __builtin_prefetch(rows[i + 1]);
  if (i >= rows.size() || rows[i] == nullptr) return;
  const std::vector<uint32_t>& terms = rows[i]->terms;
  constexpr size_t kTermsPerLine = 64 / sizeof(uint32_t);
  const size_t lines = std::min<size_t>(8, (terms.size() + kTermsPerLine - 1) / kTermsPerLine);
  for (size_t line = 0; line < lines; ++line) __builtin_prefetch(terms.data() + line * kTermsPerLine);
}

std::vector<uint32_t> TextIndex::singleTokenIds(const Phrase& phrase) const {
  std::vector<uint32_t> ids;
  if (phrase.tokens.size() != 1) return ids;
  const std::string& token = phrase.tokens.front();
  if (!phrase.prefix) {
    if (auto id = termId(token)) ids.push_back(*id);
    return ids;
  }
  forEachTermWithPrefix(token, [&](uint32_t id) {
    ids.push_back(id);
    return true;
  });
  return ids;
}

const std::vector<std::vector<uint32_t>>& TextIndex::singleIdsOf(const std::vector<Phrase>& phrases) {
  if (singleIdsGeneration_ == generation_ && singleIdsPhrases_ == phrases) return singleIds_;
  singleIds_.clear();
  for (const Phrase& phrase : phrases) singleIds_.push_back(singleTokenIds(phrase));
  singleIdsPhrases_ = phrases;
  singleIdsGeneration_ = generation_;
  return singleIds_;
}

void TextIndex::countInRows(const std::vector<Phrase>& phrases, const std::vector<std::vector<uint32_t>>& singleIds,
                            const std::vector<const Doc*>& rows, std::vector<uint32_t>& counts) {
  const size_t nPhrases = phrases.size();
  counts.assign(rows.size() * nPhrases, 0);
  // A phrase of several tokens as its term ids (nullopt: it has no instance anywhere, and is not looked for).
  std::vector<std::optional<PhraseTerms>> several(nPhrases);
  for (size_t j = 0; j < nPhrases; ++j) {
    if (phrases[j].tokens.size() >= 2) several[j] = phraseTerms(phrases[j]);
  }
  // 64 phrases at a time: each term is tagged with the phrases it is an instance of (a single-token phrase) or the
  // first token of (a phrase of several), then each row's positions are read once. A position holds one term, so a
  // prefix phrase counts each position at most once; a phrase of several tokens is checked only where its first
  // token stands.
  if (termPhraseBits_.size() < terms_.size()) termPhraseBits_.resize(terms_.size(), 0);
  std::vector<uint32_t> tagged;
  // Most of a row's terms are in no phrase, and termPhraseBits_ (a word per term) is too large to stay in cache
  // between recalls: a bit per id modulo kFilterBits, small enough for L1, says which terms need it read at all.
  constexpr uint32_t kFilterBits = 1u << 15;
  std::array<uint64_t, kFilterBits / 64> filter{};
  auto maybeTagged = [&filter](uint32_t id) { return ((filter[(id / 64) % filter.size()] >> (id % 64)) & 1) != 0; };
  auto tag = [&](uint32_t id, uint64_t bit) {
    if (termPhraseBits_[id] == 0) tagged.push_back(id);
    termPhraseBits_[id] |= bit;
    filter[(id / 64) % filter.size()] |= uint64_t{1} << (id % 64);
  };
  for (size_t block = 0; block < nPhrases; block += 64) {
    const size_t blockEnd = std::min(nPhrases, block + 64);
    uint64_t severalBits = 0;  // the block's phrases of several tokens
    for (size_t j = block; j < blockEnd; ++j) {
      const uint64_t bit = uint64_t{1} << (j - block);
      if (phrases[j].tokens.size() == 1) {
        for (uint32_t id : singleIds[j]) tag(id, bit);
      } else if (several[j]) {
        tag(several[j]->leading.front(), bit);
        severalBits |= bit;
      }
    }
    if (tagged.empty()) continue;
    for (size_t i = 0; i < rows.size(); ++i) {
      prefetchTerms(rows, i + 1);
      if (rows[i] == nullptr) continue;
      const Doc& doc = *rows[i];
      uint32_t* rowCounts = &counts[i * nPhrases + block];
      size_t column = 0;
      const uint32_t length = static_cast<uint32_t>(doc.terms.size());
      for (uint32_t p = 0; p < length; ++p) {
        if (!maybeTagged(doc.terms[p])) continue;
        const uint64_t bits = termPhraseBits_[doc.terms[p]];
        if (bits == 0) continue;
        for (uint64_t single = bits & ~severalBits; single != 0; single &= single - 1) {
          ++rowCounts[std::countr_zero(single)];
        }
        uint64_t starts = bits & severalBits;
        if (starts == 0) continue;
        while (p >= doc.columnEnd[column]) ++column;
        for (; starts != 0; starts &= starts - 1) {
          const int b = std::countr_zero(starts);
          const size_t j = block + static_cast<size_t>(b);
          if (instanceAt(doc, p, doc.columnEnd[column], phrases[j], *several[j])) ++rowCounts[b];
        }
      }
    }
    for (uint32_t id : tagged) termPhraseBits_[id] = 0;
    tagged.clear();
    filter.fill(0);
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
  heap.reserve(limit + 1);
  for (uint32_t slot : matched) {
    const double bm25 = -1.0 * scoreScratch_[slot];
    scoreScratch_[slot] = 0.0;
    touchedScratch_[slot] = 0;
    if (heap.size() == limit && bm25 > heap.front().second) continue;  // the row itself need not be read
    const Doc& doc = docs_[slot];
    const std::pair<int64_t, double> row{doc.pk, bm25};
    if (!doc.active || (excludePk && doc.pk == *excludePk)) continue;
    offerTopK(heap, row, limit);
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
  const std::vector<std::vector<uint32_t>>& singleIds = singleIdsOf(phrases);
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
      reached.clear();
      const size_t rows = countRows(ids, [&](const auto& p) {
        if (touchedScratch_[p.slot] == 2) {
          if (freqScratch_[p.slot] == 0) reached.push_back(p.slot);
          freqScratch_[p.slot] += p.count;
        }
      });
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
      offerTopK(heap, row, limit);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  return heap;
}

}  // namespace memq
