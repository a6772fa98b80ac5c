// GpuSampler and its NVML and --fake-gpus readers.

#include "gpu/gpu_sampler.h"

#include <limits>
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

 private:
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
    node.unsupported += gpu.unsupported;
    node.errors += gpu.errors;
  }
  return node;
}

}  // namespace ty
