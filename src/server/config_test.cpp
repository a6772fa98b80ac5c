#include "server/config.h"

#include <gtest/gtest.h>

#include "codec/job_codec.h"
#include "core/placement.h"

namespace ty {
namespace {

Status read(const std::string& yaml, ServerConfig& c) {
  auto doc = parseBody(yaml, /*yaml=*/true);
  if (!doc.isOk()) return doc.status();
  return readConfig(*doc, c);
}

TEST(ServerConfigTest, ReadsSettingsAndKeepsDefaultsForTheRest) {
  ServerConfig c;
  ASSERT_TRUE(read("listen: 0.0.0.0:9000\nlog_max_bytes: 8Mi\ncgroups: false\n", c).isOk());
  EXPECT_EQ(c.listen, "0.0.0.0:9000");
  EXPECT_EQ(c.log_max_bytes, 8LL << 20);
  EXPECT_FALSE(c.cgroups);
  EXPECT_EQ(c.data_dir, "./var");
}

TEST(ServerConfigTest, WebRootIsReadAndDefaultsBesideTheBinary) {
  ServerConfig c;
  EXPECT_EQ(c.web_root, "");
  ASSERT_TRUE(read("web_root: /srv/trainyard/web\n", c).isOk());
  EXPECT_EQ(c.web_root, "/srv/trainyard/web");
  EXPECT_EQ(read("web_root: [a]\n", c).field(), "web_root");
  // The test binary sits in the build directory, like `trainyard`: the
  // default is the checkout's web/dist.
  std::string root = defaultWebRoot();
  EXPECT_EQ(root.front(), '/') << root;
  EXPECT_TRUE(root.ends_with("/web/dist")) << root;
  EXPECT_EQ(root.find(".."), std::string::npos) << root;
}

TEST(ServerConfigTest, ReadsWebhooks) {
  ServerConfig c;
  EXPECT_EQ(c.webhooks.max_attempts, 8);
  EXPECT_TRUE(c.webhooks.allow_private_targets);
  Status st = read(R"(
webhooks:
  max_attempts: 3
  initial_backoff: 2s
  max_backoff: 1m
  timeout: 4s
  allow_private_targets: false
)",
                   c);
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(c.webhooks.max_attempts, 3);
  EXPECT_EQ(c.webhooks.initial_backoff, 2'000);
  EXPECT_EQ(c.webhooks.max_backoff, 60'000);
  EXPECT_EQ(c.webhooks.timeout, 4'000);
  EXPECT_FALSE(c.webhooks.allow_private_targets);
  ServerConfig d;
  EXPECT_EQ(read("webhooks:\n  secret: x\n", d).field(), "webhooks.secret");
  EXPECT_EQ(read("webhooks:\n  max_attempts: 0\n", d).field(), "webhooks.max_attempts");
  EXPECT_EQ(read("webhooks:\n  initial_backoff: 1m\n  max_backoff: 10s\n", d).field(),
            "webhooks.max_backoff");
  EXPECT_EQ(read("webhooks:\n  retries: 3\n", d).field(), "webhooks.retries");
}

TEST(ServerConfigTest, NamesUnknownKeysAndWrongTypes) {
  ServerConfig c;
  EXPECT_EQ(read("listne: x\n", c).field(), "listne");
  EXPECT_EQ(read("worker_threads: many\n", c).field(), "worker_threads");
  EXPECT_EQ(read("worker_threads: 2\n", c).field(), "worker_threads");
  EXPECT_EQ(read("cgroups: maybe\n", c).field(), "cgroups");
  EXPECT_EQ(read("log_max_bytes: 12\n", c).field(), "log_max_bytes");
  EXPECT_EQ(read("- a\n- b\n", c).field(), "config");
}

TEST(ServerConfigTest, ReadsQueuesAndQuotas) {
  ServerConfig c;
  Status st = read(R"(
scheduler:
  placement: best-fit
  fair_share_half_life: 1d
  backfill: false
  borrow_within_cohort: true
  service_levels: least-attained
  las_threshold: 2h
  order: least-attained-service
  queues:
    - name: vision
      cohort: research
      weight: 2
      quota:
        gpu: {nominal: 8, borrowing_limit: 4, lending_limit: 2}
        gpu:A100: {nominal: 4}
        cpu: {nominal: 0.5}
        memory: {nominal: 64Gi}
    - name: nlp-batch
      project: nlp
)",
                   c);
  ASSERT_TRUE(st.isOk()) << st.toString();
  const SchedulerSettings& s = c.scheduler;
  EXPECT_EQ(s.placement, "best-fit");
  EXPECT_EQ(s.fair_share_half_life, 86'400'000);
  EXPECT_FALSE(s.backfill);
  EXPECT_TRUE(s.preemption);
  EXPECT_TRUE(s.borrow_within_cohort);
  EXPECT_TRUE(s.reclaim_respects_priority);
  EXPECT_EQ(s.service_levels, ServiceLevels::kLeastAttained);
  EXPECT_EQ(s.las_threshold, 7'200'000);
  EXPECT_EQ(s.order, JobOrder::kLeastAttainedService);
  ASSERT_EQ(s.queues.size(), 2u);
  const QueueConfig& v = s.queues[0];
  EXPECT_EQ(v.project, "vision");
  EXPECT_EQ(v.cohort, "research");
  EXPECT_EQ(v.weight, 2);
  EXPECT_EQ(v.quotas.at("gpu").nominal, 8000);
  EXPECT_EQ(v.quotas.at("gpu").borrowing_limit, 4000);
  EXPECT_EQ(v.quotas.at("gpu").lending_limit, 2000);
  EXPECT_EQ(v.quotas.at("gpu:A100").nominal, 4000);
  EXPECT_FALSE(v.quotas.at("gpu:A100").borrowing_limit.has_value());
  EXPECT_EQ(v.quotas.at("cpu").nominal, 500);
  EXPECT_EQ(v.quotas.at("memory").nominal, 64LL << 30);
  EXPECT_EQ(s.queues[1].project, "nlp");
}

TEST(ServerConfigTest, NamesTheQueueFieldAtFault) {
  struct Case {
    const char* yaml;
    const char* field;
  };
  for (const Case& c : std::vector<Case>{
           {"scheduler: {placement: magic}", "scheduler.placement"},
           {"scheduler: {service_levels: srtf}", "scheduler.service_levels"},
           {"scheduler: {las_threshold: 0s}", "scheduler.las_threshold"},
           {"scheduler: {order: random}", "scheduler.order"},
           {"scheduler: {reclaim_respects_priority: false}", "scheduler.reclaim_respects_priority"},
           {"scheduler: {queues: {a: 1}}", "scheduler.queues"},
           {"scheduler: {queues: [{cohort: x}]}", "scheduler.queues[0].name"},
           {"scheduler: {queues: [{name: a}, {name: a}]}", "scheduler.queues[1].name"},
           {"scheduler: {queues: [{name: a, weight: 0}]}", "scheduler.queues[0].weight"},
           {"scheduler: {queues: [{name: a, quota: {tpu: {nominal: 1}}}]}",
            "scheduler.queues[0].quota.tpu"},
           {"scheduler: {queues: [{name: a, quota: {gpu: {borrowing_limit: 1}}}]}",
            "scheduler.queues[0].quota.gpu.nominal"},
           {"scheduler: {queues: [{name: a, quota: {gpu: {nominal: 2, lending_limit: 3}}}]}",
            "scheduler.queues[0].quota.gpu.lending_limit"},
           {"scheduler: {queues: [{name: a, quota: {gpu: {nominal: -1}}}]}",
            "scheduler.queues[0].quota.gpu.nominal"},
           {"scheduler: {queues: [{name: a, quota: {memory: {nominal: lots}}}]}",
            "scheduler.queues[0].quota.memory.nominal"},
           {"scheduler: {queues: [{name: a, colour: red}]}", "scheduler.queues[0].colour"},
       }) {
    ServerConfig config;
    EXPECT_EQ(read(c.yaml, config).field(), c.field) << c.yaml;
  }
}

TEST(ServerConfigTest, AnUnknownPlacementPolicyGetsTheCoresMessageUnderItsKey) {
  ServerConfig c;
  Status st = read("scheduler: {placement: magic}", c);
  EXPECT_EQ(st.field(), "scheduler.placement");
  EXPECT_EQ(st.message(),
            makePlacementPolicy("magic", {}).status().message());  // one message, in core
  EXPECT_NE(st.message().find("choose one of: trainyard"), std::string::npos) << st.message();
}

TEST(ServerConfigTest, ReadsTheGpuTopologyAsAStringOrAListOfRows) {
  ServerConfig c;
  ASSERT_TRUE(read("gpu_topology: X,NV12;NV12,X\n", c).isOk());
  EXPECT_EQ(c.gpu_topology, "X,NV12;NV12,X");

  Status st = read(R"(
gpu_topology:
  - X    NV12 SYS
  - NV12 X    SYS
  - [SYS, SYS, X]
)",
                   c);
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(c.gpu_topology, "X    NV12 SYS;NV12 X    SYS;SYS,SYS,X");

  // Empty, as for fake_gpus, means "ask NVML".
  ASSERT_TRUE(read("gpu_topology: \"\"\n", c).isOk());
  EXPECT_EQ(c.gpu_topology, "");
}

TEST(ServerConfigTest, GpuTopologyErrorsNameTheKeyAndTheFix) {
  struct Case {
    const char* yaml;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"gpu_topology: X,SYS;SYS", "row 2 has 1 cells but there are 2 rows"},
           {"gpu_topology: X,NV;NV,X", "unknown cell \"NV\"; use X (a GPU with itself), NV<n>"},
           {"gpu_topology: X,NV4;PIX,X", "row 1, column 2 is NV4 but row 2, column 1 is PIX"},
           {"gpu_topology: [X, [SYS, 1]]", "row 2 must be a string of cells"},
           {"gpu_topology: [\"X;X\"]", "row 1 must be a string of cells"},
           {"gpu_topology: {a: 1}", "must be a matrix of nvidia-smi topo -m cells"},
           {"gpu_topology: \" ; \"", "is empty; give one row of cells per GPU"},
       }) {
    ServerConfig config;
    Status st = read(c.yaml, config);
    EXPECT_EQ(st.field(), "gpu_topology") << c.yaml;
    EXPECT_NE(st.message().find(c.says), std::string::npos) << c.yaml << ": " << st.message();
    EXPECT_EQ(config.gpu_topology, "") << c.yaml;
  }
}

