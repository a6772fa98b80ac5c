// The read views the web UI polls, over real HTTP against the real
// ApiServer and JobService (in-memory store, fake executor): per-GPU live
// state on GET /api/v1/nodes, job counts by state, the queue filter of the
// jobs list, the oldest wait and the borrowed/lent quota of GET
// /api/v1/queues, and cursor reads of a job's log.
#include <httplib.h>

#include <fstream>

#include "common/temp_dir_test_util.h"
#include "server/api_server_test_fixture.h"

namespace ty::test {
namespace {

class ApiWebUiViewsTest : public ApiServerTest {
 protected:
  // Starts the API on `o` with its run files under a fresh directory, so
  // that the log tests can write replica logs where the API reads them.
  void start(ApiOptions o = {}) {
    ASSERT_FALSE(dir_.path().empty());
    startApi(std::move(o), layout_);
    addUser("root", true);
    root_ = issue("root");
    for (const char* p : {"a", "b"}) ASSERT_TRUE(store_->createProject({p, 1}).isOk());
    addUser("eve", false);
    ASSERT_TRUE(store_->putMembership({"eve", "a", "engineer"}).isOk());
    eve_ = issue("eve");
  }

  httplib::Result get(const std::string& path, const std::string& token) {
    httplib::Client http("127.0.0.1", port_);
    return http.Get(path, {{"Authorization", "Bearer " + token}});
  }
  Json getJson(const std::string& path, const std::string& token) {
    auto res = get(path, token);
    EXPECT_TRUE(res);
    if (!res) return Json();
    EXPECT_EQ(res->status, 200) << path << ": " << res->body;
    return Json::parse(res->body);
  }

  // A job stored as given (the service does not schedule it).
  JobId stored(const std::string& project, JobState state, Timestamp finished_at = 0,
               const std::string& queue = "", Timestamp created_at = 1) {
    std::vector<Job> jobs(1);
    jobs[0].spec.name = "j";
    jobs[0].spec.project = project;
    jobs[0].spec.queue = queue;
    jobs[0].spec.command = {"true"};
    jobs[0].user = "root";
    jobs[0].state = state;
    jobs[0].created_at = created_at;
    jobs[0].finished_at = finished_at;
    EXPECT_TRUE(store_->createJobs(jobs, {}).isOk());
    return jobs[0].id;
  }

  void appendLog(JobId job, int attempt, const std::string& text) {
    const AttemptKey key{job, attempt};
    std::filesystem::create_directories(layout_.replicaDir(key, 0));
    std::ofstream out(layout_.file(key, 0, RunLayout::kLogFile), std::ios::app);
    out << text;
  }

