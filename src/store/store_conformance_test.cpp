// The Store contract, run against every implementation (memory, SQLite).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codec/job_codec.h"
#include "codec/queue_codec.h"
#include "common/temp_dir_test_util.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store.h"

namespace ty {

// Readable failure messages (found by argument-dependent lookup).
static void PrintTo(const Job& j, std::ostream* os) { *os << jobToJson(j).dump(); }
static void PrintTo(const Attempt& a, std::ostream* os) { *os << attemptToJson(a).dump(); }

namespace {

struct MemoryFactory {
  static std::unique_ptr<Store> make(const std::filesystem::path&) { return newMemoryStore(); }
};

struct SqliteFactory {
  static std::unique_ptr<Store> make(const std::filesystem::path& dir) {
    Result<std::unique_ptr<Store>> store = openSqliteStore((dir / "store.db").string());
    if (!store.isOk()) {
      ADD_FAILURE() << store.status().toString();
      return nullptr;
    }
    return std::move(store).value();
  }
};

template <typename Factory>
class StoreConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    store_ = Factory::make(dir_.fsPath());
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override { store_.reset(); }

  // Creates one job per (project, user) pair, returning their ids.
  std::vector<JobId> create(int n, const std::string& project = "default",
                            const std::string& user = "alice") {
    std::vector<Job> jobs(n);
    for (int i = 0; i < n; ++i) {
      jobs[i].spec.name = "job" + std::to_string(i);
      jobs[i].spec.project = project;
      jobs[i].spec.command = {"true"};
      jobs[i].user = user;
      jobs[i].created_at = 1000 + i;
    }
    Status s = store_->createJobs(jobs, {});
    EXPECT_TRUE(s.isOk()) << s.toString();
    std::vector<JobId> ids;
    for (const Job& j : jobs) ids.push_back(j.id);
    return ids;
  }

  Job get(JobId id) {
    Result<Job> job = store_->getJob(id);
    EXPECT_TRUE(job.isOk()) << job.status().toString();
    return job.isOk() ? job.value() : Job{};
  }

  std::vector<std::int64_t> listIds(const JobQuery& q, std::int64_t* next_before = nullptr) {
    Result<JobPage> page = store_->listJobs(q);
    EXPECT_TRUE(page.isOk()) << page.status().toString();
    std::vector<std::int64_t> ids;
    if (!page.isOk()) return ids;
    for (const Job& j : page->jobs) ids.push_back(j.id.value());
    if (next_before != nullptr) *next_before = page->next_before;
    return ids;
  }

  ::ty::testing::TempDir dir_{"ty_store_"};
  std::unique_ptr<Store> store_;
};

// A job with every field set away from its default.
Job fullJob() {
  Job job;
  JobSpec& s = job.spec;
  s.name = "resnet-50 \"sweep\" ünïcode";
  s.project = "vision";
  s.command = {"python", "train.py", "--lr", "0.1", "it's"};
  s.image = "registry.local/pytorch:2.3";
  s.resources.gpus = Quantity::whole(8);
  s.resources.cpus = Quantity::fromMilli(2500);
  s.resources.memory_bytes = 64LL << 30;
  s.resources.gpu_types = {"H100", "A100-80GB"};
  s.replicas = 4;
  s.env = {{"NCCL_DEBUG", "INFO"}, {"EMPTY", ""}, {"QUOTE", "a'b\"c"}};
  s.workdir = "/data/run";
  s.priority = -7;
  s.max_runtime = 2 * 3600 * 1000 + 30 * 60 * 1000;
  s.grace_period = 45'000;
  s.retries.limit = 3;
  s.retries.backoff = 90'000;
  job.user = "bob";
  job.state = JobState::kRunning;
  job.created_at = 1'700'000'000'123;
  job.updated_at = 1'700'000'100'456;
  job.started_at = 1'700'000'050'000;
  job.finished_at = 1'700'000'099'000;
  job.attempts = 2;
  job.exit_code = 137;
  job.reason = "Preempted by job 12";
  job.not_before = 1'700'000'200'000;
  job.cancel_requested_at = 1'700'000'300'000;
  job.idempotency_key = "retry-safe-1";
  job.preempted_by = JobId(12);
  job.preempt_requested_at = 1'700'000'250'000;
  job.preemptions = 3;
  s.queue = "vision-batch";
  s.min_runtime = 600'000;
  s.node_selector = {{"rack", "r7"}};
  s.same_label = "rack";
  return job;
}

Attempt fullAttempt(JobId job, int number) {
  Attempt a;
  a.key = AttemptKey{job, number};
  a.state = AttemptState::kEnded;
  a.replicas = {{"node-a", {0, 1, 2, 3}}, {"node-b", {4, 5}}, {"node-c", {}}, {"node-d", {1}, 250}};
  a.master_port = 29500;
  a.pids = {4242, 0, 9'000'000'000LL};
  a.created_at = 10;
  a.started_at = 20;
  a.finished_at = 30;
  a.exit_code = -9;
  a.reason = "OOMKilled";
  return a;
}

Event event(JobId job, const std::string& reason, EventLevel level = EventLevel::kNormal) {
  Event e;
  e.job = job;
  e.time = 5000;
  e.level = level;
  e.reason = reason;
  e.message = "message for " + reason;
  return e;
}

using Implementations = ::testing::Types<MemoryFactory, SqliteFactory>;
class ImplementationNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, MemoryFactory> ? "Memory" : "Sqlite";
  }
};
TYPED_TEST_SUITE(StoreConformanceTest, Implementations, ImplementationNames);

TYPED_TEST(StoreConformanceTest, IdsAreAssignedIncreasing) {
  std::vector<JobId> first = this->create(3);
  std::vector<JobId> second = this->create(2);
  std::vector<JobId> all = first;
  all.insert(all.end(), second.begin(), second.end());
  ASSERT_EQ(all.size(), 5u);
  EXPECT_GT(all[0].value(), 0);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_GT(all[i], all[i - 1]);
}

TYPED_TEST(StoreConformanceTest, IdempotencyKeysAreUniquePerUser) {
  std::vector<Job> jobs(2);
  for (auto& j : jobs) {
    j.spec.command = {"true"};
    j.user = "alice";
  }
  jobs[0].idempotency_key = "k1";
  ASSERT_TRUE(this->store_->createJobs(jobs, {}).isOk());
  auto found = this->store_->findByIdempotencyKey("alice", "k1");
  ASSERT_TRUE(found.isOk());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, jobs[0].id);
  EXPECT_FALSE(this->store_->findByIdempotencyKey("bob", "k1")->has_value());
  EXPECT_FALSE(this->store_->findByIdempotencyKey("alice", "")->has_value());
  // The same key again for the same user is refused, whole batch and all.
  std::vector<Job> again(2);
  for (auto& j : again) {
    j.spec.command = {"true"};
    j.user = "alice";
  }
  again[1].idempotency_key = "k1";
  EXPECT_EQ(this->store_->createJobs(again, {}).code(), StatusCode::kAlreadyExists);
  JobQuery all;
  EXPECT_EQ(this->listIds(all).size(), 2u);
  // Another user may use it.
  std::vector<Job> bobs(1);
  bobs[0].spec.command = {"true"};
  bobs[0].user = "bob";
  bobs[0].idempotency_key = "k1";
  EXPECT_TRUE(this->store_->createJobs(bobs, {}).isOk());
}

TYPED_TEST(StoreConformanceTest, CreateWithNothingIsOk) {
  std::vector<Job> none;
  EXPECT_TRUE(this->store_->createJobs(none, {}).isOk());
  EXPECT_TRUE(this->store_->apply(WriteBatch{}).isOk());
}

TYPED_TEST(StoreConformanceTest, CreateAppendsEachJobsEvents) {
  std::vector<Job> jobs(2);
  for (Job& j : jobs) j.spec.command = {"true"};
  std::vector<std::vector<Event>> events = {
      {event(JobId(999), "Submitted"), event(JobId(0), "Waiting")}, {event(JobId(0), "Submitted")}};
  ASSERT_TRUE(this->store_->createJobs(jobs, events).isOk());

  Result<std::vector<Event>> first = this->store_->events(jobs[0].id);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].job, jobs[0].id);  // the store writes the new id in
  EXPECT_EQ((*first)[0].reason, "Submitted");
  EXPECT_EQ((*first)[1].reason, "Waiting");
  EXPECT_LT((*first)[0].seq, (*first)[1].seq);
  Result<std::vector<Event>> second = this->store_->events(jobs[1].id);
  ASSERT_TRUE(second.isOk());
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].job, jobs[1].id);
  EXPECT_GT((*second)[0].seq, (*first)[1].seq);
}

