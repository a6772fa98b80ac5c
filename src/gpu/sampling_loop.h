// SamplingLoop: calls a function every interval on its own thread, at a
// fixed rate, until stopped. Shared by `trainyard node-exporter` and the
// server's GPU monitor, which both sample the GPUs this way.
//
// Fixed rate: the next call is due one interval after the previous one was
// due, so slow NVML reads do not stretch the period; a loop that fell behind
// does not burst to catch up. The first call is one interval after start:
// callers that want a value at once make it themselves.
//
// Owns its thread; stop() (or destruction) waits for a running call to
// finish. Thread-safe: stop() may be called from any thread, more than once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "common/time.h"

namespace ty {

class SamplingLoop {
 public:
  SamplingLoop(DurationMs interval, std::function<void()> tick)
      : interval_(interval), tick_(std::move(tick)) {
    thread_ = std::thread([this] { run(); });
  }
  ~SamplingLoop() { stop(); }
  SamplingLoop(const SamplingLoop&) = delete;
  SamplingLoop& operator=(const SamplingLoop&) = delete;

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

 private:
  void run() {
    auto next = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      next += std::chrono::milliseconds(interval_);
      if (cv_.wait_until(lock, next, [this] { return stopping_; })) return;
      lock.unlock();
      tick_();
      lock.lock();
      auto now = std::chrono::steady_clock::now();
      if (now > next) next = now;
    }
  }

  DurationMs interval_;
  std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ty
