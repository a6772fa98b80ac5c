// Store: the durable truth of the control plane.
//
// Every state change is written here (and committed) before it is acted
// on. Implementations: sqlite/ (default, WAL), memory/ (tests, simulator);
// PostgreSQL later. One conformance suite (store_conformance_test.cpp)
// runs against each. All methods are thread-safe; each write call is one
// atomic transaction: either all of it is visible afterwards or none.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/job.h"
#include "core/queue.h"
#include "store/identity.h"

namespace ty {

// The message of NotFound for a missing job, the same from every store and
// from the API for a job the caller may not see.
inline std::string jobNotFoundMessage(JobId id) {
  return "job " + std::to_string(id.value()) + " not found";
}

// The message of NotFound for a queue that is not stored.
inline std::string queueNotFoundMessage(const std::string& name) {
  return "no queue \"" + name + "\"; `trainyard queue` lists them";
}

struct JobQuery {
  std::optional<JobState> state;
  std::string project;  // empty: any
  std::string user;     // empty: any
  // Set: only jobs of these projects (an empty list matches nothing). How
  // the API shows a caller only the projects they may read.
  std::optional<std::vector<std::string>> within_projects;
  int limit = 100;             // 1..1000
  std::int64_t before_id = 0;  // page cursor: only ids below this; 0: from newest
  // Set: only the jobs of queue `name`, by the rule the scheduler charges
  // quota by (jobQueue in core/queue.h) over `queues`, the queues in force:
  // jobs whose spec names it, and jobs whose spec names none of `queues`
  // but whose project's first queue it is. A name not in `queues` matches
  // nothing.
  struct QueueFilter {
    std::string name;
    std::vector<QueueConfig> queues;
  };
  std::optional<QueueFilter> queue;
};

// Which jobs countJobs() counts: every job not in a terminal state, and the
// terminal ones that finished at or after `finished_since` (ms epoch).
struct JobCountQuery {
  Timestamp finished_since = 0;
  std::string project;  // empty: any
  // Set: only jobs of these projects (an empty list matches nothing).
  std::optional<std::vector<std::string>> within_projects;
};

struct JobPage {
  std::vector<Job> jobs;         // newest first
  std::int64_t next_before = 0;  // cursor for the next page; 0: no more
};

// Decayed resource-time one queue has used: what fair share orders by.
// Kept in the store so a restart does not forget who used the cluster.
struct QueueUsage {
  std::string queue;
  double gpu_ms = 0;         // GPU-milliseconds: one whole GPU for 1 ms is 1
  double cpu_ms = 0;         // CPU-milliseconds
  double memory_gib_ms = 0;  // GiB-milliseconds
  Timestamp as_of = 0;       // the time decay and accrual were applied up to
  bool operator==(const QueueUsage&) const = default;
};

// One webhook POST owed for one finished job, kept until it is delivered
// or given up so that a restart resumes it (server/webhook_notifier.h).
struct WebhookDelivery {
  std::int64_t id = 0;  // assigned by the store; increasing, never reused
  JobId job;
  std::string url;
  std::string event;  // "job.succeeded", "job.failed", "job.cancelled"
  int attempts = 0;   // POSTs tried so far
  Timestamp created_at = 0;
  Timestamp next_attempt_at = 0;  // not tried before this time
  Timestamp delivered_at = 0;     // 0: not delivered
  Timestamp given_up_at = 0;      // 0: not given up
  std::string last_error;         // why the last attempt failed; empty after success
  bool pending() const { return delivered_at == 0 && given_up_at == 0; }
  bool operator==(const WebhookDelivery&) const = default;
};

// A set of writes applied atomically. Jobs and attempts are whole records
// replacing the stored ones (by id / key); events are appended and get
// their seq assigned by the store.
struct WriteBatch {
  std::vector<Job> jobs;
  std::vector<Attempt> attempts;
  std::vector<Event> events;
  std::vector<QueueUsage> usage;  // replaces each named queue's record
  bool empty() const { return jobs.empty() && attempts.empty() && events.empty() && usage.empty(); }
};

// One value of a training metric a job reported (loss, lr, samples/s).
struct TrainingPoint {
  std::string name;                  // validMetricName() (codec/training_metric_codec.h)
  std::optional<std::int64_t> step;  // the job's step, when it gave one
  double value = 0;
  Timestamp time = 0;  // when it was reported (ms since epoch)
  // The report it came from: "log:<attempt>:<replica>:<byte offset>" or
  // "api:<key>". A (job, source, name) is stored once: a point appended
  // again is ignored, which is what makes re-reading a file harmless.
  std::string source;
  std::int64_t id = 0;  // assigned by the store, increasing; ignored on append
  bool operator==(const TrainingPoint&) const = default;
};

// Which points of one series trainingSeries() returns.
struct TrainingSeriesQuery {
  std::string name;
  std::int64_t after_id = 0;  // only points with id above this (a cursor)
  int limit = 10'000;         // at most this many, oldest first (1..100000)
  // > 0: instead of `limit`, every point after `after_id` thinned to at most
  // this many (see downsampleTrainingPoints), for charts of long runs.
  int max_points = 0;
};

// A job's metric as a list shows it.
struct TrainingMetricSummary {
  std::string name;
  std::int64_t count = 0;
  TrainingPoint latest;  // the last one reported (highest id)
  bool operator==(const TrainingMetricSummary&) const = default;
};

// The latest point of one metric of one job, as latestTrainingMetrics()
// returns it.
struct LatestTrainingPoint {
  JobId job;
  TrainingPoint latest;  // the last one reported (highest id)
  bool operator==(const LatestTrainingPoint&) const = default;
};

// At most `max_points` of `points` (max_points >= 2): the first, the last
// and evenly spaced ones between, in order. Fewer points are kept as given.
std::vector<TrainingPoint> downsampleTrainingPoints(std::vector<TrainingPoint> points,
                                                    int max_points);
// InvalidArgument, naming the field, for a query no store answers (limit
// outside 1..100000, max_points other than 0 or 2..100000), or a point with
// a bad name, a non-finite value, a negative step or an empty source.
Status validateTrainingSeriesQuery(const TrainingSeriesQuery& query);
Status validateTrainingPoint(const TrainingPoint& point);

// Jobs, attempts, events, usage and queues here; users, projects, tokens
// and the audit log in IdentityStore (identity.h).
class Store : public IdentityStore {
 public:
  ~Store() override = default;