TYPED_TEST(StoreConformanceTest, CreateRejectsEventsNotOnePerJob) {
  std::vector<Job> jobs(2);
  for (Job& j : jobs) j.spec.command = {"true"};
  Status s = this->store_->createJobs(jobs, {{event(JobId(0), "Submitted")}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(this->listIds(JobQuery{}).empty());
}

TYPED_TEST(StoreConformanceTest, GetUnknownJobIsNotFound) {
  this->create(1);
  EXPECT_EQ(this->store_->getJob(JobId(12345)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store_->getJob(JobId(0)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store_->attempts(JobId(12345)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store_->events(JobId(12345)).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreConformanceTest, JobRoundTripsEveryField) {
  Job full = fullJob();
  Job minimal;
  minimal.spec.script = "echo hi";
  minimal.spec.resources.memory_bytes = 512LL << 20;
  minimal.spec.resources.cpus = Quantity::fromMilli(125);
  std::vector<Job> jobs = {full, minimal};
  ASSERT_TRUE(this->store_->createJobs(jobs, {}).isOk());

  full.id = jobs[0].id;
  minimal.id = jobs[1].id;
  Job got = this->get(full.id);
  EXPECT_EQ(got, full);
  got = this->get(minimal.id);
  EXPECT_EQ(got, minimal);
  EXPECT_FALSE(got.exit_code.has_value());

  // Replacing keeps every field too, including an exit code of 0 and its removal.
  full.exit_code = 0;
  full.state = JobState::kSucceeded;
  ASSERT_TRUE(this->store_->apply(WriteBatch{{full}, {}, {}, {}}).isOk());
  EXPECT_EQ(this->get(full.id), full);
  full.exit_code.reset();
  ASSERT_TRUE(this->store_->apply(WriteBatch{{full}, {}, {}, {}}).isOk());
  EXPECT_EQ(this->get(full.id), full);
}

// Memory that is not a whole number of Ki, Mi, Gi or Ti (such as "1G" = 10^9
// bytes) must come back exactly, not rounded to "953.7Mi".
TYPED_TEST(StoreConformanceTest, MemoryOfAnySizeRoundTrips) {
  std::vector<Job> jobs;
  for (std::int64_t bytes : {1LL, 1023LL, 1'000'001LL, 1'000'000'000LL, (1LL << 30) + 1}) {
    Job job;
    job.spec.command = {"true"};
    job.spec.resources.memory_bytes = bytes;
    jobs.push_back(job);
  }
  ASSERT_TRUE(this->store_->createJobs(jobs, {}).isOk());
  for (const Job& job : jobs) {
    EXPECT_EQ(this->get(job.id).spec.resources.memory_bytes, job.spec.resources.memory_bytes);
  }
}

TYPED_TEST(StoreConformanceTest, EveryJobStateRoundTrips) {
  JobId id = this->create(1)[0];
  for (JobState s :
       {JobState::kPending, JobState::kScheduled, JobState::kRunning, JobState::kSucceeded,
        JobState::kFailed, JobState::kCancelled, JobState::kPreempted}) {
    Job job = this->get(id);
    job.state = s;
    ASSERT_TRUE(this->store_->apply(WriteBatch{{job}, {}, {}, {}}).isOk());
    EXPECT_EQ(this->get(id).state, s) << jobStateName(s);
  }
}

TYPED_TEST(StoreConformanceTest, AttemptRoundTripsEveryField) {
  JobId id = this->create(1)[0];
  Attempt full = fullAttempt(id, 1);
  Attempt bare;
  bare.key = AttemptKey{id, 2};
  ASSERT_TRUE(this->store_->apply(WriteBatch{{}, {full, bare}, {}, {}}).isOk());
  Result<std::vector<Attempt>> got = this->store_->attempts(id);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0], full);
  EXPECT_EQ((*got)[1], bare);
  EXPECT_FALSE((*got)[1].exit_code.has_value());

  for (AttemptState s : {AttemptState::kLaunching, AttemptState::kRunning, AttemptState::kEnded}) {
    bare.state = s;
    ASSERT_TRUE(this->store_->apply(WriteBatch{{}, {bare}, {}, {}}).isOk());
    got = this->store_->attempts(id);
    ASSERT_TRUE(got.isOk());
    EXPECT_EQ(got->back().state, s);
  }
}

TYPED_TEST(StoreConformanceTest, AttemptsAreReplacedByKeyAndOrderedByNumber) {
  JobId id = this->create(1)[0];
  JobId other = this->create(1)[0];
  WriteBatch batch;
  for (int n : {3, 1, 2}) batch.attempts.push_back(fullAttempt(id, n));
  batch.attempts.push_back(fullAttempt(other, 1));
  ASSERT_TRUE(this->store_->apply(batch).isOk());

  Attempt replaced = fullAttempt(id, 2);
  replaced.state = AttemptState::kRunning;
  replaced.exit_code.reset();
  replaced.pids = {1, 2};
  ASSERT_TRUE(this->store_->apply(WriteBatch{{}, {replaced}, {}, {}}).isOk());

  Result<std::vector<Attempt>> got = this->store_->attempts(id);
  ASSERT_TRUE(got.isOk());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].key.number, 1);
  EXPECT_EQ((*got)[1], replaced);
  EXPECT_EQ((*got)[2].key.number, 3);
  Result<std::vector<Attempt>> others = this->store_->attempts(other);
  ASSERT_TRUE(others.isOk());
  EXPECT_EQ(others->size(), 1u);
  Result<std::vector<Attempt>> none = this->store_->attempts(this->create(1)[0]);
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->empty());
}

TYPED_TEST(StoreConformanceTest, AttemptNumbersStartAtOne) {
  JobId id = this->create(1)[0];
  Attempt a;
  a.key = AttemptKey{id, 0};
  EXPECT_EQ(this->store_->apply(WriteBatch{{}, {a}, {}, {}}).code(), StatusCode::kInvalidArgument);
}

TYPED_TEST(StoreConformanceTest, EventsRoundTripAndFollowSeq) {
  JobId a = this->create(1)[0];
  JobId b = this->create(1)[0];
  Event warn = event(a, "Exited", EventLevel::kWarning);
  warn.time = 1'700'000'000'999;
  warn.message = "exit code 1: 'quoted' \"text\"\nsecond line";
  WriteBatch batch;
  batch.events = {event(a, "Submitted"), event(b, "Submitted"), warn};
  ASSERT_TRUE(this->store_->apply(batch).isOk());
  ASSERT_TRUE(this->store_->apply(WriteBatch{{}, {}, {event(a, "Cleanup")}, {}}).isOk());

  Result<std::vector<Event>> all = this->store_->events(a);
  ASSERT_TRUE(all.isOk());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].reason, "Submitted");
  EXPECT_EQ((*all)[2].reason, "Cleanup");
  Event got = (*all)[1];
  EXPECT_GT(got.seq, (*all)[0].seq);
  EXPECT_GT((*all)[2].seq, got.seq);
  warn.seq = got.seq;
  EXPECT_EQ(got, warn);

  Result<std::vector<Event>> after = this->store_->events(a, (*all)[0].seq);
  ASSERT_TRUE(after.isOk());
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[0].seq, got.seq);
  after = this->store_->events(a, (*all)[2].seq);
  ASSERT_TRUE(after.isOk());
  EXPECT_TRUE(after->empty());
  Result<std::vector<Event>> of_b = this->store_->events(b);
  ASSERT_TRUE(of_b.isOk());
  ASSERT_EQ(of_b->size(), 1u);
  EXPECT_EQ((*of_b)[0].job, b);
}

TYPED_TEST(StoreConformanceTest, ApplyReplacesJobsAndAttemptsAndAppendsEvents) {
  std::vector<JobId> ids = this->create(2);
  Job a = this->get(ids[0]);
  Job b = this->get(ids[1]);
  a.state = JobState::kScheduled;
  a.attempts = 1;
  a.reason = "Placed on node-a";
  b.state = JobState::kCancelled;
  b.cancel_requested_at = 77;
  WriteBatch batch;
  batch.jobs = {a, b};
  batch.attempts = {fullAttempt(a.id, 1)};
  batch.events = {event(a.id, "Placed"), event(b.id, "Cancelled")};
  ASSERT_TRUE(this->store_->apply(batch).isOk());
  EXPECT_EQ(this->get(a.id), a);
  EXPECT_EQ(this->get(b.id), b);
  EXPECT_EQ(this->store_->attempts(a.id)->size(), 1u);
  EXPECT_EQ(this->store_->events(a.id)->size(), 1u);
  EXPECT_EQ(this->store_->events(b.id)->size(), 1u);
}

