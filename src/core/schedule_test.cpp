#include "core/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

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
  QueueSnapshot q;
  q.pending = pending;
  return schedule(c, q, PolicyConfig{}, 0, rng);
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
  ClusterSnapshot c{{{node("big", 8), {}, {}, 0},
                     {node("small", 8),
                      {{0, 1000}, {1, 1000}, {2, 1000}, {3, 1000}, {4, 1000}, {5, 1000}},
                      {},
                      0}}};
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

// ---- Queues, quota, fair share, backfill and preemption ----

constexpr DurationMs kMinute = 60'000;

PendingJob queued(std::int64_t id, const std::string& queue, int gpus, int priority = 0,
                  DurationMs max_runtime = 0) {
  PendingJob p = job(id, gpus, priority);
  p.queue = queue;
  p.max_runtime = max_runtime;
  return p;
}

QueueConfig gpuQueue(const std::string& name, const std::string& cohort, Quota gpu,
                     const std::string& resource = "gpu") {
  QueueConfig q;
  q.name = name;
  q.project = name;
  q.cohort = cohort;
  q.quotas[resource] = gpu;
  return q;
}

// A small cluster that runs decisions: placements start, preempted jobs
// stop by the next pass and go back to the queue, time moves on.
struct Sim {
  std::vector<NodeInfo> nodes;
  std::vector<PendingJob> pending;
  std::vector<RunningJob> running;
  std::map<JobId, PendingJob> specs;
  PolicyConfig config;
  std::map<std::string, DecayedUsage> usage;
  Timestamp now = 0;
  Rng rng{7};
  int preemptions = 0;

