// What only the SQLite store promises: durability across reopen, WAL,
// versioned migrations, rollback of failed batches, concurrent writers and
// clear errors for bad files.

#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codec/job_codec.h"
#include "codec/queue_codec.h"
#include "common/temp_dir_test_util.h"
#include "store/sqlite/migrations.h"
#include "store/sqlite/sqlite_db.h"

namespace ty {
namespace {

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    path_ = (dir_ / "store.db").string();
  }
  // A test may leave the directory read-only; give it back so that TempDir
  // can remove what is inside.
  void TearDown() override {
    std::error_code ec;
    std::filesystem::permissions(dir_.fsPath(), std::filesystem::perms::owner_all, ec);
  }

  std::unique_ptr<Store> open() {
    Result<std::unique_ptr<Store>> store = openSqliteStore(path_);
    EXPECT_TRUE(store.isOk()) << store.status().toString();
    return store.isOk() ? std::move(store).value() : nullptr;
  }

  // A second, plain connection to look at (or tamper with) the file.
  std::unique_ptr<sqlite::Db> raw() {
    Result<std::unique_ptr<sqlite::Db>> db = sqlite::Db::open(path_, SQLITE_OPEN_READWRITE);
    EXPECT_TRUE(db.isOk()) << db.status().toString();
    return db.isOk() ? std::move(db).value() : nullptr;
  }

  // The integer or text in the first column of the first row of `sql`.
  std::string queryText(sqlite::Db& db, const std::string& sql) {
    Result<sqlite::Stmt> q = db.prepare(sql);
    EXPECT_TRUE(q.isOk()) << q.status().toString();
    if (!q.isOk()) return "";
    Result<bool> row = q->step();
    EXPECT_TRUE(row.isOk() && *row) << sql;
    return row.isOk() && *row ? q->text(0) : "";
  }

  static Job newJob(const std::string& name) {
    Job job;
    job.spec.name = name;
    job.spec.command = {"sleep", "1"};
    job.user = "alice";
    return job;
  }

  ::ty::testing::TempDir dir_{"ty_sqlite_"};
  std::string path_;
};

TEST_F(SqliteStoreTest, DataSurvivesReopen) {
  std::vector<Job> jobs = {newJob("a"), newJob("b")};
  jobs[1].exit_code = 3;
  Attempt attempt;
  Event started;
  {
    std::unique_ptr<Store> store = open();
    ASSERT_NE(store, nullptr);
    Event submitted;
    submitted.reason = "Submitted";
    ASSERT_TRUE(store->createJobs(jobs, {{submitted}, {}}).isOk());
    attempt.key = AttemptKey{jobs[0].id, 1};
    attempt.replicas = {{"node-a", {0, 1}}};
    attempt.pids = {123};
    started.job = jobs[0].id;
    started.reason = "Started";
    started.level = EventLevel::kWarning;
    ASSERT_TRUE(store->apply(WriteBatch{{}, {attempt}, {started}, {}}).isOk());
  }
  std::unique_ptr<Store> store = open();
  ASSERT_NE(store, nullptr);
  for (const Job& job : jobs) {
    Result<Job> got = store->getJob(job.id);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    EXPECT_TRUE(*got == job) << job.spec.name;
  }
  Result<std::vector<Attempt>> attempts = store->attempts(jobs[0].id);
  ASSERT_TRUE(attempts.isOk());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_TRUE((*attempts)[0] == attempt);
  Result<std::vector<Event>> events = store->events(jobs[0].id);
  ASSERT_TRUE(events.isOk());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].reason, "Started");
  EXPECT_EQ((*events)[1].level, EventLevel::kWarning);

  // New ids continue after the old ones.
  std::vector<Job> more = {newJob("c")};
  ASSERT_TRUE(store->createJobs(more, {}).isOk());
  EXPECT_GT(more[0].id, jobs[1].id);
}