TYPED_TEST(StoreConformanceTest, FailedApplyWritesNothing) {
  JobId id = this->create(1)[0];
  Job before = this->get(id);
  Job changed = before;
  changed.state = JobState::kRunning;

  // The job update and attempt are fine; the event names a job that does not exist.
  WriteBatch batch;
  batch.jobs = {changed};
  batch.attempts = {fullAttempt(id, 1)};
  batch.events = {event(id, "Started"), event(JobId(id.value() + 100), "Started")};
  EXPECT_EQ(this->store_->apply(batch).code(), StatusCode::kNotFound);
  EXPECT_EQ(this->get(id), before);
  EXPECT_TRUE(this->store_->attempts(id)->empty());
  EXPECT_TRUE(this->store_->events(id)->empty());

  // An unknown job to replace.
  Job ghost = changed;
  ghost.id = JobId(id.value() + 100);
  batch = WriteBatch{{changed, ghost}, {fullAttempt(id, 1)}, {event(id, "Started")}, {}};
  EXPECT_EQ(this->store_->apply(batch).code(), StatusCode::kNotFound);
  EXPECT_EQ(this->get(id), before);
  EXPECT_TRUE(this->store_->attempts(id)->empty());
  EXPECT_TRUE(this->store_->events(id)->empty());

  // An attempt of an unknown job.
  batch = WriteBatch{{changed}, {fullAttempt(ghost.id, 1)}, {}, {}};
  EXPECT_EQ(this->store_->apply(batch).code(), StatusCode::kNotFound);
  EXPECT_EQ(this->get(id), before);

  // Seqs after a failed batch still increase.
  ASSERT_TRUE(this->store_->apply(WriteBatch{{}, {}, {event(id, "A"), event(id, "B")}, {}}).isOk());
  Result<std::vector<Event>> events = this->store_->events(id);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_LT((*events)[0].seq, (*events)[1].seq);
}

TYPED_TEST(StoreConformanceTest, ListIsNewestFirstAndPages) {
  std::vector<JobId> ids = this->create(7);
  JobQuery q;
  q.limit = 3;
  std::int64_t next = -1;
  EXPECT_EQ(this->listIds(q, &next),
            (std::vector<std::int64_t>{ids[6].value(), ids[5].value(), ids[4].value()}));
  EXPECT_EQ(next, ids[4].value());
  q.before_id = next;
  EXPECT_EQ(this->listIds(q, &next),
            (std::vector<std::int64_t>{ids[3].value(), ids[2].value(), ids[1].value()}));
  EXPECT_EQ(next, ids[1].value());
  q.before_id = next;
  EXPECT_EQ(this->listIds(q, &next), (std::vector<std::int64_t>{ids[0].value()}));
  EXPECT_EQ(next, 0);

  // A page that ends exactly at the last job says there is no more.
  q.before_id = ids[3].value();
  EXPECT_EQ(this->listIds(q, &next).size(), 3u);
  EXPECT_EQ(next, 0);
  // Full jobs come back, not just ids.
  Result<JobPage> page = this->store_->listJobs(JobQuery{});
  ASSERT_TRUE(page.isOk());
  ASSERT_EQ(page->jobs.size(), 7u);
  EXPECT_EQ(page->jobs[0], this->get(ids[6]));
  EXPECT_EQ(page->next_before, 0);
}

TYPED_TEST(StoreConformanceTest, ListOfEmptyStoreIsEmpty) {
  std::int64_t next = -1;
  EXPECT_TRUE(this->listIds(JobQuery{}, &next).empty());
  EXPECT_EQ(next, 0);
}

TYPED_TEST(StoreConformanceTest, ListFilters) {
  JobId a1 = this->create(1, "vision", "alice")[0];
  JobId b1 = this->create(1, "nlp", "bob")[0];
  JobId a2 = this->create(1, "nlp", "alice")[0];
  JobId b2 = this->create(1, "vision", "bob")[0];
  JobId a3 = this->create(1, "vision", "alice")[0];
  Job done = this->get(a2);
  done.state = JobState::kFailed;
  ASSERT_TRUE(this->store_->apply(WriteBatch{{done}, {}, {}, {}}).isOk());

  auto ids = [](std::initializer_list<JobId> l) {
    std::vector<std::int64_t> out;
    for (JobId id : l) out.push_back(id.value());
    return out;
  };
  JobQuery q;
  q.project = "vision";
  EXPECT_EQ(this->listIds(q), ids({a3, b2, a1}));
  q = JobQuery{};
  q.user = "alice";
  EXPECT_EQ(this->listIds(q), ids({a3, a2, a1}));
  q = JobQuery{};
  q.state = JobState::kFailed;
  EXPECT_EQ(this->listIds(q), ids({a2}));
  q = JobQuery{};
  q.state = JobState::kPending;
  q.user = "bob";
  EXPECT_EQ(this->listIds(q), ids({b2, b1}));
  q = JobQuery{};
  q.project = "vision";
  q.user = "alice";
  q.state = JobState::kPending;
  EXPECT_EQ(this->listIds(q), ids({a3, a1}));
  q.project = "nowhere";
  EXPECT_TRUE(this->listIds(q).empty());

  // Within a set of projects: what a caller who may read only those sees.
  q = JobQuery{};
  q.within_projects = std::vector<std::string>{"vision", "nowhere"};
  q.user = "bob";
  EXPECT_EQ(this->listIds(q), ids({b2}));
  q.within_projects = std::vector<std::string>{};
  EXPECT_TRUE(this->listIds(q).empty());

  // Paging through a filter.
  q = JobQuery{};
  q.project = "vision";
  q.limit = 2;
  std::int64_t next = 0;
  EXPECT_EQ(this->listIds(q, &next), ids({a3, b2}));
  EXPECT_EQ(next, b2.value());
  q.before_id = next;
  EXPECT_EQ(this->listIds(q, &next), ids({a1}));
  EXPECT_EQ(next, 0);
}

TYPED_TEST(StoreConformanceTest, ListByQueueFollowsTheSchedulersRule) {
  auto make = [&](const std::string& project, const std::string& queue) {
    JobId id = this->create(1, project)[0];
    Job j = this->get(id);
    j.spec.queue = queue;
    EXPECT_TRUE(this->store_->apply(WriteBatch{{j}, {}, {}, {}}).isOk());
    return id.value();
  };
  const std::int64_t named = make("vision", "vision-batch");
  const std::int64_t unnamed = make("vision", "");
  const std::int64_t gone = make("vision", "deleted-queue");
  const std::int64_t other_named = make("nlp", "vision");
  const std::int64_t nlp = make("nlp", "");
  const std::int64_t orphan = make("speech", "");

  auto queue = [](const std::string& name, const std::string& project) {
    QueueConfig q;
    q.name = name;
    q.project = project;
    return q;
  };
  // vision's first queue is "vision"; vision-batch is its second.
  const std::vector<QueueConfig> queues = {queue("vision", "vision"),
                                           queue("vision-batch", "vision"), queue("nlp", "nlp")};
  JobQuery q;
  q.queue = JobQuery::QueueFilter{"vision", queues};
  EXPECT_EQ(this->listIds(q), (std::vector<std::int64_t>{other_named, gone, unnamed}));
  q.queue->name = "vision-batch";
  EXPECT_EQ(this->listIds(q), (std::vector<std::int64_t>{named}));
  q.queue->name = "nlp";
  EXPECT_EQ(this->listIds(q), (std::vector<std::int64_t>{nlp}));
  q.queue->name = "speech";  // no such queue: the speech job is in none
  EXPECT_TRUE(this->listIds(q).empty());
  (void)orphan;

  // With the other filters and paging.
  q.queue->name = "vision";
  q.project = "vision";
  q.limit = 1;
  std::int64_t next = 0;
  EXPECT_EQ(this->listIds(q, &next), (std::vector<std::int64_t>{gone}));
  q.before_id = next;
  EXPECT_EQ(this->listIds(q, &next), (std::vector<std::int64_t>{unnamed}));
  EXPECT_EQ(next, 0);
}

TYPED_TEST(StoreConformanceTest, CountsActiveJobsAndThoseFinishedSince) {
  std::vector<JobId> vision = this->create(6, "vision");
  std::vector<JobId> nlp = this->create(2, "nlp");
  auto set = [&](JobId id, JobState state, Timestamp finished_at) {
    Job j = this->get(id);
    j.state = state;
    j.finished_at = finished_at;
    ASSERT_TRUE(this->store_->apply(WriteBatch{{j}, {}, {}, {}}).isOk());
  };
  set(vision[0], JobState::kRunning, 0);
  set(vision[1], JobState::kSucceeded, 5000);
  set(vision[2], JobState::kSucceeded, 4999);  // before `since`: not counted
  set(vision[3], JobState::kFailed, 6000);
  set(vision[4], JobState::kCancelled, 5000);
  set(nlp[0], JobState::kFailed, 7000);
  // vision[5] and nlp[1] stay pending.

  JobCountQuery q;
  q.finished_since = 5000;
  auto counts = this->store_->countJobs(q);
  ASSERT_TRUE(counts.isOk()) << counts.status().toString();
  EXPECT_EQ(*counts, (std::map<JobState, std::int64_t>{{JobState::kPending, 2},
                                                       {JobState::kRunning, 1},
                                                       {JobState::kSucceeded, 1},
                                                       {JobState::kFailed, 2},
                                                       {JobState::kCancelled, 1}}));
  q.project = "vision";
  EXPECT_EQ(this->store_->countJobs(q).value(),
            (std::map<JobState, std::int64_t>{{JobState::kPending, 1},
                                              {JobState::kRunning, 1},
                                              {JobState::kSucceeded, 1},
                                              {JobState::kFailed, 1},
                                              {JobState::kCancelled, 1}}));
  q.project.clear();
  q.within_projects = std::vector<std::string>{"nlp", "nowhere"};
  EXPECT_EQ(this->store_->countJobs(q).value(),
            (std::map<JobState, std::int64_t>{{JobState::kPending, 1}, {JobState::kFailed, 1}}));
  q.within_projects = std::vector<std::string>{};
  EXPECT_TRUE(this->store_->countJobs(q).value().empty());
  // Active jobs count whenever they started; finished ones only since.
  q = JobCountQuery{};
  q.finished_since = 100'000;
  EXPECT_EQ(this->store_->countJobs(q).value(),
            (std::map<JobState, std::int64_t>{{JobState::kPending, 2}, {JobState::kRunning, 1}}));
}

