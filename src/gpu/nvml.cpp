// NvmlLibrary and NVML-based GPU discovery.

#include "gpu/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_provider.h"
#include "gpu/topology.h"

namespace ty {
namespace {

// NVML's prototypes, for the entry points in kNvmlSymbols.
using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using DeviceGetCountFn = nvmlReturn_t (*)(unsigned int*);
using DeviceGetHandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using DeviceGetNameFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using DeviceGetUuidFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using DeviceGetMemoryInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using SystemGetDriverVersionFn = nvmlReturn_t (*)(char*, unsigned int);
using DeviceGetPciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
// The level and NVLink state are C enums (int-sized) in NVML's prototypes.
using DeviceGetTopologyCommonAncestorFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlDevice_t, int*);
using DeviceGetNvLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, int*);
using DeviceGetNvLinkRemotePciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
using DeviceGetUtilizationRatesFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
// Sensor, clock, error and counter types are C enums (int-sized).
using DeviceGetTemperatureFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using DeviceGetPowerUsageFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using DeviceGetClockInfoFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using DeviceGetTotalEccErrorsFn = nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*);
using DeviceGetCurrentClocksThrottleReasonsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using DeviceGetComputeRunningProcessesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*,
                                                            nvmlProcessInfo_t*);
using EventSetCreateFn = nvmlReturn_t (*)(nvmlEventSet_t*);
using DeviceRegisterEventsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
// nvmlEventSetWait_v2 and nvmlEventSetWait share this prototype.
using EventSetWaitFn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using EventSetFreeFn = nvmlReturn_t (*)(nvmlEventSet_t);

// NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE and
// NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE.
constexpr unsigned kNameBufferSize = 96;
constexpr unsigned kUuidBufferSize = 96;
constexpr unsigned kDriverVersionBufferSize = 80;

std::string fromBuffer(const char* buf, std::size_t size) {
  return std::string(buf, strnlen(buf, size));
}

}  // namespace

Result<NvmlLibrary> NvmlLibrary::load(const std::string& path) {
  dlerror();  // clear any stale error
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    std::string detail = err != nullptr ? err : path + ": cannot be opened";
    return Status::unavailable(detail + " (no NVIDIA driver on this machine?)");
  }
  Symbols symbols{};
  for (const NvmlSymbolSpec& spec : kNvmlSymbols) {
    void* sym = dlsym(handle, spec.name);
    if (sym == nullptr && spec.required) {
      dlclose(handle);
      return Status::failedPrecondition(path + ": missing required NVML symbol " + spec.name +
                                        " (driver too old, or not an NVML library)");
    }
    symbols[index(spec.id)] = sym;
  }
  NvmlLibrary library(path, handle, symbols);
  nvmlReturn_t rc = library.fn<InitFn>(NvmlSymbol::kInit)();
  if (rc != kNvmlSuccess) {
    Status status = library.callError("nvmlInit_v2", rc).withContext(path);
    // Not initialised: only dlclose on destruction.
    library.symbols_[index(NvmlSymbol::kShutdown)] = nullptr;
    return status;
  }
  return library;
}

NvmlLibrary::NvmlLibrary(NvmlLibrary&& other) noexcept
    : path_(std::move(other.path_)),
      handle_(std::exchange(other.handle_, nullptr)),
      symbols_(std::exchange(other.symbols_, Symbols{})) {}

NvmlLibrary& NvmlLibrary::operator=(NvmlLibrary&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    handle_ = std::exchange(other.handle_, nullptr);
    symbols_ = std::exchange(other.symbols_, Symbols{});
  }
  return *this;
}

NvmlLibrary::~NvmlLibrary() { release(); }

void NvmlLibrary::release() {
  if (handle_ == nullptr) return;
  if (auto shutdown = fn<ShutdownFn>(NvmlSymbol::kShutdown)) {
    (void)shutdown();  // nothing useful to do with a failure while tearing down
  }
  dlclose(handle_);
  handle_ = nullptr;
  symbols_ = Symbols{};
}

std::string NvmlLibrary::errorString(nvmlReturn_t code) const {
  if (auto error_string = fn<ErrorStringFn>(NvmlSymbol::kErrorString)) {
    const char* text = error_string(code);
    if (text != nullptr && *text != '\0') return text;
  }
  return "NVML error " + std::to_string(code);
}

