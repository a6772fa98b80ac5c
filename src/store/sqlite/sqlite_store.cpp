#include "store/sqlite/sqlite_store.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "codec/job_codec.h"
#include "codec/queue_codec.h"
#include "common/clock.h"
#include "store/identity_checks.h"
#include "store/sqlite/migrations.h"
#include "store/sqlite/sqlite_db.h"

namespace ty {

namespace {

using sqlite::Db;
using sqlite::Stmt;

// Every job state; activeJobs() selects the non-terminal ones by name.
constexpr JobState kAllJobStates[] = {
    JobState::kPending, JobState::kScheduled, JobState::kRunning,  JobState::kSucceeded,
    JobState::kFailed,  JobState::kCancelled, JobState::kPreempted};

const char* eventLevelName(EventLevel level) {
  return level == EventLevel::kWarning ? "warning" : "normal";
}

// JSON text for a column. Encoding is inside the try: dump() throws on
// strings that are not UTF-8, and no exception may leave the store.
template <typename Encode>
Result<std::string> encodeJson(Encode&& encode, const char* what) {
  try {
    return encode().dump();
  } catch (const std::exception& e) {
    return Status::invalidArgument(std::string(what) + ": " + e.what());
  }
}

Result<Json> parseJson(const std::string& text, const std::string& what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::internal(what + ": stored JSON does not parse");
  return j;
}

// Columns of a job row, in the order readJob() expects.
constexpr char kJobColumns[] =
    "id, user, state, spec_json, created_at, updated_at, started_at, finished_at, attempts, "
    "exit_code, reason, not_before, cancel_requested_at, idempotency_key, preempted_by, "
    "preempt_requested_at, preemptions";

Result<Job> readJob(const Stmt& q) {
  Job job;
  job.id = JobId(q.int64(0));
  const std::string what = "job " + std::to_string(job.id.value());
  job.user = q.text(1);
  std::optional<JobState> state = parseJobState(q.text(2));
  if (!state) return Status::internal(what + ": unknown state '" + q.text(2) + "'");
  job.state = *state;
  TY_ASSIGN_OR_RETURN(Json spec_json, parseJson(q.text(3), what));
  Result<JobSpec> spec = specFromJson(spec_json);
  if (!spec.isOk()) return Status::internal(what + ": stored spec: " + spec.status().toString());
  job.spec = std::move(spec).value();
  job.created_at = q.int64(4);
  job.updated_at = q.int64(5);
  job.started_at = q.int64(6);
  job.finished_at = q.int64(7);
  job.attempts = static_cast<int>(q.int64(8));
  job.exit_code = q.optionalInt(9);
  job.reason = q.text(10);
  job.not_before = q.int64(11);
  job.cancel_requested_at = q.int64(12);
  job.idempotency_key = q.text(13);
  job.preempted_by = JobId(q.int64(14));
  job.preempt_requested_at = q.int64(15);
  job.preemptions = static_cast<int>(q.int64(16));
  return job;
}

// Binds parameters 1..15 and 17..19 of the insert and update statements
// (16 is the idempotency key of an insert, the id of an update).
void bindJob(Stmt& s, const Job& job, const std::string& spec_json) {
  s.bind(1, job.spec.name);
  s.bind(2, job.spec.project);
  s.bind(3, job.user);
  s.bind(4, std::string(jobStateName(job.state)));
  s.bind(5, std::int64_t{job.spec.priority});
  s.bind(6, spec_json);
  s.bind(7, job.created_at);
  s.bind(8, job.updated_at);
  s.bind(9, job.started_at);
  s.bind(10, job.finished_at);
  s.bind(11, std::int64_t{job.attempts});
  s.bind(12, job.exit_code);
  s.bind(13, job.reason);
  s.bind(14, job.not_before);
  s.bind(15, job.cancel_requested_at);
  s.bind(17, job.preempted_by.value());
  s.bind(18, job.preempt_requested_at);
  s.bind(19, std::int64_t{job.preemptions});
}

constexpr char kInsertJob[] =
    "INSERT INTO jobs(name, project, user, state, priority, spec_json, created_at, updated_at, "
    "started_at, finished_at, attempts, exit_code, reason, not_before, cancel_requested_at, "
    "idempotency_key, preempted_by, preempt_requested_at, preemptions) VALUES(?1, ?2, ?3, ?4, ?5, "
    "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, NULLIF(?16, ''), ?17, ?18, ?19)";
constexpr char kUpdateJob[] =
    "UPDATE jobs SET name = ?1, project = ?2, user = ?3, state = ?4, priority = ?5, "
    "spec_json = ?6, created_at = ?7, updated_at = ?8, started_at = ?9, finished_at = ?10, "
    "attempts = ?11, exit_code = ?12, reason = ?13, not_before = ?14, "
    "cancel_requested_at = ?15, preempted_by = ?17, preempt_requested_at = ?18, "
    "preemptions = ?19 WHERE id = ?16";
constexpr char kUpsertAttempt[] =
    "INSERT INTO attempts(job_id, number, state, replicas_json, master_port, pids_json, "
    "created_at, started_at, finished_at, exit_code, reason) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
    "ON CONFLICT(job_id, number) DO UPDATE SET state = excluded.state, "
    "replicas_json = excluded.replicas_json, master_port = excluded.master_port, "
    "pids_json = excluded.pids_json, created_at = excluded.created_at, "
    "started_at = excluded.started_at, finished_at = excluded.finished_at, "
    "exit_code = excluded.exit_code, reason = excluded.reason";
constexpr char kInsertEvent[] =
    "INSERT INTO events(job_id, time, level, reason, message) VALUES(?1, ?2, ?3, ?4, ?5)";

class SqliteStore final : public Store {
 public:
  SqliteStore(std::string path, SqliteOptions options, std::unique_ptr<Db> writer)
      : path_(std::move(path)), options_(options), writer_(std::move(writer)) {}

  Status createJobs(std::vector<Job>& jobs,
                    const std::vector<std::vector<Event>>& events_per_job) override;
  Status apply(const WriteBatch& batch) override;

  Result<Job> getJob(JobId id) override;
  Result<JobPage> listJobs(const JobQuery& query) override;
  Result<std::optional<Job>> findByIdempotencyKey(const std::string& user,
                                                  const std::string& key) override;
  Result<std::vector<Job>> activeJobs() override;
  Result<std::map<JobState, std::int64_t>> countJobs(const JobCountQuery& query) override;
  Result<std::vector<QueueUsage>> queueUsage() override;
  Status putQueue(const QueueConfig& queue) override;
  Status deleteQueue(const std::string& name) override;
  Result<std::vector<QueueConfig>> listQueues() override;
  Result<std::vector<Attempt>> attempts(JobId id) override;
  Result<std::vector<Event>> events(JobId id, std::int64_t after_seq = 0) override;
  bool healthy() override;
  // Webhooks: the project's URL and the deliveries (store.h).
  Status setProjectWebhook(const std::string& name, const std::string& url) override;
  Result<std::vector<Job>> jobsAwaitingWebhook(Timestamp finished_since, int limit) override;
  Status addWebhookDeliveries(const std::vector<WebhookDelivery>& deliveries,
                              Timestamp watermark) override;
  Result<Timestamp> webhookWatermark() override;
  Result<std::vector<WebhookDelivery>> dueWebhookDeliveries(Timestamp now, int limit) override;
  Result<std::vector<WebhookDelivery>> webhookDeliveries(JobId job) override;
  Status updateWebhookDelivery(const WebhookDelivery& d, const std::vector<Event>& events) override;
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
  // A read connection borrowed from the pool, returned when destroyed.
  class Reader {
   public:
    Reader(SqliteStore* store, std::unique_ptr<Db> db) : store_(store), db_(std::move(db)) {}
    Reader(Reader&&) = default;
    ~Reader() {
      if (db_ != nullptr) store_->releaseReader(std::move(db_));
    }
    Db& operator*() { return *db_; }
    Db* operator->() { return db_.get(); }

