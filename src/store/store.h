// Store: the durable truth of the control plane.
//
// Every state change is written here (and committed) before it is acted
// on. Implementations: sqlite/ (default, WAL), memory/ (tests, simulator);
// PostgreSQL later. One conformance suite (store_conformance_test.cpp)
// runs against each. All methods are thread-safe; each write call is one
// atomic transaction: either all of it is visible afterwards or none.
#pragma once

#include <cstdint>
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
  // True while the store is open and answering.
  virtual bool healthy() = 0;
};

// Opens (creating and migrating) the SQLite store at `path`.
Result<std::unique_ptr<Store>> openSqliteStore(const std::string& path);
std::unique_ptr<Store> newMemoryStore();

}  // namespace ty