TYPED_TEST(StoreConformanceTest, ListLimitBounds) {
  this->create(2);
  for (int bad : {0, -1, 1001}) {
    JobQuery q;
    q.limit = bad;
    Result<JobPage> page = this->store_->listJobs(q);
    EXPECT_EQ(page.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(page.status().field(), "limit");
  }
  JobQuery q;
  q.before_id = -5;
  EXPECT_EQ(this->store_->listJobs(q).status().code(), StatusCode::kInvalidArgument);
  for (int good : {1, 1000}) {
    JobQuery ok;
    ok.limit = good;
    EXPECT_TRUE(this->store_->listJobs(ok).isOk()) << good;
  }
}

TYPED_TEST(StoreConformanceTest, ActiveJobsAreNonTerminalOldestFirst) {
  std::vector<JobId> ids = this->create(7);
  const JobState states[] = {JobState::kRunning,  JobState::kSucceeded, JobState::kPending,
                             JobState::kFailed,   JobState::kScheduled, JobState::kCancelled,
                             JobState::kPreempted};
  WriteBatch batch;
  std::vector<std::int64_t> expected;
  for (size_t i = 0; i < ids.size(); ++i) {
    Job job = this->get(ids[i]);
    job.state = states[i];
    batch.jobs.push_back(job);
    if (!isTerminal(states[i])) expected.push_back(ids[i].value());
  }
  ASSERT_TRUE(this->store_->apply(batch).isOk());
  Result<std::vector<Job>> active = this->store_->activeJobs();
  ASSERT_TRUE(active.isOk()) << active.status().toString();
  std::vector<std::int64_t> got;
  for (const Job& j : *active) got.push_back(j.id.value());
  EXPECT_EQ(got, expected);
  EXPECT_EQ(active->front(), this->get(ids[0]));
}

TYPED_TEST(StoreConformanceTest, QueueUsageIsReplacedByQueueAndWrittenWithTheBatch) {
  EXPECT_TRUE(this->store_->queueUsage()->empty());
  WriteBatch batch;
  batch.usage = {{"vision", 3.6e6, 7.2e6, 1.5e5, 1000}, {"nlp", 0.5, 0, 0, 1000}};
  ASSERT_TRUE(this->store_->apply(batch).isOk());
  batch.usage = {{"vision", 1.8e6, 3.6e6, 0.75e5, 2000}};
  ASSERT_TRUE(this->store_->apply(batch).isOk());
  std::vector<QueueUsage> want = {{"nlp", 0.5, 0, 0, 1000}, {"vision", 1.8e6, 3.6e6, 0.75e5, 2000}};
  EXPECT_EQ(this->store_->queueUsage().value(), want);

  // A batch that fails writes no usage either.
  JobId id = this->create(1)[0];
  batch.usage = {{"vision", 1, 1, 1, 3000}};
  batch.events = {event(JobId(id.value() + 100), "Started")};
  EXPECT_FALSE(this->store_->apply(batch).isOk());
  EXPECT_EQ(this->store_->queueUsage().value(), want);
}

// Queues as the tests write them: one GPU quota each, with every optional
// field set on the first.
QueueConfig testQueue(const std::string& name, std::int64_t gpus) {
  QueueConfig q;
  q.name = name;
  q.project = name;
  q.quotas["gpu"] = Quota::units(gpus);
  return q;
}

std::vector<std::string> queueNames(const std::vector<QueueConfig>& queues) {
  std::vector<std::string> out;
  for (const auto& q : queues) out.push_back(q.name);
  return out;
}

TYPED_TEST(StoreConformanceTest, QueueRoundTripsEveryField) {
  EXPECT_TRUE(this->store_->listQueues()->empty());
  QueueConfig q;
  q.name = "nlp";
  q.project = "language";
  q.cohort = "lab";
  q.weight = 2.5;
  q.quotas["gpu"] = Quota::units(8, 4, 6);
  q.quotas["gpu:A100"] = Quota{500, 0, std::nullopt};
  q.quotas["cpu"] = Quota{64'250, std::nullopt, std::nullopt};
  q.quotas["memory"] = Quota{(512LL << 30) + 1, std::nullopt, 1LL << 30};
  ASSERT_TRUE(this->store_->putQueue(q).isOk());
  auto listed = this->store_->listQueues();
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  ASSERT_EQ(listed->size(), 1u);
  // The codec's form is exact, so equal JSON is equal queues.
  EXPECT_EQ(queueToJson((*listed)[0]), queueToJson(q));
}

TYPED_TEST(StoreConformanceTest, QueuesAreReplacedWholeAndKeepTheOrderTheyWereAddedIn) {
  Store& store = *this->store_;
  for (const char* name : {"vision", "nlp", "default"}) {
    ASSERT_TRUE(store.putQueue(testQueue(name, 4)).isOk());
  }
  QueueConfig nlp = testQueue("nlp", 16);
  nlp.cohort = "lab";
  ASSERT_TRUE(store.putQueue(nlp).isOk());
  auto listed = store.listQueues().value();
  EXPECT_EQ(queueNames(listed), (std::vector<std::string>{"vision", "nlp", "default"}));
  EXPECT_EQ(queueToJson(listed[1]), queueToJson(nlp));

  // Replacing drops what the new config leaves out.
  QueueConfig bare = testQueue("nlp", 0);
  bare.quotas.clear();
  ASSERT_TRUE(store.putQueue(bare).isOk());
  EXPECT_TRUE(store.listQueues().value()[1].quotas.empty());

  ASSERT_TRUE(store.deleteQueue("vision").isOk());
  ASSERT_TRUE(store.putQueue(testQueue("vision", 2)).isOk());
  EXPECT_EQ(queueNames(store.listQueues().value()),
            (std::vector<std::string>{"nlp", "default", "vision"}));
}

TYPED_TEST(StoreConformanceTest, DeletingAnUnknownQueueIsNotFound) {
  Status st = this->store_->deleteQueue("speech");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), queueNotFoundMessage("speech"));
  ASSERT_TRUE(this->store_->putQueue(testQueue("speech", 1)).isOk());
  ASSERT_TRUE(this->store_->deleteQueue("speech").isOk());
  EXPECT_EQ(this->store_->deleteQueue("speech").code(), StatusCode::kNotFound);
  EXPECT_TRUE(this->store_->listQueues()->empty());
}

TYPED_TEST(StoreConformanceTest, QueuesAreCheckedBeforeTheyAreStored) {
  QueueConfig bad = testQueue("Vision", 1);
  EXPECT_EQ(this->store_->putQueue(bad).field(), "name");
  bad = testQueue("vision", 1);
  bad.quotas["gpu"].lending_limit = 2000;
  Status st = this->store_->putQueue(bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.field(), "quota.gpu.lending_limit");
  EXPECT_TRUE(this->store_->listQueues()->empty());
}

TYPED_TEST(StoreConformanceTest, Healthy) { EXPECT_TRUE(this->store_->healthy()); }

