#include "exec/local/launch_plan.h"

#include <algorithm>
#include <cstdlib>

namespace ty {

namespace {

std::string joinInts(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(v[i]);
  }
  return out;
}

bool parseInt64(const std::string& s, std::int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

EnvMap inheritedEnvironment() {
  EnvMap env;
  for (const char* name : {"PATH", "HOME", "LANG"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  return env;
}

EnvMap replicaEnvironment(const LaunchRequest& request, int replica, const EnvMap& inherited,
                          bool container) {
  EnvMap env = inherited;
  for (const auto& [k, v] : request.spec.env) env[k] = v;
  const ReplicaPlacement& place = request.replicas[static_cast<size_t>(replica)];
  std::vector<std::string> uuids;
  bool all_uuids = true;
  if (static_cast<size_t>(replica) < request.replica_gpus.size()) {
    for (const auto& g : request.replica_gpus[static_cast<size_t>(replica)]) {
      if (g.uuid.empty()) all_uuids = false;
      uuids.push_back(g.uuid);
    }
  }
  if (uuids.size() != place.gpus.size()) all_uuids = false;
  std::string uuid_list;
  for (size_t i = 0; i < uuids.size(); ++i) uuid_list += (i ? "," : "") + uuids[i];

  if (!container) {
    env["CUDA_VISIBLE_DEVICES"] = joinInts(place.gpus);
  } else if (all_uuids && !place.gpus.empty()) {
    env["CUDA_VISIBLE_DEVICES"] = uuid_list;
  } else {
    std::vector<int> ordinals;
    for (size_t i = 0; i < place.gpus.size(); ++i) ordinals.push_back(static_cast<int>(i));
    env["CUDA_VISIBLE_DEVICES"] = joinInts(ordinals);
  }
  if (place.gpus.empty()) {
    env["NVIDIA_VISIBLE_DEVICES"] = "void";
  } else {
    env["NVIDIA_VISIBLE_DEVICES"] = all_uuids ? uuid_list : joinInts(place.gpus);
  }
  if (place.gpu_milli < 1000 && !place.gpus.empty()) {
    // A share of one GPU. The scheduler keeps the shares on a GPU within
    // its capacity; the process learns its share to limit itself (e.g.
    // torch.cuda.set_per_process_memory_fraction), and an MPS daemon, when
    // one runs, caps its compute by the thread percentage.
    std::string share = Quantity::fromMilli(place.gpu_milli).toString();
    env["TRAINYARD_GPU_SHARE"] = share;
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(std::max(1, place.gpu_milli / 10));
    if (!request.replica_gpus.empty() &&
        static_cast<size_t>(replica) < request.replica_gpus.size() &&
        !request.replica_gpus[static_cast<size_t>(replica)].empty()) {
      std::int64_t mem = request.replica_gpus[static_cast<size_t>(replica)][0].memory_bytes;
      if (mem > 0) env["TRAINYARD_GPU_MEMORY_LIMIT"] = std::to_string(mem / 1000 * place.gpu_milli);
    }
  }
  int local_rank = 0;
  int local_world = 0;
  for (size_t i = 0; i < request.replicas.size(); ++i) {
    if (request.replicas[i].node != place.node) continue;
    if (static_cast<int>(i) < replica) ++local_rank;
    ++local_world;
  }
  env["TRAINYARD_JOB_ID"] = std::to_string(request.key.job.value());
  env["TRAINYARD_ATTEMPT"] = std::to_string(request.key.number);
  env["TRAINYARD_REPLICA"] = std::to_string(replica);
  env["WORLD_SIZE"] = std::to_string(request.replicas.size());
  env["RANK"] = std::to_string(replica);
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(local_world);
  env["NODE_RANK"] = "0";
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(request.master_port);
  return env;
}

std::vector<std::string> userArgv(const JobSpec& spec) {
  if (!spec.script.empty()) return {"/bin/sh", "-c", spec.script};
  return spec.command;
}

std::vector<std::string> supervisorArgv(const std::vector<std::string>& prefix,
                                        const SupervisorArgs& args) {
  std::vector<std::string> argv = prefix;
  argv.insert(argv.end(),
              {"--run-dir", args.run_dir, "--log-max-bytes", std::to_string(args.log_max_bytes),
               "--log-max-files", std::to_string(args.log_max_files), "--lock-fd",
               std::to_string(args.lock_fd)});
  for (const auto& c : args.cgroups) argv.insert(argv.end(), {"--cgroup", c});
  if (!args.workdir.empty()) argv.insert(argv.end(), {"--workdir", args.workdir});
  argv.push_back("--");
  argv.insert(argv.end(), args.argv.begin(), args.argv.end());
  return argv;
}

Result<SupervisorArgs> parseSupervisorArgs(const std::vector<std::string>& args) {
  SupervisorArgs out;
  size_t i = args.empty() ? 0 : 1;  // args[0] is "__supervise"
  bool have_dash = false;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (a == "--") {
      have_dash = true;
      out.argv.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (i + 1 >= args.size()) return Status::invalidArgument("missing value after " + a);
    const std::string& v = args[i + 1];
    std::int64_t n = 0;
    if (a == "--run-dir") {
      out.run_dir = v;
    } else if (a == "--log-max-bytes") {
      if (!parseInt64(v, &n) || n < 1) return Status::invalidArgument("bad --log-max-bytes");
      out.log_max_bytes = n;
    } else if (a == "--log-max-files") {
      if (!parseInt64(v, &n) || n < 1 || n > 1000) {
        return Status::invalidArgument("bad --log-max-files");
      }
      out.log_max_files = static_cast<int>(n);
    } else if (a == "--lock-fd") {
      if (!parseInt64(v, &n) || n > 1'000'000) return Status::invalidArgument("bad --lock-fd");
      out.lock_fd = static_cast<int>(n);
    } else if (a == "--cgroup") {
      out.cgroups.push_back(v);
    } else if (a == "--workdir") {
      out.workdir = v;
    } else {
      return Status::invalidArgument("unknown option " + a);
    }
    i += 2;
  }
  if (out.run_dir.empty()) return Status::invalidArgument("--run-dir is required");
  if (!have_dash || out.argv.empty()) {
    return Status::invalidArgument("the command to run follows --");
  }
  return out;
}

}  // namespace ty
