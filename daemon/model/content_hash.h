// The content hash that identifies a memory's text for de-duplication and tombstones (docs/design.md §1.2):
// SHA-256, lowercase hex, of normalize(summary) + "\n" + normalize(details).
//
// No Unicode normalisation (NFC/NFKC) is applied. NFC would be cheap to add, but it would change
// the hash of any decomposed input relative to the reference, so databases and tombstones carried over from the
// reference would stop matching; memq has no NFC tables either. Composed and decomposed spellings of the same text
// therefore hash differently, exactly as in the reference.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace memq {

// Collapses each run of JavaScript whitespace to one space, trims, and lowercases like JavaScript's toLowerCase.
std::string normalizeForHash(std::string_view text);

// 64 lowercase hex characters. Callers pass the text as stored (already trimmed and truncated).
std::string contentHash(std::string_view summary, std::string_view details);

}  // namespace memq
