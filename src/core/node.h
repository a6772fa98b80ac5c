// Nodes and their GPUs as the scheduler sees them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/quantity.h"

namespace ty {

struct GpuInfo {
  int index = 0;
  std::string uuid;
  std::string model;  // "A100-80GB", "NVIDIA H200"
  std::int64_t memory_bytes = 0;
  bool healthy = true;
  bool operator==(const GpuInfo&) const = default;
};

struct NodeInfo {
  std::string name;
  std::vector<GpuInfo> gpus;
  Quantity cpus;
  std::int64_t memory_bytes = 0;
  std::map<std::string, std::string> labels;
  // gpu_links[i][j]: how well GPUs i and j (positions in `gpus`) are
  // connected, higher is better: 0 across CPU sockets, 1 same NUMA node,
  // 2 same PCIe switch, 10 + n for n NVLinks. Empty: unknown, all equal.
  std::vector<std::vector<int>> gpu_links;
  bool operator==(const NodeInfo&) const = default;
};

// True when `model` satisfies an any-of selector (case-insensitive
// substring: "A100" matches "NVIDIA A100-SXM4-80GB"). Empty selector: any.
bool gpuModelMatches(const std::vector<std::string>& selector, const std::string& model);

}  // namespace ty
