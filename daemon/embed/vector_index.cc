// VectorIndex storage, int8 quantisation, the SIMD scan and the bound-driven exact re-scoring (see vector_index.h).
#include "daemon/embed/vector_index.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <exception>
#include <limits>
#include <system_error>

#include "daemon/embed/hashbag.h"
#include "daemon/embed/scan_helper.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MEMQ_VECTOR_INDEX_X86 1
#endif

namespace memq {

namespace {

constexpr size_t kLaneBytes = 64;    // codes are padded to a multiple of this (stride_)
constexpr size_t kBlockRows = VectorIndex::kBlockRows;
constexpr size_t kScanBlock = 256;   // rows per kernel call (a multiple of kBlockRows); the results stay in L1
// topKMany's stretch of rows scanned against every query before the next: 2,048 rows of 384 codes (768 KiB) stay in
// a core's L2 while every query reads its columns of them. A multiple of kScanBlock, so the kernel calls fall as one
// scan's do.
constexpr size_t kManyRows = 8 * kScanBlock;

constexpr int kMaxCode = 127;        // symmetric range
// Covers the float rounding of cosine()'s result and of the scales relative to the real-valued bound.
constexpr double kRelativeSlack = 1e-5;

size_t roundUpToLane(size_t n) { return (n + kLaneBytes - 1) / kLaneBytes * kLaneBytes; }

// Where `slot`'s codes lie in the column layout (vector_index.h: codes_): code i at [i * kBlockRows] from here.
int8_t* codeColumnOf(RowChunks<int8_t>& codes, size_t slot) {
  return codes.row(slot - slot % kBlockRows) + slot % kBlockRows;
}

// The smallest float >= d, so a stored bound never understates the double it came from.
float floatAtLeast(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) < d) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

struct Quantised {
  double scale = 0;     // exactly the float that dequantises the codes, widened
  double residual = 0;  // || v - scale * codes ||
  double norm = 0;      // || v ||
  double dequantisedNorm = 0;  // || scale * codes ||
};

// Writes dim codes (and zero padding up to stride) and measures the error this quantisation introduces.
Quantised quantise(std::span<const float> v, size_t stride, int8_t* codes) {
  Quantised q;
  double maxAbs = 0;
  for (const float x : v) maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(x)));
  std::fill(codes, codes + stride, int8_t{0});
  if (maxAbs == 0) return q;
  const float scale = static_cast<float>(maxAbs / kMaxCode);
  q.scale = scale;
  double residual = 0;
  double norm = 0;
  double deq = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    const long code = std::clamp(std::lround(x / q.scale), -long{kMaxCode}, long{kMaxCode});
    codes[i] = static_cast<int8_t>(code);
    const double back = q.scale * static_cast<double>(code);
    residual += (x - back) * (x - back);
    norm += x * x;
    deq += back * back;
  }
  q.residual = std::sqrt(residual);
  q.norm = std::sqrt(norm);
  q.dequantisedNorm = std::sqrt(deq);
  return q;
}

// The query as the kernels read it: only its nonzero codes, as (dimension, code) pairs, padded to a multiple of four
// with a code of 0 (the kernels take dimensions two or four at a time). A hashbag query has about a fifth of its 384
// codes nonzero, so reading only those columns of a block reads a fifth of the bytes a row-by-row scan reads, and a
// zero code adds nothing to a dot product: the integers are the ones all 384 codes give.
struct SparseQuery {
  std::vector<uint16_t> dims;
  std::vector<int8_t> codes;
  // Codes 4q..4q+3 as the AVX2 kernel's broadcasts take them, one byte each, the first lowest: their magnitudes
  // (maddubs' unsigned operand) and the codes themselves (whose signs it gives the rows' codes).
  std::vector<uint32_t> quadMagnitudes;
  std::vector<uint32_t> quadCodes;
};

SparseQuery sparseOf(const int8_t* codes, size_t stride) {
  SparseQuery q;
  for (size_t i = 0; i < stride; ++i) {
    if (codes[i] == 0) continue;
    q.dims.push_back(static_cast<uint16_t>(i));
    q.codes.push_back(codes[i]);
  }
  while (q.dims.size() % 4 != 0) {
    q.dims.push_back(q.dims.back());
    q.codes.push_back(0);
  }
  for (size_t j = 0; j < q.codes.size(); j += 4) {
    uint32_t magnitudes = 0;
    uint32_t signedCodes = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int code = q.codes[j + k];
      magnitudes |= static_cast<uint32_t>(code < 0 ? -code : code) << (8 * k);
      signedCodes |= static_cast<uint32_t>(static_cast<uint8_t>(code)) << (8 * k);
    }
    q.quadMagnitudes.push_back(magnitudes);
    q.quadCodes.push_back(signedCodes);
  }
  return q;
}