  // Inserts new jobs, assigning each an id (written into `jobs`), and
  // appends `events_per_job[i]` for jobs[i] (with its new id). Atomic: all
  // or none. Ids are increasing and never reused.
  virtual Status createJobs(std::vector<Job>& jobs,
                            const std::vector<std::vector<Event>>& events_per_job) = 0;
  virtual Status apply(const WriteBatch& batch) = 0;

  virtual Result<Job> getJob(JobId id) = 0;
  virtual Result<JobPage> listJobs(const JobQuery& query) = 0;
  // The job `user` submitted with `key`, if any. Keys are unique per user:
  // createJobs fails (AlreadyExists) rather than store a second one.
  virtual Result<std::optional<Job>> findByIdempotencyKey(const std::string& user,
                                                          const std::string& key) = 0;
  // Every job not in a terminal state, oldest first.
  virtual Result<std::vector<Job>> activeJobs() = 0;
  // How many jobs of `query` are in each state; a state without any has no
  // entry. Counted by the store (one grouped query), not by reading jobs.
  virtual Result<std::map<JobState, std::int64_t>> countJobs(const JobCountQuery& query) = 0;
  // A job's attempts, first first.
  virtual Result<std::vector<Attempt>> attempts(JobId id) = 0;
  // A job's events with seq > after_seq, oldest first.
  virtual Result<std::vector<Event>> events(JobId id, std::int64_t after_seq = 0) = 0;
  // Every queue's recorded usage, by queue name.
  virtual Result<std::vector<QueueUsage>> queueUsage() = 0;