TEST_F(SqliteStoreTest, IdsAreNotReusedEvenAfterTheNewestRowIsGone) {
  std::unique_ptr<Store> store = open();
  std::vector<Job> jobs = {newJob("a"), newJob("b")};
  ASSERT_TRUE(store->createJobs(jobs, {}).isOk());
  // The store never deletes, but an operator might.
  std::unique_ptr<sqlite::Db> db = raw();
  ASSERT_TRUE(db->exec("DELETE FROM jobs WHERE id = (SELECT MAX(id) FROM jobs)").isOk());
  std::vector<Job> next = {newJob("c")};
  ASSERT_TRUE(store->createJobs(next, {}).isOk());
  EXPECT_GT(next[0].id, jobs[1].id);
}

TEST_F(SqliteStoreTest, WalModeIsOn) {
  std::unique_ptr<Store> store = open();
  ASSERT_NE(store, nullptr);
  std::unique_ptr<sqlite::Db> db = raw();
  EXPECT_EQ(queryText(*db, "PRAGMA journal_mode"), "wal");
}

std::string latestVersion() { return std::to_string(sqlite::storeMigrations().size()); }

TEST_F(SqliteStoreTest, SchemaIsAtTheLatestVersionAndReopeningDoesNotMigrateAgain) {
  open().reset();
  std::unique_ptr<sqlite::Db> db = raw();
  EXPECT_EQ(queryText(*db, "SELECT COUNT(*) FROM schema_migrations"), latestVersion());
  EXPECT_EQ(queryText(*db, "SELECT MAX(version) FROM schema_migrations"), latestVersion());
  std::string applied_at = queryText(*db, "SELECT MAX(applied_at) FROM schema_migrations");
  EXPECT_GT(std::stoll(applied_at), 1'600'000'000'000LL);  // milliseconds since the epoch

  open().reset();
  open().reset();
  EXPECT_EQ(queryText(*db, "SELECT COUNT(*) FROM schema_migrations"), latestVersion());
  EXPECT_EQ(queryText(*db, "SELECT MAX(applied_at) FROM schema_migrations"), applied_at);
  for (const char* table : {"jobs", "attempts", "events", "queue_usage", "users", "projects",
                            "memberships", "api_tokens", "audit_log"}) {
    EXPECT_EQ(queryText(*db, std::string("SELECT COUNT(*) FROM sqlite_master WHERE name = '") +
                                 table + "'"),
              "1")
        << table;
  }
}

TEST_F(SqliteStoreTest, LaterMigrationsApplyOnceInOrder) {
  open().reset();
  std::unique_ptr<sqlite::Db> db = raw();
  std::vector<sqlite::Migration> steps(sqlite::storeMigrations().begin(),
                                       sqlite::storeMigrations().end());
  int next = static_cast<int>(steps.size()) + 1;
  steps.push_back({next, "ALTER TABLE jobs ADD COLUMN label TEXT NOT NULL DEFAULT ''"});
  steps.push_back({next + 1, "CREATE INDEX jobs_label ON jobs(label)"});
  ASSERT_TRUE(sqlite::migrate(*db, steps, 42).isOk());
  std::string last = std::to_string(next + 1);
  EXPECT_EQ(queryText(*db, "SELECT MAX(version) FROM schema_migrations"), last);
  EXPECT_EQ(queryText(*db, "SELECT applied_at FROM schema_migrations WHERE version = " + last),
            "42");
  ASSERT_TRUE(sqlite::migrate(*db, steps, 43).isOk());  // nothing to do
  EXPECT_EQ(queryText(*db, "SELECT COUNT(*) FROM schema_migrations"), last);
  EXPECT_EQ(queryText(*db, "SELECT applied_at FROM schema_migrations WHERE version = " + last),
            "42");

  // This build does not know the newer versions: it refuses the database.
  Result<std::unique_ptr<Store>> store = openSqliteStore(path_);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("newer"), std::string::npos);
}