   private:
    SqliteStore* store_;
    std::unique_ptr<Db> db_;
  };

  Result<Reader> acquireReader();
  void releaseReader(std::unique_ptr<Db> db);

  // Runs `body(db)` in one write transaction: committed when it returns ok,
  // rolled back otherwise.
  template <typename F>
  Status writeTransaction(F&& body);
  // Runs `body(db)` in one read transaction, so that it sees one snapshot.
  template <typename F>
  Status readTransaction(F&& body);

  Status insertEvent(Db& db, JobId job, const Event& e);
  Status checkJobExists(Db& db, JobId id);
  // Ok when `sql` (one parameter bound to `key`) returns a row, else
  // NotFound with `missing`.
  static Status checkRowExists(Db& db, const char* sql, const std::string& key,
                               const std::string& missing);

  const std::string path_;
  const SqliteOptions options_;
  std::mutex write_mu_;
  std::unique_ptr<Db> writer_;  // guarded by write_mu_
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Db>> idle_readers_;  // guarded by readers_mu_
};

Result<std::unique_ptr<Db>> openConnection(const std::string& path, const SqliteOptions& options,
                                           bool writer) {
  int flags = writer ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READWRITE;
  TY_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::open(path, flags));
  int rc = sqlite3_busy_timeout(db->raw(), options.busy_timeout_ms);
  if (rc != SQLITE_OK) return db->error(rc, "busy_timeout");
  if (writer) {
    // journal_mode answers with the mode now in force, which must be WAL.
    TY_ASSIGN_OR_RETURN(Stmt wal, db->prepare("PRAGMA journal_mode=WAL"));
    TY_ASSIGN_OR_RETURN(bool row, wal.step());
    if (!row || wal.text(0) != "wal") {
      return Status::unavailable("cannot turn on WAL mode (journal_mode is '" +
                                 (row ? wal.text(0) : std::string()) + "')");
    }
    TY_RETURN_IF_ERROR(db->exec(options.synchronous_full ? "PRAGMA synchronous=FULL"
                                                         : "PRAGMA synchronous=NORMAL"));
    TY_RETURN_IF_ERROR(db->exec("PRAGMA foreign_keys=ON"));
  } else {
    TY_RETURN_IF_ERROR(db->exec("PRAGMA query_only=ON"));
  }
  return db;
}

Result<SqliteStore::Reader> SqliteStore::acquireReader() {
  {
    std::lock_guard lock(readers_mu_);
    if (!idle_readers_.empty()) {
      std::unique_ptr<Db> db = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return Reader(this, std::move(db));
    }
  }
  Result<std::unique_ptr<Db>> db = openConnection(path_, options_, /*writer=*/false);
  if (!db.isOk()) return db.status().withContext("open read connection");
  return Reader(this, std::move(db).value());
}

void SqliteStore::releaseReader(std::unique_ptr<Db> db) {
  std::lock_guard lock(readers_mu_);
  if (static_cast<int>(idle_readers_.size()) < options_.max_idle_readers) {
    idle_readers_.push_back(std::move(db));
  }
  // else: db is closed as it goes out of scope
}

template <typename F>
Status SqliteStore::writeTransaction(F&& body) {
  std::lock_guard lock(write_mu_);
  Db& db = *writer_;
  TY_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE"));
  Status s = body(db);
  if (s.isOk()) s = db.exec("COMMIT");
  if (!s.isOk() && sqlite3_get_autocommit(db.raw()) == 0) (void)db.exec("ROLLBACK");
  return s;
}

template <typename F>
Status SqliteStore::readTransaction(F&& body) {
  TY_ASSIGN_OR_RETURN(Reader reader, acquireReader());
  Db& db = *reader;
  TY_RETURN_IF_ERROR(db.exec("BEGIN"));
  Status s = body(db);
  // Nothing was written, so ending either way is the same; COMMIT first.
  Status end = db.exec("COMMIT");
  if (!end.isOk() && sqlite3_get_autocommit(db.raw()) == 0) (void)db.exec("ROLLBACK");
  return s.isOk() ? end : s;
}

Status SqliteStore::insertEvent(Db& db, JobId job, const Event& e) {
  TY_ASSIGN_OR_RETURN(Stmt ins, db.prepare(kInsertEvent));
  ins.bind(1, job.value());
  ins.bind(2, e.time);
  ins.bind(3, std::string(eventLevelName(e.level)));
  ins.bind(4, e.reason);
  ins.bind(5, e.message);
  Status s = ins.run();
  if (s.isOk()) return s;
  if (sqlite3_extended_errcode(db.raw()) == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return Status::notFound(jobNotFoundMessage(job));
  }
  return s.withContext("insert event");
}

Status SqliteStore::checkJobExists(Db& db, JobId id) {
  TY_ASSIGN_OR_RETURN(Stmt q, db.prepare("SELECT 1 FROM jobs WHERE id = ?1"));
  q.bind(1, id.value());
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  return row ? Status::ok() : Status::notFound(jobNotFoundMessage(id));
}

Status SqliteStore::createJobs(std::vector<Job>& jobs,
                               const std::vector<std::vector<Event>>& events_per_job) {
  if (!events_per_job.empty() && events_per_job.size() != jobs.size()) {
    return Status::invalidArgument("createJobs: events_per_job must be empty or one per job");
  }
  // Encode outside the lock; the JSON is the slow part.
  std::vector<std::string> specs;
  specs.reserve(jobs.size());
  for (const Job& job : jobs) {
    TY_ASSIGN_OR_RETURN(std::string spec,
                        encodeJson([&] { return specToJson(job.spec); }, "job spec"));
    specs.push_back(std::move(spec));
  }
  std::vector<JobId> ids;
  ids.reserve(jobs.size());
  TY_RETURN_IF_ERROR(writeTransaction([&](Db& db) -> Status {
    for (size_t i = 0; i < jobs.size(); ++i) {
      {
        TY_ASSIGN_OR_RETURN(Stmt ins, db.prepare(kInsertJob));
        bindJob(ins, jobs[i], specs[i]);
        ins.bind(16, jobs[i].idempotency_key);
        Status s = ins.run();
        if (!s.isOk()) {
          if (sqlite3_extended_errcode(db.raw()) == SQLITE_CONSTRAINT_UNIQUE) {
            return Status::alreadyExists("user " + jobs[i].user +
                                         " already submitted a job "
                                         "with idempotency key " +
                                         jobs[i].idempotency_key);
          }
          return s.withContext("insert job");
        }
      }
      JobId id(sqlite3_last_insert_rowid(db.raw()));
      ids.push_back(id);
      if (!events_per_job.empty()) {
        for (const Event& e : events_per_job[i]) TY_RETURN_IF_ERROR(insertEvent(db, id, e));
      }
    }
    return Status::ok();
  }));
  // Only a committed batch hands out its ids.
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = ids[i];
  return Status::ok();
}

Status SqliteStore::apply(const WriteBatch& batch) {
  if (batch.empty()) return Status::ok();
  std::vector<std::string> specs;
  specs.reserve(batch.jobs.size());
  for (const Job& job : batch.jobs) {
    TY_ASSIGN_OR_RETURN(std::string spec,
                        encodeJson([&] { return specToJson(job.spec); }, "job spec"));
    specs.push_back(std::move(spec));
  }
  std::vector<std::pair<std::string, std::string>> attempt_json;  // replicas, pids
  attempt_json.reserve(batch.attempts.size());
  for (const Attempt& a : batch.attempts) {
    if (a.key.number < 1) {
      return Status::invalidArgument("attempt " + a.key.toString() + ": numbers start at 1");
    }
    TY_ASSIGN_OR_RETURN(std::string replicas,
                        encodeJson([&] { return placementToJson(a.replicas); }, "replicas"));
    TY_ASSIGN_OR_RETURN(std::string pids, encodeJson([&] { return Json(a.pids); }, "pids"));
    attempt_json.emplace_back(std::move(replicas), std::move(pids));
  }
  return writeTransaction([&](Db& db) -> Status {
    for (size_t i = 0; i < batch.jobs.size(); ++i) {
      const Job& job = batch.jobs[i];
      TY_ASSIGN_OR_RETURN(Stmt upd, db.prepare(kUpdateJob));
      bindJob(upd, job, specs[i]);
      upd.bind(16, job.id.value());
      Status s = upd.run();
      if (!s.isOk()) return s.withContext("update job");
      if (sqlite3_changes(db.raw()) == 0) return Status::notFound(jobNotFoundMessage(job.id));
    }
    for (size_t i = 0; i < batch.attempts.size(); ++i) {
      const Attempt& a = batch.attempts[i];
      TY_ASSIGN_OR_RETURN(Stmt ups, db.prepare(kUpsertAttempt));
      ups.bind(1, a.key.job.value());
      ups.bind(2, std::int64_t{a.key.number});
      ups.bind(3, std::string(attemptStateName(a.state)));
      ups.bind(4, attempt_json[i].first);
      ups.bind(5, std::int64_t{a.master_port});
      ups.bind(6, attempt_json[i].second);
      ups.bind(7, a.created_at);
      ups.bind(8, a.started_at);
      ups.bind(9, a.finished_at);
      ups.bind(10, a.exit_code);
      ups.bind(11, a.reason);
      Status s = ups.run();
      if (s.isOk()) continue;
      if (sqlite3_extended_errcode(db.raw()) == SQLITE_CONSTRAINT_FOREIGNKEY) {
        return Status::notFound(jobNotFoundMessage(a.key.job));
      }
      return s.withContext("write attempt " + a.key.toString());
    }
    for (const Event& e : batch.events) TY_RETURN_IF_ERROR(insertEvent(db, e.job, e));
    for (const QueueUsage& u : batch.usage) {
      if (u.queue.empty()) return Status::invalidArgument("queue usage without a queue name");
      TY_ASSIGN_OR_RETURN(Stmt ups,
                          db.prepare("INSERT INTO queue_usage (queue, gpu_ms, cpu_ms, "
                                     "memory_gib_ms, as_of) VALUES (?1, ?2, ?3, ?4, ?5) "
                                     "ON CONFLICT(queue) DO UPDATE SET gpu_ms = excluded.gpu_ms, "
                                     "cpu_ms = excluded.cpu_ms, memory_gib_ms = "
                                     "excluded.memory_gib_ms, as_of = excluded.as_of"));
      ups.bind(1, u.queue);
      ups.bind(2, u.gpu_ms);
      ups.bind(3, u.cpu_ms);
      ups.bind(4, u.memory_gib_ms);
      ups.bind(5, u.as_of);
      Status st = ups.run();
      if (!st.isOk()) return st.withContext("write usage of queue " + u.queue);
    }
    return Status::ok();
  });
}

Result<std::vector<QueueUsage>> SqliteStore::queueUsage() {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare("SELECT queue, gpu_ms, cpu_ms, memory_gib_ms, as_of "
                                          "FROM queue_usage ORDER BY queue"));
  std::vector<QueueUsage> out;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.step());
    if (!row) break;
    out.push_back({q.text(0), q.real(1), q.real(2), q.real(3), q.int64(4)});
  }
  return out;
}

