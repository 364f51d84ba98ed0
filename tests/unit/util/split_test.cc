// splitOn keeps every field, the empty ones too: callers (path components, qualified names) rely on seeing them.
#include "daemon/util/split.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace memq {
namespace {

using Fields = std::vector<std::string_view>;

TEST(SplitOnTest, CutsAtEverySeparatorAndKeepsEmptyFields) {
  EXPECT_EQ(splitOn("a/b/c", "/"), (Fields{"a", "b", "c"}));
  EXPECT_EQ(splitOn("/a//b/", "/"), (Fields{"", "a", "", "b", ""}));
  EXPECT_EQ(splitOn("crate::net::::ip", "::"), (Fields{"crate", "net", "", "ip"}));
  EXPECT_EQ(splitOn("a:b", "::"), (Fields{"a:b"}));
}

TEST(SplitOnTest, TextWithoutTheSeparatorIsOneField) {
  EXPECT_EQ(splitOn("", "/"), (Fields{""}));
  EXPECT_EQ(splitOn("java.util", ""), (Fields{"java.util"}));
}

}  // namespace
}  // namespace memq
