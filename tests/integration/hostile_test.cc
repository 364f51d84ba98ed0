// The hostile-input catalogue: bytes and requests no honest client sends. Every case must get a defined error or a
// close; after every case the daemon still answers a fresh connection, and nothing was written by the rejected
// request (memory/list total and the audit journal's length are unchanged).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <thread>

#include "memqd_fixture.h"
#include "raw_conn.h"
#include "protocol/error_code.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

constexpr int kPartialTimeoutMs = 800;
constexpr int kSilentTimeoutMs = 1200;

std::string request(const json& id, const std::string& method, json params = nullptr) {
  json r = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) r["params"] = params;
  return r.dump();
}

int codeOf(ErrorCode c) { return static_cast<int>(c); }

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("h");
    project_ = (dir_ / "proj").string();
    fs::create_directories(project_ + "/src");
    std::ofstream(project_ + "/src/main.cc") << "int main() {}\n";
    fs::create_directories(dir_ / "outside");
    std::ofstream(dir_ / "outside" / "secret.txt") << "outside the root\n";
    fs::create_symlink(dir_ / "outside", fs::path(project_) / "src" / "escape");
    daemon_ = std::make_unique<Memqd>(dir_, std::vector<std::string>{
                                                "--partial-timeout-ms", std::to_string(kPartialTimeoutMs),
                                                "--silent-timeout-ms", std::to_string(kSilentTimeoutMs)});
    ASSERT_TRUE(daemon_->start()) << daemon_->log();
    RpcClient c = daemon_->client(project_, "seed");
    for (const char* s : {"JWT expiry uses the container clock", "Use pnpm, not npm", "Tests run with vitest"}) {
      auto r = c.call("memory/save", {{"summary", s}, {"files", {"src/main.cc"}}});
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      seededId_ = (*r)["id"].get<std::string>();
    }
    baseline();
  }
  void TearDown() override {
    EXPECT_TRUE(daemon_->running()) << daemon_->log();
    daemon_.reset();
    fs::remove_all(dir_);
  }

  RpcClient client() { return daemon_->client(project_, "hostile"); }

  std::pair<int64_t, size_t> counts() {
    RpcClient c = client();
    auto l = c.call("memory/list", {{"state", "all"}, {"limit", 1}});
    EXPECT_TRUE(l.isOk()) << l.status().toString();
    auto a = c.call("audit/list", {{"limit", 1000}});
    EXPECT_TRUE(a.isOk()) << a.status().toString();
    if (!l || !a) return {-1, 0};
    return {(*l)["total"].get<int64_t>(), (*a)["events"].size()};
  }
  void baseline() { std::tie(total_, events_) = counts(); }

  // After every case: the daemon is alive, a fresh connection is served, and nothing was written.
  void expectHealthyAndUnchanged(const std::string& name) {
    ASSERT_TRUE(daemon_->running()) << name << ": the daemon died\n" << daemon_->log();
    RpcClient c = daemon_->connect();
    auto s = c.call("daemon/status", json::object(), milliseconds(10000));
    ASSERT_TRUE(s.isOk()) << name << ": a fresh connection is not served: " << s.status().toString();
    auto [total, events] = counts();
    EXPECT_EQ(total, total_) << name << ": a rejected request wrote a memory";
    EXPECT_EQ(events, events_) << name << ": a rejected request wrote to the audit journal";
  }

  fs::path dir_;
  std::string project_;
  std::string seededId_;
  std::unique_ptr<Memqd> daemon_;
  int64_t total_ = 0;
  size_t events_ = 0;
};

// ---- raw bytes on a fresh connection --------------------------------------------------------------------------

enum class Expect {
  kError,         // one NDJSON error reply with `code`; the same connection then still answers a request
  kClose,         // the daemon closes the connection (within `wait`): a stall's timeout
  kCloseAtOnce,   // the daemon closes the connection before any stall timeout could, without a reply
  kSkipped,       // no reply at all; the same connection then still answers a request
  kLspError,      // one Content-Length framed error reply with `code`; the connection still answers
  kCustom,        // `check` decides
};

struct RawCase {
  std::string name;
  std::string bytes;
  Expect expect;
  int code = 0;
  milliseconds wait{10000};
  std::function<void(RawConn&)> check = nullptr;
};

