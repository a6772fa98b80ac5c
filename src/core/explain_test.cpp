#include "core/explain.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

NodeState node(const std::string& name, int gpus, int used, const std::string& model = "A100") {
  NodeState s;
  s.info.name = name;
  s.info.cpus = Quantity::whole(16);
  s.info.memory_bytes = 64LL << 30;
  for (int i = 0; i < gpus; ++i) s.info.gpus.push_back({i, name + std::to_string(i), model});
  for (int i = 0; i < used; ++i) s.gpu_used_milli[i] = 1000;
  return s;
}

ReplicaShape gpus(int n) {
  ReplicaShape s;
  s.gpu_count = n;
  return s;
}

TEST(Explain, NamesTheClosestNode) {
  ClusterSnapshot c{{node("a", 8, 6), node("b", 8, 3), node("h", 8, 0, "H100")}};
  ClusterState state(c);
  ReplicaShape s = gpus(8);
  s.gpu_types = {"A100"};
  EXPECT_EQ(explainCapacity(state, s, 1), "Waiting: needs 8 GPUs of type A100, 5 free on node b");
  EXPECT_EQ(explainCapacity(state, gpus(4), 3),
            "Waiting: needs 3 replicas of 4 GPUs per replica; not all replicas fit at once (8 "
            "free on node h)");
}

TEST(Explain, CpusMemoryAndLabels) {
  ClusterSnapshot c{{node("a", 0, 0)}};
  ClusterState state(c);
  ReplicaShape s = gpus(0);
  s.cpus = Quantity::whole(32);
  EXPECT_EQ(explainCapacity(state, s, 1), "Waiting: needs 32 CPUs, 16 free on node a");
  s.cpus = Quantity();
  s.memory_bytes = 128LL << 30;
  EXPECT_EQ(explainCapacity(state, s, 1), "Waiting: needs 128Gi memory, 64Gi free on node a");
  s.node_selector = {{"zone", "b"}};
  EXPECT_EQ(explainCapacity(state, s, 1), "Waiting: no node has the labels zone=b");
}

TEST(Explain, FractionsReservationsAndPreemption) {
  ReplicaShape s = gpus(1);
  s.gpu_milli = 250;
  EXPECT_EQ(describeGpus(s), "0.25 GPUs");
  EXPECT_EQ(describeGpus(gpus(1)), "1 GPU");
  EXPECT_EQ(explainReserved(gpus(2), 1, JobId(7)),
            "Waiting: needs 2 GPUs; the free ones are reserved by backfill for job 7, first in "
            "line");
  EXPECT_EQ(explainPreempting(1), "Waiting for 1 preempted job to stop");
  EXPECT_EQ(explainPreempting(3), "Waiting for 3 preempted jobs to stop");
}

}  // namespace
}  // namespace ty
