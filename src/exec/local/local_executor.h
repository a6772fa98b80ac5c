// The local executor: runs each replica of an attempt on this machine as a
// process (or a podman container when the job sets `image`) under a
// supervisor process (`trainyard __supervise`, see supervisor.h) that
// outlives the server and records the exit in the replica's run directory
// (see exec/run_layout.h). Crash-safe launch: a run directory's `lock` is
// held by its supervisor, so a restarted server adopts running replicas,
// reports recorded exits, and reports replicas that were started but left
// no record as lost.
//
// Outcomes users see as replica exits rather than launch errors (the
// supervisor writes a "trainyard: ..." line into the replica's log):
//   workdir missing or not enterable    exit 127
//   program not found / not executable  exit 127 / 126
// Launch errors: podman missing for an `image` job (FailedPrecondition), a
// supervisor that cannot be executed, I/O errors on the data directory.
// Replicas that had already ended are not in LaunchResult::started; their
// recorded exits (or "lost") arrive through the observer. A replica whose
// process group was sent SIGKILL by signal() takes its supervisor with it;
// the executor then records the exit itself (137, SIGKILL).
// Cgroups that cannot be made are a warning in LaunchResult::warnings when
// the job asked for CPU or memory limits, and silent otherwise. Container
// replicas get their limits from podman (--cpus, --memory), not cgroups.
//
// Destroying the executor stops watching; it never kills running replicas
// (the server may be restarting). Thread-safe; the observer is called from
// the executor's own monitor thread, never with an executor lock held.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"
#include "exec/local/container.h"

namespace ty {

struct LocalExecutorConfig {
  std::string data_dir;  // run directories go in <data_dir>/jobs/...
  // argv prefix that starts a supervisor; empty: {this executable,
  // "__supervise"} (/proc/self/exe).
  std::vector<std::string> supervisor_command;
  std::int64_t log_max_bytes = 64ll << 20;  // per log file
  int log_max_files = 3;                    // output.log plus rotated ones
  ContainerConfig container;
  bool use_cgroups = true;
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string cgroup_parent = "trainyard";
  // This machine's node name; when set, placements on other nodes are
  // refused. Empty: any placement is run here.
  std::string node_name;
  // How long launch() waits for a locked run directory's supervisor to
  // write its pid file before giving up on adopting it.
  int adopt_timeout_ms = 5000;
  // Variables added to every replica's environment (processes and
  // containers alike) after the platform's own, e.g. the job's
  // TRAINYARD_JOB_TOKEN and TRAINYARD_API_URL; empty: none. Called on the
  // launching thread, so it must be thread-safe.
  std::function<std::map<std::string, std::string>(const AttemptKey&)> extra_env;
};

// Creates the executor and its monitor thread. InvalidArgument for a bad
// config, Internal when the data directory cannot be created or the
// monitor cannot start.
Result<std::unique_ptr<Executor>> newLocalExecutor(LocalExecutorConfig config);

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0), for
// MASTER_PORT. Internal when no socket can be bound.
Result<int> pickFreeTcpPort();

}  // namespace ty
