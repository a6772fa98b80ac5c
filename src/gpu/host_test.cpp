#include "gpu/host.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

TEST(ParseMemTotal, ReadsKilobytes) {
  EXPECT_EQ(parseMemTotal("MemTotal:       16318440 kB\nMemFree:  1 kB\n"),
            std::int64_t{16318440} * 1024);
  EXPECT_EQ(parseMemTotal("MemFree: 1 kB\nMemTotal: 2 kB\n"), 2048);
  EXPECT_EQ(parseMemTotal("MemFree: 1 kB\n"), std::nullopt);
  EXPECT_EQ(parseMemTotal("MemTotal: lots kB\n"), std::nullopt);
  EXPECT_EQ(parseMemTotal(""), std::nullopt);
}

TEST(ParseCgroupMemoryLimit, LimitsAndUnlimited) {
  EXPECT_EQ(parseCgroupMemoryLimit("1073741824\n"), std::int64_t{1} << 30);
  EXPECT_EQ(parseCgroupMemoryLimit("max\n"), std::nullopt);
  EXPECT_EQ(parseCgroupMemoryLimit("9223372036854771712\n"), std::nullopt);  // v1 unlimited
  EXPECT_EQ(parseCgroupMemoryLimit("0"), std::nullopt);
  EXPECT_EQ(parseCgroupMemoryLimit("-1"), std::nullopt);
  EXPECT_EQ(parseCgroupMemoryLimit("99999999999999999999999"), std::nullopt);
}

TEST(ParseCgroupCpuMax, QuotaOverPeriod) {
  EXPECT_EQ(parseCgroupCpuMax("150000 100000\n"), Quantity::fromMilli(1500));
  EXPECT_EQ(parseCgroupCpuMax("400000 100000"), Quantity::whole(4));
  EXPECT_EQ(parseCgroupCpuMax("max 100000\n"), std::nullopt);
  EXPECT_EQ(parseCgroupCpuMax("garbage"), std::nullopt);
  EXPECT_EQ(parseCgroupCpuMax("1 100000"), Quantity::fromMilli(1));
}

TEST(DescribeLocalNode, FillsCpusMemoryLabelsAndGpus) {
  GpuInfo gpu;
  gpu.uuid = "GPU-fake-n-0";
  NodeInfo node = describeLocalNode("n", {gpu});
  EXPECT_EQ(node.name, "n");
  ASSERT_EQ(node.gpus.size(), 1u);
  EXPECT_EQ(node.gpus[0].uuid, "GPU-fake-n-0");
  EXPECT_GT(node.cpus, Quantity());
  EXPECT_GT(node.memory_bytes, 0);
  ASSERT_TRUE(node.labels.count("hostname"));
  EXPECT_FALSE(node.labels.at("hostname").empty());
}

TEST(DescribeLocalNode, EmptyNameMeansHostName) {
  NodeInfo node = describeLocalNode("", {});
  EXPECT_FALSE(node.name.empty());
  EXPECT_EQ(node.name, node.labels["hostname"]);
}

}  // namespace
}  // namespace ty
