// TermTable: the text index's map from a term's text to its id, the lookup every token of every saved or loaded row
// makes (text_index.h: TextIndex::internTerm). An open-addressing hash table with linear probing, at most 70% full,
// whose 32-byte entries hold a term of up to kInlineBytes bytes inline: a lookup of such a term reads one entry's
// cache line (and its neighbours' while probing) and nothing else, where a node-based map reads a bucket, a node and
// the key's string, each a cache miss once a save's vector scan has swept the caches.
//
// A longer term keeps its first kPrefixBytes inline and a pointer to its text, which the caller owns and must keep
// in place while the table holds it (TextIndex's sorted dictionary: std::map nodes never move).
//
// Invariants: (1) size_ entries are occupied, and entries_.size() is 0 or a power of two with size_ ≤ 70% of it;
// (2) every occupied entry is reachable from its hash's home slot without crossing an empty one; (3) no two occupied
// entries hold the same text.
//
// Thread-safety: not thread-safe; const methods may run concurrently while nobody inserts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace memq {

class TermTable {
 public:
  static constexpr size_t kInlineBytes = 20;
  static constexpr size_t kPrefixBytes = kInlineBytes - sizeof(const char*);

  std::optional<uint32_t> find(std::string_view term) const;
  // Adds `term` (absent) with `id`. The bytes `term` views must stay in place while the table holds it when the term
  // is longer than kInlineBytes.
  void insert(std::string_view term, uint32_t id);
  void clear();
  size_t size() const { return size_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Entry {
    uint32_t id = kEmpty;
    uint32_t tag = 0;  // the hash's upper half
    uint32_t length = 0;
    char text[kInlineBytes] = {};  // the term, or its first kPrefixBytes and a pointer to all of it
  };
  static_assert(sizeof(Entry) == 32);

  static uint64_t hashOf(std::string_view term);
  static bool holds(const Entry& e, uint32_t tag, std::string_view term);
  void grow();
  void place(const Entry& e, uint64_t hash);

  std::vector<Entry> entries_;
  size_t size_ = 0;
};

}  // namespace memq
