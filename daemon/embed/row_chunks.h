// RowChunks: a growable array of fixed-width rows stored in chunks of kRowsPerChunk rows that never move. VectorIndex
// keeps its float rows and its int8 codes in them.
//
// Why: a std::vector that outgrows its capacity copies every row into a new allocation (and faults in its pages)
// while the caller waits. For the vector index the caller is a save being answered: at 8,192 rows of 384 floats the
// growth took 45 ms of one save, doubling with the size, and the old and new buffers briefly held the rows twice
// (peak RSS). Here growing allocates one more chunk; a row's storage stays where it was written.
//
// Layout: row r lies in chunk r / kRowsPerChunk, (r % kRowsPerChunk) * width elements from the chunk's start. Each
// chunk starts on a cache line: malloc aligns large blocks to 16 bytes only, which would put every 64-byte column of
// VectorIndex's codes across two lines and split its kernels' 32- and 64-byte loads. Rows that do not cross a
// multiple of kRowsPerChunk are contiguous, so an owner may lay out a group of rows its own way (VectorIndex's blocks
// of codes) when the group's size divides kRowsPerChunk. Memory is not initialised: the owner writes what it reads.
//
// Thread-safety: none of its own; the owner's rules apply (VectorIndex: one writer, or many readers).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace memq {

template <typename T>
class RowChunks {
 public:
  static constexpr size_t kRowsPerChunk = 4096;

  explicit RowChunks(size_t width) : width_(width) {}

  size_t width() const { return width_; }
  // Rows that have storage (a multiple of kRowsPerChunk).
  size_t capacity() const { return chunks_.size() * kRowsPerChunk; }

  // Storage for rows [0, rows): whole chunks, allocated now if they are not yet.
  void ensure(size_t rows) {
    const size_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
    if (chunks > chunks_.capacity()) chunks_.reserve(std::max(chunks, 2 * chunks_.capacity()));
    while (chunks_.size() < chunks) {
      chunks_.emplace_back(static_cast<T*>(::operator new(kRowsPerChunk * width_ * sizeof(T), kAlignment)));
    }
  }
  // Frees every chunk.
  void clear() { chunks_.clear(); }

  // The first element of row r (r < capacity()); the rows up to the end of its chunk follow it.
  T* row(size_t r) { return chunks_[r / kRowsPerChunk].get() + (r % kRowsPerChunk) * width_; }
  const T* row(size_t r) const { return chunks_[r / kRowsPerChunk].get() + (r % kRowsPerChunk) * width_; }

 private:
  static constexpr std::align_val_t kAlignment{64};
  struct FreeAligned {
    void operator()(T* p) const noexcept { ::operator delete(p, kAlignment); }
  };
  size_t width_;
  std::vector<std::unique_ptr<T, FreeAligned>> chunks_;
};

}  // namespace memq