std::string nested(const std::string& open, const std::string& close, int depth, const std::string& inner = "1") {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

std::string lsp(const std::string& body) { return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body; }

std::vector<RawCase> rawCases() {
  const int parse = codeOf(ErrorCode::kParseError), invalidRequest = codeOf(ErrorCode::kInvalidRequest),
            invalidParams = codeOf(ErrorCode::kInvalidParams), notFound = codeOf(ErrorCode::kMethodNotFound);
  const std::string status = request(1, "daemon/status");
  std::vector<RawCase> cases = {
      {"truncated_json", R"({"jsonrpc":"2.0","id":1,"method":)" "\n", Expect::kError, parse},
      {"truncated_string", R"({"jsonrpc":"2.0","id":1,"method":"daemon/sta)" "\n", Expect::kError, parse},
      {"not_json", "hello, daemon\n", Expect::kError, parse},
      {"trailing_garbage", status + "xyz\n", Expect::kError, parse},
      {"two_objects_one_line", status + status + "\n", Expect::kError, parse},
      {"blank_lines_only", "\n\r\n   \n", Expect::kSkipped},
      {"invalid_utf8_in_string", R"({"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{"x":")" "\xff\xfe" "\"}}\n",
       Expect::kError, parse},
      {"overlong_utf8", R"({"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{"x":")" "\xc0\xaf" "\"}}\n",
       Expect::kError, parse},
      {"utf8_surrogate", R"({"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{"x":")" "\xed\xa0\x80" "\"}}\n",
       Expect::kError, parse},
      {"invalid_utf8_in_method", R"({"jsonrpc":"2.0","id":1,"method":"memory/)" "\xff" "\"}\n", Expect::kError, parse},
      {"nul_outside_string", std::string(R"({"jsonrpc":"2.0",)") + std::string(1, '\0') + R"("id":1,"method":"daemon/status"})" "\n",
       Expect::kError, parse},
      {"raw_nul_inside_string", std::string(R"({"jsonrpc":"2.0","id":1,"method":"daemon/st)") + std::string(1, '\0') + "atus\"}\n",
       Expect::kError, parse},
      {"deep_arrays_100k", nested("[", "]", 100000) + "\n", Expect::kError, parse},
      {"deep_objects_65", nested("{\"a\":", "}", 65) + "\n", Expect::kError, parse},
      {"deep_params", request(1, "daemon/status", json::parse(nested("{\"a\":", "}", 70))) + "\n", Expect::kError, parse},
      {"number_out_of_range", R"({"jsonrpc":"2.0","id":1e400,"method":"daemon/status"})" "\n", Expect::kError, parse},
      {"jsonrpc_1_0", R"({"jsonrpc":"1.0","id":1,"method":"daemon/status"})" "\n", Expect::kError, invalidRequest},
      {"no_jsonrpc_member", R"({"id":1,"method":"daemon/status"})" "\n", Expect::kError, invalidRequest},
      {"method_is_a_number", R"({"jsonrpc":"2.0","id":1,"method":5})" "\n", Expect::kError, invalidRequest},
      {"id_is_an_object", R"({"jsonrpc":"2.0","id":{"a":1},"method":"daemon/status"})" "\n", Expect::kError, invalidRequest},
      {"id_is_an_array", R"({"jsonrpc":"2.0","id":[1],"method":"daemon/status"})" "\n", Expect::kError, invalidRequest},
      {"params_is_a_string", R"({"jsonrpc":"2.0","id":1,"method":"daemon/status","params":"x"})" "\n", Expect::kError,
       invalidRequest},
      {"top_level_string", "\"daemon/status\"\n", Expect::kError, invalidRequest},
      {"top_level_number", "42\n", Expect::kError, invalidRequest},
      {"empty_batch", "[]\n", Expect::kError, invalidRequest},
      {"unknown_method", request(1, "memory/../../etc/passwd") + "\n", Expect::kError, notFound},
      {"params_as_array", request(1, "memory/save", json::array({"summary"})) + "\n", Expect::kError, invalidParams},
      {"oversized_ndjson_line", std::string(R"({"jsonrpc":"2.0","id":1,"method":"memory/save","params":{"summary":")") +
                                    std::string((1u << 20) + 16, 'a') + "\"}}\n",
       Expect::kError, invalidRequest},
      {"oversized_line_of_garbage", std::string(3u << 20, '[') + "\n", Expect::kError, invalidRequest},
      {"lsp_ok_then_error", lsp(R"({"jsonrpc":"2.0","id":7,"method":"nope"})"), Expect::kLspError, notFound},
      {"lsp_oversized_body", "Content-Length: " + std::to_string((1u << 20) + 1) + "\r\n\r\n" + std::string((1u << 20) + 1, 'x'),
       Expect::kLspError, invalidRequest},
      // Bytes that cannot be framed: closed at once, well before a stall's timeout could close them, and unanswered.
      {"lsp_bad_length", "Content-Length: twelve\r\n\r\n{}", Expect::kCloseAtOnce},
      {"lsp_negative_length", "Content-Length: -5\r\n\r\n{}", Expect::kCloseAtOnce},
      {"lsp_huge_length", "Content-Length: 99999999999999999999999\r\n\r\n{}", Expect::kCloseAtOnce},
      {"lsp_conflicting_lengths", "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", Expect::kCloseAtOnce},
      {"lsp_header_without_colon", "Content-Length: 2\r\nbogus header\r\n\r\n{}", Expect::kCloseAtOnce},
      {"lsp_header_block_too_big", "Content-Length: 2\r\nX-Pad: " + std::string(1u << 20, 'p') + "\r\n\r\n{}",
       Expect::kCloseAtOnce},
      // Stalls: a timeout closes each (the daemon runs with short timeouts for this test).
      {"half_a_content_length_header", "Content-Len", Expect::kClose, 0, milliseconds(kPartialTimeoutMs * 5)},
      {"content_length_header_then_silence", "Content-Length: 100\r\n\r\n", Expect::kClose, 0,
       milliseconds(kPartialTimeoutMs * 5)},
      {"content_length_half_body_then_silence", "Content-Length: 100\r\n\r\n{\"jsonrpc\":", Expect::kClose, 0,
       milliseconds(kPartialTimeoutMs * 5)},
      {"half_an_ndjson_line_then_silence", R"({"jsonrpc":"2.0","id":1,"met)", Expect::kClose, 0,
       milliseconds(kPartialTimeoutMs * 5)},
      {"connects_and_sends_nothing", "", Expect::kClose, 0, milliseconds(kSilentTimeoutMs * 5)},
  };

  // Batches.
  {
    std::string batch = "[";
    for (int i = 0; i < 10000; ++i) batch += (i ? "," : "") + request(i, "daemon/status");
    batch += "]\n";
    cases.push_back({"batch_of_10000_requests", batch, Expect::kCustom, 0, milliseconds(60000), [](RawConn& c) {
                       auto reply = c.readJson(milliseconds(60000));
                       ASSERT_TRUE(reply && reply->is_array());
                       ASSERT_EQ(reply->size(), 10000u);
                       for (size_t i = 0; i < reply->size(); ++i) {
                         const json& r = (*reply)[i];
                         // Either served or shed with Busy: both are defined; never silently dropped.
                         ASSERT_EQ(r["id"], static_cast<int>(i));
                         ASSERT_TRUE(r.contains("result") ||
                                     r["error"]["code"] == codeOf(ErrorCode::kBusy)) << r.dump();
                       }
                     }});
  }
  {
    std::string batch = "[";
    for (int i = 0; i < 10000; ++i) batch += (i ? "," : "") + request(i, "memory/save", {{"summary", i}});
    batch += "]\n";
    cases.push_back({"batch_of_10000_bad_saves", batch, Expect::kCustom, 0, milliseconds(60000), [](RawConn& c) {
                       auto reply = c.readJson(milliseconds(60000));
                       ASSERT_TRUE(reply && reply->is_array());
                       ASSERT_EQ(reply->size(), 10000u);
                       for (const auto& r : *reply) {
                         ASSERT_EQ(r["error"]["code"], codeOf(ErrorCode::kInvalidParams)) << r.dump();
                       }
                     }});
  }
  cases.push_back({"batch_with_duplicate_ids",
                   "[" + request(5, "daemon/status") + "," + request(5, "nope") + "," + request(5, "daemon/status") + "]\n",
                   Expect::kCustom, 0, milliseconds(10000), [](RawConn& c) {
                     auto reply = c.readJson();
                     ASSERT_TRUE(reply && reply->is_array());
                     ASSERT_EQ(reply->size(), 3u);
                     for (const auto& r : *reply) EXPECT_EQ(r["id"], 5);
                     EXPECT_TRUE((*reply)[0].contains("result"));
                     EXPECT_EQ((*reply)[1]["error"]["code"], codeOf(ErrorCode::kMethodNotFound));
                     EXPECT_TRUE((*reply)[2].contains("result"));
                   }});
  cases.push_back({"batch_of_scalars", "[1,\"x\",null]\n", Expect::kCustom, 0, milliseconds(10000), [](RawConn& c) {
                     auto reply = c.readJson();
                     ASSERT_TRUE(reply && reply->is_array());
                     ASSERT_EQ(reply->size(), 3u);
                     for (const auto& r : *reply) EXPECT_EQ(r["error"]["code"], codeOf(ErrorCode::kInvalidRequest));
                   }});
  cases.push_back({"batch_of_notifications_only",
                   R"([{"jsonrpc":"2.0","method":"memory/save","params":{"summary":1}},{"jsonrpc":"2.0","method":"nope"}])" "\n",
                   Expect::kSkipped});
  cases.push_back({"notification_of_a_bad_save", R"({"jsonrpc":"2.0","method":"memory/save","params":{"summary":[]}})" "\n",
                   Expect::kSkipped});
  return cases;
}

TEST_F(HostileTest, RawBytesGetADefinedErrorOrAClose) {
  const auto cases = rawCases();
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    RawConn c(daemon_->socket());
    ASSERT_TRUE(c.connected());
    c.send(tc.bytes);  // may fail part-way when the daemon closes early: that is one of the defined outcomes
    switch (tc.expect) {
      case Expect::kError: {
        auto reply = c.readJson(tc.wait);
        ASSERT_TRUE(reply.has_value()) << "no reply";
        ASSERT_TRUE(reply->is_object()) << reply->dump();
        EXPECT_EQ((*reply)["jsonrpc"], "2.0");
        EXPECT_EQ((*reply)["error"]["code"], tc.code) << reply->dump();
        EXPECT_TRUE((*reply)["error"]["message"].is_string());
        c.send(request("after", "daemon/status") + "\n");
        auto after = c.readJson();
        ASSERT_TRUE(after.has_value()) << "the connection did not survive";
        EXPECT_EQ((*after)["id"], "after");
        EXPECT_TRUE(after->contains("result")) << after->dump();
        break;
      }
      case Expect::kLspError: {
        auto reply = c.readLspMessage(tc.wait);
        ASSERT_TRUE(reply.has_value()) << "no reply";
        EXPECT_EQ((*reply)["error"]["code"], tc.code) << reply->dump();
        c.send(lsp(request("after", "daemon/status")));
        auto after = c.readLspMessage();
        ASSERT_TRUE(after.has_value()) << "the connection did not survive";
        EXPECT_TRUE(after->contains("result")) << after->dump();
        break;
      }
      case Expect::kSkipped: {
        c.send(request("after", "daemon/status") + "\n");
        auto after = c.readJson();
        ASSERT_TRUE(after.has_value());
        EXPECT_EQ((*after)["id"], "after") << "something was answered that needed no answer: " << after->dump();
        break;
      }
      case Expect::kClose: {
        EXPECT_TRUE(c.closedWithin(tc.wait)) << "still open after " << tc.wait.count() << " ms";
        break;
      }
      case Expect::kCloseAtOnce: {
        size_t received = 0;
        EXPECT_TRUE(c.closedWithin(milliseconds(kPartialTimeoutMs / 2), &received))
            << "still open after " << kPartialTimeoutMs / 2 << " ms";
        EXPECT_EQ(received, 0u) << "a connection closed for its framing gets no reply";
        break;
      }
      case Expect::kCustom:
        tc.check(c);
        break;
    }
    expectHealthyAndUnchanged(tc.name);
  }
}

TEST_F(HostileTest, TheStallTimeoutsAreTimeoutsNotInstantCloses) {
  // A connection that is merely slow to send its first request (well under the silent timeout) is served.
  RawConn slow(daemon_->socket());
  ASSERT_TRUE(slow.connected());
  std::this_thread::sleep_for(milliseconds(kSilentTimeoutMs / 2));
  ASSERT_TRUE(slow.send(request(1, "daemon/status") + "\n"));
  auto reply = slow.readJson();
  ASSERT_TRUE(reply.has_value()) << "closed before its silent timeout";
  EXPECT_TRUE(reply->contains("result"));
  // A message trickled in within the partial timeout is served.
  RawConn trickle(daemon_->socket());
  std::string msg = request(2, "daemon/status") + "\n";
  const size_t chunk = msg.size() / 4 + 1;
  for (size_t i = 0; i < msg.size(); i += chunk) {
    ASSERT_TRUE(trickle.send(msg.substr(i, chunk)));
    std::this_thread::sleep_for(milliseconds(kPartialTimeoutMs / 10));
  }
  reply = trickle.readJson();
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->contains("result"));
  // Slowloris: a message that keeps trickling, one byte at a time, is bounded by the same timeout as a whole —
  // progress does not buy it more time.
  RawConn loris(daemon_->socket());
  auto lorisStart = std::chrono::steady_clock::now();
  bool closed = false;
  for (int i = 0; i < 100 && !closed; ++i) {
    closed = !loris.send("{");
    std::this_thread::sleep_for(milliseconds(kPartialTimeoutMs / 8));
  }
  EXPECT_TRUE(closed || loris.closedWithin(milliseconds(kPartialTimeoutMs * 3)));
  EXPECT_LT(std::chrono::steady_clock::now() - lorisStart, milliseconds(kPartialTimeoutMs * 6));
  // A silent connection is closed after its timeout, not before.
  auto start = std::chrono::steady_clock::now();
  RawConn silent(daemon_->socket());
  EXPECT_TRUE(silent.closedWithin(milliseconds(kSilentTimeoutMs * 5)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(kSilentTimeoutMs * 9 / 10));
}

// ---- well-framed requests with hostile params, on an initialised connection --------------------------------------

struct ParamCase {
  std::string name;
  std::string method;
  json params;
  int code;                 // expected error code; 0 = a result is expected (a read that must simply not break)
  std::string field = "";  // expected data.field, when given
};

std::vector<ParamCase> paramCases(const std::string& project, const std::string& seededId) {
  const int invalidParams = codeOf(ErrorCode::kInvalidParams), notFound = codeOf(ErrorCode::kNotFound),
            forbidden = codeOf(ErrorCode::kForbidden);
  json hugeFiles = json::array();
  for (int i = 0; i < 20000; ++i) hugeFiles.push_back("src/f" + std::to_string(i) + ".cc");
  json hugeTopicsWithANumber = json::array();
  for (int i = 0; i < 50000; ++i) hugeTopicsWithANumber.push_back("t" + std::to_string(i));
  hugeTopicsWithANumber.push_back(7);
  std::vector<ParamCase> cases = {
      {"summary_is_a_number", "memory/save", {{"summary", 42}}, invalidParams, "summary"},
      {"summary_is_null", "memory/save", {{"summary", nullptr}}, invalidParams, "summary"},
      {"summary_is_an_object", "memory/save", {{"summary", {{"a", 1}}}}, invalidParams, "summary"},
      {"summary_is_empty", "memory/save", {{"summary", ""}}, invalidParams, "summary"},
      {"summary_is_white_space", "memory/save", {{"summary", " \t\n "}}, invalidParams, "summary"},
      {"summary_missing", "memory/save", {{"details", "no summary"}}, invalidParams},
      {"topics_is_a_string", "memory/save", {{"summary", "x"}, {"topics", "a,b"}}, invalidParams, "topics"},
      {"huge_topics_array_with_a_number", "memory/save", {{"summary", "x"}, {"topics", hugeTopicsWithANumber}},
       invalidParams},
      {"huge_files_array", "memory/save", {{"summary", "x"}, {"files", hugeFiles}}, invalidParams, "files"},
      {"unknown_field", "memory/save", {{"summary", "x"}, {"sumary", "typo"}}, invalidParams},
      {"bogus_category", "memory/save", {{"summary", "x"}, {"category", "rm -rf /"}}, invalidParams, "category"},
      {"bogus_source", "memory/save", {{"summary", "x"}, {"source", "root"}}, invalidParams, "source"},
      {"bogus_scope", "memory/save", {{"summary", "x"}, {"scope", "../global"}}, invalidParams, "scope"},
      {"path_traversal", "memory/save", {{"summary", "x"}, {"files", {"../../etc/passwd"}}}, forbidden, "files[0]"},
      {"path_traversal_inside", "memory/save", {{"summary", "x"}, {"files", {"src/../../../etc/passwd"}}}, forbidden,
       "files[0]"},
      {"absolute_path_outside", "memory/save", {{"summary", "x"}, {"files", {"/etc/passwd"}}}, forbidden, "files[0]"},
      {"symlink_out_of_the_root", "memory/save", {{"summary", "x"}, {"files", {"src/escape/secret.txt"}}}, forbidden,
       "files[0]"},
      {"nul_in_a_path", "memory/save", {{"summary", "x"}, {"files", {std::string("src/a\0b.cc", 10)}}}, invalidParams,
       "files[0]"},
      {"path_is_the_root", "memory/save", {{"summary", "x"}, {"files", {"."}}}, invalidParams, "files[0]"},
      {"attach_traversal", "memory/attach", {{"id", seededId}, {"files", {"../outside/secret.txt"}}}, forbidden,
       "files[0]"},
      {"list_file_traversal", "memory/list", {{"file", "../../etc/passwd"}}, forbidden, "file"},
      {"cochange_traversal", "repo/cochange", {{"file", "../../../etc/shadow"}}, forbidden, "file"},
      {"relative_project_root", "memory/save", {{"summary", "x"}, {"project_root", "../proj"}}, 0},  // checked below
      {"get_id_traversal", "memory/get", {{"id", "../../etc/passwd"}}, notFound},
      {"get_id_like_wildcards", "memory/get", {{"id", "%%%%"}}, notFound},
      {"get_id_underscores", "memory/get", {{"id", "____"}}, notFound},
      {"get_id_100k", "memory/get", {{"id", std::string(100000, 'a')}}, notFound},
      {"get_id_is_a_number", "memory/get", {{"id", 12345}}, invalidParams, "id"},
      {"update_unknown_id", "memory/update", {{"id", "ffffffff-ffff"}, {"summary", "x"}}, notFound},
      {"update_summary_is_a_number", "memory/update", {{"id", seededId}, {"summary", 1}}, invalidParams, "summary"},
      {"purge_without_confirm", "memory/purge", {{"id", seededId}}, forbidden, "confirm"},
      {"purge_confirm_is_a_string", "memory/purge", {{"id", seededId}, {"confirm", "yes"}}, invalidParams, "confirm"},
      {"supersede_by_itself", "memory/supersede", {{"id", seededId}, {"by", seededId}}, invalidParams},
      {"list_negative_limit", "memory/list", {{"limit", -1}}, invalidParams, "limit"},
      {"list_huge_limit", "memory/list", {{"limit", 1e18}}, invalidParams, "limit"},
      {"list_negative_offset", "memory/list", {{"offset", -5}}, invalidParams, "offset"},
      // Past what the field holds: refused, never wrapped to another page or to every event.
      {"list_offset_past_an_int", "memory/list", {{"offset", 4294967301ULL}}, invalidParams, "offset"},
      {"audit_since_seq_past_int64", "audit/list", {{"since_seq", 9223372036854775808ULL}}, invalidParams, "since_seq"},
      {"list_limit_is_a_string", "memory/list", {{"limit", "10; DROP TABLE memories"}}, invalidParams, "limit"},
      {"import_garbage", "import", {{"jsonl", "{not json\n"}}, invalidParams, "jsonl"},
      {"import_half_good", "import", {{"jsonl", "{\"summary\":\"fine\"}\n{\"summary\":5}\n"}}, invalidParams, "jsonl"},
      {"read_scope_wider", "memory/list", {{"read_scope", "everything"}}, invalidParams},
  };
  // FTS5 operator soup: a read that must answer (no StorageError, no crash), whatever the query.
  for (const char* q : {"\"unterminated", "AND OR NOT", "NEAR(a b, -1)", "summary:secret", "{summary details}: x",
                        "*", "^", "a AND", "(((", ")", "-x", "\"\"", "a\" OR \"b", "NOT NOT NOT", "col:*:^",
                        "'; DROP TABLE memories; --", "\\x00", "a*b*c*", "+", "NEAR(", "\xe2\x80\x8b"}) {
    cases.push_back({std::string("search_soup ") + q, "memory/search", {{"query", q}}, 0});
    cases.push_back({std::string("recall_soup ") + q, "memory/recall", {{"query", q}, {"mark_used", false}}, 0});
  }
  cases.push_back({"hints_query_soup", "hints/for_tool", {{"tool", "grep"}, {"query", "NEAR(\" AND *"}}, 0});
  return cases;
}

TEST_F(HostileTest, HostileParamsGetADefinedErrorAndWriteNothing) {
  const auto cases = paramCases(project_, seededId_);
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    RpcClient c = client();
    auto r = c.call(tc.method, tc.params, milliseconds(30000));
    ASSERT_FALSE(isTransportError(r.status())) << r.status().toString();
    if (tc.name == "relative_project_root") {
      // A relative project root is not a project: refused one way or another, never resolved against memqd's cwd.
      ASSERT_FALSE(r.isOk()) << r->dump();
    } else if (tc.code == 0) {
      ASSERT_TRUE(r.isOk()) << r.status().toString();
    } else {
      ASSERT_FALSE(r.isOk()) << (r ? r->dump() : "");
      EXPECT_EQ(codeOf(r.status().code()), tc.code) << r.status().toString();
      if (!tc.field.empty()) {
        const json& data = r.status().data();
        EXPECT_EQ(data.is_object() ? data.value("field", "") : "", tc.field) << r.status().toString();
      }
    }
    expectHealthyAndUnchanged(tc.name);
  }
}

