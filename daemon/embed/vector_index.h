// VectorIndex: the in-memory vectors of one scope for one embedder model (docs/design.md §5: kept in sync with
// every write), so recall and similar-on-write never re-read and re-decode every BLOB.
//
// Search is exact, but cheap: every row is also kept int8-quantised (per-row scale), laid out column by column in
// blocks of rows, so a SIMD scan reads only the columns where the query's codes are not zero. Each approximate score
// comes with a rigorous error bound (Cauchy-Schwarz on the quantisation residuals, measured per row at insert time).
// Only rows whose upper bound can still reach the k-th best lower bound (and minScore) are re-scored with the float32
// rows, using the same double-precision dot product as cosine() in hashbag.h. So the hits and scores are exactly what a
// brute-force cosine() scan would give, not an approximation. On random unit vectors (the worst case: scores crowd
// together) the re-scored set stays in the tens to hundreds of rows.
//
// Invariants: (1) keys_, rows_, codes_ and meta_ hold size() rows in the same slot order; (2) slots_ maps every key
// to its slot and nothing else; (3) every stored vector has dim() finite components.
//
// Thread-safety: not thread-safe. The owner (the scope) serialises mutations against everything else. Const methods
// touch no hidden mutable state, so several concurrent readers are fine while nobody writes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/embed/row_chunks.h"

namespace memq {

class VectorIndex {
 public:
  struct Hit {
    int64_t key;
    float score;
  };

  explicit VectorIndex(size_t dim);

  size_t dim() const { return dim_; }
  size_t size() const { return keys_.size(); }
  bool contains(int64_t key) const { return slots_.contains(key); }

  // Inserts or replaces the vector for `key`. Returns false (and changes nothing) when vec.size() != dim() or a
  // component is not finite. Vectors need not be unit length; scores are plain dot products either way.
  bool upsert(int64_t key, std::span<const float> vec);
  // Returns whether the key was present. The last row moves into the freed slot, so storage stays contiguous.
  bool remove(int64_t key);
  void clear();
  void reserve(size_t rows);

  // The k best rows with score >= minScore, by descending score, ties by ascending key. Scores are
  // cosine(query, row) exactly (see hashbag.h). Empty when k == 0 or the query has the wrong size or a non-finite
  // component.
  // Scanned on the calling thread only.
  std::vector<Hit> topK(std::span<const float> query, size_t k, float minScore) const;
  // topK(query, k, minScore), begun now on a helper thread (ScanHelpers) and finished by the caller's get(): the
  // caller does other work meanwhile (recall's text and file lanes), then scans whatever rows the helper has not
  // reached yet, so a recall waits for neither a late helper nor an idle core (nor for a helper busy with another
  // recall's scan: a job no helper has started is the caller's). Each thread re-scores its own rows' candidates and
  // the two k-best lists are merged, so a helper that scanned every row leaves the caller only its hits to take.
  // Calling get() at once is a scan by two threads (the scan reads the query's columns of every block, megabytes at
  // 100k rows, and one core does not draw all the memory bandwidth there is). The index must not change until get()
  // returns or the scan is destroyed (which waits for the helper). An index of less than a chunk of rows is scanned
  // at get(), on the caller's thread: handing it over costs more than such a scan.
  class PendingTopK;
  std::unique_ptr<PendingTopK> beginTopK(std::vector<float> query, size_t k, float minScore) const;
  // topK(queries[i], k, minScore) for every query, on one thread, with the same hits and scores. The rows are
  // scanned a cache-sized stretch at a time against every query, so the codes come from memory once per call
  // instead of once per query: for a caller with many queries at once (linking a page of replicated rows).
  std::vector<std::vector<Hit>> topKMany(std::span<const std::vector<float>> queries, size_t k, float minScore) const;
  // cosine(query, row of key); nullopt when the key is absent or the query has the wrong size.
  std::optional<float> score(int64_t key, std::span<const float> query) const;
  // The stored vector, or an empty span when absent. Invalidated by any mutation.
  std::span<const float> vectorOf(int64_t key) const;
  // Keys in slot order (unspecified but stable between mutations).
  const std::vector<int64_t>& keys() const { return keys_; }

