// Discovering the GPUs of this machine: from NVML (nvml.h) or, on machines
// without GPUs, from a --fake-gpus description.
// Free functions returning values; safe to call from any thread.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "core/node.h"

namespace ty {

// Parses "4xA100-80GB" or "2xH100-80GB,2xL40S-48GB" into GPUs with
// indices 0.., deterministic fake UUIDs and the memory the model name
// ends with ("-80GB"). InvalidArgument naming the bad part otherwise.
Result<std::vector<GpuInfo>> parseFakeGpus(const std::string& spec, const std::string& node);

struct GpuDiscovery {
  std::vector<GpuInfo> gpus;
  // Why there are none, when there are none; also names GPUs NVML counted
  // but could not describe (listed with healthy = false).
  std::string note;
  // NodeInfo::gpu_links for `gpus` (topology.h); empty when NVML could not
  // tell, with the reason in topology_note.
  std::vector<std::vector<int>> gpu_links;
  std::string topology_note;
};

// Loads NVML from `library` (default "libnvidia-ml.so.1") with dlopen and
// lists the GPUs and their topology. Never fails: no driver means zero GPUs
// and a note.
GpuDiscovery discoverNvmlGpus(const std::string& library = "libnvidia-ml.so.1");

}  // namespace ty
