#include "store/memory/memory_store.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "codec/queue_codec.h"
#include "store/identity_checks.h"

namespace ty {

namespace {}  // namespace

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
    if (!jobs_.contains(job.id.value())) return Status::notFound(jobNotFoundMessage(job.id));
  }
  for (const Attempt& a : batch.attempts) {
    if (a.key.number < 1) {
      return Status::invalidArgument("attempt " + a.key.toString() + ": numbers start at 1");
    }
    if (!jobs_.contains(a.key.job.value())) return Status::notFound(jobNotFoundMessage(a.key.job));
  }
  for (const Event& e : batch.events) {
    if (!jobs_.contains(e.job.value())) return Status::notFound(jobNotFoundMessage(e.job));
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

Status MemoryStore::putQueue(const QueueConfig& queue) {
  TY_RETURN_IF_ERROR(validateQueue(queue));
  std::lock_guard lock(mu_);
  auto [it, fresh] = queue_seq_.try_emplace(queue.name, last_queue_seq_ + 1);
  if (fresh) ++last_queue_seq_;
  queues_[it->second] = queue;
  return Status::ok();
}

Status MemoryStore::deleteQueue(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = queue_seq_.find(name);
  if (it == queue_seq_.end()) return Status::notFound(queueNotFoundMessage(name));
  queues_.erase(it->second);
  queue_seq_.erase(it);
  return Status::ok();
}

Result<std::vector<QueueConfig>> MemoryStore::listQueues() {
  std::lock_guard lock(mu_);
  std::vector<QueueConfig> out;
  out.reserve(queues_.size());
  for (const auto& [seq, q] : queues_) out.push_back(q);
  return out;
}

Result<Job> MemoryStore::getJob(JobId id) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return Status::notFound(jobNotFoundMessage(id));
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
    if (query.within_projects &&
        std::find(query.within_projects->begin(), query.within_projects->end(), job.spec.project) ==
            query.within_projects->end()) {
      continue;
    }
    if (query.queue) {
      const QueueConfig* q = jobQueue(query.queue->queues, job.spec.queue, job.spec.project);
      if (q == nullptr || q->name != query.queue->name) continue;
    }
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

Result<std::map<JobState, std::int64_t>> MemoryStore::countJobs(const JobCountQuery& query) {
  std::lock_guard lock(mu_);
  std::map<JobState, std::int64_t> out;
  for (const auto& [id, rec] : jobs_) {
    const Job& job = rec.job;
    if (isTerminal(job.state) && job.finished_at < query.finished_since) continue;
    if (!query.project.empty() && job.spec.project != query.project) continue;
    if (query.within_projects &&
        std::find(query.within_projects->begin(), query.within_projects->end(), job.spec.project) ==
            query.within_projects->end()) {
      continue;
    }
    ++out[job.state];
  }
  return out;
}

Result<std::vector<Attempt>> MemoryStore::attempts(JobId id) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return Status::notFound(jobNotFoundMessage(id));
  std::vector<Attempt> out;
  for (const auto& [number, a] : it->second.attempts) out.push_back(a);
  return out;
}

Result<std::vector<Event>> MemoryStore::events(JobId id, std::int64_t after_seq) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return Status::notFound(jobNotFoundMessage(id));
  const std::vector<Event>& all = it->second.events;
  auto first = std::upper_bound(all.begin(), all.end(), after_seq,
                                [](std::int64_t s, const Event& e) { return s < e.seq; });
  return std::vector<Event>(first, all.end());
}

// --- Identity ---------------------------------------------------------------

using store_checks::projectNotFound;
using store_checks::userNotFound;

Status MemoryStore::createUser(const User& user) {
  TY_RETURN_IF_ERROR(store_checks::checkUser(user));
  std::lock_guard lock(mu_);
  if (!users_.emplace(user.name, user).second) {
    return Status::alreadyExists("name: user " + user.name + " already exists");
  }
  return Status::ok();
}

