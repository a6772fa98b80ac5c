// NvmlLibrary: the NVIDIA Management Library, loaded at run time with dlopen.
//
// Trainyard builds and runs without NVIDIA headers or a driver: the few NVML
// types and prototypes it needs are declared here, and each entry point is
// looked up by name from a table (kNvmlSymbols). A required symbol that is
// missing makes load() fail; an optional one leaves its wrapper answering
// FailedPrecondition. To add an NVML function: one NvmlSymbol value, one
// table row, one wrapper method.
//
// Ownership: an NvmlLibrary owns its dlopen handle and one NVML
// initialisation; destruction calls nvmlShutdown and dlclose. Move-only.
// Device handles (NvmlDevice) are owned by NVML and valid while the
// NvmlLibrary that returned them lives.
// Thread-safety: after load() the object is immutable; NVML itself is
// thread-safe, so const methods may be called from several threads.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ty {

// NVML's own types, as its C API defines them.
using nvmlReturn_t = int;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// nvmlPciInfo_t as nvml.h lays it out (filled by nvmlDeviceGetPciInfo_v3 and
// nvmlDeviceGetNvLinkRemotePciInfo_v2): NVML writes the whole struct, so the
// layout must match byte for byte.
inline constexpr unsigned kNvmlPciBusIdBufferSize = 32;    // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
inline constexpr unsigned kNvmlPciBusIdBufferV2Size = 16;  // ..._BUFFER_V2_SIZE
struct nvmlPciInfo_t {
  char busIdLegacy[kNvmlPciBusIdBufferV2Size];  // "0000:3B:00.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;             // device id << 16 | vendor id
  unsigned int pciSubSystemId;          // since NVML 2.285
  char busId[kNvmlPciBusIdBufferSize];  // "00000000:3B:00.0"
};
static_assert(sizeof(nvmlPciInfo_t) == 68);

// nvmlGpuTopologyLevel_t: the closest common ancestor of two GPUs on the PCIe
// tree, nearest first. Spaced by NVML to leave room for new levels.
inline constexpr int kNvmlTopologyInternal = 0;     // one board (Tesla K80)
inline constexpr int kNvmlTopologySingle = 10;      // one PCIe switch (PIX)
inline constexpr int kNvmlTopologyMultiple = 20;    // several switches, no host bridge (PXB)
inline constexpr int kNvmlTopologyHostBridge = 30;  // one host bridge (PHB)
inline constexpr int kNvmlTopologyNode = 40;        // one NUMA node (NODE)
inline constexpr int kNvmlTopologySystem = 50;      // across CPU sockets (SYS)

inline constexpr unsigned kNvmlNvLinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

// Sampling (gpu_sampler.h). nvmlUtilization_t: percent of the last sample
// period in which a kernel ran (gpu) and device memory was read or written
// (memory).
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
// nvmlProcessInfo_t as the _v3 process queries fill it (NVML API 12). The
// array is written by NVML, so the layout must match: 4 bytes of padding
// after pid put usedGpuMemory at offset 8.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; kNvmlValueNotAvailable when unknown
  unsigned int gpuInstanceId;        // MIG only; 0xFFFFFFFF otherwise
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlProcessInfo_t) == 24);
inline constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
inline constexpr int kNvmlTemperatureGpu = 0;                        // NVML_TEMPERATURE_GPU
inline constexpr int kNvmlClockSm = 1;                               // NVML_CLOCK_SM
// nvmlMemoryErrorType_t and nvmlEccCounterType_t.
inline constexpr int kNvmlEccSingleBit = 0;  // NVML_MEMORY_ERROR_TYPE_CORRECTED
inline constexpr int kNvmlEccDoubleBit = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
inline constexpr int kNvmlEccVolatile = 0;   // NVML_VOLATILE_ECC: since the last driver load

