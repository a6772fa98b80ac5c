// Strong id types. A JobId is the store-assigned job number users type
// ("trainyard logs 42"); AttemptNo counts runs of one job from 1.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace ty {

template <typename Tag, typename Rep>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }
  auto operator<=>(const StrongId&) const = default;

 private:
  Rep v_{};
};

struct JobIdTag {};
using JobId = StrongId<JobIdTag, std::int64_t>;

// An attempt is identified by (JobId, number); numbers start at 1.
struct AttemptKey {
  JobId job;
  int number = 0;
  auto operator<=>(const AttemptKey&) const = default;
  // "42.1": stable, used in file names and container names.
  std::string toString() const {
    return std::to_string(job.value()) + "." + std::to_string(number);
  }
};

}  // namespace ty

template <typename Tag, typename Rep>
struct std::hash<ty::StrongId<Tag, Rep>> {
  size_t operator()(const ty::StrongId<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