TYPED_TEST(StoreConformanceTest, ConcurrentWritersAndReaders) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 25;
  std::atomic<bool> failed = false;
  std::vector<std::thread> threads;
  std::vector<std::vector<JobId>> created(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        std::vector<Job> jobs(1);
        jobs[0].spec.command = {"true"};
        jobs[0].user = "u" + std::to_string(t);
        if (!this->store_->createJobs(jobs, {{event(JobId(0), "Submitted")}}).isOk()) {
          failed = true;
        }
        created[t].push_back(jobs[0].id);
        Job job = jobs[0];
        job.state = JobState::kRunning;
        WriteBatch batch{{job}, {fullAttempt(job.id, 1)}, {event(job.id, "Started")}, {}};
        if (!this->store_->apply(batch).isOk()) failed = true;
        if (!this->store_->getJob(job.id).isOk()) failed = true;
        if (!this->store_->listJobs(JobQuery{}).isOk()) failed = true;
        if (!this->store_->activeJobs().isOk()) failed = true;
        Result<std::vector<Event>> events = this->store_->events(job.id);
        if (!events.isOk() || events->size() != 2) failed = true;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(failed);
  std::set<JobId> unique;
  for (const auto& ids : created) unique.insert(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(kThreads * kRounds));
  Result<std::vector<Job>> active = this->store_->activeJobs();
  ASSERT_TRUE(active.isOk());
  EXPECT_EQ(active->size(), static_cast<size_t>(kThreads * kRounds));
}

// --- Identity: users, projects, memberships, tokens, audit ------------------

User fullUser(const std::string& name) {
  User u;
  u.name = name;
  u.password_hash = "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA";
  u.is_admin = true;
  u.created_at = 1'700'000'000'000;
  u.disabled = true;
  u.failed_logins = 4;
  u.locked_until = 1'700'000'900'000;
  return u;
}

ApiToken newToken(const std::string& user, const std::string& hash,
                  const std::string& project = "") {
  ApiToken t;
  t.user = user;
  t.name = "laptop";
  t.hash = hash;
  t.prefix = hash.substr(0, 4);
  t.project = project;
  t.created_at = 1000;
  return t;
}

AuditRecord audit(const std::string& user, int i) {
  AuditRecord r;
  r.at = 5000 + i;
  r.user = user;
  r.address = "10.0.0." + std::to_string(i);
  r.method = "POST";
  r.path = "/v1/jobs";
  r.status = 201;
  r.detail = "submit " + std::to_string(i);
  return r;
}

TYPED_TEST(StoreConformanceTest, UserRoundTripsEveryField) {
  Store& s = *this->store_;
  User u = fullUser("alice.b-c_9");
  ASSERT_TRUE(s.createUser(u).isOk());
  Result<User> got = s.getUser(u.name);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(*got, u);
  User plain;
  plain.name = "bob";  // no password yet
  ASSERT_TRUE(s.createUser(plain).isOk());
  EXPECT_EQ(s.getUser("bob").value(), plain);
}

TYPED_TEST(StoreConformanceTest, DuplicateUserIsAlreadyExists) {
  Store& s = *this->store_;
  ASSERT_TRUE(s.createUser(fullUser("alice")).isOk());
  User again;
  again.name = "alice";
  Status st = s.createUser(again);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(st.message().find("name"), std::string::npos) << st.toString();
  EXPECT_EQ(s.getUser("alice").value(), fullUser("alice"));  // the first one stays
}

TYPED_TEST(StoreConformanceTest, UserNamesAreChecked) {
  Store& s = *this->store_;
  for (std::string bad : {std::string(), std::string("Alice"), std::string("a b"),
                          std::string("a/b"), std::string(65, 'a'), std::string("al'ice")}) {
    User u;
    u.name = bad;
    Status st = s.createUser(u);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(st.field(), "name") << bad;
  }
  User longest;
  longest.name = std::string(64, 'z');
  EXPECT_TRUE(s.createUser(longest).isOk());
  EXPECT_EQ(s.listUsers().value().size(), 1u);
}