// Events (XID errors). An event set is NVML's queue of the events of the
// devices registered in it; nvmlEventData_t is what one wait takes off it.
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
// nvmlEventData_t as nvmlEventSetWait_v2 fills it (NVML API 11 and later).
// NVML writes the whole struct, so the layout must match: 32 bytes, no
// padding. The unversioned nvmlEventSetWait of older drivers fills the
// struct they knew, the first three fields, which is a prefix of this one.
struct nvmlEventData_t {
  nvmlDevice_t device;           // where the event happened
  unsigned long long eventType;  // one nvmlEventType* bit
  unsigned long long eventData;  // the XID for kNvmlEventTypeXidCriticalError (999: unknown XID)
  unsigned int gpuInstanceId;    // MIG only; 0xFFFFFFFF otherwise
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlEventData_t) == 32);
// nvmlEventTypeXidCriticalError: an XID error, the driver's report of a GPU
// or application fault (the XID is the event's eventData).
inline constexpr unsigned long long kNvmlEventTypeXidCriticalError = 0x8;

inline constexpr nvmlReturn_t kNvmlSuccess = 0;
inline constexpr nvmlReturn_t kNvmlErrorInvalidArgument = 2;
inline constexpr nvmlReturn_t kNvmlErrorNotSupported = 3;
inline constexpr nvmlReturn_t kNvmlErrorNoPermission = 4;
inline constexpr nvmlReturn_t kNvmlErrorNotFound = 6;
inline constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
inline constexpr nvmlReturn_t kNvmlErrorDriverNotLoaded = 9;
inline constexpr nvmlReturn_t kNvmlErrorTimeout = 10;
inline constexpr nvmlReturn_t kNvmlErrorUnknown = 999;

inline constexpr char kDefaultNvmlLibrary[] = "libnvidia-ml.so.1";

// Entry points Trainyard binds, in kNvmlSymbols order.
enum class NvmlSymbol : std::size_t {
  kInit,
  kShutdown,
  kErrorString,
  kDeviceGetCount,
  kDeviceGetHandleByIndex,
  kDeviceGetName,
  kDeviceGetUuid,
  kDeviceGetMemoryInfo,
  kSystemGetDriverVersion,
  kDeviceGetPciInfo,
  kDeviceGetTopologyCommonAncestor,
  kDeviceGetNvLinkState,
  kDeviceGetNvLinkRemotePciInfo,
  kDeviceGetUtilizationRates,
  kDeviceGetTemperature,
  kDeviceGetPowerUsage,
  kDeviceGetClockInfo,
  kDeviceGetTotalEccErrors,
  kDeviceGetCurrentClocksThrottleReasons,
  kDeviceGetComputeRunningProcesses,
  kEventSetCreate,
  kDeviceRegisterEvents,
  kEventSetWaitV2,
  kEventSetWait,
  kEventSetFree,
  kCount,
};

struct NvmlSymbolSpec {
  NvmlSymbol id;
  const char* name;  // as exported by libnvidia-ml
  bool required;     // load() fails when a required symbol is missing
};

