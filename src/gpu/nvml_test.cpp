// Loads tests/fake_nvml (FAKE_NVML_LIB) through the real dlopen path.

#include "gpu/nvml.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "gpu/gpu_provider.h"
#include "gpu/topology.h"

#ifndef FAKE_NVML_LIB
#error "FAKE_NVML_LIB must name the fake NVML library (tests/CMakeLists.txt)"
#endif

namespace ty {
namespace {

constexpr std::int64_t kGib = std::int64_t{1} << 30;

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    unsetenv("FAKE_NVML_GPUS");
    unsetenv("FAKE_NVML_INIT_ERROR");
    unsetenv("FAKE_NVML_DRIVER_VERSION");
    unsetenv("FAKE_NVML_TOPOLOGY");
    unsetenv("FAKE_NVML_XID");
  }
};

// The fake built without the topology entry points, beside FAKE_NVML_LIB
// (tests/fake_nvml/CMakeLists.txt).
std::string fakeWithoutTopology() {
  return (std::filesystem::path(FAKE_NVML_LIB).parent_path() / "libnvidia-ml-fake-no-topology.so")
      .string();
}

// The fake built without nvmlEventSetWait_v2, and the one without the
// sampling (and event) entry points.
std::string fakeVariant(const char* name) {
  return (std::filesystem::path(FAKE_NVML_LIB).parent_path() / name).string();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_F(NvmlTest, DiscoversScriptedGpus) {
  setenv("FAKE_NVML_GPUS", "2xH100-80GB,1xL40S-48GB", 1);
  GpuDiscovery d = discoverNvmlGpus(FAKE_NVML_LIB);
  EXPECT_EQ(d.note, "");
  ASSERT_EQ(d.gpus.size(), 3u);
  EXPECT_EQ(d.gpus[0].index, 0);
  EXPECT_EQ(d.gpus[0].model, "NVIDIA H100-80GB");
  EXPECT_EQ(d.gpus[0].uuid, "GPU-00000000-0000-4000-8000-000000000000");
  EXPECT_EQ(d.gpus[0].memory_bytes, 80 * kGib);
  EXPECT_TRUE(d.gpus[0].healthy);
  EXPECT_EQ(d.gpus[2].index, 2);
  EXPECT_EQ(d.gpus[2].model, "NVIDIA L40S-48GB");
  EXPECT_EQ(d.gpus[2].uuid, "GPU-00000000-0000-4000-8000-000000000002");
  EXPECT_EQ(d.gpus[2].memory_bytes, 48 * kGib);
}

TEST_F(NvmlTest, ReadsTheEnvironmentAtEachInit) {
  setenv("FAKE_NVML_GPUS", "4xA100-40GB", 1);
  EXPECT_EQ(discoverNvmlGpus(FAKE_NVML_LIB).gpus.size(), 4u);
  setenv("FAKE_NVML_GPUS", "1xA100-40GB", 1);
  EXPECT_EQ(discoverNvmlGpus(FAKE_NVML_LIB).gpus.size(), 1u);
}

TEST_F(NvmlTest, NoGpusGivesANote) {
  setenv("FAKE_NVML_DRIVER_VERSION", "535.1", 1);
  GpuDiscovery d = discoverNvmlGpus(FAKE_NVML_LIB);
  EXPECT_TRUE(d.gpus.empty());
  EXPECT_TRUE(contains(d.note, "no GPUs")) << d.note;
  EXPECT_TRUE(contains(d.note, "535.1")) << d.note;
}

TEST_F(NvmlTest, MissingLibraryGivesZeroGpusAndNamesIt) {
  GpuDiscovery d = discoverNvmlGpus("libnvidia-ml-does-not-exist.so.1");
  EXPECT_TRUE(d.gpus.empty());
  EXPECT_TRUE(contains(d.note, "libnvidia-ml-does-not-exist.so.1")) << d.note;
  EXPECT_TRUE(contains(d.note, "cannot open shared object file")) << d.note;

  Result<NvmlLibrary> lib = NvmlLibrary::load("libnvidia-ml-does-not-exist.so.1");
  ASSERT_FALSE(lib.isOk());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
}

TEST_F(NvmlTest, InitErrorGivesNvmlErrorString) {
  setenv("FAKE_NVML_GPUS", "2xH100-80GB", 1);
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  GpuDiscovery d = discoverNvmlGpus(FAKE_NVML_LIB);
  EXPECT_TRUE(d.gpus.empty());
  EXPECT_TRUE(contains(d.note, "nvmlInit_v2")) << d.note;
  EXPECT_TRUE(contains(d.note, "Driver Not Loaded")) << d.note;

  Result<NvmlLibrary> lib = NvmlLibrary::load(FAKE_NVML_LIB);
  ASSERT_FALSE(lib.isOk());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(lib.status().message(), "(NVML error 9)")) << lib.status().message();

  // A failed init leaves nothing behind: the next load starts afresh.
  unsetenv("FAKE_NVML_INIT_ERROR");
  EXPECT_EQ(discoverNvmlGpus(FAKE_NVML_LIB).gpus.size(), 2u);
}