Status SqliteStore::putQueue(const QueueConfig& queue) {
  TY_RETURN_IF_ERROR(validateQueue(queue));
  TY_ASSIGN_OR_RETURN(std::string config, encodeJson([&] { return queueToJson(queue); }, "queue"));
  return writeTransaction([&](Db& db) -> Status {
    // An upsert, not INSERT OR REPLACE: replacing would delete the row and
    // give the queue a new seq, moving it to the end of the order.
    TY_ASSIGN_OR_RETURN(Stmt ups, db.prepare("INSERT INTO queues(name, config_json) VALUES(?1, ?2) "
                                             "ON CONFLICT(name) DO UPDATE SET "
                                             "config_json = excluded.config_json"));
    ups.bind(1, queue.name);
    ups.bind(2, config);
    Status s = ups.run();
    return s.isOk() ? s : s.withContext("write queue " + queue.name);
  });
}

Status SqliteStore::deleteQueue(const std::string& name) {
  return writeTransaction([&](Db& db) -> Status {
    TY_ASSIGN_OR_RETURN(Stmt del, db.prepare("DELETE FROM queues WHERE name = ?1"));
    del.bind(1, name);
    Status s = del.run();
    if (!s.isOk()) return s.withContext("delete queue " + name);
    if (sqlite3_changes(db.raw()) == 0) return Status::notFound(queueNotFoundMessage(name));
    return Status::ok();
  });
}

Result<std::vector<QueueConfig>> SqliteStore::listQueues() {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare("SELECT name, config_json FROM queues ORDER BY seq"));
  std::vector<QueueConfig> out;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.step());
    if (!row) break;
    const std::string what = "queue " + q.text(0);
    TY_ASSIGN_OR_RETURN(Json j, parseJson(q.text(1), what));
    QueueConfig queue;
    Status read = readQueue(j, "", queue, "stored queue");
    if (!read.isOk()) return Status::internal(what + ": stored config: " + read.toString());
    out.push_back(std::move(queue));
  }
  return out;
}

Result<Job> SqliteStore::getJob(JobId id) {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(
      Stmt q, db->prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?1"));
  q.bind(1, id.value());
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  if (!row) return Status::notFound(jobNotFoundMessage(id));
  return readJob(q);
}

Result<JobPage> SqliteStore::listJobs(const JobQuery& query) {
  if (query.limit < 1 || query.limit > 1000) {
    return Status::invalidArgument("limit must be between 1 and 1000", "limit");
  }
  if (query.before_id < 0) return Status::invalidArgument("must be >= 0", "before");
  // One cached statement per combination of filters, so each can use its index.
  std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id < ?1";
  if (query.state) sql += " AND state = ?2";
  if (!query.project.empty()) sql += " AND project = ?3";
  if (!query.user.empty()) sql += " AND user = ?4";
  // One statement whatever the number of projects: they travel as a JSON array.
  if (query.within_projects) sql += " AND project IN (SELECT value FROM json_each(?6))";
  // The queue rule (jobQueue) as SQL: the spec names the queue, or names
  // none that exists and the project's first queue is this one. The
  // projects whose first queue it is come from jobQueue itself.
  std::vector<std::string> queue_names;
  std::vector<std::string> queue_projects;
  if (query.queue) {
    bool known = false;
    for (const QueueConfig& c : query.queue->queues) {
      queue_names.push_back(c.name);
      known = known || c.name == query.queue->name;
      const QueueConfig* first = jobQueue(query.queue->queues, "", c.project);
      if (first != nullptr && first->name == query.queue->name &&
          std::find(queue_projects.begin(), queue_projects.end(), c.project) ==
              queue_projects.end()) {
        queue_projects.push_back(c.project);
      }
    }
    if (!known) return JobPage{};
    sql +=
        " AND (COALESCE(json_extract(spec_json, '$.queue'), '') = ?7 OR "
        "(COALESCE(json_extract(spec_json, '$.queue'), '') NOT IN (SELECT value FROM json_each(?8))"
        " AND project IN (SELECT value FROM json_each(?9))))";
  }
  sql += " ORDER BY id DESC LIMIT ?5";

  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(sql));
  q.bind(1, query.before_id == 0 ? std::numeric_limits<std::int64_t>::max() : query.before_id);
  if (query.state) q.bind(2, std::string(jobStateName(*query.state)));
  if (!query.project.empty()) q.bind(3, query.project);
  if (!query.user.empty()) q.bind(4, query.user);
  if (query.within_projects) q.bind(6, Json(*query.within_projects).dump());
  if (query.queue) {
    q.bind(7, query.queue->name);
    q.bind(8, Json(queue_names).dump());
    q.bind(9, Json(queue_projects).dump());
  }
  q.bind(5, std::int64_t{query.limit} + 1);  // one more tells whether a next page exists
  JobPage page;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.step());
    if (!row) break;
    if (static_cast<int>(page.jobs.size()) == query.limit) {
      page.next_before = page.jobs.back().id.value();
      break;
    }
    TY_ASSIGN_OR_RETURN(Job job, readJob(q));
    page.jobs.push_back(std::move(job));
  }
  return page;
}