// The query's columns of a block are lines scattered over its 24 KiB, which the hardware prefetcher does not
// foresee: each kernel asks for the columns of the block kPrefetchBlocks ahead while it reads this one. (A prefetch
// never faults, so the blocks past the last need no check; the address is computed as an integer, since a pointer
// past the end of the codes would not be a valid one.)
constexpr size_t kPrefetchBlocks = 4;

inline void prefetchColumns(const int8_t* block, size_t blockBytes, const SparseQuery& query) {
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(block) + kPrefetchBlocks * blockBytes;
  for (const uint16_t d : query.dims) __builtin_prefetch(reinterpret_cast<const void*>(ahead + size_t{d} * kBlockRows));
}

// out[b * kBlockRows + r] = the dot product of the query with row r of block b, for `blocks` consecutive blocks of
// the column layout (vector_index.h: codes_), each `blockBytes` long.
using DotsKernel = void (*)(const int8_t* blocks, size_t blockBytes, size_t nBlocks, const SparseQuery& query,
                            int32_t* out);

// Portable kernel; a plain widening loop over one column at a time, which compilers vectorise where they may.
void dotsPortable(const int8_t* blocks, size_t blockBytes, size_t nBlocks, const SparseQuery& query, int32_t* out) {
  for (size_t b = 0; b < nBlocks; ++b) {
    const int8_t* block = blocks + b * blockBytes;
    prefetchColumns(block, blockBytes, query);
    int32_t* acc = out + b * kBlockRows;
    std::fill(acc, acc + kBlockRows, 0);
    for (size_t j = 0; j < query.dims.size(); ++j) {
      const int8_t* column = block + size_t{query.dims[j]} * kBlockRows;
      const int32_t code = query.codes[j];
      for (size_t r = 0; r < kBlockRows; ++r) acc[r] += code * int32_t{column[r]};
    }
  }
}

#ifdef MEMQ_VECTOR_INDEX_X86
// Two query codes as the int16 pair vpdpwssd multiplies with an interleaved pair of columns (first in the low half).
inline int32_t codePair(int8_t first, int8_t second) {
  return static_cast<int32_t>(static_cast<uint16_t>(int16_t{first}) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(int16_t{second})) << 16));
}

// AVX2: four columns at a time. Thirty-two codes of each of four columns are interleaved byte by byte, so each
// 32-bit lane holds one row's four codes; maddubs multiplies them by the query's four (their magnitudes, unsigned,
// against the row's codes with the query code's sign given to them, which cannot overflow: a code is within +-127)
// and adds them in pairs, and madd by ones adds the pairs into the row's int32. A pair is at most 2 * 127 * 127, so
// maddubs never saturates; a lane sums at most 448 products: no overflow anywhere. Three multiply-adds per four codes
// of eight rows, and half the shuffles of widening each column to int16 first. The unpacks work within 128-bit
// halves, so the sums hold rows in a fixed shuffled order, put right once per 32 rows.
__attribute__((target("avx2"))) inline __m256i dotsOfFourAvx2(__m256i rowQuads, __m256i magnitudes, __m256i codes,
                                                              __m256i ones) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(magnitudes, _mm256_sign_epi8(rowQuads, codes)), ones);
}

