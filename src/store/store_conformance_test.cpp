// The Store contract, run against every implementation (memory, SQLite).

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codec/job_codec.h"
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
    std::string tmpl = (std::filesystem::temp_directory_path() / "ty_store_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store_ = Factory::make(dir_);
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

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

  std::filesystem::path dir_;
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

}  // namespace
}  // namespace ty