TYPED_TEST(StoreConformanceTest, UnknownUserIsNotFound) {
  EXPECT_EQ(this->store_->getUser("nobody").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store_->updateUser("nobody", UserChange{}).code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreConformanceTest, UsersAreListedByNameAndUpdatedByField) {
  Store& s = *this->store_;
  for (const char* name : {"carol", "alice", "bob"}) {
    User u;
    u.name = name;
    ASSERT_TRUE(s.createUser(u).isOk());
  }
  std::vector<User> users = s.listUsers().value();
  ASSERT_EQ(users.size(), 3u);
  EXPECT_EQ(users[0].name, "alice");
  EXPECT_EQ(users[1].name, "bob");
  EXPECT_EQ(users[2].name, "carol");

  // Each change touches only its fields.
  UserChange lock;
  lock.locked_until = 500;
  ASSERT_TRUE(s.updateUser("bob", lock).isOk());
  UserChange flags;
  flags.disabled = true;
  ASSERT_TRUE(s.updateUser("bob", flags).isOk());
  User bob = s.getUser("bob").value();
  EXPECT_EQ(bob.locked_until, 500);
  EXPECT_TRUE(bob.disabled);
  // A new password lifts the lock and keeps the rest.
  UserChange pw;
  pw.password_hash = "$argon2id$new";
  ASSERT_TRUE(s.updateUser("bob", pw).isOk());
  bob = s.getUser("bob").value();
  EXPECT_EQ(bob.password_hash, "$argon2id$new");
  EXPECT_EQ(bob.locked_until, 0);
  EXPECT_TRUE(bob.disabled);
  // A conditional change applies only over the hash it expects.
  UserChange stale;
  stale.password_hash = "$argon2id$other";
  stale.if_password_hash = "$argon2id$old";
  EXPECT_EQ(s.updateUser("bob", stale).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.getUser("bob").value().password_hash, "$argon2id$new");
  stale.if_password_hash = "$argon2id$new";
  EXPECT_TRUE(s.updateUser("bob", stale).isOk());
  EXPECT_EQ(s.getUser("alice").value().failed_logins, 0);
}

TYPED_TEST(StoreConformanceTest, TheLastEnabledAdminStays) {
  Store& s = *this->store_;
  for (const char* name : {"root", "ops"}) {
    User u;
    u.name = name;
    u.is_admin = true;
    ASSERT_TRUE(s.createUser(u).isOk());
  }
  UserChange demote;
  demote.is_admin = false;
  ASSERT_TRUE(s.updateUser("ops", demote).isOk());
  EXPECT_EQ(s.updateUser("root", demote).code(), StatusCode::kFailedPrecondition);
  UserChange disable;
  disable.disabled = true;
  EXPECT_EQ(s.updateUser("root", disable).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(s.getUser("root").value().is_admin);
  EXPECT_FALSE(s.getUser("root").value().disabled);
}

// --- Webhooks ------------------------------------------------------------------

TYPED_TEST(StoreConformanceTest, ProjectWebhookIsSetReadAndCleared) {
  Store& s = *this->store_;
  ASSERT_TRUE(s.createProject({"vision", 10}).isOk());
  EXPECT_EQ(s.getProject("vision").value().webhook_url, "");
  ASSERT_TRUE(s.setProjectWebhook("vision", "https://hooks.example.org/v").isOk());
  EXPECT_EQ(s.getProject("vision").value(), (Project{"vision", 10, "https://hooks.example.org/v"}));
  EXPECT_EQ(s.listProjects().value()[0].webhook_url, "https://hooks.example.org/v");
  ASSERT_TRUE(s.setProjectWebhook("vision", "").isOk());
  EXPECT_EQ(s.getProject("vision").value().webhook_url, "");
  EXPECT_EQ(s.setProjectWebhook("audio", "http://x/").code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreConformanceTest, JobsAwaitingWebhookAreFinishedWithAUrlAndNoDelivery) {
  Store& s = *this->store_;
  ASSERT_TRUE(s.createProject({"hooked", 1}).isOk());
  ASSERT_TRUE(s.createProject({"quiet", 1}).isOk());
  ASSERT_TRUE(s.setProjectWebhook("hooked", "http://project.example/").isOk());
  // Four jobs in "quiet" (one with its own webhook), one in "hooked".
  std::vector<JobId> quiet = this->create(4, "quiet");
  JobId project_hooked = this->create(1, "hooked")[0];
  auto finish = [&](JobId id, JobState state, Timestamp at, std::string url = "") {
    Job j = this->get(id);
    j.state = state;
    j.finished_at = at;
    j.spec.notify.webhook = std::move(url);
    WriteBatch b;
    b.jobs.push_back(j);
    ASSERT_TRUE(s.apply(b).isOk());
  };
  finish(quiet[0], JobState::kFailed, 5000, "https://job.example/x");
  finish(quiet[1], JobState::kSucceeded, 5000);                          // no URL anywhere
  finish(quiet[2], JobState::kFailed, 1000, "https://job.example/old");  // before the window
  Job running = this->get(quiet[3]);
  running.state = JobState::kRunning;
  running.spec.notify.webhook = "https://job.example/running";
  WriteBatch b;
  b.jobs.push_back(running);
  ASSERT_TRUE(s.apply(b).isOk());
  finish(project_hooked, JobState::kCancelled, 4000);

  auto ids = [&]() {
    Result<std::vector<Job>> jobs = s.jobsAwaitingWebhook(2000, 100);
    EXPECT_TRUE(jobs.isOk()) << jobs.status().toString();
    std::vector<JobId> out;
    if (!jobs.isOk()) return out;
    for (const Job& j : *jobs) out.push_back(j.id);
    return out;
  };
  // By finished_at: the project-hooked job finished first.
  EXPECT_EQ(ids(), (std::vector<JobId>{project_hooked, quiet[0]}));
  EXPECT_EQ(s.jobsAwaitingWebhook(2000, 1).value().size(), 1u);
  EXPECT_EQ(s.jobsAwaitingWebhook(2000, 0).status().code(), StatusCode::kInvalidArgument);

  // A delivery row takes the job out of the scan.
  WebhookDelivery d;
  d.job = quiet[0];
  d.url = "https://job.example/x";
  d.event = "job.failed";
  d.created_at = d.next_attempt_at = 5000;
  ASSERT_TRUE(s.addWebhookDeliveries({d}, 6000).isOk());
  EXPECT_EQ(ids(), (std::vector<JobId>{project_hooked}));
  EXPECT_EQ(s.webhookWatermark().value(), 6000);
}

TYPED_TEST(StoreConformanceTest, WebhookDeliveriesAreIdempotentDueAndUpdated) {
  Store& s = *this->store_;
  EXPECT_EQ(s.webhookWatermark().value(), 0);
  std::vector<JobId> jobs = this->create(2);
  WebhookDelivery a;
  a.job = jobs[0];
  a.url = "https://a.example/";
  a.event = "job.failed";
  a.created_at = 100;
  a.next_attempt_at = 100;
  WebhookDelivery b = a;
  b.job = jobs[1];
  b.next_attempt_at = 50;
  ASSERT_TRUE(s.addWebhookDeliveries({a, b}, 100).isOk());
  // The same (job, url) again keeps the first row.
  WebhookDelivery again = a;
  again.event = "job.succeeded";
  ASSERT_TRUE(s.addWebhookDeliveries({again}, 200).isOk());
  std::vector<WebhookDelivery> of_a = s.webhookDeliveries(jobs[0]).value();
  ASSERT_EQ(of_a.size(), 1u);
  EXPECT_GT(of_a[0].id, 0);
  EXPECT_EQ(of_a[0].event, "job.failed");
  EXPECT_EQ(s.webhookWatermark().value(), 200);

  // Due: by next attempt time.
  std::vector<WebhookDelivery> due = s.dueWebhookDeliveries(100, 10).value();
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].job, jobs[1]);
  EXPECT_EQ(due[1], of_a[0]);
  EXPECT_EQ(s.dueWebhookDeliveries(60, 10).value().size(), 1u);

  // A failed attempt moves the next one; the delivered one leaves the due
  // list, and its event lands in the job's timeline with it.
  WebhookDelivery tried = of_a[0];
  tried.attempts = 1;
  tried.next_attempt_at = 5000;
  tried.last_error = "HTTP 500";
  ASSERT_TRUE(s.updateWebhookDelivery(tried, {}).isOk());
  EXPECT_EQ(s.webhookDeliveries(jobs[0]).value()[0], tried);
  EXPECT_EQ(s.dueWebhookDeliveries(100, 10).value().size(), 1u);
  WebhookDelivery done = s.dueWebhookDeliveries(100, 10).value()[0];
  done.attempts = 1;
  done.delivered_at = 120;
  Event e;
  e.job = done.job;
  e.time = 120;
  e.reason = "WebhookDelivered";
  e.message = "Webhook delivered to https://a.example/ after 1 attempt";
  ASSERT_TRUE(s.updateWebhookDelivery(done, {e}).isOk());
  EXPECT_FALSE(s.webhookDeliveries(jobs[1]).value()[0].pending());
  ASSERT_EQ(s.events(jobs[1]).value().size(), 1u);
  EXPECT_EQ(s.events(jobs[1]).value()[0].reason, "WebhookDelivered");
  EXPECT_TRUE(s.dueWebhookDeliveries(100, 10).value().empty());
  EXPECT_EQ(s.dueWebhookDeliveries(5000, 10).value().size(), 1u);

  WebhookDelivery missing = done;
  missing.id = 999;
  EXPECT_EQ(s.updateWebhookDelivery(missing, {}).code(), StatusCode::kNotFound);
  WebhookDelivery orphan = a;
  orphan.job = JobId(jobs[1].value() + 100);
  EXPECT_EQ(s.addWebhookDeliveries({orphan}, 300).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.webhookWatermark().value(), 200);  // the refused call recorded nothing
}

TYPED_TEST(StoreConformanceTest, ProjectsAreCreatedListedAndUnique) {
  Store& s = *this->store_;
  ASSERT_TRUE(s.createProject({"vision", 10}).isOk());
  ASSERT_TRUE(s.createProject({"nlp", 20}).isOk());
  Status dup = s.createProject({"vision", 30});
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(dup.message().find("name"), std::string::npos) << dup.toString();
  EXPECT_EQ(s.createProject({"Bad Name", 1}).code(), StatusCode::kInvalidArgument);
  std::vector<Project> all = s.listProjects().value();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], (Project{"nlp", 20}));
  EXPECT_EQ(all[1], (Project{"vision", 10}));
  EXPECT_EQ(s.getProject("vision").value(), (Project{"vision", 10}));
  EXPECT_EQ(s.getProject("audio").status().code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreConformanceTest, MembershipsArePutReplacedListedAndRemoved) {
  Store& s = *this->store_;
  for (const char* name : {"alice", "bob"}) {
    User u;
    u.name = name;
    ASSERT_TRUE(s.createUser(u).isOk());
  }
  ASSERT_TRUE(s.createProject({"vision", 1}).isOk());
  ASSERT_TRUE(s.createProject({"nlp", 1}).isOk());
  ASSERT_TRUE(s.putMembership({"alice", "vision", "viewer"}).isOk());
  ASSERT_TRUE(s.putMembership({"alice", "nlp", "admin"}).isOk());
  ASSERT_TRUE(s.putMembership({"bob", "vision", "member"}).isOk());
  ASSERT_TRUE(s.putMembership({"alice", "vision", "member"}).isOk());  // replaces viewer

  EXPECT_EQ(s.membershipsOfUser("alice").value(),
            (std::vector<Membership>{{"alice", "nlp", "admin"}, {"alice", "vision", "member"}}));
  EXPECT_EQ(s.membershipsOfProject("vision").value(),
            (std::vector<Membership>{{"alice", "vision", "member"}, {"bob", "vision", "member"}}));
  EXPECT_TRUE(s.membershipsOfUser("nobody").value().empty());

  EXPECT_EQ(s.putMembership({"carol", "vision", "member"}).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.putMembership({"alice", "audio", "member"}).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.putMembership({"alice", "vision", ""}).code(), StatusCode::kInvalidArgument);

  ASSERT_TRUE(s.removeMembership("alice", "vision").isOk());
  EXPECT_EQ(s.removeMembership("alice", "vision").code(), StatusCode::kNotFound);
  EXPECT_EQ(s.membershipsOfUser("alice").value(),
            (std::vector<Membership>{{"alice", "nlp", "admin"}}));
}

TYPED_TEST(StoreConformanceTest, DeletingAProjectRemovesItsMembershipsAndScopedTokens) {
  Store& s = *this->store_;
  User u;
  u.name = "alice";
  ASSERT_TRUE(s.createUser(u).isOk());
  ASSERT_TRUE(s.createProject({"vision", 1}).isOk());
  ASSERT_TRUE(s.createProject({"nlp", 1}).isOk());
  ASSERT_TRUE(s.putMembership({"alice", "vision", "member"}).isOk());
  ASSERT_TRUE(s.putMembership({"alice", "nlp", "member"}).isOk());
  ApiToken scoped = s.createToken(newToken("alice", "aa01", "vision")).value();
  ApiToken other = s.createToken(newToken("alice", "bb02", "nlp")).value();
  ApiToken global = s.createToken(newToken("alice", "cc03")).value();

  ASSERT_TRUE(s.deleteProject("vision", 7000).isOk());
  EXPECT_EQ(s.getProject("vision").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.membershipsOfUser("alice").value(),
            (std::vector<Membership>{{"alice", "nlp", "member"}}));
  EXPECT_TRUE(s.membershipsOfProject("vision").value().empty());
  EXPECT_FALSE(s.findTokenByHash("aa01", 7001).value().has_value());
  EXPECT_TRUE(s.findTokenByHash("bb02", 7001).value().has_value());
  EXPECT_TRUE(s.findTokenByHash("cc03", 7001).value().has_value());
  std::vector<ApiToken> tokens = s.tokensOfUser("alice").value();
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].id, scoped.id);
  EXPECT_EQ(tokens[0].revoked_at, 7000);
  EXPECT_EQ(tokens[1], other);
  EXPECT_EQ(tokens[2], global);

  EXPECT_EQ(s.deleteProject("vision", 8000).code(), StatusCode::kNotFound);
  // A new project of the same name starts with nobody in it.
  ASSERT_TRUE(s.createProject({"vision", 9000}).isOk());
  EXPECT_TRUE(s.membershipsOfProject("vision").value().empty());
}