__attribute__((target("avx2"))) void dotsAvx2(const int8_t* blocks, size_t blockBytes, size_t nBlocks,
                                              const SparseQuery& query, int32_t* out) {
  const size_t quads = query.dims.size() / 4;
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t b = 0; b < nBlocks; ++b) {
    const int8_t* block = blocks + b * blockBytes;
    prefetchColumns(block, blockBytes, query);
    for (size_t half = 0; half < kBlockRows; half += 32) {
      __m256i sums[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) sums[k] = _mm256_setzero_si256();
      for (size_t q = 0; q < quads; ++q) {
        const uint16_t* dims = &query.dims[4 * q];
        __m256i columns[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          columns[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + size_t{dims[k]} * kBlockRows + half));
        }
        // Pairs: rows 0-7 | 16-23 (low) and 8-15 | 24-31 (high) of these 32.
        const __m256i low01 = _mm256_unpacklo_epi8(columns[0], columns[1]);
        const __m256i high01 = _mm256_unpackhi_epi8(columns[0], columns[1]);
        const __m256i low23 = _mm256_unpacklo_epi8(columns[2], columns[3]);
        const __m256i high23 = _mm256_unpackhi_epi8(columns[2], columns[3]);
        const __m256i magnitudes = _mm256_set1_epi32(static_cast<int32_t>(query.quadMagnitudes[q]));
        const __m256i codes = _mm256_set1_epi32(static_cast<int32_t>(query.quadCodes[q]));
        // Quads: rows 0-3 | 16-19, 4-7 | 20-23, 8-11 | 24-27, 12-15 | 28-31.
        sums[0] = _mm256_add_epi32(sums[0], dotsOfFourAvx2(_mm256_unpacklo_epi16(low01, low23), magnitudes, codes, ones));
        sums[1] = _mm256_add_epi32(sums[1], dotsOfFourAvx2(_mm256_unpackhi_epi16(low01, low23), magnitudes, codes, ones));
        sums[2] = _mm256_add_epi32(sums[2], dotsOfFourAvx2(_mm256_unpacklo_epi16(high01, high23), magnitudes, codes, ones));
        sums[3] = _mm256_add_epi32(sums[3], dotsOfFourAvx2(_mm256_unpackhi_epi16(high01, high23), magnitudes, codes, ones));
      }
      int32_t* rows = out + b * kBlockRows + half;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows), _mm256_permute2x128_si256(sums[0], sums[1], 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows + 8), _mm256_permute2x128_si256(sums[2], sums[3], 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows + 16), _mm256_permute2x128_si256(sums[0], sums[1], 0x31));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows + 24), _mm256_permute2x128_si256(sums[2], sums[3], 0x31));
    }
  }
}

// AVX-512 VNNI: two columns at a time. Thirty-two codes of each column are widened to int16 and interleaved, so
// vpdpwssd multiplies each row's pair by the query's pair and adds the two into the row's int32 lane, in one
// instruction. The unpacks work within 128-bit lanes, so the accumulators hold rows in a fixed shuffled order.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void dotsAvx512Vnni(const int8_t* blocks, size_t blockBytes,
                                                                            size_t nBlocks, const SparseQuery& query,
                                                                            int32_t* out) {
  const size_t pairs = query.dims.size() / 2;
  // lo holds, per 128-bit lane k, rows 8k..8k+3 of its 32 rows; hi rows 8k+4..8k+7. These put them in order.
  const __m512i firstHalf = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i secondHalf = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (size_t b = 0; b < nBlocks; ++b) {
    const int8_t* block = blocks + b * blockBytes;
    prefetchColumns(block, blockBytes, query);
    __m512i lo[2], hi[2];
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) lo[h] = hi[h] = _mm512_setzero_si512();
    for (size_t p = 0; p < pairs; ++p) {
      const int8_t* first = block + size_t{query.dims[2 * p]} * kBlockRows;
      const int8_t* second = block + size_t{query.dims[2 * p + 1]} * kBlockRows;
      const __m512i weights = _mm512_set1_epi32(codePair(query.codes[2 * p], query.codes[2 * p + 1]));
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m512i a = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(first + 32 * h)));
        const __m512i c = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(second + 32 * h)));
        lo[h] = _mm512_dpwssd_epi32(lo[h], _mm512_unpacklo_epi16(a, c), weights);
        hi[h] = _mm512_dpwssd_epi32(hi[h], _mm512_unpackhi_epi16(a, c), weights);
      }
    }
    int32_t* acc = out + b * kBlockRows;
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      _mm512_storeu_si512(acc + 32 * h, _mm512_permutex2var_epi32(lo[h], firstHalf, hi[h]));
      _mm512_storeu_si512(acc + 32 * h + 16, _mm512_permutex2var_epi32(lo[h], secondHalf, hi[h]));
    }
  }
}
#endif

// The kernel of each VectorIndex::Kernel, or null when this machine cannot run it.
DotsKernel kernelFor(VectorIndex::Kernel kernel) {
  switch (kernel) {
    case VectorIndex::Kernel::kPortable:
      return dotsPortable;
#ifdef MEMQ_VECTOR_INDEX_X86
    case VectorIndex::Kernel::kAvx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") ? dotsAvx2 : nullptr;
    case VectorIndex::Kernel::kAvx512Vnni:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512vnni")
                 ? dotsAvx512Vnni
                 : nullptr;
#endif
    default:
      return nullptr;
  }
}

constexpr VectorIndex::Kernel kByPreference[] = {VectorIndex::Kernel::kAvx512Vnni, VectorIndex::Kernel::kAvx2,
                                                  VectorIndex::Kernel::kPortable};

VectorIndex::Kernel bestKernel() {
  for (auto k : kByPreference) {
    if (kernelFor(k)) return k;
  }
  return VectorIndex::Kernel::kPortable;
}