TEST_F(NvmlTest, MalformedScriptIsAnInitError) {
  setenv("FAKE_NVML_GPUS", "0xH100", 1);
  GpuDiscovery d = discoverNvmlGpus(FAKE_NVML_LIB);
  EXPECT_TRUE(d.gpus.empty());
  EXPECT_TRUE(contains(d.note, "Unknown Error")) << d.note;
}

TEST_F(NvmlTest, MissingRequiredSymbolIsNamed) {
  Result<NvmlLibrary> lib = NvmlLibrary::load("libm.so.6");
  ASSERT_FALSE(lib.isOk());
  EXPECT_EQ(lib.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(lib.status().message(), "libm.so.6")) << lib.status().message();
  EXPECT_TRUE(contains(lib.status().message(), "nvmlInit_v2")) << lib.status().message();
}

TEST_F(NvmlTest, LibraryWrappers) {
  setenv("FAKE_NVML_GPUS", "1xB200-180GB", 1);
  Result<NvmlLibrary> lib = NvmlLibrary::load(FAKE_NVML_LIB);
  ASSERT_TRUE(lib.isOk()) << lib.status().toString();
  for (const NvmlSymbolSpec& spec : kNvmlSymbols) EXPECT_TRUE(lib->has(spec.id)) << spec.name;
  EXPECT_EQ(lib->path(), FAKE_NVML_LIB);
  EXPECT_EQ(lib->errorString(15), "GPU is lost");

  Result<std::string> driver = lib->driverVersion();
  ASSERT_TRUE(driver.isOk());
  EXPECT_EQ(*driver, "550.54.15");
  Result<unsigned> count = lib->deviceCount();
  ASSERT_TRUE(count.isOk());
  EXPECT_EQ(*count, 1u);

  Result<nvmlDevice_t> bad = lib->deviceHandle(5);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(bad.status().message(), "nvmlDeviceGetHandleByIndex_v2(5)"))
      << bad.status().message();

  Result<nvmlDevice_t> dev = lib->deviceHandle(0);
  ASSERT_TRUE(dev.isOk());
  Result<nvmlMemory_t> mem = lib->deviceMemory(*dev);
  ASSERT_TRUE(mem.isOk());
  EXPECT_EQ(mem->total, 180ull << 30);

  // Moving keeps one initialisation; the moved-from object owns nothing.
  NvmlLibrary moved = std::move(*lib);
  Result<std::string> name = moved.deviceName(*dev);
  ASSERT_TRUE(name.isOk());
  EXPECT_EQ(*name, "NVIDIA B200-180GB");
  Result<std::string> uuid = moved.deviceUuid(*dev);
  ASSERT_TRUE(uuid.isOk());
  EXPECT_EQ(*uuid, "GPU-00000000-0000-4000-8000-000000000000");
}

TEST_F(NvmlTest, TwoLibrariesShareTheProcessWideInit) {
  setenv("FAKE_NVML_GPUS", "2xA10-24GB", 1);
  Result<NvmlLibrary> a = NvmlLibrary::load(FAKE_NVML_LIB);
  ASSERT_TRUE(a.isOk());
  {
    Result<NvmlLibrary> b = NvmlLibrary::load(FAKE_NVML_LIB);
    ASSERT_TRUE(b.isOk());
  }
  // b's nvmlShutdown must not end a's initialisation.
  Result<unsigned> count = a->deviceCount();
  ASSERT_TRUE(count.isOk()) << count.status().toString();
  EXPECT_EQ(*count, 2u);
}

