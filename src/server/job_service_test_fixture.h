// The fixture of the reconcile-loop tests: the in-memory store (behind a
// store that can fail chosen calls), the fake executor and a clock moved
// by hand. The loop runs on its own thread; helpers poll with a deadline.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "exec/fake/fake_executor.h"
#include "server/job_service.h"

namespace ty::test {

using namespace std::chrono_literals;

inline NodeInfo fourGpuNode() {
  NodeInfo n;
  n.name = "local";
  n.cpus = Quantity::whole(16);
  n.memory_bytes = 64LL << 30;
  for (int i = 0; i < 4; ++i) n.gpus.push_back({i, "GPU-" + std::to_string(i), "A100-80GB"});
  return n;
}

inline JobSpec spec(int gpus, const std::string& name = "train") {
  JobSpec s;
  s.name = name;
  s.command = {"python3", "train.py"};
  s.resources.gpus = Quantity::whole(gpus);
  s.grace_period = 5000;
  return s;
}

// A store that fails chosen writes, over the in-memory one.
class FlakyStore final : public Store {
 public:
  explicit FlakyStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}
  std::atomic<int> fail_applies{0};
  std::atomic<int> fail_reads{0};
  std::atomic<int> fail_queue_writes{0};

  Status createJobs(std::vector<Job>& jobs,
                    const std::vector<std::vector<Event>>& events) override {
    return inner_->createJobs(jobs, events);
  }
  Status apply(const WriteBatch& batch) override {
    if (fail_applies > 0) {
      --fail_applies;
      return Status::unavailable("disk full");
    }
    return inner_->apply(batch);
  }
  Result<Job> getJob(JobId id) override { return inner_->getJob(id); }
  Result<std::optional<Job>> findByIdempotencyKey(const std::string& user,
                                                  const std::string& key) override {
    return inner_->findByIdempotencyKey(user, key);
  }
  Result<JobPage> listJobs(const JobQuery& q) override { return inner_->listJobs(q); }
  Result<std::vector<Job>> activeJobs() override {
    if (fail_reads > 0) {
      --fail_reads;
      return Status::unavailable("disk unreadable");
    }
    return inner_->activeJobs();
  }
  Result<std::map<JobState, std::int64_t>> countJobs(const JobCountQuery& q) override {
    return inner_->countJobs(q);
  }
  Result<std::vector<Attempt>> attempts(JobId id) override { return inner_->attempts(id); }
  Result<std::vector<Event>> events(JobId id, std::int64_t after) override {
    return inner_->events(id, after);
  }
  Result<std::vector<QueueUsage>> queueUsage() override { return inner_->queueUsage(); }
  bool healthy() override { return true; }
  Status putQueue(const QueueConfig& q) override {
    if (fail_queue_writes > 0) {
      --fail_queue_writes;
      return Status::unavailable("disk full");
    }
    return inner_->putQueue(q);
  }
  Status deleteQueue(const std::string& name) override {
    if (fail_queue_writes > 0) {
      --fail_queue_writes;
      return Status::unavailable("disk full");
    }
    return inner_->deleteQueue(name);
  }
  Result<std::vector<QueueConfig>> listQueues() override { return inner_->listQueues(); }
  Result<int> appendTrainingPoints(JobId job, const std::vector<TrainingPoint>& p) override {
    return inner_->appendTrainingPoints(job, p);
  }
  Result<std::vector<TrainingPoint>> trainingSeries(JobId job,
                                                    const TrainingSeriesQuery& q) override {
    return inner_->trainingSeries(job, q);
  }
  Result<std::vector<TrainingMetricSummary>> trainingMetrics(JobId job) override {
    return inner_->trainingMetrics(job);
  }
  Result<std::vector<LatestTrainingPoint>> latestTrainingMetrics(
      const std::vector<JobId>& jobs) override {
    return inner_->latestTrainingMetrics(jobs);
  }

  // Webhook calls pass straight through.
  Result<std::vector<Job>> jobsAwaitingWebhook(Timestamp since, int limit) override {
    return inner_->jobsAwaitingWebhook(since, limit);
  }
  Status addWebhookDeliveries(const std::vector<WebhookDelivery>& d, Timestamp mark) override {
    return inner_->addWebhookDeliveries(d, mark);
  }
  Result<Timestamp> webhookWatermark() override { return inner_->webhookWatermark(); }
  Result<std::vector<WebhookDelivery>> dueWebhookDeliveries(Timestamp now, int limit) override {
    return inner_->dueWebhookDeliveries(now, limit);
  }
  Result<std::vector<WebhookDelivery>> webhookDeliveries(JobId job) override {
    return inner_->webhookDeliveries(job);
  }
  Status updateWebhookDelivery(const WebhookDelivery& d, const std::vector<Event>& e) override {
    return inner_->updateWebhookDelivery(d, e);
  }
  Status setProjectWebhook(const std::string& n, const std::string& url) override {
    return inner_->setProjectWebhook(n, url);
  }