// The kernel of this process: the best this CPU runs, unless MEMQ_SCAN_KERNEL names another that it runs. A value
// that is unknown or names a kernel this CPU cannot run is ignored, with one line on stderr saying so.
VectorIndex::Kernel startupKernel() {
  const VectorIndex::Kernel best = bestKernel();
  const char* env = std::getenv("MEMQ_SCAN_KERNEL");
  if (env == nullptr || *env == '\0') return best;
  const std::optional<VectorIndex::Kernel> asked = VectorIndex::parseKernel(env);
  if (!asked) {
    std::fprintf(stderr, "memq: MEMQ_SCAN_KERNEL=%s is not scalar, avx2 or avx512; ignored, scanning with %s\n", env,
                 VectorIndex::kernelName(best));
    return best;
  }
  if (!kernelFor(*asked)) {
    std::fprintf(stderr, "memq: MEMQ_SCAN_KERNEL=%s: this CPU cannot run it; ignored, scanning with %s\n", env,
                 VectorIndex::kernelName(best));
    return best;
  }
  return *asked;
}

VectorIndex::Kernel startupKernelOnce() {
  static const VectorIndex::Kernel kStartup = startupKernel();  // the environment is read once
  return kStartup;
}

constexpr int kNotForced = -1;
std::atomic<int> gForcedKernel{kNotForced};

DotsKernel activeKernel() { return kernelFor(VectorIndex::kernel()); }

// Candidates scored together by exactDots.
constexpr size_t kExactBatch = 4;

// scores[j] = cosineDouble(query, rows[j]) for j < count: each sum in index order, as cosineDouble adds (so the
// same doubles, bit for bit), but the sums are independent, so the CPU runs them side by side instead of waiting
// on one chain of additions. Keep the order: the tests compare the float scores with cosine(), which a reordered
// sum would still match most of the time, so they would not reliably catch it.
void exactDots(const float* query, const std::array<const float*, kExactBatch>& rows, size_t count, size_t dim,
               std::array<double, kExactBatch>& scores) {
  if (count == kExactBatch) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (size_t i = 0; i < dim; ++i) {
      const double q = query[i];
      s0 += q * static_cast<double>(rows[0][i]);
      s1 += q * static_cast<double>(rows[1][i]);
      s2 += q * static_cast<double>(rows[2][i]);
      s3 += q * static_cast<double>(rows[3][i]);
    }
    scores = {s0, s1, s2, s3};
    return;
  }
  for (size_t j = 0; j < count; ++j) {
    scores[j] = cosineDouble(std::span<const float>(query, dim), std::span<const float>(rows[j], dim));
  }
}

bool allFinite(std::span<const float> v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

bool hitBefore(const VectorIndex::Hit& a, const VectorIndex::Hit& b) {
  if (a.score != b.score) return a.score > b.score;
  return a.key < b.key;
}

}  // namespace

VectorIndex::Kernel VectorIndex::kernel() {
  const int forced = gForcedKernel.load(std::memory_order_relaxed);
  return forced == kNotForced ? startupKernelOnce() : static_cast<Kernel>(forced);
}

const char* VectorIndex::kernelName(Kernel kernel) {
  switch (kernel) {
    case Kernel::kPortable:
      return "scalar";
    case Kernel::kAvx2:
      return "avx2";
    case Kernel::kAvx512Vnni:
      return "avx512";
  }
  return "unknown";
}

std::optional<VectorIndex::Kernel> VectorIndex::parseKernel(std::string_view name) {
  if (name == "scalar" || name == "portable") return Kernel::kPortable;
  if (name == "avx2") return Kernel::kAvx2;
  if (name == "avx512" || name == "avx512vnni") return Kernel::kAvx512Vnni;
  return std::nullopt;
}

bool VectorIndex::supports(Kernel kernel) { return kernelFor(kernel) != nullptr; }

bool VectorIndex::useKernelForTesting(std::optional<Kernel> kernel) {
  if (kernel && !kernelFor(*kernel)) return false;
  gForcedKernel.store(kernel ? static_cast<int>(*kernel) : kNotForced, std::memory_order_relaxed);
  return true;
}

