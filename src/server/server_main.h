// `trainyard server`: wiring of store, GPUs, executor, reconcile loop and
// API into one process.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common/status.h"
#include "core/node.h"
#include "server/config.h"

namespace ty {

// This machine as `trainyard server` schedules it, and where that came from
// (for the start-up log).
struct LocalNode {
  NodeInfo node;
  std::string gpu_source;       // "4 fake GPUs (4xA100-80GB)", "8 GPUs through NVML"
  std::string gpu_warning;      // why there are no GPUs, when there are none
  std::string topology_source;  // where node.gpu_links came from, or why it is empty
};

// The GPUs from fake_gpus, else from NVML; how they are linked from
// gpu_topology, else from NVML (with fake_gpus, gpu_topology is the only
// source); CPUs, memory and labels from describeLocalNode. InvalidArgument
// naming --fake-gpus or gpu_topology when one is malformed or gpu_topology
// does not have one row per GPU (it is ignored while there are no GPUs).
Result<LocalNode> describeServerNode(const ServerConfig& config);

// Adds the `server` subcommand to the CLI.
void addServerCommand(CLI::App& app);

}  // namespace ty