Result<std::optional<Job>> SqliteStore::findByIdempotencyKey(const std::string& user,
                                                             const std::string& key) {
  if (key.empty()) return std::optional<Job>();
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(std::string("SELECT ") + kJobColumns +
                                          " FROM jobs WHERE user = ?1 AND idempotency_key = ?2"));
  q.bind(1, user);
  q.bind(2, key);
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  if (!row) return std::optional<Job>();
  TY_ASSIGN_OR_RETURN(Job job, readJob(q));
  return std::optional<Job>(std::move(job));
}

Result<std::vector<Job>> SqliteStore::activeJobs() {
  std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE state IN (";
  std::vector<std::string> active;
  for (JobState s : kAllJobStates) {
    if (isTerminal(s)) continue;
    active.emplace_back(jobStateName(s));
    sql += (active.size() == 1 ? "?" : ", ?") + std::to_string(active.size());
  }
  sql += ") ORDER BY id";

  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(sql));
  for (size_t i = 0; i < active.size(); ++i) q.bind(static_cast<int>(i) + 1, active[i]);
  std::vector<Job> out;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.step());
    if (!row) break;
    TY_ASSIGN_OR_RETURN(Job job, readJob(q));
    out.push_back(std::move(job));
  }
  return out;
}

Result<std::map<JobState, std::int64_t>> SqliteStore::countJobs(const JobCountQuery& query) {
  // Two grouped halves so that each uses its index: the active states
  // through jobs_state, the finished ones through jobs_finished_at. The
  // planner, left to itself, takes jobs_state for the second half too and
  // scans every finished job (200k jobs: ~40 ms against ~1 ms), hence
  // INDEXED BY.
  std::string filters;
  if (!query.project.empty()) filters += " AND project = ?2";
  if (query.within_projects) filters += " AND project IN (SELECT value FROM json_each(?3))";
  std::string active;
  std::string terminal;
  std::vector<std::string> states;
  for (JobState s : kAllJobStates) {
    states.emplace_back(jobStateName(s));
    std::string& list = isTerminal(s) ? terminal : active;
    list += (list.empty() ? "?" : ", ?") + std::to_string(states.size() + 3);
  }
  const std::string sql = "SELECT state, COUNT(*) FROM jobs WHERE state IN (" + active + ")" +
                          filters + " GROUP BY state UNION ALL SELECT state, COUNT(*) FROM jobs " +
                          "INDEXED BY jobs_finished_at WHERE finished_at >= ?1 AND state IN (" +
                          terminal + ")" + filters + " GROUP BY state";

  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(sql));
  q.bind(1, query.finished_since);
  if (!query.project.empty()) q.bind(2, query.project);
  if (query.within_projects) q.bind(3, Json(*query.within_projects).dump());
  for (size_t i = 0; i < states.size(); ++i) q.bind(static_cast<int>(i) + 4, states[i]);
  std::map<JobState, std::int64_t> out;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.step());
    if (!row) break;
    std::optional<JobState> state = parseJobState(q.text(0));
    if (!state) return Status::internal("jobs: unknown state '" + q.text(0) + "'");
    out[*state] += q.int64(1);
  }
  return out;
}

Result<std::vector<Attempt>> SqliteStore::attempts(JobId id) {
  std::vector<Attempt> out;
  TY_RETURN_IF_ERROR(readTransaction([&](Db& db) -> Status {
    TY_RETURN_IF_ERROR(checkJobExists(db, id));
    TY_ASSIGN_OR_RETURN(Stmt q,
                        db.prepare("SELECT number, state, replicas_json, master_port, pids_json, "
                                   "created_at, started_at, finished_at, exit_code, reason "
                                   "FROM attempts WHERE job_id = ?1 ORDER BY number"));
    q.bind(1, id.value());
    while (true) {
      TY_ASSIGN_OR_RETURN(bool row, q.step());
      if (!row) break;
      Attempt a;
      a.key = AttemptKey{id, static_cast<int>(q.int64(0))};
      const std::string what = "attempt " + a.key.toString();
      std::optional<AttemptState> state = parseAttemptState(q.text(1));
      if (!state) return Status::internal(what + ": unknown state '" + q.text(1) + "'");
      a.state = *state;
      TY_ASSIGN_OR_RETURN(Json replicas_json, parseJson(q.text(2), what));
      Result<std::vector<ReplicaPlacement>> replicas = placementFromJson(replicas_json);
      if (!replicas.isOk()) {
        return Status::internal(what + ": stored replicas: " + replicas.status().toString());
      }
      a.replicas = std::move(replicas).value();
      a.master_port = static_cast<int>(q.int64(3));
      TY_ASSIGN_OR_RETURN(Json pids, parseJson(q.text(4), what));
      if (!pids.is_array()) return Status::internal(what + ": stored pids are not an array");
      for (const Json& p : pids) {
        if (!p.is_number_integer()) return Status::internal(what + ": stored pid not an integer");
        a.pids.push_back(p.get<std::int64_t>());
      }
      a.created_at = q.int64(5);
      a.started_at = q.int64(6);
      a.finished_at = q.int64(7);
      a.exit_code = q.optionalInt(8);
      a.reason = q.text(9);
      out.push_back(std::move(a));
    }
    return Status::ok();
  }));
  return out;
}

Result<std::vector<Event>> SqliteStore::events(JobId id, std::int64_t after_seq) {
  std::vector<Event> out;
  TY_RETURN_IF_ERROR(readTransaction([&](Db& db) -> Status {
    TY_RETURN_IF_ERROR(checkJobExists(db, id));
    TY_ASSIGN_OR_RETURN(Stmt q, db.prepare("SELECT seq, time, level, reason, message FROM events "
                                           "WHERE job_id = ?1 AND seq > ?2 ORDER BY seq"));
    q.bind(1, id.value());
    q.bind(2, after_seq);
    while (true) {
      TY_ASSIGN_OR_RETURN(bool row, q.step());
      if (!row) break;
      Event e;
      e.seq = q.int64(0);
      e.job = id;
      e.time = q.int64(1);
      std::string level = q.text(2);
      if (level != "normal" && level != "warning") {
        return Status::internal("event " + std::to_string(e.seq) + ": unknown level '" + level +
                                "'");
      }
      e.level = level == "warning" ? EventLevel::kWarning : EventLevel::kNormal;
      e.reason = q.text(3);
      e.message = q.text(4);
      out.push_back(std::move(e));
    }
    return Status::ok();
  }));
  return out;
}

bool SqliteStore::healthy() {
  Result<Reader> db = acquireReader();
  if (!db.isOk()) return false;
  Result<Stmt> q = (*db)->prepare("SELECT 1");
  if (!q.isOk()) return false;
  Result<bool> row = q->step();
  return row.isOk() && *row;
}

// --- Identity ---------------------------------------------------------------

using store_checks::projectNotFound;
using store_checks::userNotFound;

bool isUniqueViolation(Db& db) {
  int rc = sqlite3_extended_errcode(db.raw());
  return rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY;
}

std::int64_t flag(bool b) { return b ? 1 : 0; }