  ty::testing::TempDir dir_{"ty-api-views-"};
  RunLayout layout_{dir_.path()};
  std::string root_;
  std::string eve_;
};

TEST_F(ApiWebUiViewsTest, NodesCarryEachGpusLiveStateFromTheMonitor) {
  ApiOptions o;
  o.gpu_live = [] {
    GpuLiveState live;
    GpuLiveView& v = live[{"local", 1}];
    v.util_percent = 87.5;
    v.memory_used_bytes = 4LL << 30;
    v.history = {{1000, 80}, {6000, 87.5}};
    v.idle_since = 0;
    v.ghost_pids = {4321};
    GpuLiveView& idle = live[{"local", 2}];
    idle.util_percent = 0;
    idle.idle_since = 123'000;
    live[{"elsewhere", 0}].util_percent = 50;  // a node the control plane has not
    return live;
  };
  start(o);
  Json gpus = getJson("/api/v1/nodes", root_)["nodes"][0]["gpus"];
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(gpus[1]["util_percent"], 87.5);
  EXPECT_EQ(gpus[1]["memory_used_bytes"], 4LL << 30);
  EXPECT_EQ(gpus[1]["history"], Json::parse("[[1000, 80.0], [6000, 87.5]]"));
  EXPECT_TRUE(gpus[1]["idle_since"].is_null());
  EXPECT_EQ(gpus[1]["ghost_pids"], Json::parse("[4321]"));
  EXPECT_EQ(gpus[2]["idle_since"], 123'000);
  EXPECT_TRUE(gpus[2]["memory_used_bytes"].is_null());
  // A GPU the monitor says nothing of.
  EXPECT_TRUE(gpus[0]["util_percent"].is_null());
  EXPECT_TRUE(gpus[0]["memory_used_bytes"].is_null());
  EXPECT_EQ(gpus[0]["history"], Json::array());
  EXPECT_TRUE(gpus[0]["idle_since"].is_null());
  EXPECT_EQ(gpus[0]["ghost_pids"], Json::array());
}

TEST_F(ApiWebUiViewsTest, NodesWithoutAMonitorHaveNullLiveFields) {
  start();
  Json gpu = getJson("/api/v1/nodes", root_)["nodes"][0]["gpus"][3];
  EXPECT_TRUE(gpu["util_percent"].is_null());
  EXPECT_TRUE(gpu["memory_used_bytes"].is_null());
  EXPECT_EQ(gpu["history"], Json::array());
  EXPECT_TRUE(gpu["idle_since"].is_null());
  EXPECT_EQ(gpu["ghost_pids"], Json::array());
}

TEST_F(ApiWebUiViewsTest, CountsAreByStateOfVisibleProjectsSince) {
  constexpr DurationMs kHour = 3600 * 1000;
  start();
  clock_.advance(48 * kHour);
  const Timestamp now = clock_.now();
  stored("a", JobState::kPending);
  stored("a", JobState::kRunning);
  stored("a", JobState::kSucceeded, now - 1000);
  stored("a", JobState::kFailed, now - 2000);
  stored("a", JobState::kFailed, now - 25 * kHour);  // before the default day
  stored("b", JobState::kFailed, now - 500);
  stored("b", JobState::kCancelled, now - 500);

  Json all = getJson("/api/v1/jobs/counts", root_);
  EXPECT_EQ(all["since"], now - 24 * kHour);
  EXPECT_EQ(all["by_state"], Json::parse(R"({"pending": 1, "scheduled": 0, "running": 1,
      "succeeded": 1, "failed": 2, "cancelled": 1, "preempted": 0})"));

  const std::string since = std::to_string(now - 1500);
  Json recent = getJson("/api/v1/jobs/counts?since=" + since, root_);
  EXPECT_EQ(recent["since"], now - 1500);
  EXPECT_EQ(recent["by_state"]["succeeded"], 1);
  EXPECT_EQ(recent["by_state"]["failed"], 1);  // b's
  EXPECT_EQ(recent["by_state"]["cancelled"], 1);
  EXPECT_EQ(recent["by_state"]["pending"], 1);  // active jobs count whatever since says

  // eve reads project a only.
  Json eve = getJson("/api/v1/jobs/counts?since=" + since, eve_);
  EXPECT_EQ(eve["by_state"]["failed"], 0);
  EXPECT_EQ(eve["by_state"]["cancelled"], 0);
  EXPECT_EQ(eve["by_state"]["succeeded"], 1);
  EXPECT_EQ(eve["by_state"]["running"], 1);
  EXPECT_EQ(get("/api/v1/jobs/counts?project=b", eve_)->status, 404);
  EXPECT_EQ(getJson("/api/v1/jobs/counts?project=b", root_)["by_state"]["pending"], 0);
  auto bad = get("/api/v1/jobs/counts?since=yesterday", root_);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Json::parse(bad->body)["error"]["field"], "since");
}

TEST_F(ApiWebUiViewsTest, JobsListFiltersByQueueWithTheSchedulersRule) {
  start();
  QueueConfig first;
  first.name = first.project = "a";
  QueueConfig batch;
  batch.name = "a-batch";
  batch.project = "a";
  ASSERT_TRUE(service_->putQueue(first).isOk());
  ASSERT_TRUE(service_->putQueue(batch).isOk());
  const JobId in_first = stored("a", JobState::kPending);                // project's queue
  const JobId in_batch = stored("a", JobState::kPending, 0, "a-batch");  // named
  const JobId done_first = stored("a", JobState::kFailed, 5, "a");       // named
  stored("b", JobState::kPending);                                       // b has no queue

  auto ids = [&](const std::string& query, const std::string& token) {
    std::vector<std::int64_t> out;
    const Json page = getJson("/api/v1/jobs?" + query, token);
    for (const Json& j : page["jobs"]) {
      out.push_back(j["id"].get<std::int64_t>());
    }
    return out;
  };
  EXPECT_EQ(ids("queue=a", root_),
            (std::vector<std::int64_t>{done_first.value(), in_first.value()}));
  EXPECT_EQ(ids("queue=a-batch", root_), (std::vector<std::int64_t>{in_batch.value()}));
  EXPECT_EQ(ids("queue=a&state=pending", root_), (std::vector<std::int64_t>{in_first.value()}));
  EXPECT_EQ(ids("queue=a&state=pending&project=a", eve_),
            (std::vector<std::int64_t>{in_first.value()}));
  // Paging through the filter.
  Json page = getJson("/api/v1/jobs?queue=a&limit=1", root_);
  ASSERT_EQ(page["jobs"].size(), 1u);
  EXPECT_EQ(page["jobs"][0]["id"], done_first.value());
  EXPECT_EQ(ids("queue=a&limit=1&before=" + std::to_string(page["next_before"].get<std::int64_t>()),
                root_),
            (std::vector<std::int64_t>{in_first.value()}));
  // A queue that does not exist holds no jobs.
  EXPECT_TRUE(ids("queue=nowhere", root_).empty());
}

TEST_F(ApiWebUiViewsTest, JobsListOnAServerWithoutQueuesHasEveryJobInDefault) {
  start();
  const JobId j = stored("a", JobState::kPending);
  EXPECT_EQ(getJson("/api/v1/jobs?queue=default", root_)["jobs"][0]["id"], j.value());
  EXPECT_TRUE(getJson("/api/v1/jobs?queue=other", root_)["jobs"].empty());
}

TEST_F(ApiWebUiViewsTest, QueuesShowTheOldestWaitAndWhatIsBorrowedAndLent) {
  start();
  QueueConfig a;
  a.name = a.project = "a";
  a.cohort = "lab";
  a.quotas["gpu"] = Quota::units(1);
  QueueConfig b;
  b.name = b.project = "b";
  b.cohort = "lab";
  b.quotas["gpu"] = Quota::units(3);
  ASSERT_TRUE(service_->putQueue(a).isOk());
  ASSERT_TRUE(service_->putQueue(b).isOk());
  // Queue a runs 2 GPUs on a nominal of 1: one borrowed from b.
  JobSpec s = spec(2);
  s.project = "a";
  auto running = submit(s, "root");
  ASSERT_TRUE(running.isOk()) << running.status().toString();
  waitState(running->id, JobState::kRunning);
  stored("b", JobState::kPending, 0, "b", 700);
  stored("b", JobState::kPending, 0, "b", 500);

  Json queues;
  ASSERT_TRUE(eventually([&] {
    queues = getJson("/api/v1/queues", root_)["queues"];
    return queues.size() == 2 && queues[0]["resources"][0]["used"] == "2";
  })) << queues.dump();
  EXPECT_EQ(queues[0]["name"], "a");
  EXPECT_EQ(queues[0]["resources"][0]["borrowed"], "1");
  EXPECT_EQ(queues[0]["resources"][0]["lent"], "0");
  EXPECT_TRUE(queues[0]["oldest_pending_at"].is_null());
  EXPECT_EQ(queues[1]["name"], "b");
  EXPECT_EQ(queues[1]["resources"][0]["borrowed"], "0");
  EXPECT_EQ(queues[1]["resources"][0]["lent"], "1");
  EXPECT_EQ(queues[1]["oldest_pending_at"], 500);
}

class ApiLogCursorTest : public ApiWebUiViewsTest {
 protected:
  struct Read {
    int status = 0;
    std::string body;
    std::string cursor;
    std::string attempt;
    std::string done;
  };
  Read read(JobId job, const std::string& query) {
    auto res = get("/api/v1/jobs/" + std::to_string(job.value()) + "/logs?" + query, root_);
    if (!res) return {};
    return {res->status, res->body, res->get_header_value("X-Log-Cursor"),
            res->get_header_value("X-Log-Attempt"), res->get_header_value("X-Log-Done")};
  }
  static std::string at(const std::string& cursor) {
    return "cursor=" + httplib::detail::encode_query_param(cursor);
  }
};

TEST_F(ApiLogCursorTest, ReadsOnlyWhatWasAppendedAndSaysWhenTheLogIsDone) {
  start();
  JobSpec s = spec(0);
  s.project = "a";
  auto job = submit(s, "root");
  ASSERT_TRUE(job.isOk());
  waitState(job->id, JobState::kRunning);
  appendLog(job->id, 1, "epoch 1\n");

  Read first = read(job->id, "cursor=start");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.body, "epoch 1\n");
  EXPECT_EQ(first.attempt, "1");
  EXPECT_EQ(first.done, "false");

