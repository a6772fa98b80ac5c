// GET /metrics of a real ApiServer over a real JobService (in-memory store,
// fake executor, clock moved by hand): the control-plane series follow the
// jobs, the request histogram is labelled by route template, the scrape
// token is enforced when set, and promtool accepts the text.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "metrics/metrics_test_util.h"
#include "server/api_server_test_fixture.h"
#include "server/pass_metrics.h"

namespace ty::test {
namespace {

// The samples of an exposition: "name{labels}" -> value.
std::map<std::string, double> samplesOf(const std::string& text) {
  std::map<std::string, double> out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

class MetricsEndpointTest : public ApiServerTest {
 protected:
  void SetUp() override {
    ApiServerTest::SetUp();
    QueueConfig queue;
    queue.name = queue.project = "default";
    queue.quotas["gpu"] = Quota::units(8);
    ASSERT_TRUE(service_->putQueue(queue).isOk());
  }
  httplib::Result get(const std::string& path, const std::string& token = "") {
    httplib::Client http("127.0.0.1", port_);
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return http.Get(path, h);
  }
  std::map<std::string, double> scrape() {
    auto res = get("/metrics");
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << res->body;
    text_ = res->body;
    return samplesOf(res->body);
  }

  std::string text_;  // of the last scrape
  // Where the loop's reports go; a member, since the loop outlives the test
  // body (it stops in TearDown).
  std::atomic<ControlPlaneMetrics*> pass_metrics_{nullptr};
};

TEST_F(MetricsEndpointTest, ShowsQueuesJobsGpuHoldersAndRequests) {
  startApi({});
  auto big = submit(spec(4, "big"), "alice");
  ASSERT_TRUE(big.isOk()) << big.status().toString();
  waitState(big->id, JobState::kRunning);
  auto small = submit(spec(1, "small"), "bob");
  ASSERT_TRUE(small.isOk()) << small.status().toString();
  clock_.advance(30'000);  // small has waited 30 s
  // A request by id: its series must name the route, not the path.
  ASSERT_EQ(get("/api/v1/jobs/" + std::to_string(big->id.value()))->status, 401);

  std::map<std::string, double> m;
  ASSERT_TRUE(eventually([&] {
    m = scrape();
    return m["trainyard_queue_pending_jobs{queue=\"default\"}"] == 1;
  })) << text_;
  auto res = get("/metrics");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");

  EXPECT_EQ(m["trainyard_queue_running_jobs{queue=\"default\"}"], 1) << text_;
  EXPECT_EQ(m["trainyard_queue_oldest_wait_seconds{queue=\"default\"}"], 30) << text_;
  EXPECT_EQ(m["trainyard_queue_quota_nominal{queue=\"default\",resource=\"gpu\"}"], 8) << text_;
  EXPECT_EQ(m["trainyard_queue_quota_used{queue=\"default\",resource=\"gpu\"}"], 4) << text_;
  EXPECT_EQ(m["trainyard_jobs{project=\"default\",state=\"pending\"}"], 1) << text_;
  EXPECT_EQ(m["trainyard_jobs{project=\"default\",state=\"running\"}"], 1) << text_;
  EXPECT_EQ(m["trainyard_build_info{version=\"0.1.0\"}"], 1) << text_;
  const std::string big_id = std::to_string(big->id.value());
  for (int gpu = 0; gpu < 4; ++gpu) {
    std::string g = std::to_string(gpu);
    EXPECT_EQ(m["trainyard_gpu_allocated{Hostname=\"local\",UUID=\"GPU-" + g + "\",gpu=\"" + g +
                "\",job=\"" + big_id + "\",project=\"default\",user=\"alice\"}"],
              1)
        << text_;
  }
  EXPECT_EQ(m["trainyard_http_request_duration_seconds_count{method=\"GET\",route=\"/api/v1/"
              "jobs/{id}\",status=\"401\"}"],
            1)
      << text_;
  EXPECT_GE(m["trainyard_http_request_duration_seconds_count{method=\"GET\",route=\"/healthz\","
              "status=\"200\"}"],
            1)
      << text_;
  EXPECT_EQ(text_.find("route=\"/api/v1/jobs/" + big_id), std::string::npos) << text_;

  // big ends and small takes a GPU: big's series go, small's appear.
  exec_.finishAll({big->id, 1}, 0);
  waitState(big->id, JobState::kSucceeded);
  waitState(small->id, JobState::kRunning);
  ASSERT_TRUE(eventually([&] {
    m = scrape();
    return m["trainyard_queue_running_jobs{queue=\"default\"}"] == 1 &&
           m["trainyard_queue_pending_jobs{queue=\"default\"}"] == 0;
  })) << text_;
  EXPECT_EQ(text_.find("job=\"" + big_id + "\""), std::string::npos) << text_;
  EXPECT_NE(text_.find("job=\"" + std::to_string(small->id.value()) +
                       "\",project=\"default\","
                       "user=\"bob\""),
            std::string::npos)
      << text_;
  EXPECT_EQ(text_.find("state=\"pending\""), std::string::npos) << text_;
  EXPECT_EQ(m["trainyard_queue_oldest_wait_seconds{queue=\"default\"}"], 0) << text_;

  std::string promtool = findPromtool();
  if (promtool.empty()) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  PromtoolResult checked = promtoolCheck(promtool, text_);
  // 0: clean. The control-plane names need no lint exception (unlike the
  // DCGM exporter's modelName on the node exporter).
  EXPECT_EQ(checked.exit_code, 0) << checked.output << "\n" << text_;
}

TEST_F(MetricsEndpointTest, ShowsSchedulerActivityAndUnhealthyGpus) {
  // Wired as server_main does: the loop's reports reach the API's metrics
  // once the API exists.
  options_.on_pass = [this](const PassReport& r) {
    if (ControlPlaneMetrics* m = pass_metrics_.load()) recordPass(*m, r);
  };
  restart();
  startApi({});
  declarePassSeries(api_->metrics());
  pass_metrics_ = &api_->metrics();

  auto failing = submit(spec(2, "failing"), "alice");
  ASSERT_TRUE(failing.isOk()) << failing.status().toString();
  waitState(failing->id, JobState::kRunning);
  exec_.finishAll({failing->id, 1}, 1);
  waitState(failing->id, JobState::kFailed);
  ASSERT_TRUE(service_->setGpuHealth("local", 1, false, "Xid 79").isOk());

  std::map<std::string, double> m;
  ASSERT_TRUE(eventually([&] {
    m = scrape();
    return m["trainyard_job_failures_total{reason=\"exit_code\"}"] == 1 &&
           m.count(
               "trainyard_gpu_unhealthy{Hostname=\"local\",UUID=\"GPU-1\",gpu=\"1\","
               "reason=\"Xid 79\"}") == 1;
  })) << text_;
  EXPECT_EQ(m["trainyard_gpu_unhealthy{Hostname=\"local\",UUID=\"GPU-1\",gpu=\"1\","
              "reason=\"Xid 79\"}"],
            1)
      << text_;
  EXPECT_EQ(m["trainyard_scheduling_decisions_total{kind=\"start\"}"], 1) << text_;
  // Every label value exists from the start, at zero.
  EXPECT_EQ(m.count("trainyard_scheduling_decisions_total{kind=\"preempt\"}"), 1u) << text_;
  EXPECT_EQ(m.count("trainyard_preemptions_total{reason=\"reclaim\"}"), 1u) << text_;
  for (const std::string& reason : failureReasons()) {
    EXPECT_EQ(m.count("trainyard_job_failures_total{reason=\"" + reason + "\"}"), 1u) << text_;
  }
  EXPECT_GE(m["trainyard_scheduling_pass_duration_seconds_count"], 1) << text_;
  EXPECT_EQ(m["trainyard_store_operation_duration_seconds_count{operation=\"create_jobs\"}"], 1)
      << text_;
  EXPECT_GE(m["trainyard_store_operation_duration_seconds_count{operation=\"commit\"}"], 3)
      << text_;
  EXPECT_GE(m["trainyard_store_operation_duration_seconds_count{operation=\"active_jobs\"}"], 1)
      << text_;

  // Healthy again: the series goes.
  ASSERT_TRUE(service_->setGpuHealth("local", 1, true, "").isOk());
  ASSERT_TRUE(eventually([&] {
    scrape();
    return text_.find("trainyard_gpu_unhealthy{") == std::string::npos;
  })) << text_;

  std::string promtool = findPromtool();
  if (promtool.empty()) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  PromtoolResult checked = promtoolCheck(promtool, text_);
  EXPECT_EQ(checked.exit_code, 0) << checked.output << "\n" << text_;
}

TEST_F(MetricsEndpointTest, AScrapeTokenIsRequiredWhenConfigured) {
  ApiOptions o;
  o.metrics_token = "scrape-secret";
  startApi(o);
  auto none = get("/metrics");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"trainyard\"");
  EXPECT_EQ(get("/metrics", "wrong-secret")->status, 401);
  auto ok = get("/metrics", "scrape-secret");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_NE(ok->body.find("trainyard_queue_pending_jobs{queue=\"default\"}"), std::string::npos)
      << ok->body;
}

}  // namespace
}  // namespace ty::test