// Collects every row of `q` through `read`.
template <typename T, typename Read>
Result<std::vector<T>> readAll(Stmt& q, Read&& read) {
  std::vector<T> out;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.step());
    if (!row) break;
    out.push_back(read(q));
  }
  return out;
}

constexpr char kUserColumns[] =
    "name, password_hash, is_admin, created_at, disabled, failed_logins, locked_until";

User readUser(const Stmt& q) {
  User u;
  u.name = q.text(0);
  u.password_hash = q.text(1);
  u.is_admin = q.int64(2) != 0;
  u.created_at = q.int64(3);
  u.disabled = q.int64(4) != 0;
  u.failed_logins = static_cast<int>(q.int64(5));
  u.locked_until = q.int64(6);
  return u;
}

constexpr char kTokenColumns[] =
    "id, user, name, hash, prefix, project, created_at, expires_at, revoked_at, last_used_at";

ApiToken readToken(const Stmt& q) {
  ApiToken t;
  t.id = q.int64(0);
  t.user = q.text(1);
  t.name = q.text(2);
  t.hash = q.text(3);
  t.prefix = q.text(4);
  t.project = q.text(5);
  t.created_at = q.int64(6);
  t.expires_at = q.int64(7);
  t.revoked_at = q.int64(8);
  t.last_used_at = q.int64(9);
  return t;
}

Membership readMembership(const Stmt& q) { return {q.text(0), q.text(1), q.text(2)}; }

Status SqliteStore::checkRowExists(Db& db, const char* sql, const std::string& key,
                                   const std::string& missing) {
  TY_ASSIGN_OR_RETURN(Stmt q, db.prepare(sql));
  q.bind(1, key);
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  return row ? Status::ok() : Status::notFound(missing);
}

// A user's fields as ?1..?7, in kUserColumns order: the INSERT and the
// UPDATE bind the same way.
static void bindUser(Stmt& q, const User& user) {
  q.bind(1, user.name);
  q.bind(2, user.password_hash);
  q.bind(3, flag(user.is_admin));
  q.bind(4, user.created_at);
  q.bind(5, flag(user.disabled));
  q.bind(6, std::int64_t{user.failed_logins});
  q.bind(7, user.locked_until);
}

constexpr char kUserExists[] = "SELECT 1 FROM users WHERE name = ?1";
constexpr char kProjectExists[] = "SELECT 1 FROM projects WHERE name = ?1";

Status SqliteStore::createUser(const User& user) {
  TY_RETURN_IF_ERROR(store_checks::checkUser(user));
  return writeTransaction([&](Db& db) -> Status {
    TY_ASSIGN_OR_RETURN(Stmt ins, db.prepare("INSERT INTO users(" + std::string(kUserColumns) +
                                             ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    bindUser(ins, user);
    Status s = ins.run();
    if (s.isOk()) return s;
    if (isUniqueViolation(db)) {
      return Status::alreadyExists("name: user " + user.name + " already exists");
    }
    return s.withContext("insert user");
  });
}

Result<User> SqliteStore::getUser(const std::string& name) {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(
      Stmt q, db->prepare(std::string("SELECT ") + kUserColumns + " FROM users WHERE name = ?1"));
  q.bind(1, name);
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  if (!row) return Status::notFound(userNotFound(name));
  return readUser(q);
}

Result<std::vector<User>> SqliteStore::listUsers() {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(
      Stmt q, db->prepare(std::string("SELECT ") + kUserColumns + " FROM users ORDER BY name"));
  return readAll<User>(q, readUser);
}

Status SqliteStore::updateUser(const std::string& name, const UserChange& c) {
  if (c.password_hash && c.password_hash->empty()) {
    return Status::invalidArgument("must not be empty", "password_hash");
  }
  return writeTransaction([&](Db& db) -> Status {
    // Was the user an enabled admin before? Only then can the change leave
    // the system without one.
    TY_ASSIGN_OR_RETURN(
        Stmt was, db.prepare("SELECT is_admin = 1 AND disabled = 0 FROM users WHERE name = ?1"));
    was.bind(1, name);
    TY_ASSIGN_OR_RETURN(bool found, was.step());
    const bool was_admin = found && was.int64(0) != 0;
    // A fixed statement: unset fields keep their value through COALESCE.
    TY_ASSIGN_OR_RETURN(
        Stmt upd, db.prepare("UPDATE users SET password_hash = COALESCE(?2, password_hash), "
                             "failed_logins = CASE WHEN ?2 IS NULL THEN failed_logins ELSE 0 END, "
                             "locked_until = CASE WHEN ?2 IS NULL THEN COALESCE(?5, locked_until) "
                             "ELSE COALESCE(?5, 0) END, "
                             "is_admin = COALESCE(?3, is_admin), disabled = COALESCE(?4, disabled) "
                             "WHERE name = ?1 AND (?6 IS NULL OR password_hash = ?6)"));
    upd.bind(1, name);
    if (c.password_hash) upd.bind(2, *c.password_hash);
    if (c.is_admin) upd.bind(3, std::int64_t{*c.is_admin});
    if (c.disabled) upd.bind(4, std::int64_t{*c.disabled});
    if (c.locked_until) upd.bind(5, *c.locked_until);
    if (c.if_password_hash) upd.bind(6, *c.if_password_hash);
    Status s = upd.run();
    if (!s.isOk()) return s.withContext("update user");
    if (sqlite3_changes(db.raw()) == 0) {
      TY_ASSIGN_OR_RETURN(Stmt q, db.prepare("SELECT 1 FROM users WHERE name = ?1"));
      q.bind(1, name);
      TY_ASSIGN_OR_RETURN(bool exists, q.step());
      if (!exists) return Status::notFound(userNotFound(name));
      return Status::failedPrecondition("the password changed meanwhile; try again");
    }
    if (was_admin && (c.is_admin || c.disabled)) {
      TY_ASSIGN_OR_RETURN(
          Stmt q, db.prepare("SELECT COUNT(*) FROM users WHERE is_admin = 1 AND disabled = 0"));
      TY_ASSIGN_OR_RETURN(bool row, q.step());
      if (row && q.int64(0) == 0) {
        return Status::failedPrecondition(
            "that would leave no enabled global admin; make another user an admin first");
      }
    }
    return Status::ok();
  });
}

Status SqliteStore::createProject(const Project& project) {
  TY_RETURN_IF_ERROR(store_checks::checkProject(project));
  return writeTransaction([&](Db& db) -> Status {
    TY_ASSIGN_OR_RETURN(Stmt ins, db.prepare("INSERT INTO projects(name, created_at, webhook_url) "
                                             "VALUES(?1, ?2, ?3)"));
    ins.bind(1, project.name);
    ins.bind(2, project.created_at);
    ins.bind(3, project.webhook_url);
    Status s = ins.run();
    if (s.isOk()) return s;
    if (isUniqueViolation(db)) {
      return Status::alreadyExists("name: project " + project.name + " already exists");
    }
    return s.withContext("insert project");
  });
}

Result<Project> SqliteStore::getProject(const std::string& name) {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(
      Stmt q, db->prepare("SELECT name, created_at, webhook_url FROM projects WHERE name = ?1"));
  q.bind(1, name);
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  if (!row) return Status::notFound(projectNotFound(name));
  return Project{q.text(0), q.int64(1), q.text(2)};
}

Result<std::vector<Project>> SqliteStore::listProjects() {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(
      Stmt q, db->prepare("SELECT name, created_at, webhook_url FROM projects ORDER BY name"));
  return readAll<Project>(q, [](const Stmt& r) {
    return Project{r.text(0), r.int64(1), r.text(2)};
  });
}

Status SqliteStore::deleteProject(const std::string& name, Timestamp now) {
  return writeTransaction([&](Db& db) -> Status {
    TY_RETURN_IF_ERROR(checkRowExists(db, kProjectExists, name, projectNotFound(name)));
    {
      TY_ASSIGN_OR_RETURN(Stmt del, db.prepare("DELETE FROM memberships WHERE project = ?1"));
      del.bind(1, name);
      TY_RETURN_IF_ERROR(del.run());
    }
    {
      TY_ASSIGN_OR_RETURN(Stmt rev, db.prepare("UPDATE api_tokens SET revoked_at = ?2 "
                                               "WHERE project = ?1 AND revoked_at = 0"));
      rev.bind(1, name);
      rev.bind(2, now);
      TY_RETURN_IF_ERROR(rev.run());
    }
    TY_ASSIGN_OR_RETURN(Stmt del, db.prepare("DELETE FROM projects WHERE name = ?1"));
    del.bind(1, name);
    Status s = del.run();
    return s.isOk() ? s : s.withContext("delete project " + name);
  });
}

Status SqliteStore::putMembership(const Membership& m) {
  TY_RETURN_IF_ERROR(store_checks::checkMembership(m));
  return writeTransaction([&](Db& db) -> Status {
    // Checked by name first, for a message that says which one is missing
    // (the foreign keys would only say that one is).
    TY_RETURN_IF_ERROR(checkRowExists(db, kUserExists, m.user, userNotFound(m.user)));
    TY_RETURN_IF_ERROR(checkRowExists(db, kProjectExists, m.project, projectNotFound(m.project)));
    TY_ASSIGN_OR_RETURN(Stmt ups, db.prepare("INSERT INTO memberships(user, project, role) "
                                             "VALUES(?1, ?2, ?3) ON CONFLICT(user, project) "
                                             "DO UPDATE SET role = excluded.role"));
    ups.bind(1, m.user);
    ups.bind(2, m.project);
    ups.bind(3, m.role);
    Status s = ups.run();
    return s.isOk() ? s : s.withContext("write membership");
  });
}

Status SqliteStore::removeMembership(const std::string& user, const std::string& project) {
  return writeTransaction([&](Db& db) -> Status {
    TY_ASSIGN_OR_RETURN(Stmt del,
                        db.prepare("DELETE FROM memberships WHERE user = ?1 AND project = ?2"));
    del.bind(1, user);
    del.bind(2, project);
    TY_RETURN_IF_ERROR(del.run());
    if (sqlite3_changes(db.raw()) == 0) {
      return Status::notFound("user " + user + " is not a member of project " + project);
    }
    return Status::ok();
  });
}

Result<std::vector<Membership>> SqliteStore::membershipsOfUser(const std::string& user) {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare("SELECT user, project, role FROM memberships "
                                          "WHERE user = ?1 ORDER BY project"));
  q.bind(1, user);
  return readAll<Membership>(q, readMembership);
}

Result<std::vector<Membership>> SqliteStore::membershipsOfProject(const std::string& project) {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare("SELECT user, project, role FROM memberships "
                                          "WHERE project = ?1 ORDER BY user"));
  q.bind(1, project);
  return readAll<Membership>(q, readMembership);
}

