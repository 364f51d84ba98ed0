// RowChunks: rows keep their storage while the array grows, chunks start on a cache line, and rows within a chunk
// are contiguous.
#include "daemon/embed/row_chunks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace memq {
namespace {

constexpr size_t kChunk = RowChunks<float>::kRowsPerChunk;

TEST(RowChunks, GrowingNeverMovesARow) {
  RowChunks<float> rows(3);
  std::vector<const float*> written;
  for (size_t r = 0; r < 3 * kChunk + 7; ++r) {
    rows.ensure(r + 1);
    float* row = rows.row(r);
    for (size_t i = 0; i < 3; ++i) row[i] = static_cast<float>(r * 3 + i);
    written.push_back(row);
  }
  EXPECT_EQ(rows.capacity(), 4 * kChunk);
  for (size_t r = 0; r < written.size(); ++r) {
    ASSERT_EQ(rows.row(r), written[r]) << r;
    for (size_t i = 0; i < 3; ++i) ASSERT_EQ(rows.row(r)[i], static_cast<float>(r * 3 + i)) << r;
  }
}

TEST(RowChunks, ChunksStartOnACacheLineAndHoldTheirRowsContiguously) {
  RowChunks<int8_t> codes(384);
  codes.ensure(2 * kChunk + 1);
  EXPECT_EQ(codes.capacity(), 3 * kChunk);
  for (size_t chunk = 0; chunk < 3; ++chunk) {
    const int8_t* first = codes.row(chunk * kChunk);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u) << chunk;
    EXPECT_EQ(codes.row(chunk * kChunk + kChunk - 1), first + (kChunk - 1) * 384) << chunk;
  }
}

TEST(RowChunks, EnsureAllocatesOnlyWhatIsMissingAndClearFreesAll) {
  RowChunks<float> rows(2);
  EXPECT_EQ(rows.capacity(), 0u);
  rows.ensure(0);
  EXPECT_EQ(rows.capacity(), 0u);
  rows.ensure(1);
  const float* first = rows.row(0);
  rows.ensure(kChunk);  // still the first chunk
  EXPECT_EQ(rows.capacity(), kChunk);
  EXPECT_EQ(rows.row(0), first);
  rows.ensure(1);  // never shrinks
  EXPECT_EQ(rows.capacity(), kChunk);
  rows.clear();
  EXPECT_EQ(rows.capacity(), 0u);
}

}  // namespace
}  // namespace memq
