// Request rate limits and login lockout, as state machines over time values.
//
// Nothing here reads a clock: every call takes `now` (ms since the epoch,
// common/time.h), so tests step time by hand and the server passes its
// Clock's reading. Both classes hold one entry per key and at most a
// configured number of keys: when full, the entry touched least recently is
// dropped, so a flood of distinct keys (forged user names, rotating
// addresses) costs bounded memory. Forgetting a key only ever forgets
// history: a forgotten bucket starts full again and a forgotten user starts
// with no failures.
//
// Thread-safety: both classes are thread-safe; each guards its state with an
// internal mutex, because HTTP handlers call them from a pool of threads and
// every call is a short, non-blocking update.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"
#include "common/time.h"

namespace ty::auth {

// A recency-ordered map: get() moves an entry to the front, put() beyond
// `capacity` drops the back. Not thread-safe; the classes below lock around it.
template <typename V>
class RecencyMap {
 public:
  explicit RecencyMap(std::size_t capacity) : capacity_(capacity) {}

  // The entry for `key`, made with V{} when absent; marks it most recent.
  V& touch(const std::string& key) {
    if (auto it = index_.find(key); it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    if (index_.size() >= capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    order_.emplace_front(key, V{});
    index_.emplace(key, order_.begin());
    return order_.front().second;
  }
  // The entry for `key` without changing its recency; nullptr when absent.
  const V* peek(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->second;
  }
  void erase(const std::string& key) {
    if (auto it = index_.find(key); it != index_.end()) {
      order_.erase(it->second);
      index_.erase(it);
    }
  }
  std::size_t size() const { return index_.size(); }

 private:
  using Order = std::list<std::pair<std::string, V>>;
  std::size_t capacity_;
  Order order_;  // most recent first
  std::unordered_map<std::string, typename Order::iterator> index_;
};

struct TokenBucketConfig {
  // Requests allowed in a burst, and the steady rate after it.
  std::int64_t capacity = 20;
  double refill_per_second = 5.0;
  std::size_t max_keys = 10000;
};

// InvalidArgument when capacity < 1, the rate is below 0.001 per second or
// not finite, or max_keys is 0.
Status validateTokenBucket(const TokenBucketConfig& config);

struct TakeResult {
  bool allowed = false;
  // When refused: how long until one token is back (for Retry-After). 0 when
  // allowed.
  DurationMs retry_after_ms = 0;
};

// One token bucket per key (a user, a token, a client address). A key's
// bucket starts full; each take() spends one token; tokens come back
// continuously at refill_per_second up to capacity. Tokens are counted in
// millionths so refills are exact integers for rates in steps of 0.001/s.
class TokenBucket {
 public:
  // Aborts on a config that validateTokenBucket() rejects: check it first.
  explicit TokenBucket(TokenBucketConfig config);

  // Spends one token of `key` at `now` if there is one. A `now` earlier
  // than the key's last call counts as that call's time (clocks step back;
  // buckets must not refill from it).
  TakeResult take(const std::string& key, Timestamp now);

  // Number of keys held; at most config.max_keys.
  std::size_t size() const;

 private:
  struct Bucket {
    std::int64_t micro_tokens = -1;  // -1: new, starts full
    Timestamp last = 0;
  };
  const TokenBucketConfig config_;
  const std::int64_t capacity_micro_;
  const std::int64_t refill_micro_per_ms_;
  mutable std::mutex mu_;
  RecencyMap<Bucket> buckets_;  // guarded by mu_
};

struct LoginGuardConfig {
  int max_failures = 5;                // failures within `window` that lock
  DurationMs window = 15 * 60 * 1000;  // 15 minutes
  DurationMs lockout = 15 * 60 * 1000;
  std::size_t max_users = 100000;
};

// InvalidArgument when max_failures < 1, window or lockout <= 0, or
// max_users is 0.
Status validateLoginGuard(const LoginGuardConfig& config);

// Locks an account after max_failures failed logins within `window`, for
// `lockout`. The caller checks locked() before verifying a password (a
// locked account is refused without one) and reports the outcome with
// recordFailure() or recordSuccess(). Failures while locked do not extend
// the lock, so an attacker cannot keep an account locked without pause by
// guessing faster.
class LoginGuard {
 public:
  // Aborts on a config that validateLoginGuard() rejects: check it first.
  explicit LoginGuard(LoginGuardConfig config);

  // The time the lock on `user` ends, or nullopt when not locked at `now`.
  std::optional<Timestamp> locked(const std::string& user, Timestamp now) const;

  // Counts a failed login; returns the unlock time when `user` is locked
  // after it (by this failure or an earlier one).
  std::optional<Timestamp> recordFailure(const std::string& user, Timestamp now);

  // A successful login forgets the user's failures.
  void recordSuccess(const std::string& user);

  std::size_t size() const;

 private:
  struct Entry {
    std::list<Timestamp> failures;  // within the window, oldest first
    Timestamp locked_until = 0;     // 0: never locked
  };
  const LoginGuardConfig config_;
  mutable std::mutex mu_;
  RecencyMap<Entry> users_;  // guarded by mu_
};

}  // namespace ty::auth
