#include "exec/local/container.h"

#include <cstdint>
#include <cstdio>

namespace ty {

std::string containerName(const std::string& instance, const AttemptKey& key, int replica) {
  return "ty-" + instance + "-" + std::to_string(key.job.value()) + "-" +
         std::to_string(key.number) + "-" + std::to_string(replica);
}

std::string instanceTag(const std::string& data_dir) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a
  for (unsigned char c : data_dir) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08llx", static_cast<unsigned long long>(h & 0xffffffffULL));
  return buf;
}

std::vector<std::string> podmanRunArgv(
    const std::string& podman, const ContainerConfig& config, const ContainerRun& run,
    const std::function<bool(const std::string&)>& device_exists) {
  std::vector<std::string> argv = {podman,         "run",       "--rm",
                                   "--name",       run.name,    "--runtime",
                                   config.runtime, "--network", config.network};
  for (const auto& u : config.ulimits) {
    argv.push_back("--ulimit");
    argv.push_back(u);
  }
  if (!run.cpus.isZero()) {
    argv.push_back("--cpus");
    argv.push_back(run.cpus.toString());
  }
  if (run.memory_bytes > 0) {
    argv.push_back("--memory");
    argv.push_back(std::to_string(run.memory_bytes));
  }
  if (!run.workdir.empty()) {
    argv.push_back("-w");
    argv.push_back(run.workdir);
  }
  for (const auto& [host, inside] : run.mounts) {
    argv.push_back("-v");
    argv.push_back(host + ":" + inside + ":rw");
  }
  for (const auto& [k, v] : run.env) {
    argv.push_back("-e");
    argv.push_back(k + "=" + v);
  }
  bool any_gpu = false;
  for (int g : run.gpus) {
    std::string dev = config.dev_dir + "/nvidia" + std::to_string(g);
    if (device_exists(dev)) {
      argv.push_back("--device");
      argv.push_back(dev);
      any_gpu = true;
    }
  }
  if (any_gpu) {
    for (const char* extra : {"/nvidiactl", "/nvidia-uvm"}) {
      std::string dev = config.dev_dir + extra;
      if (device_exists(dev)) {
        argv.push_back("--device");
        argv.push_back(dev);
      }
    }
  }
  argv.push_back(run.image);
  if (!run.script.empty()) {
    argv.insert(argv.end(), {"sh", "-c", run.script});
  } else {
    argv.insert(argv.end(), run.command.begin(), run.command.end());
  }
  return argv;
}

std::vector<std::string> podmanKillArgv(const std::string& podman, const std::string& name,
                                        int sig) {
  return {podman, "kill", "--signal", std::to_string(sig), name};
}

std::vector<std::string> podmanRmArgv(const std::string& podman, const std::string& name) {
  return {podman, "rm", "--force", "--time", "0", name};
}

}  // namespace ty