Result<ApiToken> SqliteStore::createToken(const ApiToken& token) {
  TY_RETURN_IF_ERROR(store_checks::checkToken(token));
  ApiToken stored = token;
  stored.revoked_at = 0;
  stored.last_used_at = 0;
  TY_RETURN_IF_ERROR(writeTransaction([&](Db& db) -> Status {
    TY_RETURN_IF_ERROR(checkRowExists(db, kUserExists, token.user, userNotFound(token.user)));
    if (!token.project.empty()) {
      TY_RETURN_IF_ERROR(
          checkRowExists(db, kProjectExists, token.project, projectNotFound(token.project)));
    }
    TY_ASSIGN_OR_RETURN(Stmt ins, db.prepare("INSERT INTO api_tokens(user, name, hash, prefix, "
                                             "project, created_at, expires_at, revoked_at, "
                                             "last_used_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                                             "0, 0)"));
    ins.bind(1, token.user);
    ins.bind(2, token.name);
    ins.bind(3, token.hash);
    ins.bind(4, token.prefix);
    ins.bind(5, token.project);
    ins.bind(6, token.created_at);
    ins.bind(7, token.expires_at);
    Status s = ins.run();
    if (!s.isOk()) {
      if (isUniqueViolation(db))
        return Status::alreadyExists("hash: a token with this hash exists");
      return s.withContext("insert token");
    }
    stored.id = sqlite3_last_insert_rowid(db.raw());
    return Status::ok();
  }));
  return stored;
}

Result<std::optional<ApiToken>> SqliteStore::findTokenByHash(const std::string& hash,
                                                             Timestamp now) {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(std::string("SELECT ") + kTokenColumns +
                                          " FROM api_tokens WHERE hash = ?1"));
  q.bind(1, hash);
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  if (!row) return std::optional<ApiToken>();
  ApiToken t = readToken(q);
  // One rule for liveness, in ApiToken::live, rather than a second in SQL.
  if (!t.live(now)) return std::optional<ApiToken>();
  return std::optional<ApiToken>(std::move(t));
}

Result<std::vector<ApiToken>> SqliteStore::tokensOfUser(const std::string& user) {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(std::string("SELECT ") + kTokenColumns +
                                          " FROM api_tokens WHERE user = ?1 ORDER BY id"));
  q.bind(1, user);
  return readAll<ApiToken>(q, readToken);
}

Status SqliteStore::revokeToken(const std::string& user, std::int64_t id, Timestamp now) {
  return writeTransaction([&](Db& db) -> Status {
    {
      TY_ASSIGN_OR_RETURN(Stmt q,
                          db.prepare("SELECT 1 FROM api_tokens WHERE id = ?1 AND user = ?2"));
      q.bind(1, id);
      q.bind(2, user);
      TY_ASSIGN_OR_RETURN(bool row, q.step());
      if (!row) return Status::notFound("user " + user + " has no token " + std::to_string(id));
    }
    TY_ASSIGN_OR_RETURN(Stmt upd, db.prepare("UPDATE api_tokens SET revoked_at = ?2 "
                                             "WHERE id = ?1 AND revoked_at = 0"));
    upd.bind(1, id);
    upd.bind(2, now);
    return upd.run();
  });
}

Status SqliteStore::touchToken(std::int64_t id, Timestamp now) {
  return writeTransaction([&](Db& db) -> Status {
    TY_ASSIGN_OR_RETURN(Stmt upd, db.prepare("UPDATE api_tokens SET last_used_at = "
                                             "MAX(last_used_at, ?2) WHERE id = ?1"));
    upd.bind(1, id);
    upd.bind(2, now);
    TY_RETURN_IF_ERROR(upd.run());
    if (sqlite3_changes(db.raw()) == 0) {
      return Status::notFound("token " + std::to_string(id) + " not found");
    }
    return Status::ok();
  });
}

