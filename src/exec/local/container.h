// Podman command lines for replicas whose job sets `image`. Pure functions
// (the device check is injected) so the argv can be tested without podman.
// Everything is an argv vector; nothing goes through a shell.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/quantity.h"

namespace ty {

struct ContainerConfig {
  std::string podman = "podman";  // name on PATH or a path
  std::string runtime = "runc";   // crun fails on hybrid cgroup machines
  std::string network = "host";   // "none" in tests
  // Podman's default rlimits can exceed what a host allows (runc then
  // fails with "error setting rlimits"); these are passed as --ulimit.
  std::vector<std::string> ulimits = {"nofile=20000:20000", "nproc=32768:32768"};
  std::string dev_dir = "/dev";  // where /dev/nvidia* nodes are looked for
};

// What runs in one replica's container.
struct ContainerRun {
  std::string name;  // containerName()
  std::string image;
  std::vector<std::string> command;  // argv; used when script is empty
  std::string script;                // run as sh -c script
  Quantity cpus;                     // zero: no --cpus
  std::int64_t memory_bytes = 0;     // zero: no --memory
  std::string workdir;               // empty: the image's
  std::map<std::string, std::string> env;
  std::vector<int> gpus;                                    // host GPU indices
  std::vector<std::pair<std::string, std::string>> mounts;  // host dir -> container dir (rw)
};

// "ty-<instance>-<job>-<attempt>-<replica>". `instance` tells apart servers
// sharing one machine (see instanceTag()), so that one server's cleanup
// never touches another's containers or cgroups.
std::string containerName(const std::string& instance, const AttemptKey& key, int replica);

// A short stable tag for a data directory: 8 hex digits of a hash of its
// absolute path.
std::string instanceTag(const std::string& data_dir);

// podman run --rm --name N --runtime R --network NET --ulimit ... [--cpus X]
// [--memory B] [-w DIR] -e K=V ... [--device ...] IMAGE argv...
// `podman` is the resolved podman path; `device_exists` says whether a
// device node exists (GPU nodes that do not are skipped).
std::vector<std::string> podmanRunArgv(
    const std::string& podman, const ContainerConfig& config, const ContainerRun& run,
    const std::function<bool(const std::string&)>& device_exists);

// podman kill --signal <sig> <name>
std::vector<std::string> podmanKillArgv(const std::string& podman, const std::string& name,
                                        int sig);
// podman rm --force --time 0 <name>
std::vector<std::string> podmanRmArgv(const std::string& podman, const std::string& name);

}  // namespace ty
