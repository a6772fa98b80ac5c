// Clock and Rng: the seams through which time and randomness enter.
// The scheduler core never reads either itself; callers pass values in.
#pragma once

#include <atomic>
#include <cstdint>
#include <random>

#include "common/time.h"

namespace ty {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp now() const = 0;
};

// Wall clock (CLOCK_REALTIME). Thread-safe.
class SystemClock final : public Clock {
 public:
  Timestamp now() const override;
};

// A clock tests and the simulator move by hand. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = 0) : now_(start) {}
  Timestamp now() const override { return now_.load(); }
  void advance(DurationMs d) { now_ += d; }
  void set(Timestamp t) { now_ = t; }

 private:
  std::atomic<Timestamp> now_;
};

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