  void submit(PendingJob p) {
    specs[p.id] = p;
    pending.push_back(std::move(p));
  }
  ClusterSnapshot snapshot() const {
    ClusterSnapshot c;
    for (const auto& n : nodes) c.nodes.push_back({n, {}, Quantity(), 0});
    for (const auto& r : running) {
      for (const auto& p : r.replicas) {
        for (auto& n : c.nodes) {
          if (n.info.name != p.node) continue;
          for (int g : p.gpus) n.gpu_used_milli[g] += p.gpu_milli;
        }
      }
    }
    return c;
  }
  QueueSnapshot queues() const {
    QueueSnapshot q;
    q.pending = pending;
    q.running = running;
    q.usage = usage;
    return q;
  }
  Decision pass() { return schedule(snapshot(), queues(), config, now, rng); }
  // One pass, then `dt` of time in which stopped jobs exit.
  Decision step(DurationMs dt = kMinute) {
    Decision d = pass();
    for (const auto& p : d.placements) {
      const PendingJob& spec = specs.at(p.job);
      RunningJob r;
      r.id = spec.id;
      r.queue = spec.queue;
      r.priority = spec.priority;
      r.per_replica = spec.per_replica;
      r.replicas = p.replicas;
      r.started_at = now;
      r.max_runtime = spec.max_runtime;
      r.min_runtime = spec.min_runtime;
      running.push_back(r);
      pending.erase(std::remove_if(pending.begin(), pending.end(),
                                   [&](const PendingJob& x) { return x.id == p.job; }),
                    pending.end());
    }
    for (const auto& pre : d.preemptions) {
      ++preemptions;
      for (auto& r : running) {
        if (r.id == pre.victim) {
          EXPECT_FALSE(r.stopping) << "job " << r.id.value() << " preempted twice";
          r.stopping = true;
          r.preempted_by = pre.preemptor;
        }
      }
    }
    now += dt;
    for (auto it = running.begin(); it != running.end();) {
      if (it->stopping) {
        pending.push_back(specs.at(it->id));
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    return d;
  }
  int runningIn(const std::string& queue) const {
    int n = 0;
    for (const auto& r : running) n += r.queue == queue ? 1 : 0;
    return n;
  }
};

const Explanation* findWaiting(const Decision& d, std::int64_t id) {
  for (const auto& w : d.waiting) {
    if (w.job == JobId(id)) return &w;
  }
  return nullptr;
}

TEST(Queues, QuotaWaitSaysWhyInWords) {
  Sim s;
  s.nodes = {node("a", 16)};
  s.config.queues = {gpuQueue("vision", "lab", Quota::units(8, 4), "gpu:A100"),
                     gpuQueue("nlp", "lab", Quota::units(8), "gpu:A100")};
  for (int i = 1; i <= 10; ++i) {
    PendingJob p = queued(i, "vision", 1);
    p.per_replica.gpu_types = {"A100"};
    s.submit(p);
  }
  s.step();
  EXPECT_EQ(s.runningIn("vision"), 10);
  PendingJob big = queued(20, "vision", 4);
  big.per_replica.gpu_types = {"A100"};
  s.submit(big);
  Decision d = s.step();
  const Explanation* w = findWaiting(d, 20);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, WaitReason::kQuota);
  EXPECT_EQ(w->message,
            "Waiting: project vision uses 10 of 8 nominal A100 GPUs; borrowing 2 of 4 allowed; "
            "needs 4 A100 GPUs, waiting for 2 of its own to be released");
  EXPECT_EQ(w->position, 1);
}

TEST(Queues, SubmitRejectsWhatTheQueueCanNeverHold) {
  PolicyConfig config;
  config.queues = {gpuQueue("vision", "lab", Quota::units(8, 4), "gpu:A100"),
                   gpuQueue("nlp", "lab", Quota::units(8), "gpu:A100")};
  JobSpec s;
  s.command = {"true"};
  s.queue = "vision";
  s.resources.gpus = Quantity::whole(8);
  s.resources.gpu_types = {"A100"};
  s.replicas = 2;
  std::vector<NodeInfo> nodes = {node("a", 8), node("b", 8)};
  Status st = checkQuota(s, config, nodes);
  EXPECT_EQ(st.code(), StatusCode::kInfeasible);
  // One replica fits the queue, the gang does not.
  EXPECT_EQ(st.field(), "replicas");
  EXPECT_EQ(st.message(),
            "project vision may use at most 12 A100 GPUs in queue vision (nominal 8, borrowing "
            "limit 4); this job asks for 16 (2 replicas x 8); reduce resources.gpus or replicas, "
            "or ask an admin to raise the queue's quota");
  s.replicas = 1;
  EXPECT_TRUE(checkQuota(s, config, nodes).isOk());
  // The project's queue is found when the job names none.
  s.queue.clear();
  s.project = "vision";
  s.replicas = 2;
  EXPECT_EQ(checkQuota(s, config, nodes).code(), StatusCode::kInfeasible);
  s.project = "other";
  EXPECT_TRUE(checkQuota(s, config, nodes).isOk());
}

TEST(Queues, PositionsCountWithinEachQueue) {
  ClusterSnapshot c{{{node("a", 1), {}, {}, 0}}};
  QueueSnapshot q;
  q.pending = {queued(1, "x", 1), queued(2, "y", 1), queued(3, "x", 1), queued(4, "y", 1)};
  Rng rng(1);
  Decision d = schedule(c, q, PolicyConfig{}, 0, rng);
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(1));
  EXPECT_EQ(findWaiting(d, 2)->position, 1);
  EXPECT_EQ(findWaiting(d, 3)->position, 1);
  EXPECT_EQ(findWaiting(d, 4)->position, 2);
  EXPECT_EQ(findWaiting(d, 3)->queue, "x");
}

