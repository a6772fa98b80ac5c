// Executor: runs the replicas of an attempt somewhere and reports when they
// end. The local executor (exec/local) runs processes or podman containers
// on this machine; Slurm and Kubernetes executors come later; exec/fake is
// the in-memory twin for tests.
//
// Launches are idempotent per (attempt, replica): launching an attempt that
// already runs adopts it; one that ran and ended reports its recorded exit;
// one that was started but left no record is reported lost. This is what
// makes a crash of the server at any moment safe.
//
// Thread-safe. The observer is called from the executor's own thread.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "core/job.h"
#include "core/node.h"

namespace ty {

struct LaunchRequest {
  AttemptKey key;
  JobSpec spec;
  std::vector<ReplicaPlacement> replicas;
  std::vector<std::vector<GpuInfo>> replica_gpus;  // per replica, the GPUs it holds
  int master_port = 0;
};

struct ReplicaStarted {
  int replica = 0;
  std::int64_t pid = 0;
  bool adopted = false;  // it was already running (server restart)
};

struct LaunchResult {
  std::vector<ReplicaStarted> started;
  // Things the user should know, for the job's events: "cgroups not
  // writable here: running without the 2 CPU limit".
  std::vector<std::string> warnings;
};

// How one replica ended.
struct ReplicaExit {
  AttemptKey key;
  int replica = 0;
  int exit_code = 0;    // 128+signal when killed by a signal
  int signal = 0;       // the signal that killed it, 0 if it exited
  bool lost = false;    // it ended while nobody watched and left no record
  std::string message;  // "exited with code 3", "killed by SIGKILL", "lost: ..."
};

class Executor {
 public:
  using Observer = std::function<void(const ReplicaExit&)>;
  virtual ~Executor() = default;

  // Called once before any launch; `observer` receives every replica exit.
  virtual void setObserver(Observer observer) = 0;
  // Starts (or adopts, or reports) every replica of the attempt. Errors
  // mean nothing was started for the replicas that failed (for example
  // podman missing); the caller fails the attempt.
  virtual Result<LaunchResult> launch(const LaunchRequest& request) = 0;
  // Sends `sig` to every process of every replica of the attempt (the
  // whole process groups, and containers). Unknown attempts are ignored.
  virtual Status signal(const AttemptKey& key, int sig) = 0;
  // Frees what the attempt left behind (cgroups, container names) once all
  // its replicas ended. Logs stay.
  virtual void release(const AttemptKey& key) = 0;
  // When the job last reported a checkpoint (it touches the file named by
  // TRAINYARD_CHECKPOINT_MARK); 0 when it never did. Cheap enough to ask
  // every scheduling pass.
  virtual Timestamp lastCheckpoint(JobId job) const = 0;
};

}  // namespace ty
