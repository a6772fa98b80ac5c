// `trainyard queue set` and `trainyard queue delete` against an in-process
// HTTP server that answers like the REST contract (docs/api.md): what is
// sent, and what a user sees.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "auth/tokens.h"
#include "cli/commands.h"
#include "cli/credentials.h"
#include "cli/saved_env_test_util.h"
#include "common/temp_dir_test_util.h"

namespace ty {
namespace {

namespace fs = std::filesystem;

struct Sent {
  std::string method, path, body, content_type;
};

struct Outcome {
  int code;
  std::string out, err;
};

class QueueCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(root_.path().empty());
    ::setenv("XDG_CONFIG_HOME", (root_ / "config").c_str(), 1);
    ::setenv(kTokenEnv, auth::newToken().c_str(), 1);

    svr_.Put(R"(/api/v1/queues/([a-z0-9._-]+))",
             [this](const httplib::Request& req, httplib::Response& res) {
               record(req);
               Json body = Json::parse(req.body, nullptr, false);
               if (body.contains("quota") && body["quota"].contains("tpu")) {
                 res.status = 400;
                 res.set_content(Json({{"error",
                                        {{"code", "invalid_argument"},
                                         {"message",
                                          "unknown resource; use gpu, gpu:<model> "
                                          "(e.g. gpu:A100), cpu or memory"},
                                         {"field", "quota.tpu"}}}})
                                     .dump(),
                                 "application/json");
                 return;
               }
               body["name"] = req.matches[1].str();
               body["project"] = req.matches[1].str();
               body["weight"] = 1;
               body["note"] = "queue nlp uses 12 GPUs, above the new nominal 8";
               res.status = 200;
               res.set_content(body.dump(), "application/json");
             });
    svr_.Delete(R"(/api/v1/queues/([a-z0-9._-]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  record(req);
                  if (req.matches[1].str() == "busy") {
                    res.status = 409;
                    res.set_content(Json({{"error",
                                           {{"code", "failed_precondition"},
                                            {"message",
                                             "queue busy still has 2 pending jobs; cancel them or "
                                             "wait for them to finish, then delete the queue"}}}})
                                        .dump(),
                                    "application/json");
                    return;
                  }
                  res.status = 204;
                });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
  }
  void TearDown() override {
    // stop() is a no-op until the accept loop runs; wait for it so the
    // join cannot hang.
    while (!svr_.is_running()) std::this_thread::yield();
    svr_.stop();
    thread_.join();
  }

  void record(const httplib::Request& req) {
    std::lock_guard lock(mu_);
    sent_.push_back({req.method, req.path, req.body, req.get_header_value("Content-Type")});
  }
  std::optional<Sent> last() {
    std::lock_guard lock(mu_);
    if (sent_.empty()) return std::nullopt;
    return sent_.back();
  }

  Outcome run(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--server", "http://127.0.0.1:" + std::to_string(port_)});
    std::istringstream in(input);
    std::ostringstream out, err;
    CliIo io;
    io.in = &in;
    io.out = &out;
    io.err = &err;
    int code = runClientCommand(args, io);
    return {code, out.str(), err.str()};
  }

  std::string file(const std::string& name, const std::string& text) {
    fs::path p = root_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  httplib::Server svr_;
  int port_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Sent> sent_;
  ::ty::testing::TempDir root_{"ty-cli-queue-"};
  // The variables the CLI reads: unset for the test, restored after it.
  test::SavedEnv env_{"HOME", "XDG_CONFIG_HOME", kTokenEnv, kServerEnv, kCaCertEnv};
};

TEST_F(QueueCommandsTest, SetSendsTheFileAsJsonAndShowsTheQuotasAndTheNote) {
  std::string path = file("nlp.yaml",
                          "cohort: lab\n"
                          "quota:\n"
                          "  gpu: {nominal: 8, borrowing_limit: 4}\n"
                          "  memory: {nominal: 512Gi}\n");
  Outcome r = run({"queue", "set", "nlp", "-f", path});
  ASSERT_EQ(r.code, 0) << r.err;
  auto sent = last();
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->method, "PUT");
  EXPECT_EQ(sent->path, "/api/v1/queues/nlp");
  EXPECT_EQ(sent->content_type, "application/json");
  Json body = Json::parse(sent->body);
  EXPECT_EQ(body["cohort"], "lab");
  EXPECT_EQ(body["quota"]["gpu"]["nominal"], 8);
  EXPECT_EQ(body["quota"]["memory"]["nominal"], "512Gi");
  EXPECT_EQ(r.out,
            "set queue nlp: gpu nominal 8 borrowing 4; memory nominal 512Gi\n"
            "note: queue nlp uses 12 GPUs, above the new nominal 8\n");
}

TEST_F(QueueCommandsTest, SetReadsStdinAndPrintsJsonWhenAsked) {
  Outcome r = run({"-o", "json", "queue", "set", "nlp", "-f", "-"},
                  "{\"quota\": {\"gpu\": {\"nominal\": 2}}}");
  ASSERT_EQ(r.code, 0) << r.err;
  Json shown = Json::parse(r.out);
  EXPECT_EQ(shown["name"], "nlp");
  EXPECT_EQ(shown["quota"]["gpu"]["nominal"], 2);
}

TEST_F(QueueCommandsTest, SetShowsTheServersErrorWithItsField) {
  Outcome r = run({"queue", "set", "nlp", "-f", file("bad.yaml", "quota: {tpu: {nominal: 1}}\n")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("quota.tpu"), std::string::npos) << r.err;
}

TEST_F(QueueCommandsTest, SetRefusesAFileThatIsNotOneQueueBeforeAskingTheServer) {
  Outcome r = run({"queue", "set", "nlp", "-f", file("list.yaml", "- a\n- b\n")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("must hold one queue"), std::string::npos) << r.err;
  EXPECT_FALSE(last());
  EXPECT_EQ(run({"queue", "set", "nlp"}).code, 2);  // -f is required
}

TEST_F(QueueCommandsTest, DeleteSaysWhatItDidOrWhyNot) {
  Outcome r = run({"queue", "delete", "nlp"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deleted queue nlp\n");
  EXPECT_EQ(last()->method, "DELETE");
  EXPECT_EQ(last()->path, "/api/v1/queues/nlp");

  r = run({"queue", "delete", "busy"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("still has 2 pending jobs"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ty