  // The scan kernels. Each computes the same integer dot products. A process scans with the best one its CPU runs
  // (AVX-512 VNNI, else AVX2, else portable C++), unless the environment variable MEMQ_SCAN_KERNEL (read once, at the
  // first scan) names another: `scalar`, `avx2` or `avx512`. A value that is unknown or names a kernel this CPU
  // cannot run is ignored, with one line on stderr.
  enum class Kernel { kPortable, kAvx2, kAvx512Vnni };
  // Rows per block of the code layout (codes_).
  static constexpr size_t kBlockRows = 64;
  // The kernel scans use now, and its name ("scalar", "avx2", "avx512": the values MEMQ_SCAN_KERNEL takes).
  static Kernel kernel();
  static const char* kernelName(Kernel kernel);
  static const char* kernelName() { return kernelName(kernel()); }
  // A kernel by its name; "portable" and "avx512vnni" are accepted too.
  static std::optional<Kernel> parseKernel(std::string_view name);
  // Whether this CPU runs the kernel.
  static bool supports(Kernel kernel);
  // Tests only: makes every index scan with `kernel` (nullopt: the one chosen at startup), so each path is checked
  // on machines that run it. False, and nothing changed, when this machine cannot. Process-wide.
  static bool useKernelForTesting(std::optional<Kernel> kernel);
  // Tests only: the kernel's integer dot product of each row of `codes` (consecutive rows of query.size() codes, in
  // [-127, 127]) with `query` (a multiple of 64 codes, in [-127, 127]). nullopt when the CPU cannot run the kernel or
  // the sizes are not so.
  static std::optional<std::vector<int32_t>> dotsForTesting(Kernel kernel, std::span<const int8_t> codes,
                                                            std::span<const int8_t> query);

 private:
  // What the scan needs per row besides its int8 codes: the dequantisation scale, the L2 norm of the quantisation
  // residual (row - scale * codes), and the row's own L2 norm, the last two already rounded up.
  struct RowMeta {
    float scale;
    float residual;
    float norm;
  };

  void writeRow(size_t slot, std::span<const float> vec);

  // The query as the scan reads it (vector_index.cc), and what one thread's scan keeps over the rows it has read: the
  // rows whose upper bound reached the gate, the gate, and the k largest lower bounds that set it.
  struct ScanQuery;
  struct Candidate {
    uint32_t slot;
    double upper;
  };
  struct ScanResult {
    std::vector<Candidate> candidates;
    double gate = 0;
    std::vector<double> bestLowers;  // a min-heap (std::greater) of at most k lower bounds
  };
  // A thread's scan scratch keeps its storage between scans, up to a bound: one query whose candidates were most of
  // a large index does not hold that much memory for the life of the thread.
  static void releaseIfLarge(ScanResult& scratch);
  // Whether topK scans for this query at all: k > 0, some rows, and a query of dim() finite components.
  bool scans(std::span<const float> query, size_t k) const;
  // Scans rows [begin, end) into `into`, whose gate and lower bounds carry over from the rows it read before.
  void scan(const ScanQuery& query, size_t begin, size_t end, ScanResult& into) const;
  // The query quantised for a scan (its codes live here, so a ScanQuery may point into it).
  struct PreparedScan;
  static void prepareScan(std::span<const float> query, size_t stride, size_t k, float minScore, PreparedScan& out);
  // Scans the chunks of `n` rows that `next` hands out (kScanChunk rows each, by fetch_add) until none is left, into
  // `out` (emptied first; its storage is reused).
  void scanChunks(const ScanQuery& query, std::atomic<size_t>& next, size_t n, ScanResult& out) const;
  static constexpr size_t kScanChunk = 4096;
  // The exact top k of a scan's candidates (re-scored in float), into `hits` (emptied first; its storage is reused).
  // Reorders result.candidates.
  void exactTopK(std::span<const float> query, size_t k, float minScore, ScanResult& result,
                 std::vector<Hit>& hits) const;
  std::vector<Hit> exactTopK(std::span<const float> query, size_t k, float minScore, ScanResult&& result) const {
    std::vector<Hit> hits;
    exactTopK(query, k, minScore, result, hits);
    return hits;
  }

  size_t dim_;
  size_t stride_;  // dim_ rounded up to a multiple of 64, so the SIMD kernels need no tail loop
  std::vector<int64_t> keys_;
  // Rows of dim_ floats, slot by slot, in chunks that never move (row_chunks.h): adding a row never copies the others.
  RowChunks<float> rows_;
  // The int8 codes in blocks of kBlockRows rows, each block column by column: code i of row r at
  // [i * kBlockRows + r % kBlockRows] from the block's first code, so one code of the block's rows is one cache line (a block
  // starts on a line) and a scan reads only the columns where the query's codes are not zero. Blocks are laid out in
  // slot order in RowChunks of stride_ codes per row (a chunk holds whole blocks). Codes past dim_ are zero; the last
  // block's rows past size() hold zeros or whatever a removed row left there, which a scan reads but never counts.
  RowChunks<int8_t> codes_;
  std::vector<RowMeta> meta_;   // size()
  std::unordered_map<int64_t, uint32_t> slots_;
};

class VectorIndex::PendingTopK {
 public:
  ~PendingTopK();
  PendingTopK(const PendingTopK&) = delete;
  PendingTopK& operator=(const PendingTopK&) = delete;
  // The hits topK would give. Once only.
  std::vector<Hit> get();

 private:
  friend class VectorIndex;
  PendingTopK(const VectorIndex& index, std::vector<float> query, size_t k, float minScore);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace memq
