// Submit refuses a job its queue could never hold (checkQuotaCeiling in
// core/queue.h, reached through checkQuota): the refusal names the spec
// field to change, and nothing of the job is stored.
#include <gtest/gtest.h>

#include "server/job_service_test_fixture.h"

namespace ty {
namespace {

using test::JobServiceTest;
using test::spec;

NodeInfo gpuNode(const std::string& name, const std::string& model) {
  NodeInfo n;
  n.name = name;
  n.cpus = Quantity::whole(64);
  n.memory_bytes = 512LL << 30;
  for (int i = 0; i < 8; ++i) n.gpus.push_back({i, name + "-GPU-" + std::to_string(i), model});
  return n;
}

QueueConfig queue(const std::string& name, const std::string& cohort,
                  std::map<std::string, Quota> quotas) {
  QueueConfig q;
  q.name = name;
  q.project = name;
  q.cohort = cohort;
  q.quotas = std::move(quotas);
  return q;
}

JobSpec gang(const std::string& project, int gpus, int replicas, const std::string& model = "") {
  JobSpec s = spec(gpus);
  s.project = project;
  s.replicas = replicas;
  if (!model.empty()) s.resources.gpu_types = {model};
  return s;
}

// Three nodes of A100s, more than any queue's A100 quota, so the cluster
// never refuses first; and two of H100s, so a job that does not pin a
// model may land outside the A100 quota.
class JobServiceQuotaTest : public JobServiceTest {
 protected:
  void withQueues(std::vector<QueueConfig> queues) {
    options_.nodes = {
        gpuNode("a1", "NVIDIA A100-SXM4-80GB"), gpuNode("a2", "NVIDIA A100-SXM4-80GB"),
        gpuNode("a3", "NVIDIA A100-SXM4-80GB"), gpuNode("h1", "NVIDIA H100-80GB-HBM3"),
        gpuNode("h2", "NVIDIA H100-80GB-HBM3")};
    options_.policy.queues = std::move(queues);
    restart();
  }
  // nlp may never go above its 8 A100s; vision may borrow nlp's.
  void withLab() {
    withQueues({queue("nlp", "lab", {{"gpu:A100", Quota::units(8, 0)}}),
                queue("vision", "lab", {{"gpu:A100", Quota::units(8)}})});
  }
};

TEST_F(JobServiceQuotaTest, AGangOverItsQueuesCeilingIsRefusedAndNothingIsStored) {
  withLab();
  auto r = submit(gang("nlp", 8, 2, "A100"), "alice");
  EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(r.status().field(), "replicas");
  EXPECT_EQ(r.status().message(),
            "project nlp may use at most 8 A100 GPUs in queue nlp (nominal 8, borrowing limit 0); "
            "this job asks for 16 (2 replicas x 8); reduce resources.gpus or replicas, or ask an "
            "admin to raise the queue's quota");
  EXPECT_TRUE(store_->listJobs({}).value().jobs.empty());
  // No job, so no event either: the next job is the first one stored.
  EXPECT_EQ(store_->events(JobId(1)).status().code(), StatusCode::kNotFound);
  auto ok = submit(gang("nlp", 8, 1, "A100"), "alice");
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->id, JobId(1));
  EXPECT_EQ(store_->events(JobId(1)).value().front().reason, "Submitted");
  EXPECT_EQ(store_->listJobs({}).value().jobs.size(), 1u);
}

TEST_F(JobServiceQuotaTest, TheCohortsLendableQuotaRaisesTheCeiling) {
  withLab();
  // vision: its own 8 and the 8 nlp lends.
  EXPECT_TRUE(submit(gang("vision", 8, 2, "A100"), "alice").isOk());
  auto r = submit(gang("vision", 6, 3, "A100"), "alice");
  EXPECT_EQ(r.status().field(), "replicas");
  EXPECT_EQ(r.status().message(),
            "project vision may use at most 16 A100 GPUs in queue vision (nominal 8, the rest of "
            "cohort lab can lend 8); this job asks for 18 (3 replicas x 6); reduce resources.gpus "
            "or replicas, or ask an admin to raise the queue's quota");
}

TEST_F(JobServiceQuotaTest, AModelQuotaLimitsOnlyJobsThatPinTheModel) {
  withLab();
  EXPECT_EQ(submit(gang("nlp", 8, 2, "A100"), "alice").status().code(), StatusCode::kInfeasible);
  // Unpinned or pinned to H100s, the job may run outside the A100 quota.
  EXPECT_TRUE(submit(gang("nlp", 8, 2), "alice").isOk());
  EXPECT_TRUE(submit(gang("nlp", 8, 2, "H100"), "alice").isOk());
}

TEST_F(JobServiceQuotaTest, MemoryIsWordedInItsUnit) {
  withQueues({queue("nlp", "", {{"memory", Quota{256LL << 30, std::nullopt, std::nullopt}}})});
  JobSpec s = gang("nlp", 1, 4);
  s.resources.memory_bytes = 96LL << 30;
  auto r = submit(s, "alice");
  EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(r.status().field(), "replicas");
  EXPECT_EQ(r.status().message(),
            "project nlp may use at most 256Gi of memory in queue nlp (nominal 256Gi, no cohort to "
            "borrow from); this job asks for 384Gi (4 replicas x 96Gi); reduce resources.memory "
            "or replicas, or ask an admin to raise the queue's quota");
  EXPECT_TRUE(store_->listJobs({}).value().jobs.empty());
}

TEST_F(JobServiceQuotaTest, AResourceWithoutQuotaIsNotLimited) {
  withQueues({queue("nlp", "", {{"cpu", Quota::units(64)}})});
  auto r = submit(gang("nlp", 8, 4), "alice");  // 32 GPUs; no GPU quota
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->spec.queue, "nlp");
  EXPECT_EQ(store_->listJobs({}).value().jobs.size(), 1u);
}

}  // namespace
}  // namespace ty
