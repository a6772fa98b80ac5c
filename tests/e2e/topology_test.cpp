// The GPU topology of the server's node through the real binary: the config
// file's gpu_topology decides which GPUs a 2-GPU job sees in
// CUDA_VISIBLE_DEVICES, and a topology that does not fit stops the start.
#include "harness.h"

namespace ty::e2e {
namespace {

// GPUs 0-2 and 1-3 NVLinked, every other pair across CPU sockets.
constexpr const char* kConfig = R"(gpu_topology:
  - X    SYS  NV12 SYS
  - SYS  X    SYS  NV12
  - NV12 SYS  X    SYS
  - SYS  NV12 SYS  X
)";

class TopologyTest : public E2eTest {
 protected:
  std::vector<std::string> serverArgs() const override {
    writeFile(tmp_.sub("config.yaml"), kConfig);
    return {"--fake-gpus", "4xA100-80GB", "--config", tmp_.sub("config.yaml")};
  }
};

TEST_F(TopologyTest, ATwoGpuJobSeesAnNvLinkedPair) {
  std::int64_t id = api().submit(scriptJob("echo gpus=$CUDA_VISIBLE_DEVICES", 2));
  ASSERT_GT(id, 0);
  Json done = api().waitDone(id);
  EXPECT_EQ(done.value("state", ""), "succeeded") << done.dump();
  EXPECT_NE(api().logs(id).find("gpus=0,2"), std::string::npos) << api().logs(id);
}

TEST(TopologyStartTest, ATopologyOfTheWrongSizeStopsTheStartNamingTheKey) {
  if (trainyardBin().empty()) GTEST_SKIP() << "TRAINYARD_BIN is not set";
  TempDir tmp;
  ProcResult r = runCli({"server", "--listen", "127.0.0.1:0", "--data-dir", tmp.sub("var"),
                         "--fake-gpus", "4xA100-80GB", "--gpu-topology", "X,NV4;NV4,X"},
                        {}, 10s);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  std::string said = r.out + r.err;
  EXPECT_NE(said.find("gpu_topology: has 2 rows but this node has 4 GPUs"), std::string::npos)
      << said;
}

}  // namespace
}  // namespace ty::e2e
