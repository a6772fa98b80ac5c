// Training metrics end to end: a job prints TRAINYARD_METRIC lines and posts
// a point with its own TRAINYARD_JOB_TOKEN; the server ingests the lines,
// serves both through the API and the CLI, and refuses the job token for
// another job and once the job has ended.
#include "harness.h"

namespace ty::e2e {
namespace {

class TrainingMetricTest : public E2eTest {};

TEST_F(TrainingMetricTest, LinesAndPostedPointsReachApiAndCli) {
  const std::string dir = tmp_.path();
  // The job keeps running until the test creates `release`, so that its
  // token can be tried while it is live.
  const std::string script =
      "echo \"$TRAINYARD_JOB_TOKEN\" > " + dir + "/token.tmp && mv " + dir + "/token.tmp " + dir +
      "/token\n"
      "echo 'TRAINYARD_METRIC {\"step\":1,\"loss\":0.9,\"lr\":0.001}'\n"
      "echo 'TRAINYARD_METRIC {\"step\":2,\"loss\":0.5}'\n"
      "echo 'TRAINYARD_METRIC {\"step\":3,\"loss\":not-json}'\n"
      "echo 'TRAINYARD_METRIC {\"step\":3,\"loss\":0.25}'\n"
      "python3 -c '\n"
      "import json, os, urllib.request\n"
      "url = os.environ[\"TRAINYARD_API_URL\"] + \"/api/v1/jobs/\" + "
      "os.environ[\"TRAINYARD_JOB_ID\"] "
      "+ \"/metrics\"\n"
      "body = json.dumps({\"step\": 3, \"metrics\": {\"eval_loss\": 0.3}, \"key\": \"eval-3\"})\n"
      "req = urllib.request.Request(url, data=body.encode(), method=\"POST\", headers={\n"
      "    \"Authorization\": \"Bearer \" + os.environ[\"TRAINYARD_JOB_TOKEN\"],\n"
      "    \"Content-Type\": \"application/json\"})\n"
      "print(\"posted\", urllib.request.urlopen(req).status, flush=True)\n"
      "' && touch " +
      dir +
      "/posted\n"
      "while [ ! -f " +
      dir + "/release ]; do sleep 0.05; done\n";
  const std::int64_t id = api().submit(scriptJob(script));
  ASSERT_GT(id, 0);
  const std::int64_t other = api().submit(scriptJob("sleep 30"));
  ASSERT_GT(other, 0);
  ASSERT_TRUE(waitFor([&] { return fileExists(dir + "/posted"); }, 20s))
      << api().logs(id) << server_->log();
  std::string token = readFile(dir + "/token");
  while (!token.empty() && token.back() == '\n') token.pop_back();
  ASSERT_TRUE(token.starts_with("tyj_" + std::to_string(id) + "_1_")) << token;
  const Api as_job = apiAs(token);
  const std::string report = R"({"step":4,"metrics":{"loss":0.2}})";
  const std::string mine = "/api/v1/jobs/" + std::to_string(id);

  // Live: its own metrics only.
  EXPECT_EQ(as_job.get(mine + "/metrics").status, 200);
  EXPECT_EQ(as_job.post("/api/v1/jobs/" + std::to_string(other) + "/metrics", report).status, 401);
  EXPECT_EQ(as_job.get(mine).status, 401);

  // Prometheus sees the latest value of the running job's metrics.
  const std::string series = "trainyard_job_metric{job=\"" + std::to_string(id) +
                             "\",name=\"eval_loss\",project=\"default\",user=\"admin\"} ";
  HttpResult scrape = api().get("/metrics");
  EXPECT_NE(scrape.body.find(series), std::string::npos) << scrape.body;

  writeFile(dir + "/release", "");
  Json done = api().waitDone(id);
  EXPECT_EQ(done.value("state", ""), "succeeded") << api().logs(id);
  // Dead with its attempt.
  EXPECT_EQ(as_job.post(mine + "/metrics", report).status, 401);
  // Its series leave /metrics with it.
  EXPECT_EQ(api().get("/metrics").body.find("job=\"" + std::to_string(id) + "\""),
            std::string::npos);

  // The ingester reads the file a last time after the job ended.
  HttpResult loss;
  ASSERT_TRUE(waitFor(
      [&] {
        loss = api().get(mine + "/metrics?name=loss");
        return loss.status == 200 && loss.json["points"].size() == 3;
      },
      15s))
      << loss.body;
  EXPECT_EQ(loss.json["points"][0]["step"], 1);
  EXPECT_EQ(loss.json["points"][2]["value"], 0.25);
  // The bad line is still in the log.
  EXPECT_NE(api().logs(id).find("not-json"), std::string::npos);

  HttpResult names = api().get(mine + "/metrics");
  ASSERT_EQ(names.status, 200) << names.body;
  std::map<std::string, std::int64_t> counts;
  for (const Json& m : names.json["metrics"]) {
    counts[m["name"].get<std::string>()] = m["count"].get<std::int64_t>();
  }
  EXPECT_EQ(counts,
            (std::map<std::string, std::int64_t>{{"eval_loss", 1}, {"loss", 3}, {"lr", 1}}));

  ProcResult list = runCli({"metrics", std::to_string(id)}, cliEnv());
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("eval_loss"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("\u2588"), std::string::npos) << list.out;  // the trend of loss
  ProcResult csv = runCli({"metrics", std::to_string(id), "--name", "loss", "-o", "csv"}, cliEnv());
  EXPECT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_TRUE(csv.out.starts_with("step,value,time\n1,0.90000000000000002,")) << csv.out;

  ASSERT_EQ(api().post("/api/v1/jobs/" + std::to_string(other) + "/cancel", "").status, 200);
  api().waitDone(other);
}

}  // namespace
}  // namespace ty::e2e
