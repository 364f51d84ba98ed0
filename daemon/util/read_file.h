// Reading what is left of an open file into memory, bounded: the work-tree reads of line anchors and staleness.
// Thread-safety: each call owns its descriptor.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace memq {

// The file open as `fd`, from where it stands to its end, and closes `fd`. Reading stops once more than `limit` bytes
// are in (the result is then longer than `limit`: too large, and by how much at least); nullopt when a read fails
// (errno says why).
// `sizeHint` (the size stat gave) reserves the string once.
std::optional<std::string> readAllAndClose(int fd, std::size_t limit, std::size_t sizeHint = 0);

}  // namespace memq