TEST(FairShareOrder, LowerShareGoesFirstAmongEqualPriorities) {
  ClusterSnapshot c{{{node("a", 2), {}, {}, 0}}};
  QueueSnapshot q;
  q.pending = {queued(1, "heavy", 1), queued(2, "heavy", 1), queued(3, "light", 1),
               queued(4, "light", 1)};
  // heavy used the whole cluster for a long time.
  q.usage["heavy"] = accumulateUsage({}, {2000, 0, 0}, 24 * 60 * kMinute, 60 * kMinute);
  PolicyConfig config;
  config.fair_share_half_life = 60 * kMinute;
  Rng rng(1);
  Decision d = schedule(c, q, config, 0, rng);
  ASSERT_EQ(d.placements.size(), 2u);
  EXPECT_EQ(d.placements[0].job, JobId(3));
  EXPECT_EQ(d.placements[1].job, JobId(4));
  // Priority still comes first.
  q.pending[0].priority = 1;
  d = schedule(c, q, config, 0, rng);
  EXPECT_EQ(d.placements[0].job, JobId(1));
}

TEST(FairShareOrder, EqualQueuesAlternateWithinAPass) {
  ClusterSnapshot c{{{node("a", 4), {}, {}, 0}}};
  QueueSnapshot q;
  q.pending = {queued(1, "x", 1), queued(2, "x", 1), queued(3, "x", 1),
               queued(4, "y", 1), queued(5, "y", 1), queued(6, "y", 1)};
  Rng rng(1);
  Decision d = schedule(c, q, PolicyConfig{}, 0, rng);
  std::vector<std::int64_t> ids;
  for (const auto& p : d.placements) ids.push_back(p.job.value());
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 4, 2, 5}));
}

TEST(FairShareOrder, NeverPreemptsByItself) {
  Sim s;
  s.nodes = {node("a", 2)};
  s.submit(queued(1, "x", 1));
  s.submit(queued(2, "x", 1));
  s.step();
  s.submit(queued(3, "y", 1));
  for (int i = 0; i < 5; ++i) s.step();
  EXPECT_EQ(s.preemptions, 0);
  EXPECT_EQ(s.runningIn("x"), 2);
}

// Backfill: node a has 8 GPUs, 6 held until t=100 by a job with max_runtime.
Sim backfillSim() {
  Sim s;
  s.nodes = {node("a", 8)};
  RunningJob r;
  r.id = JobId(100);
  r.queue = "q";
  r.priority = 10;  // out of reach of preemption
  r.per_replica.gpus = Quantity::whole(6);
  r.replicas = {{"a", {0, 1, 2, 3, 4, 5}, 1000}};
  r.started_at = 0;
  r.max_runtime = 100;
  s.running.push_back(r);
  s.now = 10;
  return s;
}

TEST(Backfill, ShortJobsStartAheadOfTheReservationLongOnesWait) {
  Sim s = backfillSim();
  s.submit(queued(1, "q", 8, /*priority=*/5));
  s.submit(queued(2, "q", 2, 0, /*max_runtime=*/0));
  s.submit(queued(3, "q", 2, 0, /*max_runtime=*/91));
  s.submit(queued(4, "q", 2, 0, /*max_runtime=*/90));
  Decision d = s.pass();
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(4));
  ASSERT_TRUE(d.reservation);
  EXPECT_EQ(d.reservation->job, JobId(1));
  EXPECT_EQ(d.reservation->start, 100);
  const Explanation* big = findWaiting(d, 1);
  EXPECT_EQ(big->estimated_start, 100);
  EXPECT_EQ(big->message, "Waiting: needs 8 GPUs, 0 free on node a");
  const Explanation* no_limit = findWaiting(d, 2);
  EXPECT_EQ(no_limit->reason, WaitReason::kReserved);
  EXPECT_EQ(no_limit->message,
            "Waiting: needs 2 GPUs; the free ones are reserved by backfill for job 1, first in "
            "line");
  // Job 3 would end one millisecond after the reservation's start.
  EXPECT_EQ(findWaiting(d, 3)->reason, WaitReason::kReserved);
  // After the reservation job 1 holds all 8 GPUs and has no max_runtime.
  EXPECT_EQ(findWaiting(d, 3)->estimated_start, 0);
}

