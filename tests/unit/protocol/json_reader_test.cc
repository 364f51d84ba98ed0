// The fast JSON reader against nlohmann's parser: whatever it accepts, nlohmann accepts too and builds the same value,
// type for type; what it declines goes to nlohmann through parseJson, so parseJson's results never change.
#include "protocol/json_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "protocol/envelope.h"

namespace memq {
namespace {

using nlohmann::json;

// Equal values of equal types all the way down (json's operator== calls 1u and 1 equal).
bool sameJson(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case json::value_t::array: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!sameJson(a[i], b[i])) return false;
      }
      return true;
    }
    case json::value_t::object: {
      if (a.size() != b.size()) return false;
      for (auto it = a.begin(), jt = b.begin(); it != a.end(); ++it, ++jt) {
        if (it.key() != jt.key() || !sameJson(it.value(), jt.value())) return false;
      }
      return true;
    }
    case json::value_t::number_float: {
      const double x = a.get<double>(), y = b.get<double>();
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    default: return a == b;
  }
}

// Accepting means agreeing with nlohmann; declining is always allowed.
void expectAgrees(const std::string& text, bool mustAccept) {
  json fast;
  const bool accepted = readJsonFast(text, kMaxJsonDepth, fast);
  if (mustAccept) {
    EXPECT_TRUE(accepted) << text;
  }
  if (!accepted) return;
  json slow;
  try {
    slow = json::parse(text);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "accepted what nlohmann refuses (" << e.what() << "): " << text;
    return;
  }
  EXPECT_TRUE(sameJson(fast, slow)) << text << "\nfast: " << fast.dump() << "\nslow: " << slow.dump();
}

TEST(ProtocolJsonReaderTest, ReadsWhatMemqdSends) {
  for (const char* text : {
           R"({"id":7,"jsonrpc":"2.0","result":{"memories":[{"category":null,)"
           R"("details":"a \"q\" \\ \n\t é 日本 🚀","files":["src/a.cc"],"normalized_score":0.8414709848078965,)"
           R"("pinned":false,"score":-2.5e-7,"use_count":18446744073709551615}]}})",
           R"({"id":"x","jsonrpc":"2.0","error":{"code":-32602,"message":"bad","data":{"field":"limit"}}})",
           R"(  [1, -1, 0, -0, 1.5, -0.0, 1e3, 1E-3, 2.5e+10, true, false, null, "", {}, []]  )",
           R"({"a":1,"a":2,"b":{"a":[{"z":1,"y":2}]}})",
           R"("\u0000\u001f\u00e9\u20AC\ud83d\ude80\/\b\f\r")",
           R"(-9223372036854775808)",
           R"(18446744073709551615)",
           "\"raw \x7f byte\"",
       }) {
    expectAgrees(text, true);
  }
}

TEST(ProtocolJsonReaderTest, DeclinesWhatNlohmannRefuses) {
  for (const std::string& text : std::vector<std::string>{
           "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "-", "1.", ".5", "1e", "+1", "1x",
           "tru", "nul", "[1 2]", "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
           "\"\\ud800\\u0041\"", "\"raw \x01 control\"", "\"\xC3\"", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"",
           "\"\xF4\x90\x80\x80\"",
           "1 2", "{} x", "[\"a\"]]", "1e999", "-1e999", std::string("\"nul \0 inside\"", 15)}) {
    json fast;
    bool nlohmannAccepts = true;
    try {
      json parsed = json::parse(text);
      static_cast<void>(parsed);
    } catch (const json::exception&) {
      nlohmannAccepts = false;
    }
    if (!nlohmannAccepts) {
      EXPECT_FALSE(readJsonFast(text, kMaxJsonDepth, fast)) << text;
    }
    expectAgrees(text, false);
    // parseJson reports what nlohmann reports.
    Result<json> viaParseJson = parseJson(text);
    EXPECT_EQ(viaParseJson.isOk(), nlohmannAccepts) << text;
  }
}

json randomValue(std::mt19937_64& rng, int depth) {
  static const std::vector<std::string> pieces = {"a", " ", "\"", "\\", "/", "\n", "\t", "\x01", "\x1f", "\x7f",
                                                  "é", "€", "𝄞", "日本", "key", "0"};
  const int kind = static_cast<int>(rng() % (depth > 3 ? 6 : 8));
  switch (kind) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: return static_cast<int64_t>(rng());  // negative or not
    case 3: return rng();                          // unsigned, up to 2^64 - 1
    case 4: {
      double d;
      uint64_t bits = rng();
      std::memcpy(&d, &bits, sizeof d);
      if (!std::isfinite(d)) d = 0.5;
      return rng() % 2 ? d : static_cast<double>(static_cast<int32_t>(rng())) / 1024.0;
    }
    case 5: {
      std::string s;
      for (int k = static_cast<int>(rng() % 12); k > 0; --k) s += pieces[rng() % pieces.size()];
      return s;
    }
    case 6: {
      json a = json::array();
      for (int k = static_cast<int>(rng() % 5); k > 0; --k) a.push_back(randomValue(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int k = static_cast<int>(rng() % 5); k > 0; --k) {
        std::string key = std::string(1, static_cast<char>('a' + rng() % 26)) + pieces[rng() % pieces.size()];
        o[key] = randomValue(rng, depth + 1);
      }
      return o;
    }
  }
}

TEST(ProtocolJsonReaderTest, RandomDocumentsAndTheirMutations) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 3000; ++round) {
    json value = randomValue(rng, 0);
    std::string text = value.dump(round % 3 == 0 ? 1 : -1, ' ', round % 2 == 0);  // compact, indented, \u escapes
    expectAgrees(text, true);
    // Damage it: a byte changed, dropped or inserted, which nlohmann may or may not still accept.
    for (int m = 0; m < 4 && !text.empty(); ++m) {
      std::string broken = text;
      const size_t at = rng() % broken.size();
      static const char kBytes[] = "{}[],:\"\\ -.0123456789eEtfnu\x01\xC3\xA9\xFF";
      switch (rng() % 3) {
        case 0: broken[at] = kBytes[rng() % (sizeof kBytes - 1)]; break;
        case 1: broken.erase(at, 1); break;
        default: broken.insert(at, 1, kBytes[rng() % (sizeof kBytes - 1)]); break;
      }
      expectAgrees(broken, false);
    }
  }
}

// Every byte value at every offset of a long run of plain text in a string: the reader tests 8 bytes at a time, so
// a quote, a backslash, a control character or a byte of a multi-byte sequence must stop the run wherever it falls.
TEST(ProtocolJsonReaderTest, AByteAnywhereInAPlainRunIsReadAsNlohmannReadsIt) {
  for (int byte = 0; byte < 256; ++byte) {
    for (size_t at = 0; at < 24; ++at) {
      std::string run(24, 'x');
      run[at] = static_cast<char>(byte);
      const bool plain = byte >= 0x20 && byte < 0x80 && byte != '"' && byte != '\\';
      expectAgrees("{\"k\":\"" + run + "\",\"after\":\"more plain text than eight bytes\"}", plain);
      if (byte == '"' || byte == '\\' || byte < 0x20) {
        json ignored;
        EXPECT_FALSE(readJsonFast("\"" + run + "\"", kMaxJsonDepth, ignored)) << "byte " << byte << " at " << at;
      }
    }
  }
}

}  // namespace
}  // namespace memq
