// PUT and DELETE /api/v1/queues/{name} over real HTTP against the real
// ApiServer and JobService (in-memory store, fake executor): the body in
// the config file's form, the answer in the same form with its note, the
// refusals with their fields and statuses, and the audit record.
#include <httplib.h>

#include <thread>

#include "server/api_server_test_fixture.h"

namespace ty::test {
namespace {

class ApiQueuesTest : public ApiServerTest {
 protected:
  void SetUp() override {
    ApiServerTest::SetUp();
    startApi();
    addUser("root", true);
    ASSERT_TRUE(store_->createProject({"nlp", 1}).isOk());
    token_ = issue("root");
  }

  httplib::Result put(const std::string& name, const std::string& body,
                      const std::string& type = "application/json") {
    httplib::Client http("127.0.0.1", port_);
    return http.Put("/api/v1/queues/" + name, {{"Authorization", "Bearer " + token_}}, body,
                    type.c_str());
  }
  httplib::Result del(const std::string& name) {
    httplib::Client http("127.0.0.1", port_);
    return http.Delete("/api/v1/queues/" + name, {{"Authorization", "Bearer " + token_}});
  }
  static std::string fieldOf(const httplib::Result& res) {
    return Json::parse(res->body)["error"].value("field", "");
  }

  std::string token_;
};

TEST_F(ApiQueuesTest, PutTakesTheConfigFormAndAnswersWithItAndTheNote) {
  auto res = put("nlp",
                 "cohort: lab\n"
                 "weight: 2\n"
                 "quota:\n"
                 "  gpu: {nominal: 2, borrowing_limit: 1}\n"
                 "  memory: {nominal: 64Gi}\n",
                 "application/yaml");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  Json answer = Json::parse(res->body);
  EXPECT_EQ(answer["name"], "nlp");
  EXPECT_EQ(answer["project"], "nlp");
  EXPECT_EQ(answer["cohort"], "lab");
  EXPECT_EQ(answer["quota"]["gpu"]["nominal"], 2);
  EXPECT_EQ(answer["quota"]["gpu"]["borrowing_limit"], 1);
  EXPECT_EQ(answer["quota"]["memory"]["nominal"], "64Gi");
  // The first queue of a server that had none: jobs now need a queue.
  EXPECT_NE(answer.value("note", "").find("until there is a queue named default"),
            std::string::npos)
      << res->body;
  auto audit = store_->listAudit({}).value().records;
  ASSERT_FALSE(audit.empty());
  EXPECT_EQ(audit[0].detail, "created queue nlp: gpu nominal 2 borrowing 1; memory nominal 64Gi");

  // GET shows it at once.
  httplib::Client http("127.0.0.1", port_);
  auto listed = http.Get("/api/v1/queues", {{"Authorization", "Bearer " + token_}});
  Json queues = Json::parse(listed->body)["queues"];
  ASSERT_EQ(queues.size(), 1u) << listed->body;
  EXPECT_EQ(queues[0]["name"], "nlp");
  EXPECT_EQ(queues[0]["cohort"], "lab");

  // Replacing it whole, with the name given in the body too.
  res = put("nlp", R"({"name": "nlp", "quota": {"gpu": {"nominal": 4}}})");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_FALSE(Json::parse(res->body).contains("cohort"));
  EXPECT_EQ(store_->listAudit({}).value().records.at(0).detail, "set queue nlp: gpu nominal 4");
}

TEST_F(ApiQueuesTest, PutRefusalsNameTheField) {
  auto res = put("nlp", R"({"name": "vision"})");
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(fieldOf(res), "name");
  res = put("nlp", R"({"quota": {"gpu": {"nominal": 2, "lending_limit": 3}}})");
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(fieldOf(res), "quota.gpu.lending_limit");
  res = put("nlp", R"({"quota": {"gpu": {"nominal": 2}}, "priority": 3})");
  EXPECT_EQ(fieldOf(res), "priority");
  res = put("nlp", "[1, 2]");
  EXPECT_EQ(res->status, 400) << res->body;
  res = put("nlp", "quota: {}", "text/plain");
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_TRUE(store_->listQueues().value().empty());
}

TEST_F(ApiQueuesTest, DeleteAnswers204AndRefusesAQueueWithJobs) {
  ASSERT_EQ(put("nlp", R"({"quota": {"gpu": {"nominal": 4}}})")->status, 200);
  JobSpec s = spec(1);
  s.project = "nlp";
  auto job = submit(s, "root");
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  auto res = del("nlp");
  EXPECT_EQ(res->status, 409) << res->body;
  EXPECT_NE(res->body.find("still has 1"), std::string::npos) << res->body;
  waitState(job->id, JobState::kRunning);
  exec_.finishAll({job->id, 1}, 0);
  waitState(job->id, JobState::kSucceeded);
  res = del("nlp");
  EXPECT_EQ(res->status, 204) << res->body;
  EXPECT_EQ(store_->listAudit({}).value().records.at(0).detail, "deleted queue nlp");
  EXPECT_EQ(del("nlp")->status, 404);
}

}  // namespace
}  // namespace ty::test