Result<User> MemoryStore::getUser(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = users_.find(name);
  if (it == users_.end()) return Status::notFound(userNotFound(name));
  return it->second;
}

Result<std::vector<User>> MemoryStore::listUsers() {
  std::lock_guard lock(mu_);
  std::vector<User> out;
  for (const auto& [name, u] : users_) out.push_back(u);
  return out;
}

Status MemoryStore::updateUser(const std::string& name, const UserChange& c) {
  if (c.password_hash && c.password_hash->empty()) {
    return Status::invalidArgument("must not be empty", "password_hash");
  }
  std::lock_guard lock(mu_);
  auto it = users_.find(name);
  if (it == users_.end()) return Status::notFound(userNotFound(name));
  if (c.if_password_hash && it->second.password_hash != *c.if_password_hash) {
    return Status::failedPrecondition("the password changed meanwhile; try again");
  }
  User u = it->second;
  if (c.password_hash) {
    u.password_hash = *c.password_hash;
    u.failed_logins = 0;
    u.locked_until = 0;
  }
  if (c.locked_until) u.locked_until = *c.locked_until;
  if (c.is_admin) u.is_admin = *c.is_admin;
  if (c.disabled) u.disabled = *c.disabled;
  const bool was_admin = it->second.is_admin && !it->second.disabled;
  if (was_admin && (c.is_admin || c.disabled)) {
    bool any = !u.disabled && u.is_admin;
    for (const auto& [other, o] : users_) any = any || (other != name && o.is_admin && !o.disabled);
    if (!any) {
      return Status::failedPrecondition(
          "that would leave no enabled global admin; make another user an admin first");
    }
  }
  it->second = std::move(u);
  return Status::ok();
}

// --- Webhook deliveries -------------------------------------------------------

Status MemoryStore::setProjectWebhook(const std::string& name, const std::string& url) {
  std::lock_guard lock(mu_);
  auto it = projects_.find(name);
  if (it == projects_.end()) return Status::notFound(store_checks::projectNotFound(name));
  it->second.webhook_url = url;
  return Status::ok();
}

Result<std::vector<Job>> MemoryStore::jobsAwaitingWebhook(Timestamp finished_since, int limit) {
  if (limit < 1 || limit > 1000) return Status::invalidArgument("must be 1..1000", "limit");
  std::lock_guard lock(mu_);
  std::set<std::int64_t> has_delivery;
  for (const auto& [id, d] : deliveries_) has_delivery.insert(d.job.value());
  std::vector<Job> out;
  for (const auto& [id, rec] : jobs_) {
    const Job& job = rec.job;
    if (!isTerminal(job.state) || job.finished_at < finished_since) continue;
    if (has_delivery.contains(id)) continue;
    auto project = projects_.find(job.spec.project);
    bool project_hook = project != projects_.end() && !project->second.webhook_url.empty();
    if (job.spec.notify.webhook.empty() && !project_hook) continue;
    out.push_back(job);
  }
  std::sort(out.begin(), out.end(), [](const Job& a, const Job& b) {
    return std::pair(a.finished_at, a.id.value()) < std::pair(b.finished_at, b.id.value());
  });
  if (static_cast<int>(out.size()) > limit) out.resize(limit);
  return out;
}

Status MemoryStore::addWebhookDeliveries(const std::vector<WebhookDelivery>& deliveries,
                                         Timestamp watermark) {
  std::lock_guard lock(mu_);
  for (const WebhookDelivery& d : deliveries) {
    if (!jobs_.contains(d.job.value())) return Status::notFound(jobNotFoundMessage(d.job));
  }
  for (const WebhookDelivery& d : deliveries) {
    bool stored = std::any_of(deliveries_.begin(), deliveries_.end(), [&](const auto& kv) {
      return kv.second.job == d.job && kv.second.url == d.url;
    });
    if (stored) continue;
    WebhookDelivery row = d;
    row.id = ++last_delivery_id_;
    deliveries_[row.id] = row;
  }
  webhook_watermark_ = watermark;
  return Status::ok();
}