TYPED_TEST(StoreConformanceTest, TokenRoundTripsAndIsFoundByHash) {
  Store& s = *this->store_;
  User u;
  u.name = "alice";
  ASSERT_TRUE(s.createUser(u).isOk());
  ASSERT_TRUE(s.createProject({"vision", 1}).isOk());
  ApiToken t = newToken("alice", "9f86d081884c7d65", "vision");
  t.expires_at = 50'000;
  t.id = 99;           // ignored
  t.revoked_at = 5;    // ignored: a new token is live
  t.last_used_at = 6;  // ignored: and unused
  Result<ApiToken> created = s.createToken(t);
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  EXPECT_GT(created->id, 0);
  ApiToken want = t;
  want.id = created->id;
  want.revoked_at = 0;
  want.last_used_at = 0;
  EXPECT_EQ(*created, want);

  Result<std::optional<ApiToken>> found = s.findTokenByHash("9f86d081884c7d65", 2000);
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(**found, want);
  EXPECT_FALSE(s.findTokenByHash("0000", 2000).value().has_value());
  EXPECT_FALSE(s.findTokenByHash("", 2000).value().has_value());

  ApiToken second = s.createToken(newToken("alice", "abcdef")).value();
  EXPECT_GT(second.id, created->id);
  EXPECT_EQ(s.tokensOfUser("alice").value(), (std::vector<ApiToken>{want, second}));
  EXPECT_TRUE(s.tokensOfUser("bob").value().empty());
}