// A database written by the version-2 schema (before users and projects)
// opens, migrates to the newest version and keeps every job, attempt, event
// and usage record; the projects its jobs name become projects.
TEST_F(SqliteStoreTest, VersionTwoDatabaseMigratesKeepingItsData) {
  Job job = newJob("old");
  job.spec.project = "vision";
  job.created_at = 1234;
  job.state = JobState::kRunning;
  job.preemptions = 2;
  {
    Result<std::unique_ptr<sqlite::Db>> opened =
        sqlite::Db::open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    sqlite::Db& db = **opened;
    ASSERT_TRUE(sqlite::migrate(db, sqlite::storeMigrations().first(2), 1).isOk());
    ASSERT_EQ(queryText(db, "SELECT MAX(version) FROM schema_migrations"), "2");
    Result<sqlite::Stmt> ins = db.prepare(
        "INSERT INTO jobs(id, name, project, user, state, priority, spec_json, created_at, "
        "updated_at, started_at, finished_at, attempts, exit_code, reason, not_before, "
        "cancel_requested_at, idempotency_key, preempted_by, preempt_requested_at, preemptions) "
        "VALUES(7, ?1, ?2, ?3, 'running', 0, ?4, 1234, 0, 0, 0, 0, NULL, '', 0, 0, NULL, 0, 0, 2)");
    ASSERT_TRUE(ins.isOk()) << ins.status().toString();
    ins->bind(1, job.spec.name);
    ins->bind(2, job.spec.project);
    ins->bind(3, job.user);
    ins->bind(4, specToJson(job.spec).dump());
    ASSERT_TRUE(ins->run().isOk());
    ASSERT_TRUE(db.exec("INSERT INTO events(job_id, time, level, reason, message) "
                        "VALUES(7, 1300, 'normal', 'Submitted', 'queued')")
                    .isOk());
    ASSERT_TRUE(db.exec("INSERT INTO queue_usage VALUES('vision', 1.5, 2.5, 3.5, 1400)").isOk());
  }

  std::unique_ptr<Store> store = open();
  ASSERT_NE(store, nullptr);
  job.id = JobId(7);
  Result<Job> got = store->getJob(JobId(7));
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_TRUE(*got == job);
  Result<std::vector<Event>> events = store->events(JobId(7));
  ASSERT_TRUE(events.isOk());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].reason, "Submitted");
  Result<std::vector<QueueUsage>> usage = store->queueUsage();
  ASSERT_TRUE(usage.isOk());
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_EQ((*usage)[0], (QueueUsage{"vision", 1.5, 2.5, 3.5, 1400}));
  EXPECT_EQ(store->getProject("vision").value(), (Project{"vision", 1234}));

  // The new tables work on the migrated file, and new job ids go on after 7.
  User alice;
  alice.name = "alice";
  ASSERT_TRUE(store->createUser(alice).isOk());
  ASSERT_TRUE(store->putMembership({"alice", "vision", "member"}).isOk());
  std::vector<Job> more = {newJob("new")};
  ASSERT_TRUE(store->createJobs(more, {}).isOk());
  EXPECT_GT(more[0].id.value(), 7);
  store.reset();
  std::unique_ptr<sqlite::Db> db = raw();
  EXPECT_EQ(queryText(*db, "SELECT MAX(version) FROM schema_migrations"), latestVersion());
}

// Identity rows survive a reopen (the conformance suite covers the rest).
TEST_F(SqliteStoreTest, IdentitySurvivesReopen) {
  ApiToken token;
  {
    std::unique_ptr<Store> store = open();
    ASSERT_NE(store, nullptr);
    User u;
    u.name = "alice";
    u.password_hash = "$argon2id$x";
    ASSERT_TRUE(store->createUser(u).isOk());
    ASSERT_TRUE(store->createProject({"nlp", 5}).isOk());
    ASSERT_TRUE(store->putMembership({"alice", "nlp", "admin"}).isOk());
    token.user = "alice";
    token.hash = "beef";
    token.project = "nlp";
    token = store->createToken(token).value();
    AuditRecord r;
    r.user = "alice";
    r.method = "DELETE";
    ASSERT_TRUE(store->appendAudit(r).isOk());
  }
  std::unique_ptr<Store> store = open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->getUser("alice").value().password_hash, "$argon2id$x");
  EXPECT_EQ(store->membershipsOfProject("nlp").value(),
            (std::vector<Membership>{{"alice", "nlp", "admin"}}));
  EXPECT_EQ(store->findTokenByHash("beef", 1).value(), std::optional<ApiToken>(token));
  EXPECT_EQ(store->listAudit({}).value().records.at(0).method, "DELETE");
}