std::optional<std::vector<int32_t>> VectorIndex::dotsForTesting(Kernel kernel, std::span<const int8_t> codes,
                                                                std::span<const int8_t> query) {
  const DotsKernel dots = kernelFor(kernel);
  if (dots == nullptr || query.empty() || query.size() % kLaneBytes != 0 || codes.size() % query.size() != 0) {
    return std::nullopt;
  }
  // The rows laid out in blocks of columns in the storage codes_ uses.
  const size_t stride = query.size();
  const size_t rows = codes.size() / stride;
  const size_t nBlocks = (rows + kBlockRows - 1) / kBlockRows;
  RowChunks<int8_t> blocks(stride);
  blocks.ensure(nBlocks * kBlockRows);
  for (size_t b = 0; b < nBlocks; ++b) std::fill_n(blocks.row(b * kBlockRows), kBlockRows * stride, int8_t{0});
  for (size_t r = 0; r < rows; ++r) {
    int8_t* column = codeColumnOf(blocks, r);
    for (size_t i = 0; i < stride; ++i) column[i * kBlockRows] = codes[r * stride + i];
  }
  std::vector<int32_t> out(nBlocks * kBlockRows);
  const SparseQuery sparse = sparseOf(query.data(), stride);
  // A kernel call per chunk of the storage, whose blocks are contiguous.
  constexpr size_t kChunkBlocks = RowChunks<int8_t>::kRowsPerChunk / kBlockRows;
  for (size_t b = 0; b < nBlocks; b += kChunkBlocks) {
    dots(blocks.row(b * kBlockRows), stride * kBlockRows, std::min(kChunkBlocks, nBlocks - b), sparse,
         out.data() + b * kBlockRows);
  }
  out.resize(rows);
  return out;
}

VectorIndex::VectorIndex(size_t dim) : dim_(dim), stride_(roundUpToLane(dim)), rows_(dim_), codes_(stride_) {}

void VectorIndex::reserve(size_t rows) {
  keys_.reserve(rows);
  rows_.ensure(rows);
  codes_.ensure(rows);
  meta_.reserve(rows);
  slots_.reserve(rows);
}

void VectorIndex::clear() {
  keys_.clear();
  rows_.clear();
  codes_.clear();
  meta_.clear();
  slots_.clear();
}

void VectorIndex::writeRow(size_t slot, std::span<const float> vec) {
  std::copy(vec.begin(), vec.end(), rows_.row(slot));
  std::vector<int8_t> codes(stride_);
  const Quantised q = quantise(vec, stride_, codes.data());
  int8_t* column = codeColumnOf(codes_, slot);
  for (size_t i = 0; i < stride_; ++i) column[i * kBlockRows] = codes[i];
  meta_[slot] = RowMeta{static_cast<float>(q.scale), floatAtLeast(q.residual), floatAtLeast(q.norm)};
}

bool VectorIndex::upsert(int64_t key, std::span<const float> vec) {
  if (vec.size() != dim_ || !allFinite(vec)) return false;
  const auto it = slots_.find(key);
  if (it != slots_.end()) {
    writeRow(it->second, vec);
    return true;
  }
  const size_t slot = keys_.size();
  rows_.ensure(slot + 1);
  codes_.ensure(slot + 1);
  // A block's first row zeroes the block: the scan reads its rows past size() too (and never counts them).
  if (slot % kBlockRows == 0) std::fill_n(codes_.row(slot), kBlockRows * stride_, int8_t{0});
  keys_.push_back(key);
  meta_.push_back({});
  slots_.emplace(key, static_cast<uint32_t>(slot));
  writeRow(slot, vec);
  return true;
}

bool VectorIndex::remove(int64_t key) {
  const auto it = slots_.find(key);
  if (it == slots_.end()) return false;
  const size_t slot = it->second;
  const size_t last = keys_.size() - 1;
  slots_.erase(it);
  if (slot != last) {
    keys_[slot] = keys_[last];
    std::copy_n(rows_.row(last), dim_, rows_.row(slot));
    const int8_t* from = codeColumnOf(codes_, last);
    int8_t* to = codeColumnOf(codes_, slot);
    for (size_t i = 0; i < stride_; ++i) to[i * kBlockRows] = from[i * kBlockRows];
    meta_[slot] = meta_[last];
    slots_[keys_[slot]] = static_cast<uint32_t>(slot);
  }
  keys_.pop_back();
  meta_.pop_back();
  return true;
}

std::span<const float> VectorIndex::vectorOf(int64_t key) const {
  const auto it = slots_.find(key);
  if (it == slots_.end()) return {};
  return std::span<const float>(rows_.row(it->second), dim_);
}

std::optional<float> VectorIndex::score(int64_t key, std::span<const float> query) const {
  const auto it = slots_.find(key);
  if (it == slots_.end() || query.size() != dim_) return std::nullopt;
  return cosine(query, std::span<const float>(rows_.row(it->second), dim_));
}

struct VectorIndex::ScanQuery {
  const Quantised* quantised = nullptr;
  const SparseQuery* sparse = nullptr;  // the query's nonzero codes
  size_t k = 0;
  double minGate = 0;  // minScore less a hair for the float rounding of the final score
};

