#include "store/sqlite/migrations.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ty::sqlite {

namespace {

constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  project TEXT NOT NULL,
  user TEXT NOT NULL,
  state TEXT NOT NULL,
  priority INTEGER NOT NULL,
  spec_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  exit_code INTEGER,
  reason TEXT NOT NULL,
  not_before INTEGER NOT NULL,
  cancel_requested_at INTEGER NOT NULL,
  idempotency_key TEXT
);
CREATE UNIQUE INDEX jobs_user_idempotency_key ON jobs(user, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_state ON jobs(state);
CREATE INDEX jobs_project_id ON jobs(project, id);
CREATE INDEX jobs_user_id ON jobs(user, id);

CREATE TABLE attempts (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  number INTEGER NOT NULL,
  state TEXT NOT NULL,
  replicas_json TEXT NOT NULL,
  master_port INTEGER NOT NULL,
  pids_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  exit_code INTEGER,
  reason TEXT NOT NULL,
  PRIMARY KEY (job_id, number)
);

CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  time INTEGER NOT NULL,
  level TEXT NOT NULL,
  reason TEXT NOT NULL,
  message TEXT NOT NULL
);
CREATE INDEX events_job_seq ON events(job_id, seq);
)sql"},
    {2, R"sql(
ALTER TABLE jobs ADD COLUMN preempted_by INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN preempt_requested_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;
CREATE TABLE queue_usage (
  queue TEXT PRIMARY KEY,
  gpu_ms REAL NOT NULL,
  cpu_ms REAL NOT NULL,
  memory_gib_ms REAL NOT NULL,
  as_of INTEGER NOT NULL
);
)sql"},
    // Users, projects, memberships, API tokens and the audit log. Names are
    // the keys (they are what the API and jobs use); tokens and audit
    // records get AUTOINCREMENT ids so that an id is never reused. The
    // projects that existing jobs name are recorded, so that roles can be
    // granted in them at once; nothing else is touched.
    {3, R"sql(
CREATE TABLE users (
  name TEXT PRIMARY KEY,
  password_hash TEXT NOT NULL,
  is_admin INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  disabled INTEGER NOT NULL,
  failed_logins INTEGER NOT NULL,
  locked_until INTEGER NOT NULL
);
CREATE TABLE projects (
  name TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL
);
INSERT INTO projects(name, created_at) SELECT project, MIN(created_at) FROM jobs GROUP BY project;
CREATE TABLE memberships (
  user TEXT NOT NULL REFERENCES users(name),
  project TEXT NOT NULL REFERENCES projects(name),
  role TEXT NOT NULL,
  PRIMARY KEY (user, project)
);
CREATE INDEX memberships_project_user ON memberships(project, user);
CREATE TABLE api_tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user TEXT NOT NULL REFERENCES users(name),
  name TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  project TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  revoked_at INTEGER NOT NULL,
  last_used_at INTEGER NOT NULL
);
CREATE INDEX api_tokens_user_id ON api_tokens(user, id);
CREATE INDEX api_tokens_project ON api_tokens(project);
CREATE TABLE audit_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  user TEXT NOT NULL,
  address TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX audit_log_user_seq ON audit_log(user, seq);
)sql"},
    // Queues and quotas, editable at run time. Each queue is one row holding
    // its whole config as the codec's JSON (codec/queue_codec.h), so a new
    // quota field needs no schema change. seq keeps the order queues were
    // first added: it decides which queue a project's jobs go to when the
    // project has several. Empty until the server seeds it from the config
    // file's scheduler.queues at its first start.
    {4, R"sql(
CREATE TABLE queues (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  config_json TEXT NOT NULL
);
)sql"},
    // Training metrics that jobs report (loss, learning rate, samples/s),
    // one row per (report, name). `source` names the report a point came
    // from: "log:<attempt>:<replica>:<byte offset>" for a TRAINYARD_METRIC
    // line, "api:<key>" for a POST. Unique per job and name, so reading a
    // metrics file again after a restart, or a retried POST, adds nothing.
    {5, R"sql(
CREATE TABLE job_metrics (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  name TEXT NOT NULL,
  step INTEGER,
  value REAL NOT NULL,
  time INTEGER NOT NULL,
  source TEXT NOT NULL
);
CREATE UNIQUE INDEX job_metrics_report ON job_metrics(job_id, source, name);
CREATE INDEX job_metrics_series ON job_metrics(job_id, name, id);
)sql"},
    // Webhooks: a project's URL, and one row per POST owed for a finished
    // job, written before it is sent so that a crash does not lose it. A
    // (job, url) pair is unique, so a rescan inserts nothing twice. The
    // watermark is how far the notifier has scanned finished jobs; the index
    // on finished_at keeps that scan cheap.
    {6, R"sql(
ALTER TABLE projects ADD COLUMN webhook_url TEXT NOT NULL DEFAULT '';
CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  url TEXT NOT NULL,
  event TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  delivered_at INTEGER NOT NULL,
  given_up_at INTEGER NOT NULL,
  last_error TEXT NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_job_url ON webhook_deliveries(job_id, url);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at)
  WHERE delivered_at = 0 AND given_up_at = 0;
CREATE TABLE webhook_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  watermark INTEGER NOT NULL
);
CREATE INDEX jobs_finished_at ON jobs(finished_at);
)sql"},
};

// Runs one step in its own transaction unless another opener got there first.
Status applyStep(Db& db, const Migration& step, Timestamp now) {
  TY_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE"));
  Status s = [&]() -> Status {
    TY_ASSIGN_OR_RETURN(int current, schemaVersion(db));
    if (current >= step.version) return Status::ok();
    TY_RETURN_IF_ERROR(db.exec(step.sql));
    TY_ASSIGN_OR_RETURN(Stmt ins, db.prepare("INSERT INTO schema_migrations(version, applied_at) "
                                             "VALUES(?1, ?2)"));
    ins.bind(1, std::int64_t{step.version});
    ins.bind(2, std::int64_t{now});
    TY_RETURN_IF_ERROR(ins.run());
    return db.exec("COMMIT");
  }();
  if (!s.isOk()) {
    if (sqlite3_get_autocommit(db.raw()) == 0) (void)db.exec("ROLLBACK");
    return s.withContext("schema migration " + std::to_string(step.version));
  }
  return s;
}

}  // namespace

std::span<const Migration> storeMigrations() { return kMigrations; }

Result<int> schemaVersion(Db& db) {
  TY_ASSIGN_OR_RETURN(Stmt q,
                      db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
  TY_ASSIGN_OR_RETURN(bool row, q.step());
  if (!row) return Status::internal("schema_migrations: no row from MAX(version)");
  return static_cast<int>(q.int64(0));
}

Status migrate(Db& db, std::span<const Migration> steps, Timestamp now) {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].version != static_cast<int>(i) + 1) {
      std::fprintf(stderr, "sqlite: migration %zu has version %d\n", i, steps[i].version);
      std::abort();
    }
  }
  TY_RETURN_IF_ERROR(
      db.exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
              "version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"));
  TY_ASSIGN_OR_RETURN(int current, schemaVersion(db));
  if (current > static_cast<int>(steps.size())) {
    return Status::failedPrecondition("database schema version " + std::to_string(current) +
                                      " is newer than this build (" + std::to_string(steps.size()) +
                                      "); upgrade trainyard");
  }
  for (const Migration& step : steps) {
    if (step.version <= current) continue;
    TY_RETURN_IF_ERROR(applyStep(db, step, now));
  }
  return Status::ok();
}

}  // namespace ty::sqlite
