// Out-of-line anchor for Embedder's vtable.
#include "daemon/embed/embedder.h"

namespace memq {

Embedder::~Embedder() = default;

}  // namespace memq