Status NvmlLibrary::callError(const std::string& what, nvmlReturn_t code) const {
  std::string msg =
      what + " failed: " + errorString(code) + " (NVML error " + std::to_string(code) + ")";
  switch (code) {
    case kNvmlErrorInvalidArgument:
      return Status::invalidArgument(msg);
    case kNvmlErrorNotSupported:
      return Status::failedPrecondition(msg);
    case kNvmlErrorNoPermission:
      return Status::permissionDenied(msg);
    case kNvmlErrorNotFound:
      return Status::notFound(msg);
    case kNvmlErrorInsufficientSize:
      return Status::internal(msg);
    default:
      return Status::unavailable(msg);
  }
}

Status NvmlLibrary::missing(NvmlSymbol symbol) const {
  return Status::failedPrecondition(path_ + " has no " + kNvmlSymbols[index(symbol)].name);
}

Result<std::string> NvmlLibrary::driverVersion() const {
  auto get = fn<SystemGetDriverVersionFn>(NvmlSymbol::kSystemGetDriverVersion);
  if (get == nullptr) return missing(NvmlSymbol::kSystemGetDriverVersion);
  char buf[kDriverVersionBufferSize] = {};
  nvmlReturn_t rc = get(buf, sizeof buf);
  if (rc != kNvmlSuccess) return callError("nvmlSystemGetDriverVersion", rc);
  return fromBuffer(buf, sizeof buf);
}

Result<unsigned> NvmlLibrary::deviceCount() const {
  unsigned count = 0;
  nvmlReturn_t rc = fn<DeviceGetCountFn>(NvmlSymbol::kDeviceGetCount)(&count);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetCount_v2", rc);
  return count;
}

Result<nvmlDevice_t> NvmlLibrary::deviceHandle(unsigned index) const {
  nvmlDevice_t device = nullptr;
  nvmlReturn_t rc =
      fn<DeviceGetHandleByIndexFn>(NvmlSymbol::kDeviceGetHandleByIndex)(index, &device);
  if (rc != kNvmlSuccess) {
    return callError("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) + ")", rc);
  }
  return device;
}

Result<std::string> NvmlLibrary::deviceName(nvmlDevice_t device) const {
  char buf[kNameBufferSize] = {};
  nvmlReturn_t rc = fn<DeviceGetNameFn>(NvmlSymbol::kDeviceGetName)(device, buf, sizeof buf);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetName", rc);
  return fromBuffer(buf, sizeof buf);
}

Result<std::string> NvmlLibrary::deviceUuid(nvmlDevice_t device) const {
  char buf[kUuidBufferSize] = {};
  nvmlReturn_t rc = fn<DeviceGetUuidFn>(NvmlSymbol::kDeviceGetUuid)(device, buf, sizeof buf);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetUUID", rc);
  return fromBuffer(buf, sizeof buf);
}

Result<nvmlMemory_t> NvmlLibrary::deviceMemory(nvmlDevice_t device) const {
  nvmlMemory_t memory{};
  nvmlReturn_t rc = fn<DeviceGetMemoryInfoFn>(NvmlSymbol::kDeviceGetMemoryInfo)(device, &memory);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetMemoryInfo", rc);
  return memory;
}

Result<nvmlPciInfo_t> NvmlLibrary::devicePciInfo(nvmlDevice_t device) const {
  auto get = fn<DeviceGetPciInfoFn>(NvmlSymbol::kDeviceGetPciInfo);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetPciInfo);
  nvmlPciInfo_t pci{};
  nvmlReturn_t rc = get(device, &pci);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetPciInfo_v3", rc);
  return pci;
}

Result<int> NvmlLibrary::topologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b) const {
  auto get = fn<DeviceGetTopologyCommonAncestorFn>(NvmlSymbol::kDeviceGetTopologyCommonAncestor);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetTopologyCommonAncestor);
  int level = 0;
  nvmlReturn_t rc = get(a, b, &level);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetTopologyCommonAncestor", rc);
  return level;
}

Result<bool> NvmlLibrary::nvLinkActive(nvmlDevice_t device, unsigned link) const {
  auto get = fn<DeviceGetNvLinkStateFn>(NvmlSymbol::kDeviceGetNvLinkState);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetNvLinkState);
  int active = 0;
  nvmlReturn_t rc = get(device, link, &active);
  if (rc != kNvmlSuccess) {
    return callError("nvmlDeviceGetNvLinkState(link " + std::to_string(link) + ")", rc);
  }
  return active != 0;  // NVML_FEATURE_ENABLED
}

