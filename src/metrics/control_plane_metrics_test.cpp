#include "metrics/control_plane_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

#include "metrics/exposition.h"
#include "metrics/metrics_test_util.h"

namespace ty {
namespace {

using test::seriesOf;

ControlPlaneSnapshot twoQueues() {
  ControlPlaneSnapshot s;
  QueueMetricsRow nlp;
  nlp.name = "nlp";
  nlp.pending = 3;
  nlp.running = 2;
  nlp.oldest_wait_seconds = 90.5;
  nlp.resources = {{"gpu", 8000, 2500}, {"cpu", -1, 16500}, {"memory", 1LL << 40, 1LL << 30}};
  QueueMetricsRow vision;
  vision.name = "vision";
  s.queues = {nlp, vision};
  s.jobs[{"pending", "nlp"}] = 3;
  s.jobs[{"running", "nlp"}] = 2;
  s.gpus = {{"node-a", 0, "GPU-a0", "42", "nlp", "ada"},
            {"node-a", 1, "GPU-a1", "43", "nlp", "bob"}};
  return s;
}

TEST(ControlPlaneMetricsTest, GaugesShowTheSnapshotInUnits) {
  prometheus::Registry registry;
  ControlPlaneMetrics metrics(registry, "0.1.0");
  metrics.update(twoQueues());

  EXPECT_EQ(seriesOf(registry, "trainyard_queue_pending_jobs"),
            (std::map<std::string, double>{{"queue=nlp", 3}, {"queue=vision", 0}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_queue_running_jobs"),
            (std::map<std::string, double>{{"queue=nlp", 2}, {"queue=vision", 0}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_queue_oldest_wait_seconds"),
            (std::map<std::string, double>{{"queue=nlp", 90.5}, {"queue=vision", 0}}));
  // GPUs and CPUs in units, memory in bytes; no nominal where there is no quota.
  EXPECT_EQ(seriesOf(registry, "trainyard_queue_quota_nominal"),
            (std::map<std::string, double>{{"queue=nlp,resource=gpu", 8},
                                           {"queue=nlp,resource=memory", 1LL << 40}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_queue_quota_used"),
            (std::map<std::string, double>{{"queue=nlp,resource=cpu", 16.5},
                                           {"queue=nlp,resource=gpu", 2.5},
                                           {"queue=nlp,resource=memory", 1LL << 30}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_jobs"),
            (std::map<std::string, double>{{"project=nlp,state=pending", 3},
                                           {"project=nlp,state=running", 2}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_gpu_allocated"),
            (std::map<std::string, double>{
                {"Hostname=node-a,UUID=GPU-a0,gpu=0,job=42,project=nlp,user=ada", 1},
                {"Hostname=node-a,UUID=GPU-a1,gpu=1,job=43,project=nlp,user=bob", 1}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_build_info"),
            (std::map<std::string, double>{{"version=0.1.0", 1}}));
}

TEST(ControlPlaneMetricsTest, WhatDisappearsLosesItsSeries) {
  prometheus::Registry registry;
  ControlPlaneMetrics metrics(registry, "0.1.0");
  metrics.update(twoQueues());
  const std::size_t before = metrics.seriesCount();

  ControlPlaneSnapshot next = twoQueues();
  next.queues.pop_back();  // vision deleted
  next.jobs.erase({"pending", "nlp"});
  next.gpus.pop_back();     // job 43 ended
  next.gpus[0].job = "44";  // GPU 0 changed holder
  metrics.update(next);

  EXPECT_EQ(seriesOf(registry, "trainyard_queue_pending_jobs"),
            (std::map<std::string, double>{{"queue=nlp", 3}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_jobs"),
            (std::map<std::string, double>{{"project=nlp,state=running", 2}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_gpu_allocated"),
            (std::map<std::string, double>{
                {"Hostname=node-a,UUID=GPU-a0,gpu=0,job=44,project=nlp,user=ada", 1}}));
  // vision's 3 queue gauges, one job pair and one GPU are gone.
  EXPECT_EQ(metrics.seriesCount(), before - 5);

  metrics.update(ControlPlaneSnapshot{});
  EXPECT_EQ(metrics.seriesCount(), 0u);
}

TEST(ControlPlaneMetricsTest, RequestsAreObservedByRoute) {
  prometheus::Registry registry;
  ControlPlaneMetrics metrics(registry, "0.1.0");
  metrics.observeRequest("/api/v1/jobs/{id}", "GET", 200, 0.003);
  metrics.observeRequest("/api/v1/jobs/{id}", "GET", 200, 0.2);
  metrics.observeRequest("/api/v1/jobs/{id}", "GET", 404, 0.001);
  std::map<std::string, std::uint64_t> counts;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "trainyard_http_request_duration_seconds") continue;
    EXPECT_EQ(family.type, prometheus::MetricType::Histogram);
    for (const prometheus::ClientMetric& m : family.metric) {
      std::string key;
      for (const prometheus::ClientMetric::Label& l : m.label) key += l.name + "=" + l.value + ";";
      counts[key] = m.histogram.sample_count;
    }
  }
  EXPECT_EQ(counts, (std::map<std::string, std::uint64_t>{
                        {"method=GET;route=/api/v1/jobs/{id};status=200;", 2},
                        {"method=GET;route=/api/v1/jobs/{id};status=404;", 1}}));
}

TEST(ControlPlaneMetricsTest, UnhealthyGpusFollowTheSnapshot) {
  prometheus::Registry registry;
  ControlPlaneMetrics metrics(registry, "0.1.0");
  ControlPlaneSnapshot s;
  s.unhealthy_gpus = {{"node-a", 3, "GPU-a3", "Xid 79"}};
  metrics.update(s);
  EXPECT_EQ(
      seriesOf(registry, "trainyard_gpu_unhealthy"),
      (std::map<std::string, double>{{"Hostname=node-a,UUID=GPU-a3,gpu=3,reason=Xid 79", 1}}));
  EXPECT_EQ(metrics.seriesCount(), 1u);
  metrics.update(ControlPlaneSnapshot{});
  EXPECT_TRUE(seriesOf(registry, "trainyard_gpu_unhealthy").empty());
}

TEST(ControlPlaneMetricsTest, CountsSchedulerActivityByLabel) {
  prometheus::Registry registry;
  ControlPlaneMetrics metrics(registry, "0.1.0");
  metrics.countDecisions("start", 0);  // declared: the series exists at 0
  metrics.countDecisions("preempt", 2);
  metrics.countDecisions("preempt", 1);
  metrics.countPreemptions("reclaim", 1);
  metrics.countJobFailures("exit_code", 2);
  metrics.countJobFailures("lost", 1);
  EXPECT_EQ(seriesOf(registry, "trainyard_scheduling_decisions_total"),
            (std::map<std::string, double>{{"kind=preempt", 3}, {"kind=start", 0}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_preemptions_total"),
            (std::map<std::string, double>{{"reason=reclaim", 1}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_job_failures_total"),
            (std::map<std::string, double>{{"reason=exit_code", 2}, {"reason=lost", 1}}));
}

TEST(ControlPlaneMetricsTest, PassAndStoreTimesAreHistograms) {
  prometheus::Registry registry;
  ControlPlaneMetrics metrics(registry, "0.1.0");
  metrics.observeSchedulingPass(0.0004);
  metrics.observeSchedulingPass(0.002);
  metrics.observeStoreOperation("commit", 0.001);
  metrics.observeStoreOperation("commit", 0.003);
  metrics.observeStoreOperation("create_jobs", 0.002);
  std::map<std::string, std::uint64_t> counts;
  std::map<std::string, double> sums;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "trainyard_scheduling_pass_duration_seconds" &&
        family.name != "trainyard_store_operation_duration_seconds") {
      continue;
    }
    EXPECT_EQ(family.type, prometheus::MetricType::Histogram) << family.name;
    for (const prometheus::ClientMetric& m : family.metric) {
      std::string key = family.name;
      for (const prometheus::ClientMetric::Label& l : m.label) key += " " + l.name + "=" + l.value;
      counts[key] = m.histogram.sample_count;
      sums[key] = m.histogram.sample_sum;
    }
  }
  EXPECT_EQ(counts, (std::map<std::string, std::uint64_t>{
                        {"trainyard_scheduling_pass_duration_seconds", 2},
                        {"trainyard_store_operation_duration_seconds operation=commit", 2},
                        {"trainyard_store_operation_duration_seconds operation=create_jobs", 1}}));
  EXPECT_DOUBLE_EQ(sums["trainyard_scheduling_pass_duration_seconds"], 0.0024);
  EXPECT_DOUBLE_EQ(sums["trainyard_store_operation_duration_seconds operation=commit"], 0.004);
}

TEST(ControlPlaneMetricsTest, DestructionRemovesTheFamilies) {
  prometheus::Registry registry;
  {
    ControlPlaneMetrics metrics(registry, "0.1.0");
    metrics.update(twoQueues());
    metrics.countJobFailures("lost", 1);
    metrics.observeStoreOperation("commit", 0.001);
    EXPECT_FALSE(registry.Collect().empty());
  }
  EXPECT_TRUE(registry.Collect().empty());
}

}  // namespace
}  // namespace ty
