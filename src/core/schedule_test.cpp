#include "core/schedule.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

NodeInfo node(const std::string& name, int gpus, const std::string& model = "A100-80GB",
              int cpus = 64) {
  NodeInfo n;
  n.name = name;
  n.cpus = Quantity::whole(cpus);
  n.memory_bytes = 512LL << 30;
  for (int i = 0; i < gpus; ++i) n.gpus.push_back({i, "GPU-" + name + std::to_string(i), model});
  return n;
}

PendingJob job(std::int64_t id, int gpus, int priority = 0, int replicas = 1) {
  PendingJob p;
  p.id = JobId(id);
  p.priority = priority;
  p.submitted = id;
  p.per_replica.gpus = Quantity::whole(gpus);
  p.replicas = replicas;
  return p;
}

Decision run(const ClusterSnapshot& c, const std::vector<PendingJob>& pending) {
  Rng rng(1);
  return schedule(c, QueueSnapshot{pending}, PolicyConfig{}, 0, rng);
}

TEST(Schedule, PlacesByPriorityThenSubmitOrder) {
  ClusterSnapshot c{{{node("local", 2), {}, {}, 0}}};
  Decision d = run(c, {job(1, 2), job(2, 2, /*priority=*/5)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(2));
  ASSERT_EQ(d.waiting.size(), 1u);
  EXPECT_EQ(d.waiting[0].job, JobId(1));
  EXPECT_EQ(d.waiting[0].position, 1);
  EXPECT_EQ(d.waiting[0].message, "Waiting: needs 2 GPUs, 0 free on node local");
}

TEST(Schedule, NeverGivesOneGpuToTwoJobs) {
  ClusterSnapshot c{{{node("local", 4), {{1, 1000}}, {}, 0}}};
  Decision d = run(c, {job(1, 1), job(2, 1), job(3, 1), job(4, 1)});
  std::set<int> seen{1};
  ASSERT_EQ(d.placements.size(), 3u);
  for (const auto& p : d.placements) {
    for (int g : p.replicas[0].gpus) EXPECT_TRUE(seen.insert(g).second) << g;
  }
  EXPECT_EQ(d.waiting.size(), 1u);
}

TEST(Schedule, ExplainsInWords) {
  ClusterSnapshot c{{{node("local", 4), {{0, 1000}, {1, 1000}}, {}, 0}}};
  Decision d = run(c, {job(1, 4)});
  ASSERT_EQ(d.waiting.size(), 1u);
  EXPECT_EQ(d.waiting[0].message, "Waiting: needs 4 GPUs, 2 free on node local");
}

TEST(Schedule, BestFitKeepsLargeBlocksWhole) {
  ClusterSnapshot c{{{node("big", 8), {}, {}, 0}, {node("small", 8), {{0, 1000}, {1, 1000}, {2, 1000}, {3, 1000}, {4, 1000}, {5, 1000}}, {}, 0}}};
  Decision d = run(c, {job(1, 2), job(2, 8)});
  ASSERT_EQ(d.placements.size(), 2u);
  EXPECT_EQ(d.placements[0].replicas[0].node, "small");
  EXPECT_EQ(d.placements[1].replicas[0].node, "big");
}

TEST(Schedule, GangPlacesAllReplicasOrNone) {
  ClusterSnapshot c{{{node("local", 3), {}, {}, 0}}};
  Decision d = run(c, {job(1, 2, 0, /*replicas=*/2), job(2, 1)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(2));
  ASSERT_EQ(d.waiting.size(), 1u);
  EXPECT_EQ(d.waiting[0].job, JobId(1));
}

TEST(Schedule, GangReplicasGetDisjointGpus) {
  ClusterSnapshot c{{{node("local", 4), {}, {}, 0}}};
  Decision d = run(c, {job(1, 2, 0, 2)});
  ASSERT_EQ(d.placements.size(), 1u);
  ASSERT_EQ(d.placements[0].replicas.size(), 2u);
  EXPECT_EQ(d.placements[0].replicas[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.placements[0].replicas[1].gpus, (std::vector<int>{2, 3}));
}

TEST(Schedule, RespectsGpuTypeSelector) {
  ClusterSnapshot c{
      {{node("a", 2, "A100-80GB"), {}, {}, 0}, {node("h", 2, "H100-80GB"), {}, {}, 0}}};
  PendingJob j = job(1, 2);
  j.per_replica.gpu_types = {"h100"};
  Decision d = run(c, {j});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].replicas[0].node, "h");
}

TEST(Schedule, AccountsCpusAndMemory) {
  ClusterSnapshot c{{{node("local", 0, "", 4), {}, Quantity::whole(3), 0}}};
  PendingJob j = job(1, 0);
  j.per_replica.cpus = Quantity::whole(2);
  Decision d = run(c, {j});
  ASSERT_EQ(d.waiting.size(), 1u);
  EXPECT_EQ(d.waiting[0].message, "Waiting: needs 2 CPUs, 1 free on node local");
}

TEST(Schedule, SkipsUnhealthyGpus) {
  NodeInfo n = node("local", 2);
  n.gpus[0].healthy = false;
  Decision d = run(ClusterSnapshot{{{n, {}, {}, 0}}}, {job(1, 1)});
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].replicas[0].gpus, std::vector<int>{1});
}

