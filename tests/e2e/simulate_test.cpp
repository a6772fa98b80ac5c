// `trainyard simulate` as a user runs it: the committed trace samples in,
// a summary (text and JSON), a CSV and an SVG out.
#include "harness.h"

namespace ty::e2e {
namespace {

const std::string kData = std::string(TY_SOURCE_DIR) + "/tests/data";

std::string show(const ProcResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

TEST(SimulateTest, OpenbReplayWritesSummaryCsvAndChart) {
  TempDir tmp;
  ProcResult r =
      runCli({"simulate", "openb", "--nodes", kData + "/openb/openb_node_list_gpu_node.csv",
              "--pods", kData + "/openb/openb_pod_list_sample.csv", "--seeds", "42-43",
              "--policies", "random,fgd,trainyard", "-o", "json", "--csv", tmp.sub("curve.csv"),
              "--svg", tmp.sub("alloc.svg")},
             {}, 120s);
  ASSERT_EQ(r.exit_code, 0) << show(r);
  Json j = Json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << show(r);
  EXPECT_NE(r.out.find("\"trainyard\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"fgd\""), std::string::npos) << r.out;
  EXPECT_NE(readFile(tmp.sub("curve.csv")).find("trainyard"), std::string::npos);
  EXPECT_EQ(readFile(tmp.sub("alloc.svg")).rfind("<svg", 0), 0u);

  ProcResult bad = runCli({"simulate", "openb", "--nodes", kData + "/philly/philly_sample.csv",
                           "--pods", kData + "/openb/openb_pod_list_sample.csv"});
  EXPECT_NE(bad.exit_code, 0) << show(bad);
  EXPECT_NE(bad.err.find("philly_sample.csv"), std::string::npos) << show(bad);
}

TEST(SimulateTest, JobReplayComparesPoliciesOnOneTrace) {
  TempDir tmp;
  ProcResult r = runCli({"simulate", "jobs", "--trace", kData + "/philly/philly_sample.csv",
                         "--nodes", "4", "--gpus-per-node", "8", "--policies",
                         "fifo,tiresias,trainyard", "-o", "json", "--csv", tmp.sub("jobs.csv")},
                        {}, 120s);
  ASSERT_EQ(r.exit_code, 0) << show(r);
  Json j = Json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << show(r);
  for (const char* policy : {"fifo", "tiresias", "trainyard"}) {
    EXPECT_NE(r.out.find(std::string("\"") + policy + "\""), std::string::npos) << r.out;
  }
  EXPECT_GT(splitLines(readFile(tmp.sub("jobs.csv"))).size(), 3u);
}

}  // namespace
}  // namespace ty::e2e
