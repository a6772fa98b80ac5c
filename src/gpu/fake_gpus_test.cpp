#include <gtest/gtest.h>

#include "gpu/gpu_provider.h"

namespace ty {
namespace {

constexpr std::int64_t kGib = std::int64_t{1} << 30;

TEST(ParseFakeGpus, CountAndModel) {
  Result<std::vector<GpuInfo>> gpus = parseFakeGpus("4xA100-80GB", "node1");
  ASSERT_TRUE(gpus.isOk()) << gpus.status().toString();
  ASSERT_EQ(gpus->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const GpuInfo& g = (*gpus)[i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.model, "A100-80GB");
    EXPECT_EQ(g.memory_bytes, 80 * kGib);
    EXPECT_EQ(g.uuid, "GPU-fake-node1-" + std::to_string(i));
    EXPECT_TRUE(g.healthy);
  }
}

TEST(ParseFakeGpus, SeveralPartsKeepOrder) {
  Result<std::vector<GpuInfo>> gpus = parseFakeGpus("2xH100-80GB, 2xL40S-48GB", "n");
  ASSERT_TRUE(gpus.isOk()) << gpus.status().toString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[1].model, "H100-80GB");
  EXPECT_EQ((*gpus)[2].model, "L40S-48GB");
  EXPECT_EQ((*gpus)[2].index, 2);
  EXPECT_EQ((*gpus)[3].memory_bytes, 48 * kGib);
  EXPECT_EQ((*gpus)[3].uuid, "GPU-fake-n-3");
}

TEST(ParseFakeGpus, CountDefaultsToOneAndMemoryToZero) {
  Result<std::vector<GpuInfo>> one = parseFakeGpus("A100-80GB", "n");
  ASSERT_TRUE(one.isOk());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].memory_bytes, 80 * kGib);

  Result<std::vector<GpuInfo>> bare = parseFakeGpus("2xT4", "n");
  ASSERT_TRUE(bare.isOk());
  ASSERT_EQ(bare->size(), 2u);
  EXPECT_EQ((*bare)[0].model, "T4");
  EXPECT_EQ((*bare)[0].memory_bytes, 0);

  Result<std::vector<GpuInfo>> lower = parseFakeGpus("1xH200-141gb", "n");
  ASSERT_TRUE(lower.isOk());
  EXPECT_EQ((*lower)[0].memory_bytes, 141 * kGib);
}

TEST(ParseFakeGpus, DeterministicAndNodeSpecific) {
  auto a = parseFakeGpus("2xA100", "a");
  auto a2 = parseFakeGpus("2xA100", "a");
  auto b = parseFakeGpus("2xA100", "b");
  ASSERT_TRUE(a.isOk() && a2.isOk() && b.isOk());
  EXPECT_EQ(*a, *a2);
  EXPECT_NE((*a)[0].uuid, (*b)[0].uuid);
  EXPECT_NE((*a)[0].uuid, (*a)[1].uuid);
}

TEST(ParseFakeGpus, Limits) {
  EXPECT_TRUE(parseFakeGpus("64xA100", "n").isOk());
  EXPECT_FALSE(parseFakeGpus("65xA100", "n").isOk());
  EXPECT_TRUE(parseFakeGpus("64xA,64xB,64xC,64xD", "n").isOk());
  Result<std::vector<GpuInfo>> too_many = parseFakeGpus("64xA,64xB,64xC,64xD,1xE", "n");
  ASSERT_FALSE(too_many.isOk());
  EXPECT_NE(too_many.status().message().find("256"), std::string::npos);
}

TEST(ParseFakeGpus, ErrorsNameThePartAndTheForm) {
  for (const char* bad : {"", "0xA100", "4x", "4A100", "4xA100!", "A100,,B", "A100,", "2x-80GB",
                          "2xA100-0GB", "2x A100 80GB", "999999999999xA100"}) {
    Result<std::vector<GpuInfo>> r = parseFakeGpus(bad, "n");
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().field(), "--fake-gpus") << bad;
    EXPECT_NE(r.status().message().find("4xA100-80GB"), std::string::npos) << r.status().message();
  }
  Result<std::vector<GpuInfo>> r = parseFakeGpus("2xH100-80GB,4A100", "n");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("\"4A100\""), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ty