TEST_F(NvmlTest, DiscoversNvLinkPairs) {
  // GPUs 0-2 and 1-3 NVLinked, the rest across sockets.
  setenv("FAKE_NVML_GPUS", "4xA100-80GB", 1);
  setenv("FAKE_NVML_TOPOLOGY", "X,SYS,NV12,SYS;SYS,X,SYS,NV12;NV12,SYS,X,SYS;SYS,NV12,SYS,X", 1);
  GpuDiscovery d = discoverNvmlGpus(FAKE_NVML_LIB);
  ASSERT_EQ(d.gpus.size(), 4u);
  EXPECT_EQ(d.topology_note, "");
  EXPECT_EQ(d.gpu_links, (GpuLinks{{0, 0, 22, 0}, {0, 0, 0, 22}, {22, 0, 0, 0}, {0, 22, 0, 0}}));
}

TEST_F(NvmlTest, DiscoversPcieLevelsBesideNvLinks) {
  setenv("FAKE_NVML_GPUS", "4xL40S-48GB", 1);
  setenv("FAKE_NVML_TOPOLOGY", "X,NV2,PIX,SYS;NV2,X,PXB,NODE;PIX,PXB,X,PHB;SYS,NODE,PHB,X", 1);
  GpuDiscovery d = discoverNvmlGpus(FAKE_NVML_LIB);
  EXPECT_EQ(d.topology_note, "");
  EXPECT_EQ(formatGpuLinks(d.gpu_links),
            "X,NV2,PXB,SYS;NV2,X,PXB,NODE;PXB,PXB,X,NODE;SYS,NODE,NODE,X");
}

TEST_F(NvmlTest, PairsNvmlCannotTellAboutScoreZeroWithANote) {
  setenv("FAKE_NVML_GPUS", "3xA100-80GB", 1);
  setenv("FAKE_NVML_TOPOLOGY", "X,-,NODE;-,X,-;NODE,-,X", 1);
  GpuDiscovery d = discoverNvmlGpus(FAKE_NVML_LIB);
  EXPECT_EQ(d.gpu_links, (GpuLinks{{0, 0, 1}, {0, 0, 0}, {1, 0, 0}}));
  EXPECT_TRUE(
      contains(d.topology_note, "nvmlDeviceGetTopologyCommonAncestor failed: Not Supported"))
      << d.topology_note;
}

TEST_F(NvmlTest, NoTopologyIsUnknownNotWorst) {
  setenv("FAKE_NVML_GPUS", "2xA100-80GB", 1);
  GpuDiscovery d = discoverNvmlGpus(FAKE_NVML_LIB);
  EXPECT_EQ(d.gpus.size(), 2u);
  EXPECT_TRUE(d.gpu_links.empty());
  EXPECT_TRUE(contains(d.topology_note, "Not Supported")) << d.topology_note;

  // One GPU has no pairs: nothing to say.
  setenv("FAKE_NVML_GPUS", "1xA100-80GB", 1);
  d = discoverNvmlGpus(FAKE_NVML_LIB);
  EXPECT_TRUE(d.gpu_links.empty());
  EXPECT_EQ(d.topology_note, "");
}

TEST_F(NvmlTest, MalformedTopologyIsAnInitError) {
  setenv("FAKE_NVML_GPUS", "2xA100-80GB", 1);
  for (const char* bad : {"X,NV4;NV4,X;X", "X,NV19;NV19,X", "X,ABC;ABC,X", "X"}) {
    setenv("FAKE_NVML_TOPOLOGY", bad, 1);
    EXPECT_TRUE(discoverNvmlGpus(FAKE_NVML_LIB).gpus.empty()) << bad;
  }
}