TYPED_TEST(StoreConformanceTest, TokenCreationIsChecked) {
  Store& s = *this->store_;
  User u;
  u.name = "alice";
  ASSERT_TRUE(s.createUser(u).isOk());
  ASSERT_TRUE(s.createToken(newToken("alice", "aa")).isOk());
  Status dup = s.createToken(newToken("alice", "aa")).status();
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(dup.message().find("hash"), std::string::npos) << dup.toString();
  EXPECT_EQ(s.createToken(newToken("bob", "bb")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.createToken(newToken("alice", "cc", "nowhere")).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(s.createToken(newToken("alice", "")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.tokensOfUser("alice").value().size(), 1u);
}

TYPED_TEST(StoreConformanceTest, RevokedAndExpiredTokensAreNotFoundByHash) {
  Store& s = *this->store_;
  User u;
  u.name = "alice";
  ASSERT_TRUE(s.createUser(u).isOk());
  ApiToken expiring = newToken("alice", "exp");
  expiring.expires_at = 10'000;
  expiring = s.createToken(expiring).value();
  ApiToken revoked = s.createToken(newToken("alice", "rev")).value();

  EXPECT_TRUE(s.findTokenByHash("exp", 9'999).value().has_value());
  EXPECT_FALSE(s.findTokenByHash("exp", 10'000).value().has_value());  // expiry is exclusive
  EXPECT_FALSE(s.findTokenByHash("exp", 20'000).value().has_value());

  EXPECT_TRUE(s.findTokenByHash("rev", 3000).value().has_value());
  // Only the owner's name finds the token to revoke.
  EXPECT_EQ(s.revokeToken("mallory", revoked.id, 3000).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.revokeToken("alice", revoked.id + 100, 3000).code(), StatusCode::kNotFound);
  EXPECT_TRUE(s.findTokenByHash("rev", 3000).value().has_value());
  ASSERT_TRUE(s.revokeToken("alice", revoked.id, 3000).isOk());
  EXPECT_FALSE(s.findTokenByHash("rev", 3000).value().has_value());
  ASSERT_TRUE(s.revokeToken("alice", revoked.id, 4000).isOk());  // again: keeps the first time
  std::vector<ApiToken> tokens = s.tokensOfUser("alice").value();
  ASSERT_EQ(tokens.size(), 2u);  // listed still, with their state
  EXPECT_EQ(tokens[1].revoked_at, 3000);
  EXPECT_FALSE(tokens[1].live(3000));
  EXPECT_TRUE(tokens[0].live(9'999));
}

TYPED_TEST(StoreConformanceTest, TouchRecordsLastUse) {
  Store& s = *this->store_;
  User u;
  u.name = "alice";
  ASSERT_TRUE(s.createUser(u).isOk());
  ApiToken t = s.createToken(newToken("alice", "aa")).value();
  ASSERT_TRUE(s.touchToken(t.id, 5000).isOk());
  EXPECT_EQ(s.findTokenByHash("aa", 5000).value()->last_used_at, 5000);
  ASSERT_TRUE(s.touchToken(t.id, 4000).isOk());  // a late, older touch does not go back
  EXPECT_EQ(s.tokensOfUser("alice").value()[0].last_used_at, 5000);
  EXPECT_EQ(s.touchToken(t.id + 1, 6000).code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreConformanceTest, AuditRecordsRoundTripNewestFirstAndPage) {
  Store& s = *this->store_;
  std::vector<std::int64_t> seqs;
  for (int i = 0; i < 7; ++i) {
    Result<std::int64_t> seq = s.appendAudit(audit(i % 2 == 0 ? "alice" : "bob", i));
    ASSERT_TRUE(seq.isOk()) << seq.status().toString();
    if (!seqs.empty()) {
      EXPECT_GT(*seq, seqs.back());
    }
    seqs.push_back(*seq);
  }
  AuditRecord anonymous = audit("", 7);
  anonymous.status = 401;
  anonymous.seq = 12345;  // ignored
  seqs.push_back(s.appendAudit(anonymous).value());

  AuditPage all = s.listAudit({}).value();
  ASSERT_EQ(all.records.size(), 8u);
  EXPECT_EQ(all.next_before, 0);
  AuditRecord want = anonymous;
  want.seq = seqs[7];
  EXPECT_EQ(all.records[0], want);
  AuditRecord first = audit("alice", 0);
  first.seq = seqs[0];
  EXPECT_EQ(all.records[7], first);

  // Pages of three, newest first, until the cursor says there is no more.
  std::vector<std::int64_t> paged;
  AuditQuery q;
  q.limit = 3;
  for (int pages = 0; pages < 10; ++pages) {
    AuditPage page = s.listAudit(q).value();
    for (const AuditRecord& r : page.records) paged.push_back(r.seq);
    if (page.next_before == 0) break;
    EXPECT_EQ(page.next_before, page.records.back().seq);
    q.before_seq = page.next_before;
  }
  EXPECT_EQ(paged, (std::vector<std::int64_t>(seqs.rbegin(), seqs.rend())));

  // Filtered by user, paged.
  AuditQuery by_alice;
  by_alice.user = "alice";
  by_alice.limit = 2;
  AuditPage p1 = s.listAudit(by_alice).value();
  ASSERT_EQ(p1.records.size(), 2u);
  EXPECT_EQ(p1.records[0].seq, seqs[6]);
  EXPECT_EQ(p1.records[1].seq, seqs[4]);
  EXPECT_EQ(p1.next_before, seqs[4]);
  by_alice.before_seq = p1.next_before;
  AuditPage p2 = s.listAudit(by_alice).value();
  ASSERT_EQ(p2.records.size(), 2u);
  EXPECT_EQ(p2.records[0].seq, seqs[2]);
  EXPECT_EQ(p2.records[1].seq, seqs[0]);
  EXPECT_EQ(p2.next_before, 0);
  AuditQuery nobody;
  nobody.user = "carol";
  EXPECT_TRUE(s.listAudit(nobody).value().records.empty());
}

TYPED_TEST(StoreConformanceTest, AuditQueryBounds) {
  Store& s = *this->store_;
  AuditQuery q;
  q.limit = 0;
  EXPECT_EQ(s.listAudit(q).status().code(), StatusCode::kInvalidArgument);
  q.limit = 1001;
  EXPECT_EQ(s.listAudit(q).status().code(), StatusCode::kInvalidArgument);
  q.limit = 1000;
  EXPECT_TRUE(s.listAudit(q).isOk());
  q.before_seq = -1;
  EXPECT_EQ(s.listAudit(q).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.listAudit({}).value().records.empty());
}

// --- Training metrics -------------------------------------------------------

TrainingPoint point(const std::string& name, std::optional<std::int64_t> step, double value,
                    const std::string& source) {
  TrainingPoint p;
  p.name = name;
  p.step = step;
  p.value = value;
  p.time = 5000 + (step ? *step : 0);
  p.source = source;
  return p;
}

TYPED_TEST(StoreConformanceTest, TrainingPointsAppendOnceBySourceAndName) {
  Store& s = *this->store_;
  JobId job = this->create(1)[0];
  std::vector<TrainingPoint> report = {point("loss", 1, 0.5, "log:1:0:0"),
                                       point("lr", 1, 0.01, "log:1:0:0")};
  EXPECT_EQ(s.appendTrainingPoints(job, report).value(), 2);
  // The same report again (a file read after a restart, a retried POST).
  EXPECT_EQ(s.appendTrainingPoints(job, report).value(), 0);
  // The same source with another name, or another source, is new.
  EXPECT_EQ(s.appendTrainingPoints(
                 job, {point("acc", 1, 0.9, "log:1:0:0"), point("loss", 2, 0.4, "log:1:0:60")})
                .value(),
            2);
  TrainingSeriesQuery q;
  q.name = "loss";
  std::vector<TrainingPoint> loss = s.trainingSeries(job, q).value();
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_EQ(loss[0].step, 1);
  EXPECT_DOUBLE_EQ(loss[0].value, 0.5);
  EXPECT_EQ(loss[0].time, 5001);
  EXPECT_EQ(loss[0].source, "log:1:0:0");
  EXPECT_LT(loss[0].id, loss[1].id);
  EXPECT_DOUBLE_EQ(loss[1].value, 0.4);
  q.name = "nothing";
  EXPECT_TRUE(s.trainingSeries(job, q).value().empty());
}

TYPED_TEST(StoreConformanceTest, TrainingPointsWithoutStepAndPerJob) {
  Store& s = *this->store_;
  std::vector<JobId> jobs = this->create(2);
  ASSERT_EQ(s.appendTrainingPoints(jobs[0], {point("x", std::nullopt, -1.5, "api:a")}).value(), 1);
  // Sources are per job: the same one in another job is another report.
  ASSERT_EQ(s.appendTrainingPoints(jobs[1], {point("x", 7, 2, "api:a")}).value(), 1);
  TrainingSeriesQuery q;
  q.name = "x";
  auto first = s.trainingSeries(jobs[0], q).value();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_FALSE(first[0].step.has_value());
  EXPECT_DOUBLE_EQ(first[0].value, -1.5);
  EXPECT_EQ(s.trainingSeries(jobs[1], q).value().at(0).step, 7);
}

TYPED_TEST(StoreConformanceTest, TrainingSeriesCursorLimitAndDownsampling) {
  Store& s = *this->store_;
  JobId job = this->create(1)[0];
  std::vector<TrainingPoint> pts;
  for (int i = 0; i < 100; ++i) {
    pts.push_back(point("loss", i, 100 - i, "log:1:0:" + std::to_string(i * 10)));
  }
  ASSERT_EQ(s.appendTrainingPoints(job, pts).value(), 100);
  TrainingSeriesQuery q;
  q.name = "loss";
  q.limit = 30;
  auto page = s.trainingSeries(job, q).value();
  ASSERT_EQ(page.size(), 30u);
  EXPECT_EQ(page.front().step, 0);
  q.after_id = page.back().id;
  auto next = s.trainingSeries(job, q).value();
  ASSERT_EQ(next.size(), 30u);
  EXPECT_EQ(next.front().step, 30);

  TrainingSeriesQuery thin;
  thin.name = "loss";
  thin.max_points = 10;
  auto chart = s.trainingSeries(job, thin).value();
  ASSERT_EQ(chart.size(), 10u);
  EXPECT_EQ(chart.front().step, 0);
  EXPECT_EQ(chart.back().step, 99);
  for (size_t i = 1; i < chart.size(); ++i) {
    std::int64_t gap = *chart[i].step - *chart[i - 1].step;
    EXPECT_TRUE(gap == 11 || gap == 10) << gap;  // 99 / 9 = 11, evenly
  }
  thin.max_points = 1000;  // more than there are: all of them
  EXPECT_EQ(s.trainingSeries(job, thin).value().size(), 100u);
}

TYPED_TEST(StoreConformanceTest, TrainingMetricNamesWithCountAndLatest) {
  Store& s = *this->store_;
  JobId job = this->create(1)[0];
  EXPECT_TRUE(s.trainingMetrics(job).value().empty());
  ASSERT_TRUE(s.appendTrainingPoints(job, {point("loss", 1, 0.9, "r1"), point("lr", 1, 0.1, "r1"),
                                           point("loss", 2, 0.7, "r2")})
                  .isOk());
  auto names = s.trainingMetrics(job).value();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].name, "loss");
  EXPECT_EQ(names[0].count, 2);
  EXPECT_EQ(names[0].latest.step, 2);
  EXPECT_DOUBLE_EQ(names[0].latest.value, 0.7);
  EXPECT_EQ(names[1].name, "lr");
  EXPECT_EQ(names[1].count, 1);
}

TYPED_TEST(StoreConformanceTest, LatestTrainingMetricsOfManyJobsInOneRead) {
  Store& s = *this->store_;
  std::vector<JobId> jobs = this->create(3);
  EXPECT_TRUE(s.latestTrainingMetrics({}).value().empty());
  ASSERT_TRUE(
      s.appendTrainingPoints(jobs[0], {point("loss", 1, 0.9, "r1"), point("lr", 1, 0.1, "r1"),
                                       point("loss", 2, 0.7, "r2")})
          .isOk());
  ASSERT_TRUE(s.appendTrainingPoints(jobs[2], {point("acc", 4, 0.5, "r1")}).isOk());
  ASSERT_TRUE(s.appendTrainingPoints(jobs[1], {point("loss", std::nullopt, 3, "r1")}).isOk());
  const JobId missing(jobs[2].value() + 100);
  // Asked out of order, twice for one job, with one that does not exist and
  // leaving jobs[1] out: job order, then name order, each job once.
  auto latest = s.latestTrainingMetrics({jobs[2], jobs[0], missing, jobs[2]}).value();
  ASSERT_EQ(latest.size(), 3u);
  EXPECT_EQ(latest[0].job, jobs[0]);
  EXPECT_EQ(latest[0].latest.name, "loss");
  EXPECT_EQ(latest[0].latest.step, 2);
  EXPECT_DOUBLE_EQ(latest[0].latest.value, 0.7);
  EXPECT_EQ(latest[0].latest.source, "r2");
  EXPECT_EQ(latest[1].job, jobs[0]);
  EXPECT_EQ(latest[1].latest.name, "lr");
  EXPECT_DOUBLE_EQ(latest[1].latest.value, 0.1);
  EXPECT_EQ(latest[2].job, jobs[2]);
  EXPECT_EQ(latest[2].latest.name, "acc");
  // The same points trainingMetrics() calls latest, id included.
  EXPECT_EQ(latest[0].latest, s.trainingMetrics(jobs[0]).value()[0].latest);
  EXPECT_TRUE(s.latestTrainingMetrics({missing}).value().empty());
}

TYPED_TEST(StoreConformanceTest, LatestTrainingMetricsOfMoreJobsThanOneStatementBinds) {
  Store& s = *this->store_;
  // More jobs than an implementation may bind in one statement (SQLite
  // chunks its IN list): every job is still answered, in order.
  std::vector<JobId> jobs = this->create(1200);
  for (std::size_t i = 0; i < jobs.size(); i += 7) {
    ASSERT_TRUE(
        s.appendTrainingPoints(jobs[i], {point("loss", 1, static_cast<double>(i), "r")}).isOk());
  }
  auto latest = s.latestTrainingMetrics(jobs).value();
  ASSERT_EQ(latest.size(), (jobs.size() + 6) / 7);
  for (std::size_t k = 0; k < latest.size(); ++k) {
    EXPECT_EQ(latest[k].job, jobs[k * 7]);
    EXPECT_DOUBLE_EQ(latest[k].latest.value, static_cast<double>(k * 7));
  }
}

TYPED_TEST(StoreConformanceTest, TrainingMetricsCheckJobAndInput) {
  Store& s = *this->store_;
  JobId job = this->create(1)[0];
  JobId missing(job.value() + 100);
  EXPECT_EQ(s.appendTrainingPoints(missing, {point("x", 1, 1, "a")}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(s.trainingMetrics(missing).status().code(), StatusCode::kNotFound);
  TrainingSeriesQuery q;
  q.name = "x";
  EXPECT_EQ(s.trainingSeries(missing, q).status().code(), StatusCode::kNotFound);
  for (TrainingPoint bad :
       {point("9x", 1, 1, "a"), point("x", -1, 1, "a"),
        point("x", 1, std::numeric_limits<double>::infinity(), "a"), point("x", 1, 1, "")}) {
    EXPECT_EQ(s.appendTrainingPoints(job, {point("ok", 1, 1, "a"), bad}).status().code(),
              StatusCode::kInvalidArgument)
        << bad.name;
  }
  // A refused batch stored nothing.
  EXPECT_TRUE(s.trainingMetrics(job).value().empty());
  q.limit = 0;
  EXPECT_EQ(s.trainingSeries(job, q).status().code(), StatusCode::kInvalidArgument);
  q.limit = 10;
  q.max_points = 1;
  EXPECT_EQ(s.trainingSeries(job, q).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ty
