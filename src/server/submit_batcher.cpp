#include "server/submit_batcher.h"

#include <map>

namespace ty {

Status SubmitBatcher::submit(Job& job, std::vector<Event> events, bool& replayed) {
  Item item{&job, std::move(events), false, false, nullptr, Status::ok()};
  std::unique_lock lock(mu_);
  queue_.push_back(&item);
  while (!item.done) {
    if (writing_) {
      cv_.wait(lock);
      continue;
    }
    // Become the writer for everything queued so far.
    writing_ = true;
    std::vector<Item*> batch(queue_.begin(), queue_.end());
    queue_.clear();
    lock.unlock();
    writeBatch(batch);
    lock.lock();
    for (Item* it : batch) it->done = true;
    writing_ = false;
    cv_.notify_all();
  }
  replayed = item.replayed;
  return item.status;
}

// Runs without the lock; only one writer at a time.
void SubmitBatcher::writeBatch(const std::vector<Item*>& batch) {
  std::vector<Item*> fresh;
  std::map<std::pair<std::string, std::string>, Item*> keyed;
  for (Item* it : batch) {
    const Job& job = *it->job;
    if (!job.idempotency_key.empty()) {
      auto earlier = keyed.find({job.user, job.idempotency_key});
      if (earlier != keyed.end()) {
        it->same_key_as = earlier->second;
        continue;
      }
      auto stored = store_.findByIdempotencyKey(job.user, job.idempotency_key);
      if (!stored.isOk()) {
        it->status = stored.status();
        continue;
      }
      if (stored->has_value()) {
        *it->job = **stored;
        it->replayed = true;
        continue;
      }
      keyed[{job.user, job.idempotency_key}] = it;
    }
    fresh.push_back(it);
  }
  std::vector<Job> jobs;
  std::vector<std::vector<Event>> events_per_job;
  jobs.reserve(fresh.size());
  for (Item* it : fresh) {
    jobs.push_back(*it->job);
    events_per_job.push_back(it->events);
  }
  Status st = jobs.empty() ? Status::ok() : store_.createJobs(jobs, events_per_job);
  for (size_t i = 0; i < fresh.size(); ++i) {
    if (st.isOk()) *fresh[i]->job = jobs[i];
    fresh[i]->status = st;
  }
  for (Item* it : batch) {
    if (it->same_key_as == nullptr) continue;
    it->status = it->same_key_as->status;
    if (it->status.isOk()) {
      *it->job = *it->same_key_as->job;
      it->replayed = true;
    }
  }
}

}  // namespace ty
