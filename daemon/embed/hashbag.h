// hashbag-v2: the reference's deterministic 384-dimension embedder (docs/design.md §5), reproduced bit for bit so
// vectors written by the reference and by memq are interchangeable. Also owns memoryEmbedSource, the text a
// memory is embedded from, and cosine.
//
// Bit-exactness rests on three details that differ from a "natural" C++ port:
//   - FNV-1a runs over UTF-16 code units, not UTF-8 bytes (fnv1a16);
//   - every accumulation vec[bin] += sign * weight rounds to float32 after adding a double weight, as a JavaScript
//     Float32Array store does (0.7 and 0.4 are doubles there, not floats);
//   - the norm is summed in double over the float32 components, and each component is divided in double.
// Thread-safety: stateless; embed() may run concurrently on any number of threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/embed/embedder.h"

namespace memq {

inline constexpr std::string_view kHashbagModel = "hashbag-v2";
inline constexpr size_t kHashbagDim = 384;

// FNV-1a 32-bit over UTF-16 code units: h ^= unit; h *= 0x01000193 (mod 2^32), from 0x811C9DC5.
uint32_t fnv1a16(std::u16string_view units);

class HashbagEmbedder final : public Embedder {
 public:
  std::string_view model() const override { return kHashbagModel; }
  size_t dim() const override { return kHashbagDim; }
  std::vector<float> embed(std::string_view text) const override;
};

// memoryEmbedSource: trimmed summary three times (space-separated), LF, trimmed details, LF, the topics joined
// with spaces; the whole trimmed. Empty when summary, details and topics are all blank. Recall embeds a query as
// memoryEmbedSource(query, "", {}).
std::string memoryEmbedSource(std::string_view summary, std::string_view details,
                              const std::vector<std::string>& topics);

// The reference's cosine: a plain dot product accumulated in double in index order (vectors are assumed unit
// length, so there is no re-normalisation); 0 when the lengths differ.
float cosine(std::span<const float> a, std::span<const float> b);
// The same value before rounding to float, for comparisons that must agree with the reference's double at a
// threshold (e.g. the 0.4 edge threshold).
double cosineDouble(std::span<const float> a, std::span<const float> b);

// Building blocks, exposed for tests and for code that must agree with the embedder's notion of a word.
// Word tokens as the embedder uses them: lowercased, split on non-L/N code points, UTF-16 length >= 2, stop words
// dropped, stemmed. UTF-8 out.
std::vector<std::string> hashbagTokens(std::string_view text);
// The light stemmer on a lowercased UTF-16 word; the result is a prefix of the input.
std::u16string_view hashbagStem(std::u16string_view word);
bool isHashbagStopWord(std::u16string_view word);
size_t hashbagStopWordCount();

}  // namespace memq
