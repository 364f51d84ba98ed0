// SHA-256 (FIPS 180-4), self-contained so the content hash does not pull OpenSSL into every library that needs it.
// Thread-safety: Sha256 objects are not shared; the free functions are pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memq {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  void update(std::string_view data);
  // Finishes the hash; the object must not be updated afterwards (call reset() to reuse it).
  Digest finish();
  void reset();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t bufferLen_ = 0;
  uint64_t totalLen_ = 0;
};

Sha256::Digest sha256(std::string_view data);
// Lowercase hex, 64 characters.
std::string sha256Hex(std::string_view data);
std::string toHex(const uint8_t* bytes, size_t size);

}  // namespace memq