  // Identity calls pass straight through.
  Status createUser(const User& u) override { return inner_->createUser(u); }
  Result<User> getUser(const std::string& n) override { return inner_->getUser(n); }
  Result<std::vector<User>> listUsers() override { return inner_->listUsers(); }
  Status updateUser(const std::string& n, const UserChange& c) override {
    return inner_->updateUser(n, c);
  }
  Status createProject(const Project& p) override { return inner_->createProject(p); }
  Result<Project> getProject(const std::string& n) override { return inner_->getProject(n); }
  Result<std::vector<Project>> listProjects() override { return inner_->listProjects(); }
  Status deleteProject(const std::string& n, Timestamp now) override {
    return inner_->deleteProject(n, now);
  }
  Status putMembership(const Membership& m) override { return inner_->putMembership(m); }
  Status removeMembership(const std::string& u, const std::string& p) override {
    return inner_->removeMembership(u, p);
  }
  Result<std::vector<Membership>> membershipsOfUser(const std::string& u) override {
    return inner_->membershipsOfUser(u);
  }
  Result<std::vector<Membership>> membershipsOfProject(const std::string& p) override {
    return inner_->membershipsOfProject(p);
  }
  Result<ApiToken> createToken(const ApiToken& t) override { return inner_->createToken(t); }
  Result<std::optional<ApiToken>> findTokenByHash(const std::string& h, Timestamp now) override {
    return inner_->findTokenByHash(h, now);
  }
  Result<std::vector<ApiToken>> tokensOfUser(const std::string& u) override {
    return inner_->tokensOfUser(u);
  }
  Status revokeToken(const std::string& u, std::int64_t id, Timestamp now) override {
    return inner_->revokeToken(u, id, now);
  }
  Status touchToken(std::int64_t id, Timestamp now) override { return inner_->touchToken(id, now); }
  Result<std::int64_t> appendAudit(const AuditRecord& r) override { return inner_->appendAudit(r); }
  Result<AuditPage> listAudit(const AuditQuery& q) override { return inner_->listAudit(q); }

 private:
  std::unique_ptr<Store> inner_;
};

class JobServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto flaky = std::make_unique<FlakyStore>(newMemoryStore());
    flaky_ = flaky.get();
    store_ = std::move(flaky);
    start();
  }
  void TearDown() override { service_->stop(); }

  // Options of the next start(); tests may change them before a restart().
  JobServiceOptions options_ = [] {
    JobServiceOptions o;
    o.nodes = {fourGpuNode()};
    o.pick_port = [] { return 29500; };
    return o;
  }();

  void start() {
    service_ = std::make_unique<JobService>(*store_, exec_, clock_, options_);
    ASSERT_TRUE(service_->start().isOk());
  }
  void restart() {
    service_->stop();
    start();
  }

  Job job(JobId id) { return store_->getJob(id).value(); }
  Result<Job> submit(JobSpec s, const std::string& user) {
    auto r = service_->submit(std::move(s), user);
    if (!r.isOk()) return r.status();
    return r->job;
  }

  // Polls until `pred` holds or 5s pass; the loop runs on its own thread.
  static bool eventually(const std::function<bool()>& pred) {
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return pred();
  }
  Job waitJob(JobId id, const std::function<bool(const Job&)>& pred) {
    Job j;
    if (eventually([&] { return pred(j = job(id)); })) return j;
    ADD_FAILURE() << "job " << id.value() << " stuck in " << jobStateName(j.state) << ": "
                  << j.reason;
    return j;
  }
  Job waitState(JobId id, JobState s) {
    return waitJob(id, [s](const Job& j) { return j.state == s; });
  }
  std::vector<std::string> eventTexts(JobId id) {
    std::vector<std::string> out;
    auto events = store_->events(id);
    for (const auto& e : events.value()) out.push_back(e.reason + ": " + e.message);
    return out;
  }
  bool hasEvent(JobId id, const std::string& needle) {
    for (const auto& t : eventTexts(id)) {
      if (t.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  // The signals sent so far, once there are at least `n` (or after 5s).
  std::vector<FakeExecutor::SignalRecord> waitSignals(size_t n) {
    eventually([&] { return exec_.signals().size() >= n; });
    return exec_.signals();
  }
  void advance(DurationMs d) {
    clock_.advance(d);
    service_->wake();
  }

  ManualClock clock_{1'000'000};
  FakeExecutor exec_;
  std::unique_ptr<Store> store_;
  FlakyStore* flaky_ = nullptr;
  std::unique_ptr<JobService> service_;
};

}  // namespace ty::test