Result<std::int64_t> SqliteStore::appendAudit(const AuditRecord& r) {
  std::int64_t seq = 0;
  TY_RETURN_IF_ERROR(writeTransaction([&](Db& db) -> Status {
    TY_ASSIGN_OR_RETURN(Stmt ins, db.prepare("INSERT INTO audit_log(at, user, address, method, "
                                             "path, status, detail) "
                                             "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    ins.bind(1, r.at);
    ins.bind(2, r.user);
    ins.bind(3, r.address);
    ins.bind(4, r.method);
    ins.bind(5, r.path);
    ins.bind(6, std::int64_t{r.status});
    ins.bind(7, r.detail);
    Status s = ins.run();
    if (!s.isOk()) return s.withContext("append audit record");
    seq = sqlite3_last_insert_rowid(db.raw());
    return Status::ok();
  }));
  return seq;
}

Result<AuditPage> SqliteStore::listAudit(const AuditQuery& query) {
  TY_RETURN_IF_ERROR(store_checks::checkAuditQuery(query));
  // One cached statement per filter, so the user filter can use its index.
  std::string sql =
      "SELECT seq, at, user, address, method, path, status, detail FROM audit_log "
      "WHERE seq < ?1";
  if (!query.user.empty()) sql += " AND user = ?2";
  sql += " ORDER BY seq DESC LIMIT ?3";
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(sql));
  q.bind(1, query.before_seq == 0 ? std::numeric_limits<std::int64_t>::max() : query.before_seq);
  if (!query.user.empty()) q.bind(2, query.user);
  q.bind(3, std::int64_t{query.limit} + 1);  // one more tells whether a next page exists
  AuditPage page;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.step());
    if (!row) break;
    if (static_cast<int>(page.records.size()) == query.limit) {
      page.next_before = page.records.back().seq;
      break;
    }
    AuditRecord r;
    r.seq = q.int64(0);
    r.at = q.int64(1);
    r.user = q.text(2);
    r.address = q.text(3);
    r.method = q.text(4);
    r.path = q.text(5);
    r.status = static_cast<int>(q.int64(6));
    r.detail = q.text(7);
    page.records.push_back(std::move(r));
  }
  return page;
}

// --- Training metrics -------------------------------------------------------

// The columns readTrainingPoint() reads, in order.
constexpr char kPointColumns[] = "id, name, step IS NULL, COALESCE(step, 0), value, time, source";

TrainingPoint readTrainingPoint(const Stmt& q, int first = 0) {
  TrainingPoint p;
  p.id = q.int64(first);
  p.name = q.text(first + 1);
  if (q.int64(first + 2) == 0) p.step = q.int64(first + 3);
  p.value = q.real(first + 4);
  p.time = q.int64(first + 5);
  p.source = q.text(first + 6);
  return p;
}

Result<int> SqliteStore::appendTrainingPoints(JobId job, const std::vector<TrainingPoint>& points) {
  for (const TrainingPoint& p : points) TY_RETURN_IF_ERROR(validateTrainingPoint(p));
  int added = 0;
  TY_RETURN_IF_ERROR(writeTransaction([&](Db& db) -> Status {
    TY_RETURN_IF_ERROR(checkJobExists(db, job));
    // OR IGNORE on the unique (job_id, source, name) index: a report read
    // or posted again adds nothing.
    for (const TrainingPoint& p : points) {
      // One statement per row: a Stmt is reset (and can be bound again)
      // when it goes out of scope.
      TY_ASSIGN_OR_RETURN(Stmt ins, db.prepare("INSERT OR IGNORE INTO job_metrics(job_id, name, "
                                               "step, value, time, source) "
                                               "VALUES(?1, ?2, ?3, ?4, ?5, ?6)"));
      ins.bind(1, job.value());
      ins.bind(2, p.name);
      if (p.step) {
        ins.bind(3, *p.step);
      } else {
        ins.bind(3, std::optional<int>());
      }
      ins.bind(4, p.value);
      ins.bind(5, p.time);
      ins.bind(6, p.source);
      Status s = ins.run();
      if (!s.isOk()) return s.withContext("insert training metric");
      added += sqlite3_changes(db.raw());
    }
    return Status::ok();
  }));
  return added;
}

Result<std::vector<TrainingPoint>> SqliteStore::trainingSeries(JobId job,
                                                               const TrainingSeriesQuery& query) {
  TY_RETURN_IF_ERROR(validateTrainingSeriesQuery(query));
  std::vector<TrainingPoint> out;
  TY_RETURN_IF_ERROR(readTransaction([&](Db& db) -> Status {
    TY_RETURN_IF_ERROR(checkJobExists(db, job));
    // Downsampling needs the whole series; otherwise the limit is SQL's.
    TY_ASSIGN_OR_RETURN(Stmt q,
                        db.prepare(std::string("SELECT ") + kPointColumns +
                                   " FROM job_metrics WHERE job_id = ?1 AND name = ?2 AND id > ?3 "
                                   "ORDER BY id LIMIT ?4"));
    q.bind(1, job.value());
    q.bind(2, query.name);
    q.bind(3, query.after_id);
    q.bind(4, query.max_points > 0 ? std::int64_t{-1} : std::int64_t{query.limit});
    TY_ASSIGN_OR_RETURN(
        out, readAll<TrainingPoint>(q, [](const Stmt& s) { return readTrainingPoint(s); }));
    return Status::ok();
  }));
  if (query.max_points > 0) return downsampleTrainingPoints(std::move(out), query.max_points);
  return out;
}

Result<std::vector<TrainingMetricSummary>> SqliteStore::trainingMetrics(JobId job) {
  std::vector<TrainingMetricSummary> out;
  TY_RETURN_IF_ERROR(readTransaction([&](Db& db) -> Status {
    TY_RETURN_IF_ERROR(checkJobExists(db, job));
    // The series index (job_id, name, id) answers both the count and the
    // latest row of each name.
    TY_ASSIGN_OR_RETURN(Stmt q,
                        db.prepare(std::string("SELECT s.n, ") + kPointColumns +
                                   " FROM (SELECT name AS sname, COUNT(*) AS n, MAX(id) AS last "
                                   "FROM job_metrics WHERE job_id = ?1 GROUP BY name) s "
                                   "JOIN job_metrics m ON m.id = s.last ORDER BY s.sname"));
    q.bind(1, job.value());
    TY_ASSIGN_OR_RETURN(out, readAll<TrainingMetricSummary>(q, [](const Stmt& s) {
                          TrainingMetricSummary m;
                          m.count = s.int64(0);
                          m.latest = readTrainingPoint(s, 1);
                          m.name = m.latest.name;
                          return m;
                        }));
    return Status::ok();
  }));
  return out;
}

Result<std::vector<LatestTrainingPoint>> SqliteStore::latestTrainingMetrics(
    const std::vector<JobId>& jobs) {
  // Sorted and unique, so that chunks come back in job order and a job
  // listed twice is read once.
  std::vector<std::int64_t> ids;
  ids.reserve(jobs.size());
  for (JobId j : jobs) ids.push_back(j.value());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  // A bound parameter per job, in chunks well under SQLite's variable limit
  // (32766 by default, 999 before 3.32): a server runs thousands of jobs.
  constexpr std::size_t kChunk = 500;
  std::vector<LatestTrainingPoint> out;
  TY_RETURN_IF_ERROR(readTransaction([&](Db& db) -> Status {
    for (std::size_t first = 0; first < ids.size(); first += kChunk) {
      const std::size_t n = std::min(kChunk, ids.size() - first);
      std::string params;
      for (std::size_t i = 0; i < n; ++i) params += i == 0 ? "?" : ", ?";
      // The series index (job_id, name, id) covers the grouped MAX(id) of
      // each (job, name); the join reads one row per metric.
      TY_ASSIGN_OR_RETURN(
          Stmt q,
          db.prepare(std::string("SELECT m.job_id, ") + kPointColumns +
                     " FROM (SELECT MAX(id) AS last FROM job_metrics WHERE job_id IN (" + params +
                     ") GROUP BY job_id, name) s "
                     "JOIN job_metrics m ON m.id = s.last ORDER BY m.job_id, m.name"));
      for (std::size_t i = 0; i < n; ++i) q.bind(static_cast<int>(i + 1), ids[first + i]);
      TY_ASSIGN_OR_RETURN(std::vector<LatestTrainingPoint> chunk,
                          readAll<LatestTrainingPoint>(q, [](const Stmt& s) {
                            return LatestTrainingPoint{JobId(s.int64(0)), readTrainingPoint(s, 1)};
                          }));
      out.insert(out.end(), std::make_move_iterator(chunk.begin()),
                 std::make_move_iterator(chunk.end()));
    }
    return Status::ok();
  }));
  return out;
}

// --- Webhook deliveries -----------------------------------------------------

