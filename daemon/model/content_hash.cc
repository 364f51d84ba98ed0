// Content hash: normalisation and SHA-256 (docs/design.md §1.2), as the reference system computes it.
#include "daemon/model/content_hash.h"

#include "daemon/util/sha256.h"
#include "daemon/util/unicode.h"

namespace memq {

std::string normalizeForHash(std::string_view text) {
  return jsToLowerUtf8(jsCollapseWhitespaceUtf8(text));
}

std::string contentHash(std::string_view summary, std::string_view details) {
  Sha256 hasher;
  hasher.update(normalizeForHash(summary));
  hasher.update("\n");
  hasher.update(normalizeForHash(details));
  const Sha256::Digest digest = hasher.finish();
  return toHex(digest.data(), digest.size());
}

}  // namespace memq