TEST_F(NvmlTest, DiscoveryWorksWithoutTheTopologyFunctions) {
  setenv("FAKE_NVML_GPUS", "2xA100-80GB", 1);
  setenv("FAKE_NVML_TOPOLOGY", "X,NV12;NV12,X", 1);
  const std::string old = fakeWithoutTopology();
  GpuDiscovery d = discoverNvmlGpus(old);
  ASSERT_EQ(d.gpus.size(), 2u) << d.note;
  EXPECT_EQ(d.note, "");
  EXPECT_TRUE(d.gpu_links.empty());
  EXPECT_TRUE(contains(d.topology_note, "nvmlDeviceGetTopologyCommonAncestor")) << d.topology_note;
  EXPECT_TRUE(contains(d.topology_note, "no NVLink information")) << d.topology_note;

  Result<NvmlLibrary> lib = NvmlLibrary::load(old);
  ASSERT_TRUE(lib.isOk()) << lib.status().toString();
  EXPECT_FALSE(lib->has(NvmlSymbol::kDeviceGetTopologyCommonAncestor));
  nvmlDevice_t dev = lib->deviceHandle(0).value();
  Result<nvmlPciInfo_t> pci = lib->devicePciInfo(dev);
  ASSERT_FALSE(pci.isOk());
  EXPECT_EQ(pci.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(pci.status().message(), "has no nvmlDeviceGetPciInfo_v3"))
      << pci.status().message();
}

TEST_F(NvmlTest, TopologyWrappers) {
  setenv("FAKE_NVML_GPUS", "3xH100-80GB", 1);
  setenv("FAKE_NVML_TOPOLOGY", "X,NV2,NV1;NV2,X,PIX;NV1,PIX,X", 1);
  Result<NvmlLibrary> lib = NvmlLibrary::load(FAKE_NVML_LIB);
  ASSERT_TRUE(lib.isOk()) << lib.status().toString();
  nvmlDevice_t d0 = lib->deviceHandle(0).value();
  nvmlDevice_t d1 = lib->deviceHandle(1).value();
  nvmlDevice_t d2 = lib->deviceHandle(2).value();

  Result<nvmlPciInfo_t> pci = lib->devicePciInfo(d1);
  ASSERT_TRUE(pci.isOk()) << pci.status().toString();
  EXPECT_STREQ(pci->busId, "00000000:02:00.0");
  EXPECT_STREQ(pci->busIdLegacy, "0000:02:00.0");
  EXPECT_EQ(pci->bus, 2u);

  EXPECT_EQ(lib->topologyCommonAncestor(d1, d2).value(), kNvmlTopologySingle);
  // Links 0 and 1 of GPU 0 go to GPU 1, link 2 to GPU 2, the rest are down.
  EXPECT_TRUE(lib->nvLinkActive(d0, 0).value());
  EXPECT_TRUE(lib->nvLinkActive(d0, 2).value());
  EXPECT_FALSE(lib->nvLinkActive(d0, 3).value());
  EXPECT_STREQ(lib->nvLinkRemotePciInfo(d0, 1).value().busId, "00000000:02:00.0");
  EXPECT_STREQ(lib->nvLinkRemotePciInfo(d0, 2).value().busId, "00000000:03:00.0");

  Result<bool> beyond = lib->nvLinkActive(d0, kNvmlNvLinkMaxLinks);
  ASSERT_FALSE(beyond.isOk());
  EXPECT_TRUE(contains(beyond.status().message(), "nvmlDeviceGetNvLinkState(link 18)"))
      << beyond.status().message();
}

TEST_F(NvmlTest, EventWrappersDeliverAnXidOnce) {
  setenv("FAKE_NVML_GPUS", "2xH100-80GB", 1);
  setenv("FAKE_NVML_XID", "1:79", 1);
  Result<NvmlLibrary> lib = NvmlLibrary::load(FAKE_NVML_LIB);
  ASSERT_TRUE(lib.isOk()) << lib.status().toString();
  nvmlDevice_t d1 = lib->deviceHandle(1).value();
  Result<nvmlEventSet_t> set = lib->createEventSet();
  ASSERT_TRUE(set.isOk()) << set.status().toString();

  // Nothing is registered yet: nothing to wait for, and no wait blocks.
  Result<std::optional<nvmlEventData_t>> none = lib->waitEvent(*set, 0);
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_FALSE(none->has_value());

  ASSERT_TRUE(lib->registerEvents(d1, kNvmlEventTypeXidCriticalError, *set).isOk());
  Result<std::optional<nvmlEventData_t>> event = lib->waitEvent(*set, 0);
  ASSERT_TRUE(event.isOk()) << event.status().toString();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->device, d1);
  EXPECT_EQ((*event)->eventType, kNvmlEventTypeXidCriticalError);
  EXPECT_EQ((*event)->eventData, 79u);
  EXPECT_EQ((*event)->gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ((*event)->computeInstanceId, 0xFFFFFFFFu);

  Result<std::optional<nvmlEventData_t>> after = lib->waitEvent(*set, 0);
  ASSERT_TRUE(after.isOk());
  EXPECT_FALSE(after->has_value());
  lib->freeEventSet(*set);
}

