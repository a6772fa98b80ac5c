// GpuSampler and its NVML and --fake-gpus readers.

#include "gpu/gpu_sampler.h"

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/nvml.h"

namespace ty {
namespace {

constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();

std::int64_t toBytes(unsigned long long value) {
  return value > static_cast<unsigned long long>(kMaxInt64) ? kMaxInt64
                                                            : static_cast<std::int64_t>(value);
}

class NvmlGpuReader final : public GpuReader {
 public:
  explicit NvmlGpuReader(NvmlLibrary nvml) : nvml_(std::move(nvml)) {}
  NvmlGpuReader(const NvmlGpuReader&) = delete;
  NvmlGpuReader& operator=(const NvmlGpuReader&) = delete;
  // The event set goes before nvml_ shuts NVML down.
  ~NvmlGpuReader() override {
    if (events_ != nullptr) nvml_.freeEventSet(events_);
  }

  Result<unsigned> gpuCount() override {
    Result<unsigned> count = nvml_.deviceCount();
    // Handles stay valid while NVML is initialised; a new count (a GPU fell
    // off the bus, or came back) is the one time to look them up again.
    if (count.isOk() && *count != handles_.size()) handles_.assign(*count, nullptr);
    return count;
  }

  Result<GpuIdentity> identity(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    Result<std::string> uuid = nvml_.deviceUuid(*device);
    if (!uuid.isOk()) return uuid.status();
    Result<std::string> name = nvml_.deviceName(*device);
    if (!name.isOk()) return name.status();
    return GpuIdentity{*uuid, *name};
  }

  Result<GpuUtilization> utilization(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    Result<nvmlUtilization_t> u = nvml_.utilizationRates(*device);
    if (!u.isOk()) return u.status();
    return GpuUtilization{u->gpu, u->memory};
  }

  Result<GpuMemoryUse> memory(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    Result<nvmlMemory_t> m = nvml_.deviceMemory(*device);
    if (!m.isOk()) return m.status();
    return GpuMemoryUse{toBytes(m->used), toBytes(m->free)};
  }

  Result<unsigned> temperatureCelsius(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    return nvml_.temperature(*device, kNvmlTemperatureGpu);
  }

  Result<unsigned> powerMilliwatts(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    return nvml_.powerUsageMilliwatts(*device);
  }

  Result<unsigned> smClockMhz(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    return nvml_.clockMhz(*device, kNvmlClockSm);
  }

  Result<std::uint64_t> eccErrors(unsigned gpu, EccErrorKind kind) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    Result<unsigned long long> n = nvml_.totalEccErrors(
        *device, kind == EccErrorKind::kSingleBit ? kNvmlEccSingleBit : kNvmlEccDoubleBit,
        kNvmlEccVolatile);
    if (!n.isOk()) return n.status();
    return static_cast<std::uint64_t>(*n);
  }

  Result<std::uint64_t> throttleReasons(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    Result<unsigned long long> bits = nvml_.clocksThrottleReasons(*device);
    if (!bits.isOk()) return bits.status();
    return static_cast<std::uint64_t>(*bits);
  }

  Result<std::vector<GpuProcessSample>> computeProcesses(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    Result<std::vector<nvmlProcessInfo_t>> infos = nvml_.computeRunningProcesses(*device);
    if (!infos.isOk()) return infos.status();
    std::vector<GpuProcessSample> out;
    out.reserve(infos->size());
    for (const nvmlProcessInfo_t& info : *infos) {
      GpuProcessSample p;
      p.pid = info.pid;
      if (info.usedGpuMemory != kNvmlValueNotAvailable) {
        p.used_memory_bytes = toBytes(info.usedGpuMemory);
      }
      out.push_back(p);
    }
    return out;
  }

  Result<std::vector<std::uint64_t>> xids(unsigned gpu) override {
    Result<nvmlDevice_t> device = handle(gpu);
    if (!device.isOk()) return device.status();
    Status watched = watchXids(*device);
    if (!watched.isOk()) return watched;
    Status drained = drainEvents();
    auto pending = pending_xids_.find(*device);
    if (pending == pending_xids_.end() || pending->second.empty()) {
      if (!drained.isOk()) return drained;
      return std::vector<std::uint64_t>{};
    }
    // What was drained before a failed wait is still answered: the failure
    // comes back at the next call, as the set is waited on again.
    std::vector<std::uint64_t> out = std::move(pending->second);
    pending_xids_.erase(pending);
    return out;
  }

