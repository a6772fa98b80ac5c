#include "auth/rate_limit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace ty::auth {
namespace {

TokenBucketConfig bucketConfig(std::int64_t capacity, double rate, std::size_t max_keys = 100) {
  TokenBucketConfig c;
  c.capacity = capacity;
  c.refill_per_second = rate;
  c.max_keys = max_keys;
  return c;
}

void expectTake(TokenBucket& b, const std::string& key, Timestamp now, bool allowed,
                DurationMs retry_after_ms) {
  TakeResult r = b.take(key, now);
  EXPECT_EQ(r.allowed, allowed) << key << " at " << now;
  EXPECT_EQ(r.retry_after_ms, retry_after_ms) << key << " at " << now;
}

TEST(TokenBucketTest, BurstThenSteadyRate) {
  TokenBucket b(bucketConfig(3, 1.0));
  expectTake(b, "k", 0, true, 0);
  expectTake(b, "k", 0, true, 0);
  expectTake(b, "k", 0, true, 0);
  expectTake(b, "k", 0, false, 1000);
  expectTake(b, "k", 400, false, 600);
  expectTake(b, "k", 999, false, 1);
  expectTake(b, "k", 1000, true, 0);
  expectTake(b, "k", 1000, false, 1000);
  // Half a token at 1500 is not enough; it is kept for the next one.
  expectTake(b, "k", 1500, false, 500);
  expectTake(b, "k", 2000, true, 0);
}

TEST(TokenBucketTest, RefillStopsAtCapacity) {
  TokenBucket b(bucketConfig(2, 10.0));
  expectTake(b, "k", 0, true, 0);
  expectTake(b, "k", 0, true, 0);
  // A very long idle refills to capacity, no further, and does not overflow.
  Timestamp later = 4'000'000'000'000;
  expectTake(b, "k", later, true, 0);
  expectTake(b, "k", later, true, 0);
  expectTake(b, "k", later, false, 100);
}

TEST(TokenBucketTest, FractionalRate) {
  TokenBucket b(bucketConfig(1, 0.5));
  expectTake(b, "k", 10'000, true, 0);
  expectTake(b, "k", 10'000, false, 2000);
  expectTake(b, "k", 11'000, false, 1000);
  expectTake(b, "k", 12'000, true, 0);
}

TEST(TokenBucketTest, ClockSteppingBackDoesNotRefill) {
  TokenBucket b(bucketConfig(1, 1.0));
  expectTake(b, "k", 5000, true, 0);
  expectTake(b, "k", 0, false, 1000);
  expectTake(b, "k", 5999, false, 1);
  expectTake(b, "k", 6000, true, 0);
}

TEST(TokenBucketTest, KeysAreIndependent) {
  TokenBucket b(bucketConfig(1, 1.0));
  expectTake(b, "alice", 0, true, 0);
  expectTake(b, "alice", 0, false, 1000);
  expectTake(b, "bob", 0, true, 0);
  EXPECT_EQ(b.size(), 2u);
}

TEST(TokenBucketTest, EvictsTheIdlestKeyWhenFull) {
  TokenBucket b(bucketConfig(1, 1.0, 2));
  expectTake(b, "a", 0, true, 0);
  expectTake(b, "b", 0, true, 0);
  expectTake(b, "a", 0, false, 1000);  // a is now the most recent
  expectTake(b, "c", 0, true, 0);      // evicts b, the idlest
  EXPECT_EQ(b.size(), 2u);
  expectTake(b, "a", 0, false, 1000);  // a is remembered
  expectTake(b, "b", 0, true, 0);      // b starts full again; c goes
  expectTake(b, "a", 0, false, 1000);
  expectTake(b, "c", 0, true, 0);
}

TEST(TokenBucketTest, ManyKeysStayBounded) {
  TokenBucket b(bucketConfig(5, 1.0, 64));
  for (int i = 0; i < 10'000; ++i) (void)b.take("client-" + std::to_string(i), i);
  EXPECT_EQ(b.size(), 64u);
}

TEST(TokenBucketTest, ConcurrentTakesSpendEachTokenOnce) {
  TokenBucket b(bucketConfig(100, 1.0));
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (b.take("shared", 0).allowed) ++allowed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(allowed.load(), 100);
}

TEST(TokenBucketTest, ValidatesConfig) {
  EXPECT_TRUE(validateTokenBucket(TokenBucketConfig{}).isOk());
  EXPECT_EQ(validateTokenBucket(bucketConfig(0, 1.0)).field(), "capacity");
  EXPECT_EQ(validateTokenBucket(bucketConfig(2'000'000'000, 1.0)).field(), "capacity");
  EXPECT_EQ(validateTokenBucket(bucketConfig(1, 0.0)).field(), "refill_per_second");
  EXPECT_EQ(validateTokenBucket(bucketConfig(1, 0.0001)).field(), "refill_per_second");
  EXPECT_EQ(validateTokenBucket(bucketConfig(1, -1.0)).field(), "refill_per_second");
  EXPECT_EQ(validateTokenBucket(bucketConfig(1, 1.0, 0)).field(), "max_keys");
}

LoginGuardConfig guardConfig(std::size_t max_users = 100) {
  LoginGuardConfig c;
  c.max_failures = 3;
  c.window = 60'000;
  c.lockout = 300'000;
  c.max_users = max_users;
  return c;
}

TEST(LoginGuardTest, LocksAfterMaxFailuresWithinWindow) {
  LoginGuard g(guardConfig());
  EXPECT_EQ(g.recordFailure("alice", 1000), std::nullopt);
  EXPECT_EQ(g.recordFailure("alice", 2000), std::nullopt);
  EXPECT_EQ(g.locked("alice", 2000), std::nullopt);
  EXPECT_EQ(g.recordFailure("alice", 3000), 303'000);
  EXPECT_EQ(g.locked("alice", 3000), 303'000);
  EXPECT_EQ(g.locked("alice", 302'999), 303'000);
  EXPECT_EQ(g.locked("alice", 303'000), std::nullopt);
  EXPECT_EQ(g.locked("bob", 3000), std::nullopt);
}

TEST(LoginGuardTest, FailuresOutsideTheWindowAgeOut) {
  LoginGuard g(guardConfig());
  EXPECT_EQ(g.recordFailure("alice", 0), std::nullopt);
  EXPECT_EQ(g.recordFailure("alice", 30'000), std::nullopt);
  // The failure at 0 is a full window old at 60000 and no longer counts.
  EXPECT_EQ(g.recordFailure("alice", 60'000), std::nullopt);
  EXPECT_EQ(g.recordFailure("alice", 61'000), 361'000);
}

TEST(LoginGuardTest, SuccessForgetsFailures) {
  LoginGuard g(guardConfig());
  EXPECT_EQ(g.recordFailure("alice", 0), std::nullopt);
  EXPECT_EQ(g.recordFailure("alice", 1), std::nullopt);
  g.recordSuccess("alice");
  EXPECT_EQ(g.size(), 0u);
  EXPECT_EQ(g.recordFailure("alice", 2), std::nullopt);
  EXPECT_EQ(g.recordFailure("alice", 3), std::nullopt);
  EXPECT_EQ(g.locked("alice", 3), std::nullopt);
}

TEST(LoginGuardTest, FailuresWhileLockedDoNotExtendTheLock) {
  LoginGuard g(guardConfig());
  for (Timestamp t : {0, 1, 2}) (void)g.recordFailure("alice", t);
  EXPECT_EQ(g.locked("alice", 2), 300'002);
  for (Timestamp t = 1000; t < 300'000; t += 1000) {
    EXPECT_EQ(g.recordFailure("alice", t), 300'002);
  }
  EXPECT_EQ(g.locked("alice", 300'002), std::nullopt);
  // After the lock the count starts afresh.
  EXPECT_EQ(g.recordFailure("alice", 300'002), std::nullopt);
  EXPECT_EQ(g.recordFailure("alice", 300'003), std::nullopt);
  EXPECT_EQ(g.recordFailure("alice", 300'004), 600'004);
}

TEST(LoginGuardTest, UsersStayBounded) {
  LoginGuard g(guardConfig(16));
  for (int i = 0; i < 1000; ++i) (void)g.recordFailure("user" + std::to_string(i), i);
  EXPECT_EQ(g.size(), 16u);
}

TEST(LoginGuardTest, ValidatesConfig) {
  EXPECT_TRUE(validateLoginGuard(LoginGuardConfig{}).isOk());
  LoginGuardConfig c = guardConfig();
  c.max_failures = 0;
  EXPECT_EQ(validateLoginGuard(c).field(), "max_failures");
  c = guardConfig();
  c.window = 0;
  EXPECT_EQ(validateLoginGuard(c).field(), "window");
  c = guardConfig();
  c.lockout = -1;
  EXPECT_EQ(validateLoginGuard(c).field(), "lockout");
  c = guardConfig(0);
  EXPECT_EQ(validateLoginGuard(c).field(), "max_users");
}

}  // namespace
}  // namespace ty::auth