void VectorIndex::scan(const ScanQuery& sq, size_t begin, size_t end, ScanResult& out) const {
  // Every scan starts at a whole block: at 0, or where a chunk (scanChunks) or a stretch (topKMany) begins.
  static_assert(kScanBlock % kBlockRows == 0 && kManyRows % kScanBlock == 0 && kScanChunk % kScanBlock == 0);
  // Nor does a kernel call cross a chunk of the codes' storage: its blocks are contiguous.
  static_assert(RowChunks<int8_t>::kRowsPerChunk % kScanBlock == 0);
  // A row can be in the answer only if its upper bound reaches both minScore (less a hair for the float rounding of
  // the final score) and the k-th largest lower bound seen so far: k rows are known to score at least that much.
  std::vector<double>& bestLowers = out.bestLowers;  // front: the smallest of the k largest lower bounds
  double& gate = out.gate;
  const DotsKernel dots = activeKernel();
  int32_t block[kScanBlock];
  double uppers[kScanBlock];
  double lowers[kScanBlock];
  const Quantised& q = *sq.quantised;
  // |q.row - approx| <= ||q~|| ||row - row~|| + ||q - q~|| ||row|| (q~, row~: dequantised), plus rounding slack.
  const double perResidual = q.dequantisedNorm;
  const double perNorm = q.residual + kRelativeSlack * q.norm;
  for (size_t base = begin; base < end; base += kScanBlock) {
    const size_t rows = std::min(kScanBlock, end - base);
    // base is a multiple of kBlockRows; the kernel reads whole blocks, so past `rows` in the last one, whose dot
    // products are not read.
    dots(codes_.row(base), kBlockRows * stride_, (rows + kBlockRows - 1) / kBlockRows, *sq.sparse, block);
    // Both bounds of every row first, in a loop without branches that the compiler vectorises; then the few rows
    // that reach the gate.
    const RowMeta* meta = meta_.data() + base;
    for (size_t r = 0; r < rows; ++r) {
      const double approx = q.scale * static_cast<double>(meta[r].scale) * static_cast<double>(block[r]);
      const double bound = perResidual * meta[r].residual + perNorm * meta[r].norm;
      uppers[r] = approx + bound;
      lowers[r] = approx - bound;
    }
    for (size_t r = 0; r < rows; ++r) {
      const double upper = uppers[r];
      if (upper < gate) continue;
      const double lower = lowers[r];
      if (bestLowers.size() < sq.k) {
        bestLowers.push_back(lower);
        std::push_heap(bestLowers.begin(), bestLowers.end(), std::greater<>());
        if (bestLowers.size() == sq.k) gate = std::max(sq.minGate, bestLowers.front());
      } else if (lower > bestLowers.front()) {
        std::pop_heap(bestLowers.begin(), bestLowers.end(), std::greater<>());
        bestLowers.back() = lower;
        std::push_heap(bestLowers.begin(), bestLowers.end(), std::greater<>());
        gate = std::max(sq.minGate, bestLowers.front());
      }
      out.candidates.push_back({static_cast<uint32_t>(base + r), upper});
    }
  }
}

void VectorIndex::scanChunks(const ScanQuery& sq, std::atomic<size_t>& next, size_t n, ScanResult& out) const {
  out.candidates.clear();
  out.bestLowers.clear();
  out.gate = sq.minGate;
  for (size_t begin = next.fetch_add(kScanChunk); begin < n; begin = next.fetch_add(kScanChunk)) {
    scan(sq, begin, std::min(n, begin + kScanChunk), out);
  }
}

struct VectorIndex::PreparedScan {
  PreparedScan() = default;
  PreparedScan(const PreparedScan&) = delete;  // sq points into it
  PreparedScan& operator=(const PreparedScan&) = delete;
  Quantised quantised;
  SparseQuery sparse;
  ScanQuery sq;
};

void VectorIndex::prepareScan(std::span<const float> query, size_t stride, size_t k, float minScore,
                              PreparedScan& out) {
  std::vector<int8_t> codes(stride, 0);
  out.quantised = quantise(query, stride, codes.data());
  out.sparse = sparseOf(codes.data(), stride);
  out.sq.quantised = &out.quantised;
  out.sq.sparse = &out.sparse;
  out.sq.k = k;
  out.sq.minGate = static_cast<double>(minScore) - std::fabs(static_cast<double>(minScore)) * 1e-6 - 1e-9;
}

void VectorIndex::releaseIfLarge(ScanResult& scratch) {
  constexpr size_t kKeptCandidates = 1 << 16;
  if (scratch.candidates.capacity() > kKeptCandidates) std::vector<Candidate>().swap(scratch.candidates);
}

