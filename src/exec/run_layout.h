// RunLayout: where the files of one replica's run live on disk. The one
// place that knows the layout, shared by the local executor, its supervisor
// and the log reader the API uses:
//
//   <data_dir>/jobs/<job>/attempt-<n>/replica-<r>/
//     lock        flock'ed by the supervisor for its whole life
//     launched    created (O_EXCL) just before the supervisor is forked
//     pid         "<supervisor pid> <start time in clock ticks>\n"
//     exit        "<exit code> <signal>\n", written atomically at the end
//     cgroups     cgroup directories made for the replica, one per line
//     container   the podman container name, for container replicas
//     output.log  stdout+stderr; rotated to output.log.1 ... output.log.<N-1>
//     metrics.jsonl  the TRAINYARD_METRIC lines of the output, as written,
//                 appended (never rotated; the server ingests it by offset)
//
// A value type: immutable after construction, thread-safe, no I/O except
// in the listing helpers, which say how they fail.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/status.h"

namespace ty {

class RunLayout {
 public:
  static constexpr const char* kLockFile = "lock";
  static constexpr const char* kLaunchedFile = "launched";
  static constexpr const char* kPidFile = "pid";
  static constexpr const char* kExitFile = "exit";
  static constexpr const char* kCgroupsFile = "cgroups";
  static constexpr const char* kContainerFile = "container";
  static constexpr const char* kLogFile = "output.log";
  static constexpr const char* kMetricsFile = "metrics.jsonl";
  // Touched by the job after each checkpoint it saves (its path is in
  // TRAINYARD_CHECKPOINT_MARK); its mtime orders preemption victims.
  static constexpr const char* kCheckpointMark = "checkpoint";

  explicit RunLayout(std::string data_dir) : data_dir_(std::move(data_dir)) {}

  const std::string& dataDir() const { return data_dir_; }
  // <data_dir>/jobs/<job>
  std::string jobDir(JobId job) const;
  // <data_dir>/jobs/<job>/checkpoint
  std::string checkpointMark(JobId job) const;
  // <data_dir>/jobs/<job>/attempt-<n>
  std::string attemptDir(const AttemptKey& key) const;
  // <data_dir>/jobs/<job>/attempt-<n>/replica-<r>
  std::string replicaDir(const AttemptKey& key, int replica) const;
  // A file of the replica's run directory, e.g. file(key, 0, kExitFile).
  std::string file(const AttemptKey& key, int replica, const char* name) const;

  // <replica dir>/metrics.jsonl: the replica's training metric lines.
  std::string metricsFile(const AttemptKey& key, int replica) const;

  // The log file of a run directory: index 0 is output.log (the one being
  // written), index i > 0 is output.log.<i> (older as i grows).
  static std::string logPath(const std::string& replica_dir, int index);

  // Parses "attempt-<n>" / "replica-<r>"; nullopt for other names.
  static std::optional<int> parseAttemptDirName(const std::string& name);
  static std::optional<int> parseReplicaDirName(const std::string& name);

  // Attempt numbers that have a directory for `job`, ascending. A job
  // without any directory gives an empty list; I/O errors other than
  // "not found" give Internal.
  Result<std::vector<int>> listAttempts(JobId job) const;
  // Replica indices that have a directory in the attempt, ascending.
  Result<std::vector<int>> listReplicas(const AttemptKey& key) const;

 private:
  std::string data_dir_;
};

}  // namespace ty
