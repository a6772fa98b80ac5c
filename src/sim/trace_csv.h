// Readers for the Alibaba openb trace CSVs (cluster-trace-gpu-v2023) used
// by `trainyard simulate openb`. Columns are found by header name, so extra
// columns (qos, times) and the 5-column multigpu files both read. Errors
// name the source, the line and the column. No state; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ty {

// One row of an openb node list: `sn,cpu_milli,memory_mib,gpu,model`.
struct OpenbNode {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;  // empty for CPU-only nodes
};

// One row of an openb pod list:
// `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]`.
struct OpenbPod {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  int num_gpu = 0;
  int gpu_milli = 0;                  // per GPU; below 1000 only when num_gpu == 1
  std::vector<std::string> gpu_spec;  // any-of models ("G2|V100M32"); empty: any
  std::int64_t totalGpuMilli() const { return static_cast<std::int64_t>(num_gpu) * gpu_milli; }
};

// Parse CSV text; `source` (a file name) prefixes error messages, which
// read like "nodes.csv:12: column gpu: \"x\" is not an integer".
Result<std::vector<OpenbNode>> parseOpenbNodes(std::string_view text, std::string_view source);
Result<std::vector<OpenbPod>> parseOpenbPods(std::string_view text, std::string_view source);

// Read a whole file; NotFound when it cannot be opened.
Result<std::string> readTextFile(const std::string& path);
// The fields of one CSV line split on commas; the traces read here have
// no quoted fields.
std::vector<std::string_view> splitCsvFields(std::string_view line);

}  // namespace ty