 private:
  // At most this many events are taken off the set per xids() call, so that
  // an XID storm cannot hold up a sample; the rest wait for the next call.
  static constexpr int kMaxEventsPerDrain = 1024;

  // Registers `device` for XID events, once. Registration answered
  // NVML_ERROR_NOT_SUPPORTED (or a driver without the event API) is
  // remembered and answered again without asking NVML; any other failure is
  // tried again at the next call.
  Status watchXids(nvmlDevice_t device) {
    if (!no_event_api_.isOk()) return no_event_api_;
    if (events_ == nullptr) {
      Result<nvmlEventSet_t> set = nvml_.createEventSet();
      if (!set.isOk()) {
        if (set.status().code() == StatusCode::kFailedPrecondition) no_event_api_ = set.status();
        return set.status();
      }
      events_ = *set;
    }
    auto known = xid_registration_.find(device);
    if (known != xid_registration_.end()) return known->second;
    Status registered = nvml_.registerEvents(device, kNvmlEventTypeXidCriticalError, events_);
    if (registered.isOk() || registered.code() == StatusCode::kFailedPrecondition) {
      xid_registration_.emplace(device, registered);
    }
    return registered;
  }

  // Takes the events pending on the set, without waiting, into
  // pending_xids_ by the device each names. Events of devices not
  // registered here cannot come; they are dropped should NVML send one.
  Status drainEvents() {
    for (int n = 0; n < kMaxEventsPerDrain; ++n) {
      Result<std::optional<nvmlEventData_t>> event = nvml_.waitEvent(events_, 0);
      if (!event.isOk()) return event.status();
      if (!event->has_value()) return Status::ok();
      const nvmlEventData_t& data = **event;
      if ((data.eventType & kNvmlEventTypeXidCriticalError) == 0) continue;
      auto registered = xid_registration_.find(data.device);
      if (registered == xid_registration_.end() || !registered->second.isOk()) continue;
      std::vector<std::uint64_t>& list = pending_xids_[data.device];
      if (list.size() < kMaxXidsPerRead) list.push_back(data.eventData);
    }
    return Status::ok();
  }

  Result<nvmlDevice_t> handle(unsigned gpu) {
    if (gpu >= handles_.size()) handles_.resize(gpu + 1, nullptr);
    if (handles_[gpu] == nullptr) {
      Result<nvmlDevice_t> device = nvml_.deviceHandle(gpu);
      if (!device.isOk()) return device;
      handles_[gpu] = *device;
    }
    return handles_[gpu];
  }

  NvmlLibrary nvml_;
  std::vector<nvmlDevice_t> handles_;  // by index; nullptr until looked up
  // XID events. Keyed by device handle, not index: a handle stays valid
  // while NVML is initialised, whereas handles_ is looked up again when the
  // GPU count changes, and a device stays registered in the set across that.
  nvmlEventSet_t events_ = nullptr;                  // created at the first xids() call
  Status no_event_api_;                              // FailedPrecondition once the driver has none
  std::map<nvmlDevice_t, Status> xid_registration_;  // ok, or FailedPrecondition
  std::map<nvmlDevice_t, std::vector<std::uint64_t>> pending_xids_;
};

class FakeGpuReader final : public GpuReader {
 public:
  explicit FakeGpuReader(std::vector<GpuInfo> gpus) : gpus_(std::move(gpus)) {}

  Result<unsigned> gpuCount() override { return static_cast<unsigned>(gpus_.size()); }
  Result<GpuIdentity> identity(unsigned gpu) override {
    if (gpu >= gpus_.size()) return outOfRange(gpu);
    return GpuIdentity{gpus_[gpu].uuid, gpus_[gpu].model};
  }
  Result<GpuUtilization> utilization(unsigned gpu) override {
    if (gpu >= gpus_.size()) return outOfRange(gpu);
    return GpuUtilization{};
  }
  Result<GpuMemoryUse> memory(unsigned gpu) override {
    if (gpu >= gpus_.size()) return outOfRange(gpu);
    return GpuMemoryUse{0, gpus_[gpu].memory_bytes};
  }
  Result<unsigned> temperatureCelsius(unsigned) override { return noSensor(); }
  Result<unsigned> powerMilliwatts(unsigned) override { return noSensor(); }
  Result<unsigned> smClockMhz(unsigned) override { return noSensor(); }
  Result<std::uint64_t> eccErrors(unsigned, EccErrorKind) override { return noSensor(); }
  Result<std::uint64_t> throttleReasons(unsigned) override { return noSensor(); }
  Result<std::vector<GpuProcessSample>> computeProcesses(unsigned gpu) override {
    if (gpu >= gpus_.size()) return outOfRange(gpu);
    return std::vector<GpuProcessSample>{};
  }
  Result<std::vector<std::uint64_t>> xids(unsigned) override {
    return Status::failedPrecondition("a fake GPU reports no XID errors");
  }

