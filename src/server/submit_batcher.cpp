#include "server/submit_batcher.h"

namespace ty {

Status SubmitBatcher::submit(Job& job, std::vector<Event> events) {
  Item item{&job, std::move(events), false, Status::ok()};
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
    std::vector<Job> jobs;
    std::vector<std::vector<Event>> events_per_job;
    jobs.reserve(batch.size());
    for (Item* it : batch) {
      jobs.push_back(*it->job);
      events_per_job.push_back(it->events);
    }
    Status st = store_.createJobs(jobs, events_per_job);
    lock.lock();
    for (size_t i = 0; i < batch.size(); ++i) {
      if (st.isOk()) *batch[i]->job = jobs[i];
      batch[i]->status = st;
      batch[i]->done = true;
    }
    writing_ = false;
    cv_.notify_all();
  }
  return item.status;
}

}  // namespace ty
