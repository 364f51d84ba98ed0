// Tests for daemon/util/sha256: NIST FIPS 180-4 example vectors and incremental hashing across block boundaries.
#include "daemon/util/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace memq {
namespace {

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                      "mnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionA) {
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  const std::string expected = sha256Hex(data);
  for (size_t chunk : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 128u}) {
    Sha256 hasher;
    for (size_t pos = 0; pos < data.size(); pos += chunk) hasher.update(std::string_view(data).substr(pos, chunk));
    const Sha256::Digest d = hasher.finish();
    EXPECT_EQ(toHex(d.data(), d.size()), expected) << "chunk " << chunk;
  }
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around the 56-byte padding boundary, checked against independently known digests of 'a' * n.
  EXPECT_EQ(sha256Hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256Hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256Hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, ResetReuses) {
  Sha256 hasher;
  hasher.update("garbage");
  hasher.reset();
  hasher.update("abc");
  const Sha256::Digest d = hasher.finish();
  EXPECT_EQ(toHex(d.data(), d.size()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace memq
