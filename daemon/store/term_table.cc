// The text index's term lookup; see term_table.h.
#include "daemon/store/term_table.h"

#include <cstring>
#include <functional>

namespace memq {

namespace {

constexpr size_t kFirstCapacity = 1024;

const char* longText(const char* inlineBytes) {
  const char* text = nullptr;
  std::memcpy(&text, inlineBytes + TermTable::kPrefixBytes, sizeof text);
  return text;
}

}  // namespace

uint64_t TermTable::hashOf(std::string_view term) { return std::hash<std::string_view>{}(term); }

bool TermTable::holds(const Entry& e, uint32_t tag, std::string_view term) {
  if (e.tag != tag || e.length != term.size()) return false;
  if (term.size() <= kInlineBytes) return std::memcmp(e.text, term.data(), term.size()) == 0;
  return std::memcmp(e.text, term.data(), kPrefixBytes) == 0 &&
         std::memcmp(longText(e.text) + kPrefixBytes, term.data() + kPrefixBytes, term.size() - kPrefixBytes) == 0;
}

std::optional<uint32_t> TermTable::find(std::string_view term) const {
  if (entries_.empty()) return std::nullopt;
  const uint64_t hash = hashOf(term);
  const auto tag = static_cast<uint32_t>(hash >> 32);
  const size_t mask = entries_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Entry& e = entries_[i];
    if (e.id == kEmpty) return std::nullopt;  // invariant 1 leaves an empty entry to end every probe
    if (holds(e, tag, term)) return e.id;
  }
}

void TermTable::insert(std::string_view term, uint32_t id) {
  if ((size_ + 1) * 10 > entries_.size() * 7) grow();
  const uint64_t hash = hashOf(term);
  Entry e;
  e.id = id;
  e.tag = static_cast<uint32_t>(hash >> 32);
  e.length = static_cast<uint32_t>(term.size());
  if (term.size() <= kInlineBytes) {
    std::memcpy(e.text, term.data(), term.size());
  } else {
    std::memcpy(e.text, term.data(), kPrefixBytes);
    const char* text = term.data();
    std::memcpy(e.text + kPrefixBytes, &text, sizeof text);
  }
  place(e, hash);
  ++size_;
}

void TermTable::place(const Entry& e, uint64_t hash) {
  const size_t mask = entries_.size() - 1;
  size_t i = hash & mask;
  while (entries_[i].id != kEmpty) i = (i + 1) & mask;
  entries_[i] = e;
}

void TermTable::grow() {
  std::vector<Entry> old = std::move(entries_);
  entries_.assign(old.empty() ? kFirstCapacity : old.size() * 2, Entry{});
  for (const Entry& e : old) {
    if (e.id == kEmpty) continue;
    const std::string_view text =
        e.length <= kInlineBytes ? std::string_view(e.text, e.length) : std::string_view(longText(e.text), e.length);
    place(e, hashOf(text));
  }
}

void TermTable::clear() {
  entries_.clear();
  entries_.shrink_to_fit();
  size_ = 0;
}

}  // namespace memq
