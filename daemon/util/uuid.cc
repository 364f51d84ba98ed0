// UUID v4 generation; see uuid.h. Uses a per-thread generator seeded from std::random_device (the OS source).
#include "daemon/util/uuid.h"

#include <cstdint>
#include <random>

namespace memq {

std::string newUuidV4() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  uint64_t hi = rng();
  uint64_t lo = rng();
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // variant 10
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    uint8_t byte = i < 8 ? static_cast<uint8_t>(hi >> (56 - 8 * i)) : static_cast<uint8_t>(lo >> (56 - 8 * (i - 8)));
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xF]);
    if (i == 3 || i == 5 || i == 7 || i == 9) out.push_back('-');
  }
  return out;
}

}  // namespace memq
