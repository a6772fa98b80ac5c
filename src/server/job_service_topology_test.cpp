// The GPU topology of the server's node, from its config, steering which
// GPUs a multi-GPU job gets: the path of `trainyard server` from the config
// file to the launch, with the fake executor.
#include <gtest/gtest.h>

#include "codec/job_codec.h"
#include "server/config.h"
#include "server/job_service_test_fixture.h"
#include "server/server_main.h"

namespace ty {
namespace {

using test::JobServiceTest;
using test::spec;

// GPUs 0-2 and 1-3 NVLinked, every other pair across CPU sockets: the
// lowest-numbered pair, {0, 1}, is the worst choice for a 2-GPU job.
constexpr char kCrossedPairs[] = R"(
fake_gpus: 4xA100-80GB
gpu_topology:
  - X    SYS  NV12 SYS
  - SYS  X    SYS  NV12
  - NV12 SYS  X    SYS
  - SYS  NV12 SYS  X
)";

Result<LocalNode> nodeFromConfig(const std::string& yaml) {
  auto doc = parseBody(yaml, /*yaml=*/true);
  if (!doc.isOk()) return doc.status();
  ServerConfig config;
  TY_RETURN_IF_ERROR(readConfig(*doc, config));
  return describeServerNode(config);
}

class JobServiceTopologyTest : public JobServiceTest {
 protected:
  // Restarts the service on the node `trainyard server` builds from `yaml`.
  void useConfig(const std::string& yaml) {
    Result<LocalNode> local = nodeFromConfig(yaml);
    ASSERT_TRUE(local.isOk()) << local.status().toString();
    NodeInfo node = local->node;
    // CPUs and memory are this machine's; the jobs here ask for neither.
    node.cpus = Quantity::whole(16);
    node.memory_bytes = 64LL << 30;
    options_.nodes = {node};
    restart();
  }
  // The GPUs job `id` was launched on.
  std::vector<int> launchedGpus(JobId id) {
    waitState(id, JobState::kRunning);
    for (const LaunchRequest& l : exec_.launches()) {
      if (l.key.job == id) return l.replicas.at(0).gpus;
    }
    ADD_FAILURE() << "job " << id.value() << " was not launched";
    return {};
  }
};

TEST_F(JobServiceTopologyTest, ATwoGpuJobGetsAnNvLinkedPair) {
  useConfig(kCrossedPairs);
  auto first = submit(spec(2, "first"), "alice");
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_EQ(launchedGpus(first->id), (std::vector<int>{0, 2}));
  auto second = submit(spec(2, "second"), "alice");
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_EQ(launchedGpus(second->id), (std::vector<int>{1, 3}));
}

TEST_F(JobServiceTopologyTest, WithoutATopologyGpusAreTakenByIndex) {
  useConfig("fake_gpus: 4xA100-80GB\n");
  auto job = submit(spec(2), "alice");
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  EXPECT_EQ(launchedGpus(job->id), (std::vector<int>{0, 1}));
}

TEST_F(JobServiceTopologyTest, TheBestPairAmongTheFreeGpus) {
  useConfig(kCrossedPairs);
  auto small = submit(spec(1, "small"), "alice");
  ASSERT_TRUE(small.isOk());
  EXPECT_EQ(launchedGpus(small->id), (std::vector<int>{0}));
  // GPU 2 is left without its partner; 1 and 3 are still a pair.
  auto pair = submit(spec(2, "pair"), "alice");
  ASSERT_TRUE(pair.isOk());
  EXPECT_EQ(launchedGpus(pair->id), (std::vector<int>{1, 3}));
}

TEST(DescribeServerNodeTest, TheConfigTopologyIsTheNodesLinks) {
  Result<LocalNode> local = nodeFromConfig(kCrossedPairs);
  ASSERT_TRUE(local.isOk()) << local.status().toString();
  EXPECT_EQ(local->node.gpus.size(), 4u);
  EXPECT_EQ(
      local->node.gpu_links,
      (std::vector<std::vector<int>>{{0, 0, 22, 0}, {0, 0, 0, 22}, {22, 0, 0, 0}, {0, 22, 0, 0}}));
  EXPECT_EQ(local->topology_source,
            "GPU topology from gpu_topology: X,SYS,NV12,SYS;SYS,X,SYS,NV12;NV12,SYS,X,SYS;"
            "SYS,NV12,SYS,X");
  EXPECT_EQ(local->gpu_source, "using 4 fake GPUs (4xA100-80GB)");
}

TEST(DescribeServerNodeTest, FakeGpusWithoutATopologyHaveNone) {
  Result<LocalNode> local = nodeFromConfig("fake_gpus: 2xH100-80GB\n");
  ASSERT_TRUE(local.isOk()) << local.status().toString();
  EXPECT_TRUE(local->node.gpu_links.empty());
  EXPECT_NE(local->topology_source.find("unknown (--fake-gpus without gpu_topology)"),
            std::string::npos)
      << local->topology_source;
}

TEST(DescribeServerNodeTest, ATopologyOfTheWrongSizeNamesTheKey) {
  Result<LocalNode> local =
      nodeFromConfig("fake_gpus: 4xA100-80GB\ngpu_topology: X,NV4,SYS;NV4,X,SYS;SYS,SYS,X\n");
  ASSERT_FALSE(local.isOk());
  EXPECT_EQ(local.status().field(), "gpu_topology");
  EXPECT_EQ(local.status().message(),
            "has 3 rows but this node has 4 GPUs (--fake-gpus); give one row and one column per "
            "GPU, in index order");

  // The flag sets the same field without the file's check: the start checks it.
  ServerConfig config;
  config.fake_gpus = "2xA100-80GB";
  config.gpu_topology = "X,NV4;SYS,X";
  Result<LocalNode> flagged = describeServerNode(config);
  ASSERT_FALSE(flagged.isOk());
  EXPECT_EQ(flagged.status().field(), "gpu_topology");
  EXPECT_NE(flagged.status().message().find("must be symmetric"), std::string::npos)
      << flagged.status().message();
}

}  // namespace
}  // namespace ty