constexpr char kDeliveryColumns[] =
    "id, job_id, url, event, attempts, created_at, next_attempt_at, delivered_at, given_up_at, "
    "last_error";

WebhookDelivery readDelivery(const Stmt& q) {
  WebhookDelivery d;
  d.id = q.int64(0);
  d.job = JobId(q.int64(1));
  d.url = q.text(2);
  d.event = q.text(3);
  d.attempts = static_cast<int>(q.int64(4));
  d.created_at = q.int64(5);
  d.next_attempt_at = q.int64(6);
  d.delivered_at = q.int64(7);
  d.given_up_at = q.int64(8);
  d.last_error = q.text(9);
  return d;
}

Status checkWebhookLimit(int limit) {
  if (limit < 1 || limit > 1000) return Status::invalidArgument("must be 1..1000", "limit");
  return Status::ok();
}

Status SqliteStore::setProjectWebhook(const std::string& name, const std::string& url) {
  return writeTransaction([&](Db& db) -> Status {
    TY_ASSIGN_OR_RETURN(Stmt upd,
                        db.prepare("UPDATE projects SET webhook_url = ?2 WHERE name = ?1"));
    upd.bind(1, name);
    upd.bind(2, url);
    TY_RETURN_IF_ERROR(upd.run());
    if (sqlite3_changes(db.raw()) == 0) return Status::notFound(projectNotFound(name));
    return Status::ok();
  });
}

Result<std::vector<Job>> SqliteStore::jobsAwaitingWebhook(Timestamp finished_since, int limit) {
  TY_RETURN_IF_ERROR(checkWebhookLimit(limit));
  // The spec's notify.webhook is read from its JSON, so that the scan needs
  // no column of its own; jobs_finished_at bounds the rows it looks at.
  const std::string sql =
      std::string("SELECT ") + kJobColumns +
      " FROM jobs j WHERE j.state IN (?1, ?2, ?3) AND j.finished_at >= ?4"
      " AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.job_id = j.id)"
      " AND (COALESCE(json_extract(j.spec_json, '$.notify.webhook'), '') != ''"
      " OR EXISTS (SELECT 1 FROM projects p WHERE p.name = j.project AND p.webhook_url != ''))"
      " ORDER BY j.finished_at, j.id LIMIT ?5";
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(sql));
  q.bind(1, std::string(jobStateName(JobState::kSucceeded)));
  q.bind(2, std::string(jobStateName(JobState::kFailed)));
  q.bind(3, std::string(jobStateName(JobState::kCancelled)));
  q.bind(4, finished_since);
  q.bind(5, std::int64_t{limit});
  std::vector<Job> out;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.step());
    if (!row) break;
    TY_ASSIGN_OR_RETURN(Job job, readJob(q));
    out.push_back(std::move(job));
  }
  return out;
}

Status SqliteStore::addWebhookDeliveries(const std::vector<WebhookDelivery>& deliveries,
                                         Timestamp watermark) {
  return writeTransaction([&](Db& db) -> Status {
    for (const WebhookDelivery& d : deliveries) {
      TY_RETURN_IF_ERROR(checkJobExists(db, d.job));
      // OR IGNORE on the unique (job_id, url) index: a rescan after a crash
      // between the insert and the watermark adds nothing.
      TY_ASSIGN_OR_RETURN(
          Stmt ins, db.prepare("INSERT OR IGNORE INTO webhook_deliveries(job_id, url, event, "
                               "attempts, created_at, next_attempt_at, delivered_at, given_up_at, "
                               "last_error) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
      ins.bind(1, d.job.value());
      ins.bind(2, d.url);
      ins.bind(3, d.event);
      ins.bind(4, std::int64_t{d.attempts});
      ins.bind(5, d.created_at);
      ins.bind(6, d.next_attempt_at);
      ins.bind(7, d.delivered_at);
      ins.bind(8, d.given_up_at);
      ins.bind(9, d.last_error);
      Status s = ins.run();
      if (!s.isOk()) return s.withContext("insert webhook delivery");
    }
    TY_ASSIGN_OR_RETURN(Stmt mark,
                        db.prepare("INSERT INTO webhook_state(id, watermark) VALUES(1, ?1) "
                                   "ON CONFLICT(id) DO UPDATE SET watermark = excluded.watermark"));
    mark.bind(1, watermark);
    Status s = mark.run();
    return s.isOk() ? s : s.withContext("record webhook watermark");
  });
}

Result<Timestamp> SqliteStore::webhookWatermark() {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare("SELECT watermark FROM webhook_state WHERE id = 1"));
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  return row ? q.int64(0) : Timestamp{0};
}

Result<std::vector<WebhookDelivery>> SqliteStore::dueWebhookDeliveries(Timestamp now, int limit) {
  TY_RETURN_IF_ERROR(checkWebhookLimit(limit));
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(std::string("SELECT ") + kDeliveryColumns +
                                          " FROM webhook_deliveries WHERE delivered_at = 0 AND "
                                          "given_up_at = 0 AND next_attempt_at <= ?1 "
                                          "ORDER BY next_attempt_at, id LIMIT ?2"));
  q.bind(1, now);
  q.bind(2, std::int64_t{limit});
  return readAll<WebhookDelivery>(q, readDelivery);
}

Result<std::vector<WebhookDelivery>> SqliteStore::webhookDeliveries(JobId job) {
  TY_ASSIGN_OR_RETURN(Reader db, acquireReader());
  TY_ASSIGN_OR_RETURN(Stmt q, db->prepare(std::string("SELECT ") + kDeliveryColumns +
                                          " FROM webhook_deliveries WHERE job_id = ?1 "
                                          "ORDER BY id"));
  q.bind(1, job.value());
  return readAll<WebhookDelivery>(q, readDelivery);
}

Status SqliteStore::updateWebhookDelivery(const WebhookDelivery& d,
                                          const std::vector<Event>& events) {
  return writeTransaction([&](Db& db) -> Status {
    TY_ASSIGN_OR_RETURN(Stmt upd, db.prepare("UPDATE webhook_deliveries SET attempts = ?2, "
                                             "next_attempt_at = ?3, delivered_at = ?4, "
                                             "given_up_at = ?5, last_error = ?6 WHERE id = ?1"));
    upd.bind(1, d.id);
    upd.bind(2, std::int64_t{d.attempts});
    upd.bind(3, d.next_attempt_at);
    upd.bind(4, d.delivered_at);
    upd.bind(5, d.given_up_at);
    upd.bind(6, d.last_error);
    Status s = upd.run();
    if (!s.isOk()) return s.withContext("update webhook delivery");
    if (sqlite3_changes(db.raw()) == 0) {
      return Status::notFound("webhook delivery " + std::to_string(d.id) + " not found");
    }
    for (const Event& e : events) TY_RETURN_IF_ERROR(insertEvent(db, e.job, e));
    return Status::ok();
  });
}

}  // namespace

Result<std::unique_ptr<Store>> openSqliteStore(const std::string& path,
                                               const SqliteOptions& options) {
  if (path.empty() || path == ":memory:") {
    return Status::invalidArgument("the SQLite store needs a file path (got '" + path + "')");
  }
  auto opened = [&]() -> Result<std::unique_ptr<Store>> {
    TY_ASSIGN_OR_RETURN(std::unique_ptr<Db> writer, openConnection(path, options, /*writer=*/true));
    TY_RETURN_IF_ERROR(sqlite::migrate(*writer, sqlite::storeMigrations(), SystemClock().now()));
    return std::unique_ptr<Store>(std::make_unique<SqliteStore>(path, options, std::move(writer)));
  }();
  if (!opened.isOk()) return opened.status().withContext("open store " + path);
  return opened;
}

Result<std::unique_ptr<Store>> openSqliteStore(const std::string& path) {
  return openSqliteStore(path, SqliteOptions{});
}

}  // namespace ty
