// Embedder: turns text into a fixed-size vector tagged with a model name. memq stores one vector per (memory, model),
// so the tag is what keeps vectors of different embedders from ever being compared.
// Thread-safety: implementations must allow concurrent embed() calls (the hashbag embedder is stateless).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace memq {

class Embedder {
 public:
  virtual ~Embedder();
  // Stable tag stored with every vector, e.g. "hashbag-v2".
  virtual std::string_view model() const = 0;
  virtual size_t dim() const = 0;
  // A vector of dim() floats, L2-unit or all zeros.
  virtual std::vector<float> embed(std::string_view text) const = 0;
};

}  // namespace memq