Result<nvmlPciInfo_t> NvmlLibrary::nvLinkRemotePciInfo(nvmlDevice_t device, unsigned link) const {
  auto get = fn<DeviceGetNvLinkRemotePciInfoFn>(NvmlSymbol::kDeviceGetNvLinkRemotePciInfo);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetNvLinkRemotePciInfo);
  nvmlPciInfo_t pci{};
  nvmlReturn_t rc = get(device, link, &pci);
  if (rc != kNvmlSuccess) {
    return callError("nvmlDeviceGetNvLinkRemotePciInfo_v2(link " + std::to_string(link) + ")", rc);
  }
  return pci;
}

Result<nvmlUtilization_t> NvmlLibrary::utilizationRates(nvmlDevice_t device) const {
  auto get = fn<DeviceGetUtilizationRatesFn>(NvmlSymbol::kDeviceGetUtilizationRates);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetUtilizationRates);
  nvmlUtilization_t utilization{};
  nvmlReturn_t rc = get(device, &utilization);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetUtilizationRates", rc);
  return utilization;
}

Result<unsigned> NvmlLibrary::temperature(nvmlDevice_t device, int sensor) const {
  auto get = fn<DeviceGetTemperatureFn>(NvmlSymbol::kDeviceGetTemperature);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetTemperature);
  unsigned value = 0;
  nvmlReturn_t rc = get(device, sensor, &value);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetTemperature", rc);
  return value;
}

Result<unsigned> NvmlLibrary::powerUsageMilliwatts(nvmlDevice_t device) const {
  auto get = fn<DeviceGetPowerUsageFn>(NvmlSymbol::kDeviceGetPowerUsage);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetPowerUsage);
  unsigned value = 0;
  nvmlReturn_t rc = get(device, &value);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetPowerUsage", rc);
  return value;
}

Result<unsigned> NvmlLibrary::clockMhz(nvmlDevice_t device, int clock_type) const {
  auto get = fn<DeviceGetClockInfoFn>(NvmlSymbol::kDeviceGetClockInfo);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetClockInfo);
  unsigned value = 0;
  nvmlReturn_t rc = get(device, clock_type, &value);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetClockInfo", rc);
  return value;
}

Result<unsigned long long> NvmlLibrary::totalEccErrors(nvmlDevice_t device, int error_type,
                                                       int counter_type) const {
  auto get = fn<DeviceGetTotalEccErrorsFn>(NvmlSymbol::kDeviceGetTotalEccErrors);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetTotalEccErrors);
  unsigned long long value = 0;
  nvmlReturn_t rc = get(device, error_type, counter_type, &value);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetTotalEccErrors", rc);
  return value;
}

Result<unsigned long long> NvmlLibrary::clocksThrottleReasons(nvmlDevice_t device) const {
  auto get = fn<DeviceGetCurrentClocksThrottleReasonsFn>(
      NvmlSymbol::kDeviceGetCurrentClocksThrottleReasons);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetCurrentClocksThrottleReasons);
  unsigned long long value = 0;
  nvmlReturn_t rc = get(device, &value);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceGetCurrentClocksThrottleReasons", rc);
  return value;
}

Result<std::vector<nvmlProcessInfo_t>> NvmlLibrary::computeRunningProcesses(
    nvmlDevice_t device) const {
  auto get = fn<DeviceGetComputeRunningProcessesFn>(NvmlSymbol::kDeviceGetComputeRunningProcesses);
  if (get == nullptr) return missing(NvmlSymbol::kDeviceGetComputeRunningProcesses);
  // Most GPUs run a handful of processes: one call with room for 32 is the
  // common case. NVML answers INSUFFICIENT_SIZE with the count it needs;
  // processes can start before the next call, hence the retries with slack.
  std::vector<nvmlProcessInfo_t> infos(32);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(infos.size());
    nvmlReturn_t rc = get(device, &count, infos.data());
    if (rc == kNvmlSuccess) {
      infos.resize(std::min<std::size_t>(count, infos.size()));
      return infos;
    }
    if (rc != kNvmlErrorInsufficientSize) {
      return callError("nvmlDeviceGetComputeRunningProcesses_v3", rc);
    }
    infos.resize(std::max<std::size_t>(count, infos.size()) + 16);
  }
  return Status::unavailable(
      "nvmlDeviceGetComputeRunningProcesses_v3: the process list kept growing while read");
}