// Two threads scan at once by taking chunks of rows in turn rather than a half each, so when the helper starts late
// or loses its core (two cores, shared) the caller scans what is left instead of waiting for it. Each keeps its own
// gate over the rows it read, so together they keep every row a single scan would (and a few more); the larger of the
// two gates is still a bound k rows reach.
struct VectorIndex::PendingTopK::State {
  State(const VectorIndex& scanned, std::vector<float> q, size_t best, float floor)
      : index(scanned), query(std::move(q)), k(best), minScore(floor) {}
  const VectorIndex& index;
  std::vector<float> query;
  size_t k;
  float minScore;
  bool usable = false;  // topK would scan (k > 0, rows, a query of the right size and finite)
  PreparedScan prepared;
  std::atomic<size_t> next{0};
  // The helper's part: null when there is none (a small index). Its hits and error are read only when a helper ran
  // the job (ScanHelpers::Job::takeBackOrWait returned false).
  std::shared_ptr<ScanHelpers::Job> helper;
  std::vector<Hit> helperHits;
  std::exception_ptr helperError;
  bool done = false;
};

VectorIndex::PendingTopK::PendingTopK(const VectorIndex& index, std::vector<float> query, size_t k, float minScore)
    : state_(std::make_unique<State>(index, std::move(query), k, minScore)) {
  State& st = *state_;
  const size_t n = index.keys_.size();
  st.usable = index.scans(st.query, k);
  if (!st.usable) return;
  prepareScan(st.query, index.stride_, k, minScore, st.prepared);
  if (n < kScanChunk) return;
  // The helper's hits are written into room made here: a helper that allocated while the caller's thread did would
  // make one of them wait for the other's malloc arena (a sleep, and on a virtual machine a wake-up through the
  // hypervisor). Its candidates go to a scratch of its thread's, kept between scans for the same reason.
  st.helperHits.reserve(k);
  st.helper = std::make_shared<ScanHelpers::Job>([&st, n] {
    try {
      thread_local ScanResult scratch;
      // The helper's rows' exact top k too, while the caller is still busy elsewhere: the k best of all the rows
      // are among the k best of the helper's and the k best of the caller's.
      st.index.scanChunks(st.prepared.sq, st.next, n, scratch);
      st.index.exactTopK(st.query, st.k, st.minScore, scratch, st.helperHits);
      releaseIfLarge(scratch);
    } catch (...) {
      st.helperError = std::current_exception();
    }
  });
  // Refused (no helper thread to be had): the caller scans every chunk at get().
  if (!ScanHelpers::instance().submit(st.helper)) st.helper.reset();
}

VectorIndex::PendingTopK::~PendingTopK() {
  // The helper reads the state: it is not freed before the helper is done with it, or can no longer start.
  if (state_ && state_->helper) state_->helper->takeBackOrWait();
}

std::vector<VectorIndex::Hit> VectorIndex::PendingTopK::get() {
  State& st = *state_;
  if (!st.usable || st.done) return {};
  st.done = true;
  const size_t n = st.index.keys_.size();
  thread_local ScanResult scratch;
  st.index.scanChunks(st.prepared.sq, st.next, n, scratch);
  std::vector<Hit> hits;
  st.index.exactTopK(st.query, st.k, st.minScore, scratch, hits);
  releaseIfLarge(scratch);
  // Every chunk is taken by now: a helper that has not started the job never will, and one that has is finishing
  // its last chunk or its hits.
  if (st.helper && !st.helper->takeBackOrWait()) {
    if (st.helperError) std::rethrow_exception(st.helperError);
    if (hits.empty()) {
      hits = std::move(st.helperHits);
    } else if (!st.helperHits.empty()) {
      hits.insert(hits.end(), st.helperHits.begin(), st.helperHits.end());
      std::sort(hits.begin(), hits.end(), hitBefore);
      hits.resize(std::min(hits.size(), st.k));
    }
  }
  st.helper.reset();
  return hits;
}

std::unique_ptr<VectorIndex::PendingTopK> VectorIndex::beginTopK(std::vector<float> query, size_t k,
                                                                 float minScore) const {
  return std::unique_ptr<PendingTopK>(new PendingTopK(*this, std::move(query), k, minScore));
}

bool VectorIndex::scans(std::span<const float> query, size_t k) const {
  return k != 0 && !keys_.empty() && query.size() == dim_ && allFinite(query);
}

std::vector<VectorIndex::Hit> VectorIndex::topK(std::span<const float> query, size_t k, float minScore) const {
  if (!scans(query, k)) return {};
  PreparedScan prepared;
  prepareScan(query, stride_, k, minScore, prepared);
  ScanResult result;
  result.gate = prepared.sq.minGate;
  scan(prepared.sq, 0, keys_.size(), result);
  return exactTopK(query, k, minScore, std::move(result));
}

