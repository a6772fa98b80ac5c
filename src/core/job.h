// The job model: what users ask for (JobSpec), what the platform records
// about it (Job, Attempt, Event). Plain values; no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/quantity.h"
#include "common/status.h"
#include "common/time.h"

namespace ty {

// Resources asked for by each replica.
struct Resources {
  Quantity gpus;                       // whole GPUs, or a share of one (0.25 = 250 milli-GPU)
  Quantity cpus;                       // zero: no request, no limit
  std::int64_t memory_bytes = 0;       // zero: no request, no limit
  std::vector<std::string> gpu_types;  // any-of model selector; empty: any
  bool operator==(const Resources&) const = default;
};

struct RetryPolicy {
  int limit = 0;                // retries after the first attempt
  DurationMs backoff = 10'000;  // first delay; doubles each retry
  bool operator==(const RetryPolicy&) const = default;
};

enum class JobState { kPending, kScheduled, kRunning, kSucceeded, kFailed, kCancelled, kPreempted };

// Where to tell someone that the job finished: a webhook the server POSTs
// to (docs/observability.md, "Webhooks"). The URL is checked by the codec
// (http or https only); core only carries it.
struct NotifySpec {
  std::string webhook;       // empty: no per-job webhook
  std::vector<JobState> on;  // terminal states that fire it; empty: all three
  bool operator==(const NotifySpec&) const = default;
};

struct JobSpec {
  std::string name;
  std::string project = "default";
  std::string queue;                 // empty: the project's queue from the server config
  std::vector<std::string> command;  // argv; exactly one of command and script
  std::string script;                // run by /bin/sh -c
  std::string image;                 // empty: run as a plain process
  Resources resources;
  int replicas = 1;
  std::map<std::string, std::string> env;
  std::string workdir;
  int priority = 0;
  DurationMs max_runtime = 0;                        // zero: unlimited
  DurationMs min_runtime = 0;                        // not preempted before it ran this long
  std::map<std::string, std::string> node_selector;  // node labels a replica's node must have
  std::string same_label;  // replicas of a multi-node gang share this node label's value ("rack")
  DurationMs grace_period = 30'000;  // SIGTERM to SIGKILL
  RetryPolicy retries;
  NotifySpec notify;
  bool operator==(const JobSpec&) const = default;
};

// Checks a spec's values (not its syntax, which the codec checks). The
// returned Status names the field at fault and how to fix it.
Status validateSpec(const JobSpec& spec);

const char* jobStateName(JobState s);
std::optional<JobState> parseJobState(const std::string& s);
bool isTerminal(JobState s);

// Where one replica runs.
struct ReplicaPlacement {
  std::string node;
  std::vector<int> gpus;  // GPU indices on that node
  int gpu_milli = 1000;   // share of each listed GPU; below 1000 only for one shared GPU
  bool operator==(const ReplicaPlacement&) const = default;
};

enum class AttemptState { kLaunching, kRunning, kEnded };
const char* attemptStateName(AttemptState s);
std::optional<AttemptState> parseAttemptState(const std::string& s);

// One run of a job. Retries and preemptions make new attempts.
struct Attempt {
  AttemptKey key;
  AttemptState state = AttemptState::kLaunching;
  std::vector<ReplicaPlacement> replicas;
  int master_port = 0;
  std::vector<std::int64_t> pids;  // per replica; 0 until started
  Timestamp created_at = 0;
  Timestamp started_at = 0;
  Timestamp finished_at = 0;
  std::optional<int> exit_code;
  std::string reason;  // why it ended, in words
  bool operator==(const Attempt&) const = default;
};

struct Job {
  JobId id;
  JobSpec spec;
  std::string user;
  JobState state = JobState::kPending;
  Timestamp created_at = 0;
  Timestamp updated_at = 0;
  Timestamp started_at = 0;  // of the current or last attempt
  Timestamp finished_at = 0;
  int attempts = 0;  // attempts made so far (the current one included)
  std::optional<int> exit_code;
  std::string reason;                 // last explanation: why it waits or why it ended
  Timestamp not_before = 0;           // retry backoff: not scheduled before this time
  Timestamp cancel_requested_at = 0;  // non-zero once a cancel was accepted
  // Set while the current attempt stops so that `preempted_by` can run; the
  // job goes back to pending when it has stopped. Cleared on the next start.
  JobId preempted_by;
  Timestamp preempt_requested_at = 0;
  int preemptions = 0;  // attempts ended by preemption; they do not use up retries
  // Client-chosen key that makes a submission safe to resend: a second
  // submission by the same user with the same key returns this job.
  std::string idempotency_key;
  bool operator==(const Job&) const = default;
};

enum class EventLevel { kNormal, kWarning };

// One line of a job's timeline.
struct Event {
  std::int64_t seq = 0;  // assigned by the store, increasing
  JobId job;
  Timestamp time = 0;
  EventLevel level = EventLevel::kNormal;
  std::string reason;   // short CamelCase tag: Submitted, Waiting, Placed, Started, Exited ...
  std::string message;  // plain words
  bool operator==(const Event&) const = default;
};

}  // namespace ty
