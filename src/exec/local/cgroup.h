// Cgroups for replicas of the local executor: one cgroup per replica (per
// controller on v1) under a parent named by the config ("trainyard"), with
// the CPU and memory limits of the job applied. The supervisor joins them;
// release() kills what is left in them (also processes that left the
// replica's process group with setsid) and removes them.
//
// Where the parent goes:
//   v1 (memory and cpu hierarchies mounted, as on hybrid machines): under
//      the cgroup this process itself is in, per controller, so the jobs
//      stay inside whatever limits the server was given.
//   v2 (cgroup.controllers at the root): <root>/<parent> with +cpu +memory
//      delegated, because a non-root v2 cgroup holding the server process
//      may not have controller-enabled children.
//
// A CgroupManager is an immutable value after detect(): thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ty {

enum class CgroupVersion { kNone, kV1, kV2 };

struct CgroupLimits {
  std::int64_t cpu_milli = 0;     // 0: no CPU limit
  std::int64_t memory_bytes = 0;  // 0: no memory limit
  bool any() const { return cpu_milli > 0 || memory_bytes > 0; }
};

class CgroupManager {
 public:
  // Looks at `root` (normally /sys/fs/cgroup) and at `self_cgroup`
  // (normally /proc/self/cgroup). Never fails: a machine without usable
  // cgroups gives version() == kNone.
  static CgroupManager detect(std::string parent_name, std::string root = "/sys/fs/cgroup",
                              std::string self_cgroup = "/proc/self/cgroup");

  CgroupVersion version() const { return version_; }

  // Creates (or reuses) the cgroups named `name` and writes `limits`.
  // Returns the directories a process joins. On failure (read-only
  // cgroupfs, no permission, kNone) returns the Status and leaves nothing
  // behind.
  Result<std::vector<std::string>> create(const std::string& name,
                                          const CgroupLimits& limits) const;

  // Moves `pid` into every directory (writes cgroup.procs). Stops at and
  // returns the first error.
  static Status join(const std::vector<std::string>& dirs, pid_t pid);

  // SIGKILLs every process in the directories, waits up to `timeout_ms` for
  // them to go, removes the directories. Missing directories are fine.
  // Returns the first error (a directory that would not go away).
  static Status release(const std::vector<std::string>& dirs, int timeout_ms = 3000);

  // Process ids listed in dir/cgroup.procs (empty when it cannot be read).
  static std::vector<pid_t> processes(const std::string& dir);

 private:
  CgroupVersion version_ = CgroupVersion::kNone;
  std::string root_;
  std::string parent_name_;
  // v1: per controller ("cpu", "memory") the directory the parent goes in.
  std::vector<std::pair<std::string, std::string>> v1_bases_;
};

}  // namespace ty