 private:
  static Status noSensor() { return Status::failedPrecondition("a fake GPU has no sensors"); }
  static Status outOfRange(unsigned gpu) {
    return Status::invalidArgument("no fake GPU " + std::to_string(gpu));
  }

  std::vector<GpuInfo> gpus_;
};

// Accumulates one GPU's reads into its GpuSample and the node's problems.
class SampleBuilder {
 public:
  SampleBuilder(GpuSample& gpu, NodeSample& node) : gpu_(gpu), node_(node) {}

  // The value of `result`, or nullopt after counting why there is none.
  template <typename T>
  std::optional<T> take(Result<T> result) {
    if (result.isOk()) return std::move(*result);
    const Status& st = result.status();
    if (st.code() == StatusCode::kFailedPrecondition) {
      ++gpu_.unsupported;
    } else {
      ++gpu_.errors;
      if (node_.problems.size() < NodeSample::kMaxProblems) {
        node_.problems.push_back("GPU " + std::to_string(gpu_.index) + ": " + st.message());
      }
    }
    return std::nullopt;
  }

 private:
  GpuSample& gpu_;
  NodeSample& node_;
};

}  // namespace

Result<std::unique_ptr<GpuReader>> openNvmlGpuReader(const std::string& library) {
  Result<NvmlLibrary> nvml = NvmlLibrary::load(library);
  if (!nvml.isOk()) return nvml.status();
  return std::unique_ptr<GpuReader>(std::make_unique<NvmlGpuReader>(std::move(*nvml)));
}

std::unique_ptr<GpuReader> newFakeGpuReader(std::vector<GpuInfo> gpus) {
  return std::make_unique<FakeGpuReader>(std::move(gpus));
}

GpuSampler::GpuSampler(std::unique_ptr<GpuReader> reader) : reader_(std::move(reader)) {}

NodeSample GpuSampler::sample() {
  NodeSample node;
  Result<unsigned> count = reader_->gpuCount();
  if (!count.isOk()) {
    node.errors = 1;
    node.problems.push_back(count.status().message());
    return node;
  }
  node.gpus.reserve(*count);
  for (unsigned i = 0; i < *count; ++i) {
    GpuSample& gpu = node.gpus.emplace_back();
    gpu.index = static_cast<int>(i);
    SampleBuilder b(gpu, node);
    if (auto id = b.take(reader_->identity(i))) {
      gpu.uuid = std::move(id->uuid);
      gpu.model = std::move(id->model);
    }
    if (auto u = b.take(reader_->utilization(i))) {
      gpu.gpu_util_percent = u->gpu_percent;
      gpu.mem_copy_util_percent = u->memory_percent;
    }
    if (auto m = b.take(reader_->memory(i))) {
      gpu.memory_used_bytes = m->used_bytes;
      gpu.memory_free_bytes = m->free_bytes;
    }
    if (auto t = b.take(reader_->temperatureCelsius(i))) gpu.temperature_celsius = *t;
    if (auto mw = b.take(reader_->powerMilliwatts(i))) gpu.power_watts = *mw / 1000.0;
    if (auto mhz = b.take(reader_->smClockMhz(i))) gpu.sm_clock_mhz = *mhz;
    gpu.ecc_single_bit_volatile = b.take(reader_->eccErrors(i, EccErrorKind::kSingleBit));
    gpu.ecc_double_bit_volatile = b.take(reader_->eccErrors(i, EccErrorKind::kDoubleBit));
    gpu.throttle_reasons = b.take(reader_->throttleReasons(i));
    gpu.processes = b.take(reader_->computeProcesses(i));
    if (auto x = b.take(reader_->xids(i))) gpu.xids = std::move(*x);
    node.unsupported += gpu.unsupported;
    node.errors += gpu.errors;
  }
  return node;
}

}  // namespace ty