  // --- Queues and quotas --------------------------------------------------
  // The scheduler's queues as admins set them (the config file only seeds
  // them; see docs/configuration.md). Each queue is kept whole, in the
  // codec's JSON form (codec/queue_codec.h), so a new quota field needs no
  // schema change. Whether a change is allowed (jobs still in a queue) is
  // the caller's decision.
  //
  // Inserts the queue named `queue.name`, or replaces it whole. A new queue
  // goes after every stored one; a replaced one keeps its place (the order
  // decides which queue a project's jobs go to when it has several).
  // InvalidArgument, naming the field, for a queue validateQueue() refuses.
  virtual Status putQueue(const QueueConfig& queue) = 0;
  // NotFound (queueNotFoundMessage) when no queue has this name.
  virtual Status deleteQueue(const std::string& name) = 0;
  // Every stored queue, in the order they were first put.
  virtual Result<std::vector<QueueConfig>> listQueues() = 0;
  // --- Training metrics ---------------------------------------------------
  // Stores `points` of job `job` in one transaction; a point whose (source,
  // name) the job already has is skipped. Returns how many were added.
  // NotFound when the job does not exist.
  virtual Result<int> appendTrainingPoints(JobId job, const std::vector<TrainingPoint>& points) = 0;
  // One series of a job, oldest first (by id). NotFound for a missing job;
  // an unknown name is an empty series.
  virtual Result<std::vector<TrainingPoint>> trainingSeries(JobId job,
                                                            const TrainingSeriesQuery& query) = 0;
  // Every metric name of a job, in name order, with its count and latest
  // point. NotFound for a missing job.
  virtual Result<std::vector<TrainingMetricSummary>> trainingMetrics(JobId job) = 0;
  // The latest point of every metric of each of `jobs`, in one read (what
  // /metrics exports for the running jobs), ordered by job id, then name. A
  // job listed twice is answered once; one without metrics, or that does not
  // exist (deleted since the caller listed it), adds nothing: not NotFound.
  virtual Result<std::vector<LatestTrainingPoint>> latestTrainingMetrics(
      const std::vector<JobId>& jobs) = 0;

  // True while the store is open and answering.
  virtual bool healthy() = 0;

  // --- Webhook deliveries -------------------------------------------------
  // Rows the notifier writes before it sends anything, so that a POST owed
  // survives a crash (at-least-once). See server/webhook_notifier.h.
  //
  // Terminal jobs with finished_at >= `finished_since` that have somewhere
  // to be reported (notify.webhook in the spec, or their project's
  // webhook_url) and no delivery row yet, by (finished_at, id); at most
  // `limit` (1..1000, else InvalidArgument).
  virtual Result<std::vector<Job>> jobsAwaitingWebhook(Timestamp finished_since, int limit) = 0;
  // Inserts `deliveries` (their ids are assigned; a (job, url) pair already
  // stored keeps its row, so a second scan adds nothing) and records
  // `watermark`, in one transaction. NotFound when a job does not exist.
  virtual Status addWebhookDeliveries(const std::vector<WebhookDelivery>& deliveries,
                                      Timestamp watermark) = 0;
  // The watermark last recorded; 0 when none was.
  virtual Result<Timestamp> webhookWatermark() = 0;
  // Pending deliveries (neither delivered nor given up) due at `now`, by
  // (next_attempt_at, id); at most `limit` (1..1000).
  virtual Result<std::vector<WebhookDelivery>> dueWebhookDeliveries(Timestamp now, int limit) = 0;
  // Every delivery of the job, by id.
  virtual Result<std::vector<WebhookDelivery>> webhookDeliveries(JobId job) = 0;
  // Replaces the stored progress of delivery `d.id` (attempts, times, last
  // error; job, url and event never change) and appends `events`, in one
  // transaction. NotFound when there is no such delivery.
  virtual Status updateWebhookDelivery(const WebhookDelivery& d,
                                       const std::vector<Event>& events) = 0;
};

// Opens (creating and migrating) the SQLite store at `path`.
Result<std::unique_ptr<Store>> openSqliteStore(const std::string& path);
std::unique_ptr<Store> newMemoryStore();

}  // namespace ty