TEST(Schedule, IsDeterministic) {
  ClusterSnapshot c{{{node("a", 8), {{3, 1000}}, {}, 0}, {node("b", 8), {}, {}, 0}}};
  std::vector<PendingJob> jobs;
  for (int i = 1; i <= 20; ++i) jobs.push_back(job(i, i % 4, i % 3));
  Decision a = run(c, jobs);
  Decision b = run(c, jobs);
  ASSERT_EQ(a.placements.size(), b.placements.size());
  for (size_t i = 0; i < a.placements.size(); ++i) {
    EXPECT_EQ(a.placements[i].job, b.placements[i].job);
    EXPECT_EQ(a.placements[i].replicas, b.placements[i].replicas);
  }
}

TEST(Feasible, NamesTheLargestNode) {
  JobSpec s;
  s.command = {"true"};
  s.resources.gpus = Quantity::whole(16);
  Status st = checkFeasible(s, {node("local", 8)});
  EXPECT_EQ(st.code(), StatusCode::kInfeasible);
  EXPECT_EQ(st.field(), "resources.gpus");
  EXPECT_EQ(st.message(), "needs 16 GPUs per replica; the largest node has 8");
  s.resources.gpus = Quantity::whole(8);
  EXPECT_TRUE(checkFeasible(s, {node("local", 8)}).isOk());
}

TEST(Feasible, AJobNeedingAnUnhealthyGpuWaitsRatherThanBeingRefused) {
  JobSpec s;
  s.command = {"true"};
  s.resources.gpus = Quantity::whole(8);
  NodeInfo n = node("local", 8);
  n.gpus[3].healthy = false;
  EXPECT_TRUE(checkFeasible(s, {n}).isOk());
  Decision d = run(ClusterSnapshot{{{n, {}, {}, 0}}}, {job(1, 8)});
  EXPECT_TRUE(d.placements.empty());
  ASSERT_EQ(d.waiting.size(), 1u);
}

TEST(Feasible, NamesMissingGpuTypes) {
  JobSpec s;
  s.command = {"true"};
  s.resources.gpus = Quantity::whole(1);
  s.resources.gpu_types = {"H100"};
  Status st = checkFeasible(s, {node("local", 8, "A100-80GB")});
  EXPECT_EQ(st.field(), "resources.gpu_type");
  EXPECT_NE(st.message().find("A100-80GB"), std::string::npos);
}

TEST(Feasible, GangLargerThanTheCluster) {
  JobSpec s;
  s.command = {"true"};
  s.resources.gpus = Quantity::whole(2);
  s.replicas = 3;
  Status st = checkFeasible(s, {node("local", 4)});
  EXPECT_EQ(st.code(), StatusCode::kInfeasible);
  EXPECT_EQ(st.field(), "replicas");
}

}  // namespace
}  // namespace ty