// A version-3 database (before queues were stored) migrates with no
// queues, so the server seeds them from its config file; queues written
// afterwards survive a reopen in their order.
TEST_F(SqliteStoreTest, QueuesStartEmptyAfterMigrationAndSurviveReopen) {
  {
    Result<std::unique_ptr<sqlite::Db>> opened =
        sqlite::Db::open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    ASSERT_TRUE(sqlite::migrate(**opened, sqlite::storeMigrations().first(3), 1).isOk());
  }
  QueueConfig nlp;
  nlp.name = "nlp";
  nlp.project = "nlp";
  nlp.cohort = "lab";
  nlp.quotas["gpu"] = Quota::units(8, 2, 4);
  QueueConfig vision = nlp;
  vision.name = vision.project = "vision";
  {
    std::unique_ptr<Store> store = open();
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->listQueues().value().empty());
    ASSERT_TRUE(store->putQueue(vision).isOk());
    ASSERT_TRUE(store->putQueue(nlp).isOk());
  }
  std::unique_ptr<Store> store = open();
  ASSERT_NE(store, nullptr);
  auto queues = store->listQueues().value();
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queueToJson(queues[0]), queueToJson(vision));
  EXPECT_EQ(queueToJson(queues[1]), queueToJson(nlp));
}

// A stored config that no longer reads is reported with its queue, not
// skipped: running with one queue fewer would change every decision.
TEST_F(SqliteStoreTest, UnreadableStoredQueueIsInternal) {
  open().reset();
  {
    std::unique_ptr<sqlite::Db> db = raw();
    ASSERT_TRUE(db->exec("INSERT INTO queues(name, config_json) VALUES('nlp', "
                         "'{\"name\":\"nlp\",\"quota\":7}')")
                    .isOk());
  }
  std::unique_ptr<Store> store = open();
  ASSERT_NE(store, nullptr);
  auto queues = store->listQueues();
  EXPECT_EQ(queues.status().code(), StatusCode::kInternal);
  EXPECT_NE(queues.status().message().find("queue nlp"), std::string::npos)
      << queues.status().toString();
}

TEST_F(SqliteStoreTest, FailingMigrationIsRolledBack) {
  open().reset();
  std::unique_ptr<sqlite::Db> db = raw();
  std::vector<sqlite::Migration> steps(sqlite::storeMigrations().begin(),
                                       sqlite::storeMigrations().end());
  int next = static_cast<int>(steps.size()) + 1;
  steps.push_back({next, "CREATE TABLE extra(x INTEGER); SELECT no_such_function()"});
  Status s = sqlite::migrate(*db, steps, 1);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("schema migration " + std::to_string(next)), std::string::npos)
      << s.toString();
  EXPECT_EQ(queryText(*db, "SELECT MAX(version) FROM schema_migrations"), latestVersion());
  EXPECT_EQ(queryText(*db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'extra'"), "0");
}

TEST_F(SqliteStoreTest, FailedBatchLeavesNothingWritten) {
  std::unique_ptr<Store> store = open();
  std::vector<Job> jobs = {newJob("a")};
  ASSERT_TRUE(store->createJobs(jobs, {}).isOk());
  const Job before = jobs[0];

  // Make the last write of every batch fail inside SQLite.
  std::unique_ptr<sqlite::Db> db = raw();
  ASSERT_TRUE(db->exec("CREATE TRIGGER fail_events BEFORE INSERT ON events "
                       "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END")
                  .isOk());

  Job changed = before;
  changed.state = JobState::kRunning;
  Attempt attempt;
  attempt.key = AttemptKey{before.id, 1};
  Event started;
  started.job = before.id;
  started.reason = "Started";
  Status s = store->apply(WriteBatch{{changed}, {attempt}, {started}, {}});
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("disk on fire"), std::string::npos) << s.toString();
  Result<Job> got = store->getJob(before.id);
  ASSERT_TRUE(got.isOk());
  EXPECT_TRUE(*got == before);
  EXPECT_TRUE(store->attempts(before.id)->empty());

  std::vector<Job> more = {newJob("b"), newJob("c")};
  s = store->createJobs(more, {{}, {started}});
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(more[0].id, JobId());  // no ids handed out for a batch that was not written
  Result<JobPage> page = store->listJobs(JobQuery{});
  ASSERT_TRUE(page.isOk());
  EXPECT_EQ(page->jobs.size(), 1u);

  // The store keeps working once the cause is gone.
  ASSERT_TRUE(db->exec("DROP TRIGGER fail_events").isOk());
  EXPECT_TRUE(store->apply(WriteBatch{{changed}, {attempt}, {started}, {}}).isOk());
  EXPECT_EQ(store->getJob(before.id)->state, JobState::kRunning);
}

