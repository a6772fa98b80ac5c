// MemoryStore: the in-memory twin of the Store port, for tests and the
// simulator. Same contract as the SQLite store (the conformance suite runs
// against both), nothing durable.
//
// Ownership: the store owns copies of everything written to it; callers own
// what they pass in and get back. Thread-safe: one mutex guards all state,
// so every call is atomic with respect to every other.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "store/store.h"

namespace ty {

class MemoryStore final : public Store {
 public:
  MemoryStore() = default;

  Status createJobs(std::vector<Job>& jobs,
                    const std::vector<std::vector<Event>>& events_per_job) override;
  Status apply(const WriteBatch& batch) override;

  Result<Job> getJob(JobId id) override;
  Result<JobPage> listJobs(const JobQuery& query) override;
  Result<std::optional<Job>> findByIdempotencyKey(const std::string& user,
                                                  const std::string& key) override;
  Result<std::vector<Job>> activeJobs() override;
  Result<std::map<JobState, std::int64_t>> countJobs(const JobCountQuery& query) override;
  Result<std::vector<Attempt>> attempts(JobId id) override;
  Result<std::vector<Event>> events(JobId id, std::int64_t after_seq = 0) override;
  Result<std::vector<QueueUsage>> queueUsage() override;
  bool healthy() override { return true; }
  // Webhooks: the project's URL and the deliveries (store.h).
  Status setProjectWebhook(const std::string& name, const std::string& url) override;
  Result<std::vector<Job>> jobsAwaitingWebhook(Timestamp finished_since, int limit) override;
  Status addWebhookDeliveries(const std::vector<WebhookDelivery>& deliveries,
                              Timestamp watermark) override;
  Result<Timestamp> webhookWatermark() override;
  Result<std::vector<WebhookDelivery>> dueWebhookDeliveries(Timestamp now, int limit) override;
  Result<std::vector<WebhookDelivery>> webhookDeliveries(JobId job) override;
  Status updateWebhookDelivery(const WebhookDelivery& d, const std::vector<Event>& events) override;
  Status putQueue(const QueueConfig& queue) override;
  Status deleteQueue(const std::string& name) override;
  Result<std::vector<QueueConfig>> listQueues() override;
  Result<int> appendTrainingPoints(JobId job, const std::vector<TrainingPoint>& points) override;
  Result<std::vector<TrainingPoint>> trainingSeries(JobId job,
                                                    const TrainingSeriesQuery& query) override;
  Result<std::vector<TrainingMetricSummary>> trainingMetrics(JobId job) override;
  Result<std::vector<LatestTrainingPoint>> latestTrainingMetrics(
      const std::vector<JobId>& jobs) override;

  Status createUser(const User& user) override;
  Result<User> getUser(const std::string& name) override;
  Result<std::vector<User>> listUsers() override;
  Status updateUser(const std::string& name, const UserChange& change) override;
  Status createProject(const Project& project) override;
  Result<Project> getProject(const std::string& name) override;
  Result<std::vector<Project>> listProjects() override;
  Status deleteProject(const std::string& name, Timestamp now) override;
  Status putMembership(const Membership& m) override;
  Status removeMembership(const std::string& user, const std::string& project) override;
  Result<std::vector<Membership>> membershipsOfUser(const std::string& user) override;
  Result<std::vector<Membership>> membershipsOfProject(const std::string& project) override;
  Result<ApiToken> createToken(const ApiToken& token) override;
  Result<std::optional<ApiToken>> findTokenByHash(const std::string& hash, Timestamp now) override;
  Result<std::vector<ApiToken>> tokensOfUser(const std::string& user) override;
  Status revokeToken(const std::string& user, std::int64_t id, Timestamp now) override;
  Status touchToken(std::int64_t id, Timestamp now) override;
  Result<std::int64_t> appendAudit(const AuditRecord& record) override;
  Result<AuditPage> listAudit(const AuditQuery& query) override;

 private:
  struct JobRecord {
    Job job;
    std::map<int, Attempt> attempts;  // by number
    std::vector<Event> events;        // seq increasing
  };

  std::mutex mu_;
  std::map<std::int64_t, JobRecord> jobs_;   // by id
  std::map<std::string, QueueUsage> usage_;  // by queue
  std::int64_t last_id_ = 0;
  std::int64_t last_seq_ = 0;
  // Queues by the order they were first put (the SQLite store's seq), and
  // that order by name.
  std::map<std::int64_t, QueueConfig> queues_;
  std::map<std::string, std::int64_t> queue_seq_;
  std::int64_t last_queue_seq_ = 0;

  std::map<std::string, User> users_;                                 // by name
  std::map<std::string, Project> projects_;                           // by name
  std::map<std::pair<std::string, std::string>, std::string> roles_;  // (user, project) -> role
  std::map<std::int64_t, ApiToken> tokens_;                           // by id
  std::map<std::int64_t, AuditRecord> audit_;                         // by seq
  // Training points by job, id increasing; and the (job, source, name)
  // reports stored, which make a repeated append add nothing.
  std::map<std::int64_t, std::vector<TrainingPoint>> points_;
  std::set<std::tuple<std::int64_t, std::string, std::string>> point_reports_;
  std::int64_t last_point_id_ = 0;

  std::int64_t last_token_id_ = 0;
  std::int64_t last_audit_seq_ = 0;

  std::map<std::int64_t, WebhookDelivery> deliveries_;  // by id
  std::int64_t last_delivery_id_ = 0;
  Timestamp webhook_watermark_ = 0;
};

}  // namespace ty
