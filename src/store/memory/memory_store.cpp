#include "store/memory/memory_store.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

namespace ty {

namespace {

std::string jobNotFound(JobId id) { return "job " + std::to_string(id.value()) + " not found"; }

}  // namespace

std::unique_ptr<Store> newMemoryStore() { return std::make_unique<MemoryStore>(); }

Status MemoryStore::createJobs(std::vector<Job>& jobs,
                               const std::vector<std::vector<Event>>& events_per_job) {
  if (!events_per_job.empty() && events_per_job.size() != jobs.size()) {
    return Status::invalidArgument("createJobs: events_per_job must be empty or one per job");
  }
  std::lock_guard lock(mu_);
  // All or nothing: a duplicate idempotency key refuses the whole batch.
  std::set<std::pair<std::string, std::string>> keys;
  for (const Job& job : jobs) {
    if (job.idempotency_key.empty()) continue;
    bool dup = !keys.insert({job.user, job.idempotency_key}).second;
    for (const auto& [id, rec] : jobs_) {
      dup = dup || (rec.job.user == job.user && rec.job.idempotency_key == job.idempotency_key);
    }
    if (dup) {
      return Status::alreadyExists("user " + job.user +
                                   " already submitted a job with "
                                   "idempotency key " +
                                   job.idempotency_key);
    }
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& job = jobs[i];
    job.id = JobId(++last_id_);
    JobRecord& rec = jobs_[job.id.value()];
    rec.job = job;
    if (!events_per_job.empty()) {
      for (const Event& e : events_per_job[i]) {
        Event stored = e;
        stored.job = job.id;
        stored.seq = ++last_seq_;
        rec.events.push_back(std::move(stored));
      }
    }
  }
  return Status::ok();
}

Status MemoryStore::apply(const WriteBatch& batch) {
  std::lock_guard lock(mu_);
  // Check everything first so that a failing batch writes nothing.
  for (const Job& job : batch.jobs) {
    if (!jobs_.contains(job.id.value())) return Status::notFound(jobNotFound(job.id));
  }
  for (const Attempt& a : batch.attempts) {
    if (a.key.number < 1) {
      return Status::invalidArgument("attempt " + a.key.toString() + ": numbers start at 1");
    }
    if (!jobs_.contains(a.key.job.value())) return Status::notFound(jobNotFound(a.key.job));
  }
  for (const Event& e : batch.events) {
    if (!jobs_.contains(e.job.value())) return Status::notFound(jobNotFound(e.job));
  }
  for (const QueueUsage& u : batch.usage) {
    if (u.queue.empty()) return Status::invalidArgument("queue usage without a queue name");
  }
  for (const QueueUsage& u : batch.usage) usage_[u.queue] = u;
  for (const Job& job : batch.jobs) jobs_[job.id.value()].job = job;
  for (const Attempt& a : batch.attempts) jobs_[a.key.job.value()].attempts[a.key.number] = a;
  for (const Event& e : batch.events) {
    Event stored = e;
    stored.seq = ++last_seq_;
    jobs_[e.job.value()].events.push_back(std::move(stored));
  }
  return Status::ok();
}

Result<std::vector<QueueUsage>> MemoryStore::queueUsage() {
  std::lock_guard lock(mu_);
  std::vector<QueueUsage> out;
  for (const auto& [name, u] : usage_) out.push_back(u);
  return out;
}

Result<Job> MemoryStore::getJob(JobId id) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return Status::notFound(jobNotFound(id));
  return it->second.job;
}

Result<JobPage> MemoryStore::listJobs(const JobQuery& query) {
  if (query.limit < 1 || query.limit > 1000) {
    return Status::invalidArgument("limit must be between 1 and 1000", "limit");
  }
  if (query.before_id < 0) return Status::invalidArgument("must be >= 0", "before");
  std::lock_guard lock(mu_);
  JobPage page;
  auto it = query.before_id == 0 ? jobs_.end() : jobs_.lower_bound(query.before_id);
  while (it != jobs_.begin()) {
    --it;
    const Job& job = it->second.job;
    if (query.state && job.state != *query.state) continue;
    if (!query.project.empty() && job.spec.project != query.project) continue;
    if (!query.user.empty() && job.user != query.user) continue;
    if (static_cast<int>(page.jobs.size()) == query.limit) {
      page.next_before = page.jobs.back().id.value();
      break;
    }
    page.jobs.push_back(job);
  }
  return page;
}

Result<std::optional<Job>> MemoryStore::findByIdempotencyKey(const std::string& user,
                                                             const std::string& key) {
  std::lock_guard lock(mu_);
  for (const auto& [id, rec] : jobs_) {
    if (!key.empty() && rec.job.user == user && rec.job.idempotency_key == key) return {rec.job};
  }
  return std::optional<Job>();
}

Result<std::vector<Job>> MemoryStore::activeJobs() {
  std::lock_guard lock(mu_);
  std::vector<Job> out;
  for (const auto& [id, rec] : jobs_) {
    if (!isTerminal(rec.job.state)) out.push_back(rec.job);
  }
  return out;
}

Result<std::vector<Attempt>> MemoryStore::attempts(JobId id) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return Status::notFound(jobNotFound(id));
  std::vector<Attempt> out;
  for (const auto& [number, a] : it->second.attempts) out.push_back(a);
  return out;
}

Result<std::vector<Event>> MemoryStore::events(JobId id, std::int64_t after_seq) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return Status::notFound(jobNotFound(id));
  const std::vector<Event>& all = it->second.events;
  auto first = std::upper_bound(all.begin(), all.end(), after_seq,
                                [](std::int64_t s, const Event& e) { return s < e.seq; });
  return std::vector<Event>(first, all.end());
}

}  // namespace ty
