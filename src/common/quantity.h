// Quantity: an exact fixed-point amount in thousandths (millicores,
// milli-GPUs). No implicit conversions, no floating point in arithmetic.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace ty {

class Quantity {
 public:
  constexpr Quantity() = default;
  static constexpr Quantity fromMilli(std::int64_t milli) { return Quantity(milli); }
  static constexpr Quantity whole(std::int64_t units) { return Quantity(units * 1000); }
  constexpr std::int64_t milli() const { return milli_; }
  constexpr bool isWhole() const { return milli_ % 1000 == 0; }
  constexpr std::int64_t wholeUnits() const { return milli_ / 1000; }
  constexpr bool isZero() const { return milli_ == 0; }
  constexpr Quantity operator+(Quantity o) const { return Quantity(milli_ + o.milli_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(milli_ - o.milli_); }
  constexpr Quantity& operator+=(Quantity o) {
    milli_ += o.milli_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    milli_ -= o.milli_;
    return *this;
  }
  constexpr Quantity times(std::int64_t n) const { return Quantity(milli_ * n); }
  auto operator<=>(const Quantity&) const = default;
  // "2", "0.5", "0.25": shortest exact decimal.
  std::string toString() const;

 private:
  constexpr explicit Quantity(std::int64_t milli) : milli_(milli) {}
  std::int64_t milli_ = 0;
};

}  // namespace ty
