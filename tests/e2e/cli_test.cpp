// The CLI against a real server: the tour a new user takes, output formats
// and exit codes.
#include <regex>

#include "harness.h"

namespace ty::e2e {
namespace {

class CliTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    // Jobs belong to the signed-in user, so the tour signs in as one.
    tourist_token_ = userToken("tourist", "default", "engineer");
    ASSERT_FALSE(tourist_token_.empty());
  }
  ProcResult cli(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server_->url()});
    return runCli(args, cliEnv(tourist_token_));
  }
  std::string tourist_token_;
};

std::string show(const ProcResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

TEST_F(CliTest, Tour) {
  ProcResult sub = cli({"submit", "--name", "tour", "--gpus", "2", "-e",
                        std::string(kMarkerEnv) + "=" + markerValue(), "--script",
                        "echo hello; sleep 0.3; echo world"});
  ASSERT_EQ(sub.exit_code, 0) << show(sub);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(sub.out, m, std::regex(R"(Submitted job (\d+) \(tour\))")))
      << show(sub);
  const std::string id = m[1];

  ProcResult jobs = cli({"jobs"});
  EXPECT_EQ(jobs.exit_code, 0) << show(jobs);
  EXPECT_TRUE(
      std::regex_search(jobs.out, std::regex("\\n" + id + "\\s+tour\\s+default\\s+tourist")))
      << show(jobs);

  ProcResult logs = cli({"logs", "-f", id});
  EXPECT_EQ(logs.exit_code, 0) << show(logs);
  EXPECT_EQ(logs.out, "hello\nworld\n") << show(logs);
  EXPECT_EQ(api().state(std::stoll(id)), "succeeded") << "logs -f returned before the job ended";

  ProcResult describe = cli({"describe", id});
  EXPECT_EQ(describe.exit_code, 0) << show(describe);
  for (const char* want : {"Submitted", "Placed on local, GPUs 0,1", "Started pid", "succeeded",
                           "State:      succeeded"}) {
    EXPECT_NE(describe.out.find(want), std::string::npos) << want << "\n" << show(describe);
  }

  ProcResult as_json = cli({"-o", "json", "describe", id});
  EXPECT_EQ(as_json.exit_code, 0) << show(as_json);
  Json j = Json::parse(as_json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << show(as_json);
  EXPECT_EQ(j.value("state", ""), "succeeded");
  EXPECT_EQ(std::to_string(j.value("id", 0)), id);
  EXPECT_TRUE(j["events"].is_array() && j["events"].size() >= 3) << as_json.out;

  ProcResult list_json = cli({"-o", "json", "jobs"});
  EXPECT_EQ(list_json.exit_code, 0) << show(list_json);
  EXPECT_FALSE(Json::parse(list_json.out, nullptr, false).is_discarded()) << show(list_json);

  ProcResult nodes = cli({"nodes"});
  EXPECT_EQ(nodes.exit_code, 0) << show(nodes);
  EXPECT_NE(nodes.out.find("local"), std::string::npos) << show(nodes);
}

TEST_F(CliTest, UsageErrorExits2) {
  ProcResult r = cli({"jobs", "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2) << show(r);
  r = runCli({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2) << show(r);
  r = cli({"submit", "--gpus", "1"});  // nothing to run
  EXPECT_EQ(r.exit_code, 2) << show(r);
  r = cli({"describe", "abc"});  // not a job id
  EXPECT_EQ(r.exit_code, 2) << show(r);
  r = cli({"describe"});  // no job id
  EXPECT_EQ(r.exit_code, 2) << show(r);
}

TEST_F(CliTest, ErrorsFromTheServerExit1) {
  ProcResult r = cli({"describe", "987654"});
  EXPECT_EQ(r.exit_code, 1) << show(r);
  EXPECT_NE(r.err.find("error:"), std::string::npos) << show(r);
  r = cli({"submit", "--gpus", "16", "--", "true"});
  EXPECT_EQ(r.exit_code, 1) << show(r);
  EXPECT_NE(r.err.find("largest node has 4"), std::string::npos) << show(r);
}

TEST_F(CliTest, UnreachableServerExits1WithOneLine) {
  // A port nothing listens on: bind one, then close it.
  server_->kill();
  std::string dead_url = server_->url();
  ProcResult r = runCli({"--server", dead_url, "jobs"}, cliEnv());
  EXPECT_EQ(r.exit_code, 1) << show(r);
  EXPECT_TRUE(r.out.empty()) << show(r);
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "want one line:\n" << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(dead_url), std::string::npos) << r.err;

  auto env = cliEnv();
  env["TRAINYARD_SERVER"] = dead_url;
  r = runCli({"jobs"}, env);
  EXPECT_EQ(r.exit_code, 1) << show(r);
}

}  // namespace
}  // namespace ty::e2e
