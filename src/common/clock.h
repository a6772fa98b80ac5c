// Clock: the seam through which time enters. The scheduler core never
// reads a clock; callers pass the time in.
#pragma once

#include <atomic>
#include <cstdint>

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

}  // namespace ty
