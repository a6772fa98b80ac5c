// Rng: the seam through which randomness enters. Policies get one as an
// argument; tests and the simulator seed it for deterministic runs.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <random>

namespace ty {

// Random source handed to policies; seeded for deterministic tests.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::uint64_t next() { return engine_(); }
  // Uniform in [0, n).
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : engine_() % n; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace ty
