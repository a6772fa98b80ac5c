// Pure pieces of a local launch: the environment of each replica, the user
// argv, and the command line between the executor and its supervisor
// (built by the executor, parsed by `trainyard __supervise`). No I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"

namespace ty {

using EnvMap = std::map<std::string, std::string>;

// PATH, HOME and LANG of this process, those that are set.
EnvMap inheritedEnvironment();

// The environment replica `replica` of `request` runs with: `inherited`,
// then spec.env, then the platform's variables, which win:
//   CUDA_VISIBLE_DEVICES  the replica's GPU indices ("0,1"); "" for none.
//                         In containers (only the replica's device nodes
//                         are present, so CUDA numbers them from 0) the GPU
//                         UUIDs when all are known, else "0,1,...".
//   NVIDIA_VISIBLE_DEVICES GPU UUIDs, "void" for none (indices when UUIDs
//                         are unknown).
//   TRAINYARD_JOB_ID, TRAINYARD_ATTEMPT, TRAINYARD_REPLICA, WORLD_SIZE,
//   RANK, LOCAL_RANK, LOCAL_WORLD_SIZE (replicas on the same node),
//   NODE_RANK=0, MASTER_ADDR=127.0.0.1, MASTER_PORT.
EnvMap replicaEnvironment(const LaunchRequest& request, int replica, const EnvMap& inherited,
                          bool container);

// spec.command, or {"/bin/sh", "-c", spec.script}.
std::vector<std::string> userArgv(const JobSpec& spec);

// What the supervisor is told on its command line.
struct SupervisorArgs {
  std::string run_dir;
  std::int64_t log_max_bytes = 64ll << 20;
  int log_max_files = 3;  // output.log plus rotated ones
  int lock_fd = 3;
  std::vector<std::string> cgroups;  // directories to join
  std::string workdir;               // chdir before exec; empty: stay
  std::vector<std::string> argv;     // the user process
};

// prefix + "--run-dir D --log-max-bytes N --log-max-files N --lock-fd F
// [--cgroup DIR]... [--workdir W] -- argv...".
std::vector<std::string> supervisorArgv(const std::vector<std::string>& prefix,
                                        const SupervisorArgs& args);

// Parses the arguments after "__supervise" (args[0] is "__supervise").
// InvalidArgument names what is wrong.
Result<SupervisorArgs> parseSupervisorArgs(const std::vector<std::string>& args);

}  // namespace ty