TEST(Backfill, JobsOffTheReservedResourcesStartEvenWithoutMaxRuntime) {
  Sim s = backfillSim();
  s.nodes.push_back(node("b", 2));
  s.submit(queued(1, "q", 8, 5));
  s.submit(queued(2, "q", 2));
  Decision d = s.pass();
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(2));
  EXPECT_EQ(d.placements[0].replicas[0].node, "b");
}

TEST(Backfill, AReservationWithUnknownStartHoldsItsResources) {
  Sim s = backfillSim();
  s.running[0].max_runtime = 0;
  s.submit(queued(1, "q", 8, 5));
  s.submit(queued(2, "q", 2, 0, 5));
  Decision d = s.pass();
  EXPECT_TRUE(d.placements.empty());
  ASSERT_TRUE(d.reservation);
  EXPECT_EQ(d.reservation->start, 0);
  EXPECT_EQ(findWaiting(d, 1)->estimated_start, 0);
  EXPECT_EQ(findWaiting(d, 2)->reason, WaitReason::kReserved);
}

TEST(Backfill, CanBeTurnedOff) {
  Sim s = backfillSim();
  s.config.backfill = false;
  s.submit(queued(1, "q", 8, 5));
  s.submit(queued(2, "q", 2));
  Decision d = s.pass();
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_FALSE(d.reservation);
}

TEST(Backfill, JobsBehindTheReservationGetAnEstimate) {
  Sim s = backfillSim();
  RunningJob r = s.running[0];
  r.id = JobId(101);
  r.per_replica.gpus = Quantity::whole(2);
  r.replicas = {{"a", {6, 7}, 1000}};
  r.max_runtime = 300;
  s.running.push_back(r);
  s.submit(queued(1, "q", 6, 5, /*max_runtime=*/1000));
  s.submit(queued(2, "q", 2));
  s.submit(queued(3, "q", 4));
  Decision d = s.pass();
  EXPECT_EQ(findWaiting(d, 1)->estimated_start, 100);
  // Job 1 holds 6 of the 8 GPUs from 100 to 1100: job 2 fits in the two
  // job 101 frees at 300, job 3 only once job 1 is over.
  EXPECT_EQ(findWaiting(d, 2)->estimated_start, 300);
  EXPECT_EQ(findWaiting(d, 3)->estimated_start, 1100);
}

TEST(Preemption, HigherPriorityStopsLowerPriorityOfTheSameQueue) {
  Sim s;
  s.nodes = {node("a", 4)};
  s.submit(queued(1, "q", 2, 0));
  s.submit(queued(2, "q", 2, 1));
  s.step();
  s.submit(queued(3, "q", 2, 10));
  Decision d = s.step();
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].victim, JobId(1));
  EXPECT_EQ(d.preemptions[0].preemptor, JobId(3));
  EXPECT_EQ(d.preemptions[0].message, "Preempted by job 3 (higher priority 10 > 0)");
  EXPECT_TRUE(d.placements.empty());
  EXPECT_EQ(findWaiting(d, 3)->reason, WaitReason::kPreempting);
  EXPECT_EQ(findWaiting(d, 3)->message, "Waiting for 1 preempted job to stop");
  d = s.step();
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(3));
  EXPECT_EQ(s.preemptions, 1);
}

TEST(Preemption, OnlyStrictlyHigherPriorityAndNeverAcrossQueues) {
  Sim s;
  s.nodes = {node("a", 2)};
  s.submit(queued(1, "q", 2, 5));
  s.step();
  s.submit(queued(2, "q", 2, 5));
  s.submit(queued(3, "other", 2, 50));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.step().preemptions.empty());
}

TEST(Preemption, StoppingJobsAreNotPreemptedForTwiceAndWaitedFor) {
  Sim s;
  s.nodes = {node("a", 4)};
  s.submit(queued(1, "q", 2));
  s.submit(queued(2, "q", 2));
  s.step();
  s.running[0].stopping = true;  // stopping for some other reason (cancel)
  s.submit(queued(3, "q", 2, 10));
  Decision d = s.pass();
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_EQ(findWaiting(d, 3)->message, "Waiting for 1 preempted job to stop");
}

