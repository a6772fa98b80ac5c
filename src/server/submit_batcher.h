// SubmitBatcher: group commit for job submissions. Concurrent callers are
// gathered into one store transaction: the first caller to arrive writes
// everything queued so far while the others wait for its result. Each
// caller returns only after its own job is durable. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "store/store.h"

namespace ty {

class SubmitBatcher {
 public:
  explicit SubmitBatcher(Store& store) : store_(store) {}
  // Stores `job` with its first events; on success `job.id` is assigned.
  Status submit(Job& job, std::vector<Event> events);

 private:
  struct Item {
    Job* job;
    std::vector<Event> events;
    bool done = false;
    Status status;
  };
  Store& store_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item*> queue_;
  bool writing_ = false;
};

}  // namespace ty
