#include "server/config.h"

#include <gtest/gtest.h>

#include "codec/job_codec.h"

namespace ty {
namespace {

Status read(const std::string& yaml, ServerConfig& c) {
  auto doc = parseBody(yaml, /*yaml=*/true);
  if (!doc.isOk()) return doc.status();
  return readConfig(*doc, c);
}

TEST(ServerConfigTest, ReadsSettingsAndKeepsDefaultsForTheRest) {
  ServerConfig c;
  ASSERT_TRUE(read("listen: 0.0.0.0:9000\nlog_max_bytes: 8Mi\ncgroups: false\n", c).isOk());
  EXPECT_EQ(c.listen, "0.0.0.0:9000");
  EXPECT_EQ(c.log_max_bytes, 8LL << 20);
  EXPECT_FALSE(c.cgroups);
  EXPECT_EQ(c.data_dir, "./var");
}

TEST(ServerConfigTest, NamesUnknownKeysAndWrongTypes) {
  ServerConfig c;
  EXPECT_EQ(read("listne: x\n", c).field(), "listne");
  EXPECT_EQ(read("worker_threads: many\n", c).field(), "worker_threads");
  EXPECT_EQ(read("worker_threads: 2\n", c).field(), "worker_threads");
  EXPECT_EQ(read("cgroups: maybe\n", c).field(), "cgroups");
  EXPECT_EQ(read("log_max_bytes: 12\n", c).field(), "log_max_bytes");
  EXPECT_EQ(read("- a\n- b\n", c).field(), "config");
}

}  // namespace
}  // namespace ty