inline constexpr NvmlSymbolSpec kNvmlSymbols[] = {
    {NvmlSymbol::kInit, "nvmlInit_v2", true},
    {NvmlSymbol::kShutdown, "nvmlShutdown", true},
    {NvmlSymbol::kErrorString, "nvmlErrorString", true},
    {NvmlSymbol::kDeviceGetCount, "nvmlDeviceGetCount_v2", true},
    {NvmlSymbol::kDeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", true},
    {NvmlSymbol::kDeviceGetName, "nvmlDeviceGetName", true},
    {NvmlSymbol::kDeviceGetUuid, "nvmlDeviceGetUUID", true},
    {NvmlSymbol::kDeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", true},
    // Informational only: discovery works without it.
    {NvmlSymbol::kSystemGetDriverVersion, "nvmlSystemGetDriverVersion", false},
    // GPU topology (topology.h): without them every GPU pair is unknown and
    // the scheduler treats all pairs alike.
    {NvmlSymbol::kDeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", false},
    {NvmlSymbol::kDeviceGetTopologyCommonAncestor, "nvmlDeviceGetTopologyCommonAncestor", false},
    {NvmlSymbol::kDeviceGetNvLinkState, "nvmlDeviceGetNvLinkState", false},
    {NvmlSymbol::kDeviceGetNvLinkRemotePciInfo, "nvmlDeviceGetNvLinkRemotePciInfo_v2", false},
    // Sampling (gpu_sampler.h): each one missing only leaves its metric out.
    {NvmlSymbol::kDeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates", false},
    {NvmlSymbol::kDeviceGetTemperature, "nvmlDeviceGetTemperature", false},
    {NvmlSymbol::kDeviceGetPowerUsage, "nvmlDeviceGetPowerUsage", false},
    {NvmlSymbol::kDeviceGetClockInfo, "nvmlDeviceGetClockInfo", false},
    {NvmlSymbol::kDeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors", false},
    {NvmlSymbol::kDeviceGetCurrentClocksThrottleReasons,
     "nvmlDeviceGetCurrentClocksThrottleReasons", false},
    // _v3 takes the 24-byte nvmlProcessInfo_t above (drivers 510 and later);
    // the unversioned name takes a shorter struct and is not bound.
    {NvmlSymbol::kDeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses_v3",
     false},
    // XID events: without them a sample carries no XIDs. nvmlEventSetWait_v2
    // came with MIG (drivers 450 and later); the unversioned wait of older
    // drivers is the fallback.
    {NvmlSymbol::kEventSetCreate, "nvmlEventSetCreate", false},
    {NvmlSymbol::kDeviceRegisterEvents, "nvmlDeviceRegisterEvents", false},
    {NvmlSymbol::kEventSetWaitV2, "nvmlEventSetWait_v2", false},
    {NvmlSymbol::kEventSetWait, "nvmlEventSetWait", false},
    {NvmlSymbol::kEventSetFree, "nvmlEventSetFree", false},
};
static_assert(std::size(kNvmlSymbols) == static_cast<std::size_t>(NvmlSymbol::kCount));

class NvmlLibrary {
 public:
  // dlopen()s `path`, binds kNvmlSymbols and calls nvmlInit_v2. Fails with
  // Unavailable naming the library and dlerror() when it cannot be opened,
  // FailedPrecondition naming the symbol when a required one is missing, and
  // the mapped code with NVML's error string when nvmlInit_v2 fails.
  static Result<NvmlLibrary> load(const std::string& path = kDefaultNvmlLibrary);

  NvmlLibrary(NvmlLibrary&& other) noexcept;
  NvmlLibrary& operator=(NvmlLibrary&& other) noexcept;
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  ~NvmlLibrary();

  const std::string& path() const { return path_; }
  bool has(NvmlSymbol symbol) const { return symbols_[index(symbol)] != nullptr; }

  // "Driver Not Loaded"; "NVML error <code>" when NVML has no text for it.
  std::string errorString(nvmlReturn_t code) const;

  // Each wrapper below fails with a Status whose message names the NVML
  // function, the device index where there is one, and NVML's error string
  // and code; FailedPrecondition when an optional symbol is missing.
  Result<std::string> driverVersion() const;
  Result<unsigned> deviceCount() const;
  Result<nvmlDevice_t> deviceHandle(unsigned index) const;
  Result<std::string> deviceName(nvmlDevice_t device) const;
  Result<std::string> deviceUuid(nvmlDevice_t device) const;
  Result<nvmlMemory_t> deviceMemory(nvmlDevice_t device) const;
  Result<nvmlPciInfo_t> devicePciInfo(nvmlDevice_t device) const;
  // The kNvmlTopology* level of the closest common ancestor of `a` and `b`.
  Result<int> topologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b) const;
  // Whether NVLink `link` (0..kNvmlNvLinkMaxLinks-1) of `device` is active.
  // GPUs without NVLink answer FailedPrecondition (NVML's "Not Supported").
  Result<bool> nvLinkActive(nvmlDevice_t device, unsigned link) const;
  // The PCI address of what the other end of NVLink `link` plugs into: a
  // GPU, or an NVSwitch on machines that have them.
  Result<nvmlPciInfo_t> nvLinkRemotePciInfo(nvmlDevice_t device, unsigned link) const;

  // Sampling. Each is optional: FailedPrecondition when the symbol is
  // missing or the GPU answers NVML_ERROR_NOT_SUPPORTED (no ECC on a
  // consumer board, no power sensor), so callers can tell "not available
  // here" from a failed read.
  Result<nvmlUtilization_t> utilizationRates(nvmlDevice_t device) const;
  // kNvmlTemperatureGpu: the die, in degrees C.
  Result<unsigned> temperature(nvmlDevice_t device, int sensor) const;
  // Power draw of the board in milliwatts.
  Result<unsigned> powerUsageMilliwatts(nvmlDevice_t device) const;
  // kNvmlClockSm: the current clock of that domain in MHz.
  Result<unsigned> clockMhz(nvmlDevice_t device, int clock_type) const;
  // kNvmlEccSingleBit or kNvmlEccDoubleBit, counted over kNvmlEccVolatile.
  Result<unsigned long long> totalEccErrors(nvmlDevice_t device, int error_type,
                                            int counter_type) const;
  // nvmlClocksThrottleReasons bitmask; 0 when the clocks run unthrottled.
  Result<unsigned long long> clocksThrottleReasons(nvmlDevice_t device) const;
  // The compute (CUDA) processes on the GPU. Grows its buffer when NVML
  // answers NVML_ERROR_INSUFFICIENT_SIZE (processes may start between two
  // calls) a few times before giving up with Unavailable.
  Result<std::vector<nvmlProcessInfo_t>> computeRunningProcesses(nvmlDevice_t device) const;

  // Events. Optional like the sampling reads: FailedPrecondition when a
  // symbol is missing or NVML answers NVML_ERROR_NOT_SUPPORTED (registering
  // XID events fails so inside some virtual machines).
  //
  // A new, empty event set; the caller frees it with freeEventSet before
  // this library is destroyed.
  Result<nvmlEventSet_t> createEventSet() const;
  // Adds the `event_types` (nvmlEventType* bits) of `device` to `set`.
  Status registerEvents(nvmlDevice_t device, unsigned long long event_types,
                        nvmlEventSet_t set) const;
  // The next event of `set`, waiting at most `timeout_ms` for one (0: only
  // what is already pending, never blocks); nullopt when none came
  // (NVML_ERROR_TIMEOUT). Uses nvmlEventSetWait_v2, else nvmlEventSetWait.
  Result<std::optional<nvmlEventData_t>> waitEvent(nvmlEventSet_t set, unsigned timeout_ms) const;
  // Releases `set`; a failure is ignored as there is nothing to do about it.
  void freeEventSet(nvmlEventSet_t set) const;

 private:
  using Symbols = std::array<void*, static_cast<std::size_t>(NvmlSymbol::kCount)>;

  NvmlLibrary(std::string path, void* handle, const Symbols& symbols)
      : path_(std::move(path)), handle_(handle), symbols_(symbols) {}
  static constexpr std::size_t index(NvmlSymbol s) { return static_cast<std::size_t>(s); }

  // The bound function for `symbol` cast to its prototype, or nullptr.
  template <typename Fn>
  Fn fn(NvmlSymbol symbol) const {
    return reinterpret_cast<Fn>(symbols_[index(symbol)]);
  }
  // Status for a failed call of `what`; `code` is never kNvmlSuccess.
  Status callError(const std::string& what, nvmlReturn_t code) const;
  Status missing(NvmlSymbol symbol) const;
  void release();

  std::string path_;
  void* handle_ = nullptr;  // from dlopen; nullptr once moved from
  Symbols symbols_{};
};

}  // namespace ty
