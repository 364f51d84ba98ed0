// Random unit vectors for VectorIndex tests and benchmarks: gtest-free, so the benchmark can use it too.
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace memq::testing {

// A vector of `dim` floats drawn from a normal distribution and scaled to length 1: directions spread uniformly
// over the sphere, so cosine scores look like those of real embeddings rather than clustering near one corner.
inline std::vector<float> randomUnitVector(std::mt19937_64& rng, size_t dim) {
  std::normal_distribution<float> normal;
  std::vector<float> v(dim);
  double norm = 0;
  for (float& x : v) {
    x = normal(rng);
    norm += double(x) * x;
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(norm));
  return v;
}

}  // namespace memq::testing