TEST_F(SqliteStoreTest, ConcurrentCreatesGetUniqueIdsAndAllRows) {
  std::unique_ptr<Store> store = open();
  constexpr int kThreads = 8;
  constexpr int kBatches = 20;
  constexpr int kPerBatch = 3;
  std::vector<std::vector<JobId>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<Job> jobs;
        for (int i = 0; i < kPerBatch; ++i) jobs.push_back(newJob("t" + std::to_string(t)));
        Status s = store->createJobs(jobs, {});
        EXPECT_TRUE(s.isOk()) << s.toString();
        for (const Job& j : jobs) ids[t].push_back(j.id);
        // Ids within one batch are consecutive and increasing.
        EXPECT_LT(jobs.front().id, jobs.back().id);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<JobId> unique;
  for (const auto& v : ids) unique.insert(v.begin(), v.end());
  constexpr size_t kTotal = kThreads * kBatches * kPerBatch;
  EXPECT_EQ(unique.size(), kTotal);

  size_t listed = 0;
  JobQuery q;
  q.limit = 100;
  while (true) {
    Result<JobPage> page = store->listJobs(q);
    ASSERT_TRUE(page.isOk());
    for (const Job& j : page->jobs) EXPECT_TRUE(unique.contains(j.id));
    listed += page->jobs.size();
    if (page->next_before == 0) break;
    q.before_id = page->next_before;
  }
  EXPECT_EQ(listed, kTotal);
}

TEST_F(SqliteStoreTest, MissingFolderIsAClearError) {
  path_ = (dir_ / "no" / "such" / "folder" / "store.db").string();
  Result<std::unique_ptr<Store>> store = openSqliteStore(path_);
  ASSERT_FALSE(store.isOk());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(store.status().message().find(path_), std::string::npos) << store.status().toString();
}

TEST_F(SqliteStoreTest, UnwritableFolderIsAClearError) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores file permissions";
  std::filesystem::permissions(
      dir_.fsPath(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  Result<std::unique_ptr<Store>> store = openSqliteStore(path_);
  ASSERT_FALSE(store.isOk());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable) << store.status().toString();
}

TEST_F(SqliteStoreTest, FileThatIsNotADatabaseIsAClearError) {
  {
    std::ofstream out(path_, std::ios::binary);
    for (int i = 0; i < 512; ++i) out << "this is not an sqlite database ";
  }
  Result<std::unique_ptr<Store>> store = openSqliteStore(path_);
  ASSERT_FALSE(store.isOk());
  EXPECT_EQ(store.status().code(), StatusCode::kInternal);
  EXPECT_NE(store.status().message().find("not a database"), std::string::npos)
      << store.status().toString();
}

TEST_F(SqliteStoreTest, TextThatIsNotUtf8IsRejectedNotThrown) {
  std::unique_ptr<Store> store = open();
  std::vector<Job> jobs = {newJob("ok"), newJob("bad \xff\xfe")};
  Status s = store->createJobs(jobs, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.toString();
  EXPECT_TRUE(store->listJobs(JobQuery{})->jobs.empty());
}

TEST_F(SqliteStoreTest, InMemoryPathIsRejected) {
  EXPECT_EQ(openSqliteStore(":memory:").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(openSqliteStore("").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SqliteStoreTest, OptionsAreHonoured) {
  SqliteOptions options;
  options.synchronous_full = false;
  options.max_idle_readers = 0;  // every read opens and closes its own connection
  Result<std::unique_ptr<Store>> store = openSqliteStore(path_, options);
  ASSERT_TRUE(store.isOk()) << store.status().toString();
  std::vector<Job> jobs = {newJob("a")};
  ASSERT_TRUE((*store)->createJobs(jobs, {}).isOk());
  EXPECT_TRUE((*store)->getJob(jobs[0].id).isOk());
  EXPECT_TRUE((*store)->healthy());
}

}  // namespace
}  // namespace ty