std::vector<std::vector<VectorIndex::Hit>> VectorIndex::topKMany(std::span<const std::vector<float>> queries,
                                                                 size_t k, float minScore) const {
  std::vector<std::vector<Hit>> out(queries.size());
  const size_t n = keys_.size();
  if (k == 0 || n == 0) return out;
  std::vector<size_t> asked;  // the queries topK would answer (the right size, finite)
  for (size_t i = 0; i < queries.size(); ++i) {
    if (scans(queries[i], k)) asked.push_back(i);
  }
  // Each query as topK prepares it (sized once: the ScanQuery pointers into them stay valid).
  std::vector<PreparedScan> prepared(asked.size());
  std::vector<ScanResult> results(asked.size());
  for (size_t j = 0; j < asked.size(); ++j) {
    prepareScan(queries[asked[j]], stride_, k, minScore, prepared[j]);
    results[j].gate = prepared[j].sq.minGate;
  }
  // Each stretch of rows in order, against every query: each query's scan carries its gate and lower bounds from
  // stretch to stretch, so it keeps exactly the candidates one scan of all the rows keeps.
  for (size_t begin = 0; begin < n; begin += kManyRows) {
    const size_t end = std::min(n, begin + kManyRows);
    for (size_t j = 0; j < asked.size(); ++j) scan(prepared[j].sq, begin, end, results[j]);
  }
  for (size_t j = 0; j < asked.size(); ++j) {
    out[asked[j]] = exactTopK(queries[asked[j]], k, minScore, std::move(results[j]));
  }
  return out;
}

void VectorIndex::exactTopK(std::span<const float> query, size_t k, float minScore, ScanResult& result,
                            std::vector<Hit>& hits) const {
  hits.clear();
  std::vector<Candidate>& candidates = result.candidates;
  const double gate = result.gate;

  // Exact scores, best bound first: once k rows are scored, a candidate whose upper bound is below the k-th best
  // exact score (less the same rounding hair) cannot enter, and neither can any after it. Most candidates of a
  // common query are never scored, so they are taken from a heap one at a time instead of being sorted. They are
  // scored a few at a time (exactDots: one pass, independent sums) and then taken in order exactly as one at a time
  // would take them, so a score computed past the point where the walk stops is simply not used.
  const auto lowerBound = [](const Candidate& a, const Candidate& b) { return a.upper < b.upper; };
  const auto cannotEnter = [&](const Candidate& c) {
    if (c.upper < gate) return true;  // below the bound k rows are known to reach (the scan's last gate)
    if (hits.size() < k) return false;
    const double kth = hits.front().score;  // the worst kept hit
    return c.upper < kth - std::fabs(kth) * 1e-6 - 1e-9;
  };
  std::make_heap(candidates.begin(), candidates.end(), lowerBound);
  hits.reserve(k);
  auto end = candidates.end();
  bool done = false;
  while (!done && end != candidates.begin()) {
    std::array<Candidate, kExactBatch> batch;
    size_t taken = 0;
    while (taken < kExactBatch && end != candidates.begin()) {
      std::pop_heap(candidates.begin(), end, lowerBound);
      --end;
      if (cannotEnter(*end)) {  // and neither can any after it: the walk ends with this batch
        done = true;
        break;
      }
      batch[taken++] = *end;
    }
    std::array<const float*, kExactBatch> rows{};
    for (size_t i = 0; i < taken; ++i) rows[i] = rows_.row(batch[i].slot);
    std::array<double, kExactBatch> scores{};
    exactDots(query.data(), rows, taken, dim_, scores);
    for (size_t i = 0; i < taken; ++i) {
      const Candidate& c = batch[i];
      if (cannotEnter(c)) {  // the hits kept so far raised the bar
        done = true;
        break;
      }
      const float score = static_cast<float>(scores[i]);  // cosine(query, row) exactly
      if (score < minScore) continue;
      const Hit hit{keys_[c.slot], score};
      if (hits.size() < k) {
        hits.push_back(hit);
        std::push_heap(hits.begin(), hits.end(), hitBefore);  // front: the worst kept hit
      } else if (hitBefore(hit, hits.front())) {
        std::pop_heap(hits.begin(), hits.end(), hitBefore);
        hits.back() = hit;
        std::push_heap(hits.begin(), hits.end(), hitBefore);
      }
    }
  }
  std::sort(hits.begin(), hits.end(), hitBefore);
}

}  // namespace memq