TEST(Preemption, VictimsLoseTheLeastWorkAndOnlyAsManyAsNeeded) {
  Sim s;
  s.nodes = {node("a", 4)};
  for (int i = 1; i <= 4; ++i) s.submit(queued(i, "q", 1));
  s.step(10 * kMinute);
  // Jobs 1-4 started together; 3 checkpointed a minute ago, 2 is protected.
  s.running[2].last_checkpoint_at = s.now - kMinute;
  s.running[1].min_runtime = 60 * kMinute;
  s.submit(queued(5, "q", 2, 1));
  Decision d = s.pass();
  ASSERT_EQ(d.preemptions.size(), 2u);
  std::set<JobId> victims{d.preemptions[0].victim, d.preemptions[1].victim};
  // 3 loses one minute; then the newest of 1 and 4 (same start: higher id).
  EXPECT_EQ(victims, (std::set<JobId>{JobId(3), JobId(4)}));
}

TEST(Preemption, ReclaimTakesBackBorrowedQuotaUpToNominal) {
  Sim s;
  s.nodes = {node("a", 8)};
  s.config.queues = {gpuQueue("vision", "lab", Quota::units(4)),
                     gpuQueue("nlp", "lab", Quota::units(4))};
  for (int i = 1; i <= 8; ++i) s.submit(queued(i, "nlp", 1));
  s.step();
  EXPECT_EQ(s.runningIn("nlp"), 8);
  s.submit(queued(20, "vision", 2));
  Decision d = s.step();
  ASSERT_EQ(d.preemptions.size(), 2u);
  EXPECT_EQ(d.preemptions[0].message, "Preempted by job 20 (reclaim for project vision)");
  EXPECT_EQ(findWaiting(d, 20)->message, "Waiting for 2 preempted jobs to stop");
  d = s.step();
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(20));
  // Beyond nominal there is nothing to reclaim: vision waits.
  s.submit(queued(21, "vision", 4));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.step().preemptions.empty());
}

TEST(Preemption, TwoQueuesAtContentionConvergeWithoutThrashing) {
  Sim s;
  s.nodes = {node("a", 8)};
  s.config.queues = {gpuQueue("vision", "lab", Quota::units(4)),
                     gpuQueue("nlp", "lab", Quota::units(4))};
  int id = 0;
  for (int i = 0; i < 12; ++i) {
    PendingJob p = queued(++id, "nlp", 1);
    p.min_runtime = 10 * kMinute;
    s.submit(p);
  }
  s.step();
  EXPECT_EQ(s.runningIn("nlp"), 8);
  for (int i = 0; i < 12; ++i) {
    PendingJob p = queued(++id, "vision", 1);
    p.min_runtime = 10 * kMinute;
    s.submit(p);
  }
  // min_runtime holds nlp's jobs for ten minutes, then vision reclaims its 4.
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(s.step().preemptions.empty()) << i;
  for (int i = 0; i < 10; ++i) s.step();
  EXPECT_EQ(s.preemptions, 4);
  EXPECT_EQ(s.runningIn("vision"), 4);
  EXPECT_EQ(s.runningIn("nlp"), 4);
  // From here on nothing moves: each queue holds its nominal.
  std::set<JobId> before;
  for (const auto& r : s.running) before.insert(r.id);
  for (int i = 0; i < 30; ++i) {
    Decision d = s.step();
    EXPECT_TRUE(d.preemptions.empty());
    EXPECT_TRUE(d.placements.empty());
  }
  std::set<JobId> after;
  for (const auto& r : s.running) after.insert(r.id);
  EXPECT_EQ(before, after);
  EXPECT_EQ(s.preemptions, 4);
}

