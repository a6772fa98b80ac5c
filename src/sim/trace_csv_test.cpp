#include "sim/trace_csv.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

TEST(TraceCsv, ReadsNodesAndPodsWithOrWithoutGpuSpec) {
  auto nodes = parseOpenbNodes(
      "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n"
      "cpu,32000,1024,0,\n",
      "n.csv");
  ASSERT_TRUE(nodes.isOk()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].model, "P100");
  EXPECT_EQ((*nodes)[1].gpus, 0);
  auto pods = parseOpenbPods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\r\n"
      "p0,6000,12288,1,460,,LS\r\np1,88000,327680,8,1000,G2|V100M32,BE\r\n",
      "p.csv");
  ASSERT_TRUE(pods.isOk()) << pods.status().message();
  EXPECT_EQ((*pods)[0].gpu_milli, 460);
  EXPECT_TRUE((*pods)[0].gpu_spec.empty());
  EXPECT_EQ((*pods)[1].gpu_spec, (std::vector<std::string>{"G2", "V100M32"}));
  EXPECT_EQ((*pods)[1].totalGpuMilli(), 8000);
  auto multigpu = parseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,0\n", "m");
  ASSERT_TRUE(multigpu.isOk());
  EXPECT_EQ((*multigpu)[0].num_gpu, 0);
}

TEST(TraceCsv, ErrorsNameTheLineAndColumn) {
  auto bad = parseOpenbPods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,100\np1,x,1,1,1\n", "pods.csv");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(), "pods.csv:3: column cpu_milli: \"x\" is not an integer");
  auto share = parseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n", "p");
  ASSERT_FALSE(share.isOk());
  EXPECT_NE(share.status().message().find("p:2: column gpu_milli"), std::string::npos);
  auto missing = parseOpenbNodes("sn,cpu_milli,gpu,model\n", "n.csv");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().message(), "n.csv:1: missing column memory_mib");
  auto short_row = parseOpenbNodes("sn,cpu_milli,memory_mib,gpu,model\nn0,1,2\n", "n.csv");
  ASSERT_FALSE(short_row.isOk());
  EXPECT_EQ(short_row.status().message(), "n.csv:2: column gpu: missing value");
}

}  // namespace
}  // namespace ty
