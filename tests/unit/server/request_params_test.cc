// How a request's params, once its schema has passed them, become the service's request (daemon/server/
// request_params.h): numbers JSON spells more than one way are read as the same number.
#include "daemon/server/request_params.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace memq {
namespace {

using json = nlohmann::json;

// `-0` is a signed integer 0 to a JSON reader: it is line 0 like `0` (which the service refuses, naming the range),
// never a range quietly left out.
TEST(RequestParamsTest, ALineWrittenAsMinusZeroIsLineZeroNotNoRange) {
  for (const char* text : {R"({"summary":"x","files":[{"path":"a.cc","lines":[[-0,3],[10,12]]}]})",
                           R"({"summary":"x","files":[{"path":"a.cc","lines":[[0,3],[10,12]]}]})"}) {
    SaveInput in;
    ASSERT_TRUE(readParams(json::parse(text), in).isOk()) << text;
    ASSERT_EQ(in.files.size(), 1u) << text;
    ASSERT_TRUE(in.files[0].lines.has_value()) << text;
    ASSERT_EQ(in.files[0].lines->size(), 2u) << text;
    EXPECT_EQ((*in.files[0].lines)[0].first, 0u) << text;
    EXPECT_EQ((*in.files[0].lines)[0].last, 3u) << text;
    EXPECT_EQ((*in.files[0].lines)[1].first, 10u) << text;
  }
}

}  // namespace
}  // namespace memq
