// `trainyard node-exporter`: a small agent for each GPU node that samples
// the GPUs through NVML every --interval and serves them to Prometheus at
// GET /metrics under the DCGM exporter's names (metrics/gpu_metrics.h), with
// GET /healthz for liveness probes.
//
// It serves plain HTTP without authentication, like the DCGM and node
// exporters: it is meant for the cluster's private network. Listen on a
// private or loopback address, never a public one (docs/observability.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common/time.h"
#include "gpu/nvml.h"

namespace ty {

struct NodeExporterConfig {
  std::string listen;  // HOST:PORT; port 0 picks a free one
  std::string nvml_library = kDefaultNvmlLibrary;
  std::string fake_gpus;  // when set, these idle GPUs instead of NVML
  DurationMs interval = 5000;
  std::string node_name;  // the Hostname label; the host name when empty
};

// Runs the exporter until SIGTERM or SIGINT; returns the exit code: 0 after
// a signal, 2 for a bad argument, 1 when NVML cannot be loaded or the
// address cannot be bound. Logs "listening on http://HOST:PORT" once it
// serves; the first sample is taken before that, so the first scrape has
// values.
int runNodeExporter(const NodeExporterConfig& config);

// Adds the `node-exporter` subcommand to the CLI.
void addNodeExporterCommand(CLI::App& app);

}  // namespace ty