TEST(ServerConfigTest, ReadsTheGpuMonitorSection) {
  ServerConfig c;
  EXPECT_TRUE(c.gpu_monitor.enabled);
  EXPECT_EQ(c.gpu_monitor.sample_interval, 5000);
  EXPECT_EQ(c.gpu_monitor.diagnosis.idle_after, 30 * 60 * 1000);
  EXPECT_EQ(c.gpu_monitor.diagnosis.idle_stop_after, 0);
  EXPECT_FALSE(c.gpu_monitor.diagnosis.kill_ghosts);
  Status st = read(R"(
gpu_monitor:
  sample_interval: 1s
  idle_util_percent: 2.5
  idle_after: 20m
  idle_stop_after: 1h
  input_bound_util_percent: 30
  input_bound_window: 2m
  kill_ghosts: true
)",
                   c);
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(c.gpu_monitor.sample_interval, 1000);
  EXPECT_DOUBLE_EQ(c.gpu_monitor.diagnosis.idle_util_percent, 2.5);
  EXPECT_EQ(c.gpu_monitor.diagnosis.idle_after, 20 * 60 * 1000);
  EXPECT_EQ(c.gpu_monitor.diagnosis.idle_stop_after, 60 * 60 * 1000);
  EXPECT_DOUBLE_EQ(c.gpu_monitor.diagnosis.input_bound_util_percent, 30);
  EXPECT_EQ(c.gpu_monitor.diagnosis.input_bound_window, 2 * 60 * 1000);
  EXPECT_TRUE(c.gpu_monitor.diagnosis.kill_ghosts);
}

