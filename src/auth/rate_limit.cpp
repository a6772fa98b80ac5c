#include "auth/rate_limit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ty::auth {
namespace {

constexpr std::int64_t kMicro = 1000000;

template <typename Config>
const Config& checked(const Config& config, Status (*validate)(const Config&)) {
  Status s = validate(config);
  if (!s.isOk()) {
    std::fprintf(stderr, "invalid rate limit config: %s\n", s.toString().c_str());
    std::abort();
  }
  return config;
}

}  // namespace

Status validateTokenBucket(const TokenBucketConfig& config) {
  if (config.capacity < 1) return Status::invalidArgument("must be at least 1", "capacity");
  // Also keeps capacity * kMicro far from overflowing.
  if (config.capacity > 1000000000) {
    return Status::invalidArgument("must be at most 1000000000", "capacity");
  }
  if (!std::isfinite(config.refill_per_second) || config.refill_per_second < 0.001 ||
      config.refill_per_second > 1e6) {
    return Status::invalidArgument("must be between 0.001 and 1000000", "refill_per_second");
  }
  if (config.max_keys == 0) return Status::invalidArgument("must be at least 1", "max_keys");
  return Status::ok();
}

TokenBucket::TokenBucket(TokenBucketConfig config)
    : config_(checked(config, &validateTokenBucket)),
      capacity_micro_(config.capacity * kMicro),
      // tokens/s * 1e6 micro-tokens / 1000 ms; rounded to the nearest
      // integer so 0.001/s steps are exact.
      refill_micro_per_ms_(std::llround(config.refill_per_second * 1000.0)),
      buckets_(config.max_keys) {}

TakeResult TokenBucket::take(const std::string& key, Timestamp now) {
  std::lock_guard lock(mu_);
  Bucket& b = buckets_.touch(key);
  if (b.micro_tokens < 0) {
    b.micro_tokens = capacity_micro_;
    b.last = now;
  }
  if (now > b.last) {
    // Cap the elapsed time at what refills an empty bucket so the product
    // cannot overflow after a long idle.
    DurationMs to_full = (capacity_micro_ + refill_micro_per_ms_ - 1) / refill_micro_per_ms_;
    DurationMs elapsed = std::min(now - b.last, to_full);
    b.micro_tokens = std::min(capacity_micro_, b.micro_tokens + elapsed * refill_micro_per_ms_);
    b.last = now;
  }
  if (b.micro_tokens >= kMicro) {
    b.micro_tokens -= kMicro;
    return {true, 0};
  }
  std::int64_t missing = kMicro - b.micro_tokens;
  return {false, (missing + refill_micro_per_ms_ - 1) / refill_micro_per_ms_};
}

std::size_t TokenBucket::size() const {
  std::lock_guard lock(mu_);
  return buckets_.size();
}

Status validateLoginGuard(const LoginGuardConfig& config) {
  if (config.max_failures < 1) {
    return Status::invalidArgument("must be at least 1", "max_failures");
  }
  if (config.window <= 0) return Status::invalidArgument("must be positive", "window");
  if (config.lockout <= 0) return Status::invalidArgument("must be positive", "lockout");
  if (config.max_users == 0) return Status::invalidArgument("must be at least 1", "max_users");
  return Status::ok();
}

LoginGuard::LoginGuard(LoginGuardConfig config)
    : config_(checked(config, &validateLoginGuard)), users_(config.max_users) {}

std::optional<Timestamp> LoginGuard::locked(const std::string& user, Timestamp now) const {
  std::lock_guard lock(mu_);
  const Entry* e = users_.peek(user);
  if (e == nullptr || now >= e->locked_until) return std::nullopt;
  return e->locked_until;
}

std::optional<Timestamp> LoginGuard::recordFailure(const std::string& user, Timestamp now) {
  std::lock_guard lock(mu_);
  Entry& e = users_.touch(user);
  if (now < e.locked_until) return e.locked_until;
  // Failures at or before now - window have aged out.
  while (!e.failures.empty() && e.failures.front() <= now - config_.window) {
    e.failures.pop_front();
  }
  e.failures.push_back(now);
  if (static_cast<int>(e.failures.size()) < config_.max_failures) return std::nullopt;
  // Locked: a fresh count starts when the lock ends.
  e.failures.clear();
  e.locked_until = now + config_.lockout;
  return e.locked_until;
}

void LoginGuard::recordSuccess(const std::string& user) {
  std::lock_guard lock(mu_);
  users_.erase(user);
}

std::size_t LoginGuard::size() const {
  std::lock_guard lock(mu_);
  return users_.size();
}

}  // namespace ty::auth