Result<Timestamp> MemoryStore::webhookWatermark() {
  std::lock_guard lock(mu_);
  return webhook_watermark_;
}

Result<std::vector<WebhookDelivery>> MemoryStore::dueWebhookDeliveries(Timestamp now, int limit) {
  if (limit < 1 || limit > 1000) return Status::invalidArgument("must be 1..1000", "limit");
  std::lock_guard lock(mu_);
  std::vector<WebhookDelivery> out;
  for (const auto& [id, d] : deliveries_) {
    if (d.pending() && d.next_attempt_at <= now) out.push_back(d);
  }
  std::sort(out.begin(), out.end(), [](const WebhookDelivery& a, const WebhookDelivery& b) {
    return std::pair(a.next_attempt_at, a.id) < std::pair(b.next_attempt_at, b.id);
  });
  if (static_cast<int>(out.size()) > limit) out.resize(limit);
  return out;
}

Result<std::vector<WebhookDelivery>> MemoryStore::webhookDeliveries(JobId job) {
  std::lock_guard lock(mu_);
  std::vector<WebhookDelivery> out;
  for (const auto& [id, d] : deliveries_) {
    if (d.job == job) out.push_back(d);
  }
  return out;
}

Status MemoryStore::updateWebhookDelivery(const WebhookDelivery& d,
                                          const std::vector<Event>& events) {
  std::lock_guard lock(mu_);
  auto it = deliveries_.find(d.id);
  if (it == deliveries_.end()) {
    return Status::notFound("webhook delivery " + std::to_string(d.id) + " not found");
  }
  for (const Event& e : events) {
    if (!jobs_.contains(e.job.value())) return Status::notFound(jobNotFoundMessage(e.job));
  }
  WebhookDelivery& row = it->second;
  row.attempts = d.attempts;
  row.next_attempt_at = d.next_attempt_at;
  row.delivered_at = d.delivered_at;
  row.given_up_at = d.given_up_at;
  row.last_error = d.last_error;
  for (const Event& e : events) {
    Event stored = e;
    stored.seq = ++last_seq_;
    jobs_[e.job.value()].events.push_back(std::move(stored));
  }
  return Status::ok();
}

Status MemoryStore::createProject(const Project& project) {
  TY_RETURN_IF_ERROR(store_checks::checkProject(project));
  std::lock_guard lock(mu_);
  if (!projects_.emplace(project.name, project).second) {
    return Status::alreadyExists("name: project " + project.name + " already exists");
  }
  return Status::ok();
}

Result<Project> MemoryStore::getProject(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = projects_.find(name);
  if (it == projects_.end()) return Status::notFound(projectNotFound(name));
  return it->second;
}

Result<std::vector<Project>> MemoryStore::listProjects() {
  std::lock_guard lock(mu_);
  std::vector<Project> out;
  for (const auto& [name, p] : projects_) out.push_back(p);
  return out;
}

Status MemoryStore::deleteProject(const std::string& name, Timestamp now) {
  std::lock_guard lock(mu_);
  if (projects_.erase(name) == 0) return Status::notFound(projectNotFound(name));
  std::erase_if(roles_, [&](const auto& entry) { return entry.first.second == name; });
  for (auto& [id, t] : tokens_) {
    if (t.project == name && t.revoked_at == 0) t.revoked_at = now;
  }
  return Status::ok();
}

Status MemoryStore::putMembership(const Membership& m) {
  TY_RETURN_IF_ERROR(store_checks::checkMembership(m));
  std::lock_guard lock(mu_);
  if (!users_.contains(m.user)) return Status::notFound(userNotFound(m.user));
  if (!projects_.contains(m.project)) return Status::notFound(projectNotFound(m.project));
  roles_[{m.user, m.project}] = m.role;
  return Status::ok();
}

Status MemoryStore::removeMembership(const std::string& user, const std::string& project) {
  std::lock_guard lock(mu_);
  if (roles_.erase({user, project}) == 0) {
    return Status::notFound("user " + user + " is not a member of project " + project);
  }
  return Status::ok();
}