Result<nvmlEventSet_t> NvmlLibrary::createEventSet() const {
  auto create = fn<EventSetCreateFn>(NvmlSymbol::kEventSetCreate);
  if (create == nullptr) return missing(NvmlSymbol::kEventSetCreate);
  nvmlEventSet_t set = nullptr;
  nvmlReturn_t rc = create(&set);
  if (rc != kNvmlSuccess) return callError("nvmlEventSetCreate", rc);
  return set;
}

Status NvmlLibrary::registerEvents(nvmlDevice_t device, unsigned long long event_types,
                                   nvmlEventSet_t set) const {
  auto reg = fn<DeviceRegisterEventsFn>(NvmlSymbol::kDeviceRegisterEvents);
  if (reg == nullptr) return missing(NvmlSymbol::kDeviceRegisterEvents);
  nvmlReturn_t rc = reg(device, event_types, set);
  if (rc != kNvmlSuccess) return callError("nvmlDeviceRegisterEvents", rc);
  return Status::ok();
}

Result<std::optional<nvmlEventData_t>> NvmlLibrary::waitEvent(nvmlEventSet_t set,
                                                              unsigned timeout_ms) const {
  const char* name = "nvmlEventSetWait_v2";
  auto wait = fn<EventSetWaitFn>(NvmlSymbol::kEventSetWaitV2);
  if (wait == nullptr) {
    name = "nvmlEventSetWait";
    wait = fn<EventSetWaitFn>(NvmlSymbol::kEventSetWait);
  }
  if (wait == nullptr) return missing(NvmlSymbol::kEventSetWaitV2);
  // Zeroed, so that the fields an older driver's wait does not write read
  // as 0 rather than as garbage.
  nvmlEventData_t data{};
  nvmlReturn_t rc = wait(set, &data, timeout_ms);
  if (rc == kNvmlErrorTimeout) return std::optional<nvmlEventData_t>();
  if (rc != kNvmlSuccess) return callError(name, rc);
  return std::optional<nvmlEventData_t>(data);
}

void NvmlLibrary::freeEventSet(nvmlEventSet_t set) const {
  if (auto free_set = fn<EventSetFreeFn>(NvmlSymbol::kEventSetFree)) (void)free_set(set);
}

GpuDiscovery discoverNvmlGpus(const std::string& library) {
  GpuDiscovery out;
  Result<NvmlLibrary> nvml = NvmlLibrary::load(library);
  if (!nvml.isOk()) {
    out.note = nvml.status().message();
    return out;
  }
  Result<unsigned> count = nvml->deviceCount();
  if (!count.isOk()) {
    out.note = count.status().message();
    return out;
  }
  std::vector<std::string> problems;
  std::vector<nvmlDevice_t> devices;  // by index; nullptr where NVML gave no handle
  for (unsigned i = 0; i < *count; ++i) {
    GpuInfo gpu;
    gpu.index = static_cast<int>(i);
    // A GPU NVML counts but cannot describe is listed unhealthy, so that the
    // indices stay those CUDA_VISIBLE_DEVICES uses and nothing is placed on it.
    Result<nvmlDevice_t> device = nvml->deviceHandle(i);
    if (!device.isOk()) {
      gpu.healthy = false;
      problems.push_back("GPU " + std::to_string(i) + ": " + device.status().message());
      out.gpus.push_back(std::move(gpu));
      devices.push_back(nullptr);
      continue;
    }
    devices.push_back(*device);
    Result<std::string> uuid = nvml->deviceUuid(*device);
    Result<std::string> name = nvml->deviceName(*device);
    Result<nvmlMemory_t> memory = nvml->deviceMemory(*device);
    for (const Status* s : {&uuid.status(), &name.status(), &memory.status()}) {
      if (!s->isOk()) {
        gpu.healthy = false;
        problems.push_back("GPU " + std::to_string(i) + ": " + s->message());
      }
    }
    if (uuid.isOk()) gpu.uuid = *uuid;
    if (name.isOk()) gpu.model = *name;
    if (memory.isOk()) gpu.memory_bytes = static_cast<std::int64_t>(memory->total);
    out.gpus.push_back(std::move(gpu));
  }
  NvmlTopology topology = readNvmlTopology(*nvml, devices);
  out.gpu_links = std::move(topology.links);
  out.topology_note = std::move(topology.note);
  if (out.gpus.empty()) {
    Result<std::string> driver = nvml->driverVersion();
    out.note = "NVML (" + library + ") reports no GPUs";
    if (driver.isOk()) out.note += " (driver " + *driver + ")";
  }
  for (const std::string& p : problems) {
    out.note += (out.note.empty() ? "" : "; ") + p;
  }
  return out;
}

}  // namespace ty
