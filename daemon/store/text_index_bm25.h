// FTS5's bm25 arithmetic, shared by the in-memory unicode lane's index (text_index.cc) and its top-k scoring
// (text_index_top_k.cc): fts5Bm25Function's constants and operations, term by term in the same order, so the doubles
// come out exactly as SQLite's.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace memq::text_index_detail {

inline bool startsWith(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::memcmp(s.data(), prefix.data(), prefix.size()) == 0;
}

inline constexpr double kK1 = 1.2;
inline constexpr double kB = 0.75;

inline double idfOf(int64_t nRow, size_t hits) {
  const auto nHit = static_cast<int64_t>(hits);
  double idf = std::log((static_cast<double>(nRow - nHit) + 0.5) / (static_cast<double>(nHit) + 0.5));
  return idf <= 0.0 ? 1e-6 : idf;
}

// The length part of bm25's denominator for a row of D tokens.
inline double lengthNorm(size_t D, double avgdl) { return kK1 * (1 - kB + kB * static_cast<double>(D) / avgdl); }

// One phrase's term of the sum, for a row (of lengthNorm `norm`) where it occurs `count` times.
inline double phraseScore(double idf, uint32_t count, double norm) {
  const double freq = static_cast<double>(count);
  return idf * ((freq * (kK1 + 1.0)) / (freq + norm));
}

}  // namespace memq::text_index_detail
