// SubmitBatcher: group commit for job submissions. Concurrent callers are
// gathered into one store transaction: the first caller to arrive writes
// everything queued so far while the others wait for its result. Each
// caller returns only after its own job is durable.
//
// Idempotency keys are resolved here, where writes are serialised: a job
// whose (user, key) is already stored, or is earlier in the same batch, is
// not stored again; the caller gets the existing job. Thread-safe.
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
  // Stores `job` with its first events; on success `job.id` is assigned,
  // or `job` is replaced by the job stored earlier under the same
  // idempotency key and `replayed` set.
  Status submit(Job& job, std::vector<Event> events, bool& replayed);

 private:
  struct Item {
    Job* job;
    std::vector<Event> events;
    bool done = false;
    bool replayed = false;
    Item* same_key_as = nullptr;  // an earlier item of the batch with the same key
    Status status;
  };
  void writeBatch(const std::vector<Item*>& batch);

  Store& store_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item*> queue_;
  bool writing_ = false;
};

}  // namespace ty