TEST(ServerConfigTest, GpuMonitorErrorsNameTheKey) {
  // A fresh config each time: a refused value may have been stored already.
  auto field = [](const std::string& yaml) {
    ServerConfig c;
    return read(yaml, c).field();
  };
  EXPECT_EQ(field("gpu_monitor:\n  sample_interval: 10ms\n"), "gpu_monitor.sample_interval");
  EXPECT_EQ(field("gpu_monitor:\n  idle_util_percent: 0\n"), "gpu_monitor.idle_util_percent");
  EXPECT_EQ(field("gpu_monitor:\n  idle_util_percent: lots\n"), "gpu_monitor.idle_util_percent");
  EXPECT_EQ(field("gpu_monitor:\n  input_bound_util_percent: 101\n"),
            "gpu_monitor.input_bound_util_percent");
  EXPECT_EQ(field("gpu_monitor:\n  idle_after: 0\n"), "gpu_monitor.idle_after");
  EXPECT_EQ(field("gpu_monitor:\n  idle_after: soon\n"), "gpu_monitor.idle_after");
  EXPECT_EQ(field("gpu_monitor:\n  kill_ghosts: maybe\n"), "gpu_monitor.kill_ghosts");
  EXPECT_EQ(field("gpu_monitor:\n  idle_treshold: 5\n"), "gpu_monitor.idle_treshold");
  EXPECT_EQ(field("gpu_monitor:\n  sample_interval: 10s\n  input_bound_window: 5s\n"),
            "gpu_monitor.input_bound_window");
}

}  // namespace
}  // namespace ty
