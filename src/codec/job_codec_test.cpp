#include "codec/job_codec.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

TEST(SpecCodec, RoundTripsEveryField) {
  JobSpec s;
  s.name = "bert";
  s.project = "nlp";
  s.command = {"python3", "train.py", "--lr", "0.1"};
  s.image = "localhost/img:1";
  s.resources.gpus = Quantity::whole(2);
  s.resources.cpus = Quantity::fromMilli(1500);
  s.resources.memory_bytes = 16LL << 30;
  s.resources.gpu_types = {"A100", "H100"};
  s.replicas = 2;
  s.env = {{"A", "1"}};
  s.workdir = "/tmp";
  s.priority = 7;
  s.max_runtime = 7'200'000;
  s.grace_period = 5000;
  s.retries = {2, 10'000};
  s.queue = "nlp-main";
  s.min_runtime = 600'000;
  s.node_selector = {{"rack", "r1"}};
  s.same_label = "rack";
  auto back = specFromJson(specToJson(s));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(*back, s);
}

TEST(SpecCodec, RoundTripsNotify) {
  JobSpec s;
  s.command = {"true"};
  s.notify.webhook = "https://hooks.example.org/x?k=1";
  s.notify.on = {JobState::kFailed, JobState::kCancelled};
  auto back = specFromJson(specToJson(s));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->notify, s.notify);
  // Without notify the spec's JSON has no such key, as before.
  EXPECT_FALSE(specToJson(JobSpec{}).contains("notify"));
}

TEST(SpecCodec, RejectsWebhooksThatAreNotHttpUrls) {
  for (const char* url : {"ftp://x.org/a", "hooks.example.org", "https://", "http://a b/",
                          "https://user:pw@x.org/", "file:///etc/passwd"}) {
    auto r = specFromJson(Json{{"command", {"true"}}, {"notify", {{"webhook", url}}}});
    ASSERT_FALSE(r.isOk()) << url;
    EXPECT_EQ(r.status().field(), "notify.webhook") << url;
  }
  auto bad_state = specFromJson(
      Json{{"command", {"true"}}, {"notify", {{"webhook", "http://h/"}, {"on", {"running"}}}}});
  ASSERT_FALSE(bad_state.isOk());
  EXPECT_EQ(bad_state.status().field(), "notify.on");
  auto unknown = specFromJson(Json{{"command", {"true"}}, {"notify", {{"url", "http://h/"}}}});
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().toString().find("notify.url"), std::string::npos);
}

TEST(SpecCodec, RoundTripsAShareOfOneGpu) {
  JobSpec s;
  s.command = {"python3"};
  s.resources.gpus = Quantity::fromMilli(250);
  auto back = specFromJson(specToJson(s));
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back->resources.gpus, Quantity::fromMilli(250));
  std::vector<ReplicaPlacement> p = {{"local", {2}, 250}, {"local", {0, 1}, 1000}};
  EXPECT_EQ(placementFromJson(placementToJson(p)).value(), p);
}

TEST(SpecCodec, RejectsUnknownFieldsByName) {
  auto j = parseBody(R"({"command":["true"],"resources":{"gpu":2}})", false);
  ASSERT_TRUE(j.isOk());
  auto s = specFromJson(*j);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().field(), "resources.gpu");
}

TEST(SpecCodec, NamesWrongTypes) {
  auto s = specFromJson(Json::parse(R"({"command":"true","replicas":"two"})"));
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().field(), "replicas");
  s = specFromJson(Json::parse(R"({"command":["true"],"max_runtime":"soon"})"));
  EXPECT_EQ(s.status().field(), "max_runtime");
  s = specFromJson(Json::parse(R"({"command":["true"],"resources":{"memory":"16GB"}})"));
  EXPECT_EQ(s.status().field(), "resources.memory");
}

TEST(SpecCodec, RejectsDurationsThatWouldOverflow) {
  auto s = specFromJson(Json::parse(R"({"command":["true"],"grace_period":9300000000000000})"));
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().field(), "grace_period");
}

TEST(SpecCodec, AcceptsYaml) {
  auto j = parseBody(
      "name: t\ncommand: [python3, x.py]\nresources:\n  gpus: 2\n  memory: 1Gi\n"
      "max_runtime: 2h\nenv:\n  SEED: 42\n",
      true);
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  auto s = specFromJson(*j);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s->resources.gpus, Quantity::whole(2));
  EXPECT_EQ(s->max_runtime, 7'200'000);
  EXPECT_EQ(s->env.at("SEED"), "42");
}

TEST(SpecCodec, RejectsMalformedAndDeepBodies) {
  EXPECT_FALSE(parseBody("{", false).isOk());
  EXPECT_FALSE(parseBody("", false).isOk());
  EXPECT_FALSE(parseBody(std::string(100, '[') + std::string(100, ']'), false).isOk());
  EXPECT_FALSE(parseBody("a: [", true).isOk());
}

TEST(SpecCodec, MalformedBodyErrorNeverEchoesItsText) {
  // A body cut off inside a password must not come back in the error.
  auto r = parseBody(R"({"user":"bob","password":"s3cret-pass)", false);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("malformed JSON"), std::string::npos);
  EXPECT_EQ(r.status().message().find("s3cret"), std::string::npos) << r.status().message();
}

TEST(SpecCodec, RejectsYamlAliasBombs) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'h'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = c;
  }
  auto j = parseBody(bomb, true);
  ASSERT_FALSE(j.isOk());
  EXPECT_NE(j.status().message().find("aliases"), std::string::npos);
}

TEST(ErrorShape, HasCodeMessageAndField) {
  Json e = errorToJson(Status::invalidArgument("bad", "resources.gpus"));
  EXPECT_EQ(e["error"]["code"], "invalid_argument");
  EXPECT_EQ(e["error"]["field"], "resources.gpus");
}

}  // namespace
}  // namespace ty