TEST_F(NvmlTest, RegisteringAnEventTypeTheGpuCannotReportIsFailedPrecondition) {
  setenv("FAKE_NVML_GPUS", "2xH100-80GB", 1);
  setenv("FAKE_NVML_XID", "0:-", 1);
  Result<NvmlLibrary> lib = NvmlLibrary::load(FAKE_NVML_LIB);
  ASSERT_TRUE(lib.isOk()) << lib.status().toString();
  nvmlEventSet_t set = lib->createEventSet().value();
  Status s = lib->registerEvents(lib->deviceHandle(0).value(), kNvmlEventTypeXidCriticalError, set);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(s.message(), "nvmlDeviceRegisterEvents failed: Not Supported"))
      << s.message();
  // nvmlEventTypePState (0x4): the fake reports XIDs only.
  s = lib->registerEvents(lib->deviceHandle(1).value(), 0x4, set);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  lib->freeEventSet(set);
}

TEST_F(NvmlTest, EventWaitFallsBackToTheUnversionedWait) {
  setenv("FAKE_NVML_GPUS", "2xV100-32GB", 1);
  setenv("FAKE_NVML_XID", "0:48", 1);
  Result<NvmlLibrary> lib = NvmlLibrary::load(fakeVariant("libnvidia-ml-fake-events-v1.so"));
  ASSERT_TRUE(lib.isOk()) << lib.status().toString();
  EXPECT_FALSE(lib->has(NvmlSymbol::kEventSetWaitV2));
  EXPECT_TRUE(lib->has(NvmlSymbol::kEventSetWait));
  nvmlDevice_t d0 = lib->deviceHandle(0).value();
  nvmlEventSet_t set = lib->createEventSet().value();
  ASSERT_TRUE(lib->registerEvents(d0, kNvmlEventTypeXidCriticalError, set).isOk());
  Result<std::optional<nvmlEventData_t>> event = lib->waitEvent(set, 0);
  ASSERT_TRUE(event.isOk()) << event.status().toString();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->device, d0);
  EXPECT_EQ((*event)->eventData, 48u);
  // The older wait writes only the fields it knew; the rest stay zeroed.
  EXPECT_EQ((*event)->gpuInstanceId, 0u);
  EXPECT_EQ((*event)->computeInstanceId, 0u);
  lib->freeEventSet(set);
}

TEST_F(NvmlTest, ALibraryWithoutTheEventFunctionsLoadsAndSaysSo) {
  setenv("FAKE_NVML_GPUS", "1xV100-32GB", 1);
  Result<NvmlLibrary> lib = NvmlLibrary::load(fakeVariant("libnvidia-ml-fake-no-sampling.so"));
  ASSERT_TRUE(lib.isOk()) << lib.status().toString();
  for (NvmlSymbol s :
       {NvmlSymbol::kEventSetCreate, NvmlSymbol::kDeviceRegisterEvents, NvmlSymbol::kEventSetWaitV2,
        NvmlSymbol::kEventSetWait, NvmlSymbol::kEventSetFree}) {
    EXPECT_FALSE(lib->has(s)) << kNvmlSymbols[static_cast<std::size_t>(s)].name;
  }
  Result<nvmlEventSet_t> set = lib->createEventSet();
  ASSERT_FALSE(set.isOk());
  EXPECT_EQ(set.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(set.status().message(), "has no nvmlEventSetCreate"))
      << set.status().message();
  Result<std::optional<nvmlEventData_t>> event = lib->waitEvent(nullptr, 0);
  ASSERT_FALSE(event.isOk());
  EXPECT_EQ(event.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(lib->deviceCount().value(), 1u);
}

}  // namespace
}  // namespace ty