// The livelock the job replay found with min_runtime 0: vision, below its
// nominal, reclaims from two borrowing queues; it comes last in the
// fair-share order (heavy past usage), so once the victim is gone a
// borrower's job (the requeued victim or a sibling) used to take the freed
// quota first, and vision reclaimed again, for ever. The quota vision
// claims is now held against borrowers, so the one reclaim sticks.
TEST(Preemption, ReclaimedQuotaGoesToThePreemptorEvenWithoutMinRuntime) {
  Sim s;
  s.nodes = {node("a", 12)};
  s.config.queues = {gpuQueue("vision", "lab", Quota::units(4)),
                     gpuQueue("nlp", "lab", Quota::units(4)),
                     gpuQueue("speech", "lab", Quota::units(4))};
  s.config.fair_share_half_life = 60 * kMinute;
  s.usage["vision"] = accumulateUsage({}, {12000, 0, 0}, 24 * 60 * kMinute, 60 * kMinute);
  for (int i = 1; i <= 10; ++i) s.submit(queued(i, "nlp", 1));
  for (int i = 11; i <= 20; ++i) s.submit(queued(i, "speech", 1));
  s.step();
  ASSERT_EQ(s.runningIn("nlp") + s.runningIn("speech"), 12);
  s.submit(queued(100, "vision", 1));
  bool placed = false;
  for (int i = 0; i < 10 && !placed; ++i) {
    for (const auto& p : s.step().placements) placed = placed || p.job == JobId(100);
  }
  EXPECT_TRUE(placed);
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_EQ(s.runningIn("vision"), 1);
  // Converged: the borrowers keep the rest, nothing moves.
  for (int i = 0; i < 20; ++i) {
    Decision d = s.step();
    EXPECT_TRUE(d.preemptions.empty()) << i;
    EXPECT_TRUE(d.placements.empty()) << i;
  }
  EXPECT_EQ(s.preemptions, 1);
  // The borrowers' waiting jobs say why they may not take the idle quota.
  s.running.erase(std::remove_if(s.running.begin(), s.running.end(),
                                 [](const RunningJob& r) { return r.id == JobId(100); }),
                  s.running.end());
  s.submit(queued(101, "vision", 2));
  Decision d = s.pass();
  ASSERT_FALSE(d.waiting.empty());
  const Explanation* nlp = nullptr;
  for (const auto& w : d.waiting) {
    if (w.queue == "nlp" && !nlp) nlp = &w;
  }
  ASSERT_NE(nlp, nullptr);
  EXPECT_EQ(nlp->reason, WaitReason::kQuota);
  EXPECT_NE(nlp->message.find("1 held for queues below their nominal"), std::string::npos)
      << nlp->message;
}

// A claim holds quota against borrowers of lower or equal priority only: a
// queue below nominal whose waiting job has priority 0 does not keep a
// priority-1 job of a borrowing queue off idle quota.
TEST(Claims, HoldQuotaOnlyAgainstBorrowersOfLowerOrEqualPriority) {
  Sim s;
  s.nodes = {node("a", 8)};
  s.config.queues = {gpuQueue("vision", "lab", Quota::units(4)),
                     gpuQueue("nlp", "lab", Quota::units(4))};
  s.config.preemption = false;
  // nlp holds 6 (borrowing 2), vision 0: 2 GPUs idle.
  for (int i = 1; i <= 6; ++i) s.submit(queued(i, "nlp", 1));
  s.step();
  ASSERT_EQ(s.runningIn("nlp"), 6);
  // vision waits with a job that cannot fit now (it claims 4 within its
  // nominal); nlp's fresh job of higher priority may borrow the idle 2.
  s.submit(queued(10, "vision", 4, 0));
  s.submit(queued(11, "nlp", 2, 1));
  Decision d = s.pass();
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(11));
  // At equal priority the claim holds.
  s.pending.back().priority = 0;
  s.specs[JobId(11)].priority = 0;
  d = s.pass();
  EXPECT_TRUE(d.placements.empty());
  EXPECT_EQ(findWaiting(d, 11)->reason, WaitReason::kQuota);
}

