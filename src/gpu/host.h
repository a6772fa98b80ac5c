// Describing this machine as a scheduler node: CPUs, memory, GPUs, labels.
//
// Reads /proc and /sys (and the cgroup files they expose) each call; keeps no
// state. Thread-safe. The parsers are pure and exposed for tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/quantity.h"
#include "core/node.h"

namespace ty {

// A NodeInfo for this machine named `name` (the host name when empty) with
// `gpus`: cpus the CPUs this process may run on (sched_getaffinity, else
// sysconf), lowered to a cgroup CPU quota when one is set; memory_bytes
// MemTotal from /proc/meminfo, lowered to a cgroup memory limit when one is
// set; label "hostname". Never fails: a value it cannot read stays 0.
NodeInfo describeLocalNode(std::string name, std::vector<GpuInfo> gpus);

// MemTotal from the text of /proc/meminfo, in bytes; nullopt when absent.
std::optional<std::int64_t> parseMemTotal(const std::string& meminfo);

// A cgroup memory limit (v2 memory.max or v1 memory.limit_in_bytes) in bytes;
// nullopt for "max", an unlimited v1 value, or malformed text.
std::optional<std::int64_t> parseCgroupMemoryLimit(const std::string& text);

// A cgroup v2 cpu.max ("150000 100000") as CPUs (1.5); nullopt for "max ..."
// or malformed text.
std::optional<Quantity> parseCgroupCpuMax(const std::string& text);

}  // namespace ty