Result<std::vector<Membership>> MemoryStore::membershipsOfUser(const std::string& user) {
  std::lock_guard lock(mu_);
  std::vector<Membership> out;
  for (const auto& [key, role] : roles_) {
    if (key.first == user) out.push_back({key.first, key.second, role});
  }
  return out;  // the map's order is (user, project): by project
}

Result<std::vector<Membership>> MemoryStore::membershipsOfProject(const std::string& project) {
  std::lock_guard lock(mu_);
  std::vector<Membership> out;
  for (const auto& [key, role] : roles_) {
    if (key.second == project) out.push_back({key.first, key.second, role});
  }
  return out;  // by user, as the map is ordered
}

Result<ApiToken> MemoryStore::createToken(const ApiToken& token) {
  TY_RETURN_IF_ERROR(store_checks::checkToken(token));
  std::lock_guard lock(mu_);
  if (!users_.contains(token.user)) return Status::notFound(userNotFound(token.user));
  if (!token.project.empty() && !projects_.contains(token.project)) {
    return Status::notFound(projectNotFound(token.project));
  }
  for (const auto& [id, t] : tokens_) {
    if (t.hash == token.hash) return Status::alreadyExists("hash: a token with this hash exists");
  }
  ApiToken stored = token;
  stored.id = ++last_token_id_;
  stored.revoked_at = 0;
  stored.last_used_at = 0;
  tokens_[stored.id] = stored;
  return stored;
}

Result<std::optional<ApiToken>> MemoryStore::findTokenByHash(const std::string& hash,
                                                             Timestamp now) {
  std::lock_guard lock(mu_);
  for (const auto& [id, t] : tokens_) {
    if (t.hash == hash) return t.live(now) ? std::optional<ApiToken>(t) : std::nullopt;
  }
  return std::optional<ApiToken>();
}

Result<std::vector<ApiToken>> MemoryStore::tokensOfUser(const std::string& user) {
  std::lock_guard lock(mu_);
  std::vector<ApiToken> out;
  for (const auto& [id, t] : tokens_) {
    if (t.user == user) out.push_back(t);
  }
  return out;
}

Status MemoryStore::revokeToken(const std::string& user, std::int64_t id, Timestamp now) {
  std::lock_guard lock(mu_);
  auto it = tokens_.find(id);
  if (it == tokens_.end() || it->second.user != user) {
    return Status::notFound("user " + user + " has no token " + std::to_string(id));
  }
  if (it->second.revoked_at == 0) it->second.revoked_at = now;
  return Status::ok();
}

Status MemoryStore::touchToken(std::int64_t id, Timestamp now) {
  std::lock_guard lock(mu_);
  auto it = tokens_.find(id);
  if (it == tokens_.end()) return Status::notFound("token " + std::to_string(id) + " not found");
  it->second.last_used_at = std::max(it->second.last_used_at, now);
  return Status::ok();
}

Result<std::int64_t> MemoryStore::appendAudit(const AuditRecord& record) {
  std::lock_guard lock(mu_);
  AuditRecord stored = record;
  stored.seq = ++last_audit_seq_;
  audit_[stored.seq] = stored;
  return stored.seq;
}

Result<AuditPage> MemoryStore::listAudit(const AuditQuery& query) {
  TY_RETURN_IF_ERROR(store_checks::checkAuditQuery(query));
  std::lock_guard lock(mu_);
  AuditPage page;
  auto it = query.before_seq == 0 ? audit_.end() : audit_.lower_bound(query.before_seq);
  while (it != audit_.begin()) {
    --it;
    const AuditRecord& r = it->second;
    if (!query.user.empty() && r.user != query.user) continue;
    if (static_cast<int>(page.records.size()) == query.limit) {
      page.next_before = page.records.back().seq;
      break;
    }
    page.records.push_back(r);
  }
  return page;
}

}  // namespace ty