TEST(Preemption, ReclaimRespectingPriorityNeverStopsAHigherPriorityBorrower) {
  Sim s;
  s.nodes = {node("a", 8)};
  s.config.queues = {gpuQueue("vision", "lab", Quota::units(4)),
                     gpuQueue("nlp", "lab", Quota::units(4))};
  s.config.reclaim_respects_priority = true;
  for (int i = 1; i <= 8; ++i) s.submit(queued(i, "nlp", 1, 1));
  s.step();
  ASSERT_EQ(s.runningIn("nlp"), 8);
  s.submit(queued(20, "vision", 2, 0));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.step().preemptions.empty());
  // Equal priority: reclaim as before.
  s.submit(queued(21, "vision", 2, 1));
  Decision d = s.step();
  EXPECT_EQ(d.preemptions.size(), 2u);
}

TEST(Order, LeastAttainedServiceGoesFirstAcrossQueues) {
  PolicyConfig config;
  config.order = JobOrder::kLeastAttainedService;
  config.queues = {gpuQueue("vision", "lab", Quota::units(4)),
                   gpuQueue("nlp", "lab", Quota::units(4))};
  ClusterSnapshot c;
  c.nodes.push_back({node("a", 2), {}, Quantity(), 0});
  QueueSnapshot q;
  // vision used a lot lately (fair share would put nlp first), but nlp's
  // job already had an hour of service and vision's none.
  q.usage["vision"] = accumulateUsage({}, {8000, 0, 0}, 3600 * 1000, 7LL * 24 * 3600 * 1000);
  PendingJob served = queued(1, "nlp", 2);
  served.attained_service = 3600 * 1000;
  PendingJob fresh = queued(2, "vision", 2);
  fresh.submitted = 10;
  q.pending = {served, fresh};
  Rng rng(1);
  Decision d = schedule(c, q, config, 0, rng);
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(2));
  // Fair share: the queue that used less goes first.
  config.order = JobOrder::kFairShare;
  d = schedule(c, q, config, 0, rng);
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(1));
}

TEST(Order, WithinAQueueLeastAttainedServiceBeforeAge) {
  ClusterSnapshot c;
  c.nodes.push_back({node("a", 2), {}, Quantity(), 0});
  QueueSnapshot q;
  PendingJob old_served = job(1, 2);
  old_served.attained_service = 1000;
  PendingJob fresh = job(2, 2);
  fresh.submitted = 10;
  q.pending = {old_served, fresh};
  Rng rng(1);
  Decision d = schedule(c, q, PolicyConfig{}, 0, rng);
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].job, JobId(2));
}

RunningJob runningOn(std::int64_t id, const std::string& queue, std::vector<int> gpus,
                     DurationMs max_runtime, Timestamp started = 0) {
  RunningJob r;
  r.id = JobId(id);
  r.queue = queue;
  r.per_replica.gpus = Quantity::whole(static_cast<std::int64_t>(gpus.size()));
  r.replicas = {{"a", std::move(gpus), 1000}};
  r.started_at = started;
  r.max_runtime = max_runtime;
  return r;
}

TEST(Explain, QuotaWaitsGetAStartEstimateFromTheQueuesOwnJobs) {
  Sim s;
  s.nodes = {node("a", 8)};
  s.config.queues = {gpuQueue("vision", "", Quota::units(2))};
  s.running = {runningOn(1, "vision", {0}, 100), runningOn(2, "vision", {1}, 50, 10)};
  s.now = 20;
  s.submit(queued(10, "vision", 1));
  s.submit(queued(11, "vision", 2));
  Decision d = s.pass();
  EXPECT_TRUE(d.placements.empty());
  ASSERT_NE(findWaiting(d, 10), nullptr);
  EXPECT_EQ(findWaiting(d, 10)->reason, WaitReason::kQuota);
  EXPECT_EQ(findWaiting(d, 10)->estimated_start, 60);  // job 2 ends at 10 + 50
  EXPECT_EQ(findWaiting(d, 11)->estimated_start, 100);
  // A job without max_runtime in the way: unknown.
  s.running[1].max_runtime = 0;
  d = s.pass();
  EXPECT_EQ(findWaiting(d, 10)->estimated_start, 100);
  EXPECT_EQ(findWaiting(d, 11)->estimated_start, 0);
}