  // Nothing new: nothing, same cursor.
  Read idle = read(job->id, at(first.cursor));
  EXPECT_EQ(idle.body, "");
  EXPECT_EQ(idle.cursor, first.cursor);
  EXPECT_EQ(idle.done, "false");

  appendLog(job->id, 1, "epoch 2\nepoch 3\n");
  Read second = read(job->id, at(first.cursor));
  EXPECT_EQ(second.body, "epoch 2\nepoch 3\n");
  EXPECT_EQ(second.done, "false");

  // The job ends after one more line: that line, then done.
  appendLog(job->id, 1, "saved\n");
  exec_.finishAll({job->id, 1}, 0);
  waitState(job->id, JobState::kSucceeded);
  Read last = read(job->id, at(second.cursor));
  EXPECT_EQ(last.body, "saved\n");
  EXPECT_EQ(last.done, "true");
  Read after = read(job->id, at(last.cursor));
  EXPECT_EQ(after.body, "");
  EXPECT_EQ(after.done, "true");

  // A tail start of a finished job: the last lines, and done at once.
  Read tail = read(job->id, "cursor=start&tail=2");
  EXPECT_EQ(tail.body, "epoch 3\nsaved\n");
  EXPECT_EQ(tail.cursor, last.cursor);
  EXPECT_EQ(tail.done, "true");
}

TEST_F(ApiLogCursorTest, MovesOnToARetryUnlessTheAttemptIsPinned) {
  start();
  JobSpec s = spec(0);
  s.project = "a";
  s.retries = {1, 1'000};
  auto job = submit(s, "root");
  ASSERT_TRUE(job.isOk());
  waitState(job->id, JobState::kRunning);
  appendLog(job->id, 1, "try 1\n");
  Read one = read(job->id, "cursor=start");
  EXPECT_EQ(one.body, "try 1\n");

  exec_.finishAll({job->id, 1}, 3);
  waitState(job->id, JobState::kPending);
  // Waiting for the retry: the first attempt is read out, not done.
  Read waiting = read(job->id, at(one.cursor));
  EXPECT_EQ(waiting.body, "");
  EXPECT_EQ(waiting.attempt, "1");
  EXPECT_EQ(waiting.done, "false");
  // Pinned to attempt 1, its log is complete.
  EXPECT_EQ(read(job->id, "attempt=1&" + at(one.cursor)).done, "true");

  advance(1'000);
  waitJob(job->id, [](const Job& j) { return j.attempts == 2 && j.state == JobState::kRunning; });
  appendLog(job->id, 2, "try 2\n");
  Read moved = read(job->id, at(waiting.cursor));
  EXPECT_EQ(moved.body, "");
  EXPECT_EQ(moved.attempt, "2");
  EXPECT_EQ(moved.done, "false");
  Read second = read(job->id, at(moved.cursor));
  EXPECT_EQ(second.body, "try 2\n");
  EXPECT_EQ(second.attempt, "2");
}

TEST_F(ApiLogCursorTest, RefusesABadCursorAndCursorWithFollow) {
  start();
  const JobId job = stored("a", JobState::kPending);
  Read pending = read(job, "cursor=start");
  EXPECT_EQ(pending.status, 200);
  EXPECT_EQ(pending.attempt, "0");
  EXPECT_EQ(pending.done, "false");
  for (const char* bad : {"cursor=nonsense", "cursor=5:0:0", "cursor=0:0:-1"}) {
    auto res = get("/api/v1/jobs/" + std::to_string(job.value()) + "/logs?" + bad, root_);
    EXPECT_EQ(res->status, 400) << bad;
    EXPECT_EQ(Json::parse(res->body)["error"]["field"], "cursor") << bad;
  }
  auto both =
      get("/api/v1/jobs/" + std::to_string(job.value()) + "/logs?cursor=start&follow=true", root_);
  EXPECT_EQ(both->status, 400);
}

}  // namespace
}  // namespace ty::test
