// TermTable, the text index's term lookup: every term inserted is found with its id, a term never inserted is not,
// whatever its length (inline, at the inline bound, longer and sharing the inline prefix), across the table's growth.
#include "daemon/store/term_table.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <string>

namespace memq {
namespace {

std::string randomTerm(std::mt19937& rng, size_t length) {
  std::uniform_int_distribution<int> byte('a', 'f');  // few letters: many terms share their first bytes
  std::string s(length, 'a');
  for (char& c : s) c = static_cast<char>(byte(rng));
  return s;
}

TEST(TermTableTest, FindsEveryInsertedTermWithItsIdAndNothingElseAcrossGrowth) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> length(0, 40);
  std::deque<std::string> owned;  // the long terms' text stays in place, as TextIndex's dictionary keeps it
  std::map<std::string, uint32_t> expected;
  TermTable table;
  while (expected.size() < 20'000) {
    std::string term = randomTerm(rng, length(rng));
    if (expected.count(term)) continue;
    owned.push_back(term);
    table.insert(owned.back(), static_cast<uint32_t>(expected.size()));
    expected.emplace(term, static_cast<uint32_t>(expected.size()));
  }
  ASSERT_EQ(table.size(), expected.size());
  for (const auto& [term, id] : expected) {
    auto found = table.find(term);
    ASSERT_TRUE(found.has_value()) << term;
    EXPECT_EQ(*found, id) << term;
  }
  std::mt19937 other(8);
  size_t absentChecked = 0;
  while (absentChecked < 20'000) {
    std::string term = randomTerm(other, length(other));
    if (expected.count(term)) continue;
    EXPECT_FALSE(table.find(term).has_value()) << term;
    ++absentChecked;
  }
}

TEST(TermTableTest, TermsThatDifferOnlyPastTheInlineBytesOrInLengthAreDistinct) {
  const std::string base(TermTable::kInlineBytes, 'x');
  std::deque<std::string> owned = {base, base + "a", base + "b", base.substr(0, TermTable::kPrefixBytes),
                                   base.substr(0, TermTable::kPrefixBytes) + std::string(10, 'y'), ""};
  TermTable table;
  for (uint32_t i = 0; i < owned.size(); ++i) table.insert(owned[i], i);
  for (uint32_t i = 0; i < owned.size(); ++i) EXPECT_EQ(table.find(owned[i]), i) << owned[i];
  EXPECT_FALSE(table.find(base + "c").has_value());
  EXPECT_FALSE(table.find(base.substr(0, TermTable::kInlineBytes - 1)).has_value());
  EXPECT_FALSE(table.find(std::string(1, '\0')).has_value());
}

TEST(TermTableTest, ClearForgetsEveryTerm) {
  TermTable table;
  const std::string longTerm(50, 'z');
  table.insert("short", 0);
  table.insert(longTerm, 1);
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_FALSE(table.find("short").has_value());
  EXPECT_FALSE(table.find(longTerm).has_value());
  table.insert("short", 5);
  EXPECT_EQ(table.find("short"), 5u);
}

}  // namespace
}  // namespace memq