TEST(Explain, QuotaWaitsGetAStartEstimateFromTheCohortsBorrowedUse) {
  Sim s;
  s.nodes = {node("a", 8)};
  s.config.preemption = false;  // vision would reclaim otherwise
  s.config.queues = {gpuQueue("vision", "lab", Quota::units(2)),
                     gpuQueue("nlp", "lab", Quota::units(2))};
  // nlp holds its 2 for good and borrows 1 of vision's until t=30.
  s.running = {runningOn(1, "nlp", {0}, 0), runningOn(2, "nlp", {1}, 0),
               runningOn(3, "nlp", {2}, 30), runningOn(4, "vision", {3}, 0)};
  s.now = 5;
  s.submit(queued(10, "vision", 1));
  Decision d = s.pass();
  EXPECT_TRUE(d.placements.empty());
  ASSERT_NE(findWaiting(d, 10), nullptr);
  EXPECT_EQ(findWaiting(d, 10)->reason, WaitReason::kQuota);
  EXPECT_EQ(findWaiting(d, 10)->estimated_start, 30);
}

TEST(Placement, UsesThePolicyItIsGivenAndSharesGpus) {
  auto policy = std::move(makePlacementPolicy("best-fit", {})).value();
  ClusterSnapshot c{{{node("a", 1), {}, {}, 0}}};
  QueueSnapshot q;
  for (int i = 1; i <= 3; ++i) {
    PendingJob p = job(i, 0);
    p.per_replica.gpus = Quantity::fromMilli(500);
    q.pending.push_back(p);
  }
  PolicyConfig config;
  config.placement = policy.get();
  Rng rng(1);
  Decision d = schedule(c, q, config, 0, rng);
  ASSERT_EQ(d.placements.size(), 2u);
  EXPECT_EQ(d.placements[0].replicas[0].gpu_milli, 500);
  EXPECT_EQ(d.placements[1].replicas[0].gpus, std::vector<int>{0});
  EXPECT_EQ(d.waiting[0].message, "Waiting: needs 0.5 GPUs, 0 free on node a");
}

TEST(Placement, SameLabelGangsStayInOneRack) {
  NodeInfo a1 = node("a1", 8), b1 = node("b1", 8), b2 = node("b2", 8);
  a1.labels["rack"] = "a";
  b1.labels["rack"] = "b";
  b2.labels["rack"] = "b";
  ClusterSnapshot c{{{a1, {}, {}, 0}, {b1, {}, {}, 0}, {b2, {}, {}, 0}}};
  QueueSnapshot q;
  PendingJob p = job(1, 8, 0, 2);
  p.same_label = "rack";
  q.pending = {p};
  Rng rng(1);
  Decision d = schedule(c, q, PolicyConfig{}, 0, rng);
  ASSERT_EQ(d.placements.size(), 1u);
  EXPECT_EQ(d.placements[0].replicas[0].node, "b1");
  EXPECT_EQ(d.placements[0].replicas[1].node, "b2");
}

TEST(Snapshot, BuildsEntriesFromTheJobModel) {
  Job j;
  j.id = JobId(9);
  j.spec.queue = "vision";
  j.spec.priority = 3;
  j.spec.max_runtime = 1000;
  j.spec.same_label = "rack";
  j.user = "ada";
  PendingJob p = pendingJobOf(j);
  EXPECT_EQ(p.queue, "vision");
  EXPECT_EQ(p.user, "ada");
  EXPECT_EQ(p.same_label, "rack");
  Attempt a;
  a.replicas = {{"n", {0, 1}, 1000}};
  a.started_at = 50;
  RunningJob r = runningJobOf(j, a);
  EXPECT_EQ(r.started_at, 50);
  EXPECT_EQ(heldByQueue({r})["vision"].gpu, 2000);
}

}  // namespace
}  // namespace ty
