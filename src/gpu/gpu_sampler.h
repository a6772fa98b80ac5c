// Sampling what the GPUs of this machine are doing: utilisation, memory,
// temperature, power, clocks, ECC errors, throttling, compute processes and
// XID errors.
//
// Two halves:
//   - GpuReader, the seam: one read per NVML query, answering a Result. Its
//     implementations are NVML loaded with dlopen (openNvmlGpuReader), the
//     idle GPUs of --fake-gpus (newFakeGpuReader) and, in tests, scripted
//     readers.
//   - GpuSampler, the policy: one NodeSample per call, one GpuSample per GPU.
//     Every field is optional. A query the GPU or the driver does not offer
//     (no symbol in an older libnvidia-ml, NVML_ERROR_NOT_SUPPORTED on a board
//     without ECC or a power sensor) leaves its field unset and is counted in
//     `unsupported`; any other failure leaves it unset and is counted in
//     `errors`. Nothing is fatal: a node exporter keeps serving what it can
//     read, as NVIDIA's DCGM exporter does.
//
// The samples are plain values, compared with ==, so metrics code and tests
// use them without NVML.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/node.h"

namespace ty {

// One compute (CUDA) process on a GPU.
struct GpuProcessSample {
  std::int64_t pid = 0;
  // Device memory the process holds; unset when NVML cannot tell (it answers
  // NVML_VALUE_NOT_AVAILABLE, e.g. inside a MIG instance without privileges).
  std::optional<std::int64_t> used_memory_bytes;

  bool operator==(const GpuProcessSample&) const = default;
};

// One GPU at one instant. Units follow the DCGM exporter's metrics.
struct GpuSample {
  int index = 0;                                // NVML's index, as CUDA_VISIBLE_DEVICES counts
  std::string uuid;                             // "GPU-..."; "" when unreadable
  std::string model;                            // "NVIDIA A100-SXM4-80GB"; "" when unreadable
  std::optional<double> gpu_util_percent;       // time a kernel ran, 0-100
  std::optional<double> mem_copy_util_percent;  // time memory was read or written, 0-100
  std::optional<std::int64_t> memory_used_bytes;
  std::optional<std::int64_t> memory_free_bytes;
  std::optional<double> temperature_celsius;
  std::optional<double> power_watts;
  std::optional<double> sm_clock_mhz;
  std::optional<std::uint64_t> ecc_single_bit_volatile;  // corrected, since the driver loaded
  std::optional<std::uint64_t> ecc_double_bit_volatile;  // uncorrected, since the driver loaded
  std::optional<std::uint64_t> throttle_reasons;         // nvmlClocksThrottleReasons bits
  // XID errors NVML reported for this GPU since the previous sample, oldest
  // first, each once (NVML's event API: GpuReader::xids). Empty when there
  // were none, and when the GPU or the driver cannot report them (counted
  // in `unsupported`).
  std::vector<std::uint64_t> xids;
  // Unset when the list could not be read; empty when nothing runs.
  std::optional<std::vector<GpuProcessSample>> processes;
  int unsupported = 0;  // reads this GPU or driver does not offer
  int errors = 0;       // reads that failed

  bool operator==(const GpuSample&) const = default;
};

// All GPUs of the machine at one instant.
struct NodeSample {
  std::vector<GpuSample> gpus;  // by index
  int unsupported = 0;          // the sum over gpus
  int errors = 0;               // the sum over gpus, plus a failed GPU count
  // The first few failures, "GPU 1: nvmlDeviceGetPowerUsage failed: ...",
  // for the log; at most kMaxProblems.
  std::vector<std::string> problems;
  static constexpr std::size_t kMaxProblems = 8;

  bool operator==(const NodeSample&) const = default;
};

struct GpuIdentity {
  std::string uuid;
  std::string model;
};
struct GpuMemoryUse {
  std::int64_t used_bytes = 0;
  std::int64_t free_bytes = 0;
};
struct GpuUtilization {
  unsigned gpu_percent = 0;
  unsigned memory_percent = 0;
};
enum class EccErrorKind { kSingleBit, kDoubleBit };

// The reads a sample is made of. Every method that fails answers
// FailedPrecondition when the GPU or the driver does not offer the read, and
// another code when the read failed. Implementations need not be
// thread-safe: one GpuSampler calls them from one thread.
class GpuReader {
 public:
  virtual ~GpuReader() = default;
  virtual Result<unsigned> gpuCount() = 0;
  virtual Result<GpuIdentity> identity(unsigned gpu) = 0;
  virtual Result<GpuUtilization> utilization(unsigned gpu) = 0;
  virtual Result<GpuMemoryUse> memory(unsigned gpu) = 0;
  virtual Result<unsigned> temperatureCelsius(unsigned gpu) = 0;
  virtual Result<unsigned> powerMilliwatts(unsigned gpu) = 0;
  virtual Result<unsigned> smClockMhz(unsigned gpu) = 0;
  // Volatile counts: since the driver was last loaded.
  virtual Result<std::uint64_t> eccErrors(unsigned gpu, EccErrorKind kind) = 0;
  virtual Result<std::uint64_t> throttleReasons(unsigned gpu) = 0;
  virtual Result<std::vector<GpuProcessSample>> computeProcesses(unsigned gpu) = 0;
  // The XID errors of `gpu` that arrived since the previous call for it,
  // oldest first, at most kMaxXidsPerRead (an XID storm keeps the first
  // ones). Each XID is answered once. Never blocks: only events already
  // pending are taken.
  virtual Result<std::vector<std::uint64_t>> xids(unsigned gpu) = 0;
  static constexpr std::size_t kMaxXidsPerRead = 64;
};

// A GpuReader over NVML loaded from `library` with dlopen (NvmlLibrary::load
// and its failures). Device handles are looked up once and kept until the
// GPU count changes. XIDs come from one NVML event set: a GPU is registered
// for XID events at its first xids() call (XIDs from before then are not
// seen), and each xids() call drains the events pending for all GPUs with a
// zero timeout, keeping those of the other GPUs for their own calls. A GPU
// whose registration NVML answers NVML_ERROR_NOT_SUPPORTED (some virtual
// machines) is not asked again: its xids() answer FailedPrecondition.
Result<std::unique_ptr<GpuReader>> openNvmlGpuReader(const std::string& library);

// A GpuReader for GPUs that exist only on the command line (--fake-gpus):
// each answers its identity, all of its memory free and 0% utilisation,
// an empty process list, and FailedPrecondition for the sensors it does not
// have (temperature, power, clock, ECC, throttling) and for XIDs.
std::unique_ptr<GpuReader> newFakeGpuReader(std::vector<GpuInfo> gpus);

// Turns the reads of a GpuReader into NodeSamples. Owns its reader. Not
// thread-safe: call sample() from one thread at a time.
class GpuSampler {
 public:
  explicit GpuSampler(std::unique_ptr<GpuReader> reader);

  // Reads every GPU once. Never fails: what cannot be read is unset and
  // counted (see the top of this file). When the GPU count itself cannot be
  // read, the sample has no GPUs and one error.
  NodeSample sample();

 private:
  std::unique_ptr<GpuReader> reader_;
};

}  // namespace ty