TEST_F(HostileTest, AOneMegabyteSummaryIsTruncatedWithAWarningAndALargerMessageIsRefused) {
  RpcClient c = client();
  std::string big(1000 * 1000, 'm');
  auto r = c.call("memory/save", {{"summary", big}});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ((*r)["status"], "created");
  EXPECT_FALSE((*r)["warnings"].empty());
  auto m = c.call("memory/get", {{"id", (*r)["id"]}});
  ASSERT_TRUE(m.isOk());
  EXPECT_LE((*m)["summary"].get<std::string>().size(), 200u);
  baseline();
  // Over the 1 MiB message limit: InvalidRequest, nothing stored, and the connection goes on.
  std::string tooBig((1u << 20) + 100, 'm');
  auto refused = c.call("memory/save", {{"summary", tooBig}});
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidRequest) << refused.status().toString();
  auto again = c.call("daemon/status", json::object());
  EXPECT_TRUE(again.isOk()) << again.status().toString();
  expectHealthyAndUnchanged("over_the_limit");
}

TEST_F(HostileTest, ManyHostileClientsAtOnceDoNotStarveAnHonestOne) {
  // Stallers and garbage senders in parallel; an honest client's requests keep being answered while they go on.
  // Starved, the honest client would wait as long as the hostile ones keep sending, and the garbage thread sends
  // until the honest client is done: a starved recall would not be answered at all. So the bound on each recall need
  // only be finite: 10 s, far above a recall's time on a loaded machine under a sanitizer (its speed is the
  // benchmarks' to measure). The call's own timeout is longer still, so a late answer shows as late, not as lost.
  constexpr auto kStarvationBound = milliseconds(10000);
  std::vector<std::unique_ptr<RawConn>> stallers;
  for (int i = 0; i < 50; ++i) {
    stallers.push_back(std::make_unique<RawConn>(daemon_->socket()));
    stallers.back()->send(i % 2 ? "Content-Length: 10" : "{\"jsonrpc\":");
  }
  std::atomic<bool> stop{false};
  std::thread garbage([&] {
    while (!stop) {
      RawConn g(daemon_->socket());
      g.send(std::string(70000, '{') + "\n");
      g.readLine(milliseconds(2000));
    }
  });
  // A failed ASSERT below returns early: the garbage sender is stopped and joined however the test ends (a thread
  // left joinable would abort the whole binary).
  struct StopAndJoin {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~StopAndJoin() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } stopGarbage{stop, garbage};
  RpcClient honest = client();
  for (int i = 0; i < 50; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto r = honest.call("memory/recall", {{"query", "jwt clock"}, {"mark_used", false}}, 3 * kStarvationBound);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
    EXPECT_LT(took, kStarvationBound) << "recall " << i << " waited " << took.count() << " ms behind hostile clients";
  }
  stop = true;
  garbage.join();
  for (auto& s : stallers) EXPECT_TRUE(s->closedWithin(milliseconds(kPartialTimeoutMs * 5)));
  expectHealthyAndUnchanged("many_hostile_clients");
}

}  // namespace
}  // namespace memq::testing
