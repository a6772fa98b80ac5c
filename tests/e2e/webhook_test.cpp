// Webhooks end to end: the real server POSTs to a receiver on loopback when
// a job with notify.webhook fails, and when a job of a project with a
// webhook_url succeeds; and a POST still owed when the server is killed is
// sent after the restart.
#include <httplib.h>

#include <mutex>
#include <thread>

#include "harness.h"

namespace ty::e2e {
namespace {

// An HTTP receiver on 127.0.0.1 that remembers every POST and answers 200
// (or, while `failing` is set, 503).
class Receiver {
 public:
  struct Hit {
    std::string path;
    std::string event;
    std::string delivery;
    Json body;
  };
  Receiver() {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      hits_.push_back({req.path, req.get_header_value("X-Trainyard-Event"),
                       req.get_header_value("X-Trainyard-Delivery"),
                       Json::parse(req.body, nullptr, false)});
      res.status = failing_ ? 503 : 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<Hit> hits() {
    std::lock_guard lock(mu_);
    return hits_;
  }
  std::vector<Hit> hitsOn(const std::string& path) {
    std::vector<Hit> out;
    for (const Hit& h : hits()) {
      if (h.path == path) out.push_back(h);
    }
    return out;
  }
  void setFailing(bool failing) {
    std::lock_guard lock(mu_);
    failing_ = failing;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Hit> hits_;
  bool failing_ = false;
};

class WebhookTest : public E2eTest {
 protected:
  // The job's events mention the outcome once it is recorded.
  bool waitForEvent(std::int64_t id, const std::string& needle, Millis deadline = 20s) {
    return waitFor([&] { return anyContains(api().eventLines(id), needle); }, deadline, 50ms);
  }
  Receiver receiver_;
};

TEST_F(WebhookTest, AFailedJobWithNotifyWebhookIsPostedOnce) {
  Json spec = scriptJob("exit 3");
  spec["notify"] = {{"webhook", receiver_.url("/failed")}, {"on", {"failed"}}};
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  Json done = api().waitDone(id);
  ASSERT_EQ(done["state"], "failed") << done.dump();
  ASSERT_TRUE(waitForEvent(id, "WebhookDelivered")) << joinLines(api().eventLines(id));
  std::vector<Receiver::Hit> hits = receiver_.hitsOn("/failed");
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].event, "job.failed");
  EXPECT_EQ(hits[0].body["event"], "job.failed");
  EXPECT_EQ(hits[0].body["job"]["id"], id);
  EXPECT_EQ(hits[0].body["job"]["state"], "failed");
  EXPECT_EQ(hits[0].body["job"]["exit_code"], 3);
  EXPECT_EQ(hits[0].body["job"]["url"], server_->url() + "/api/v1/jobs/" + std::to_string(id));
  EXPECT_FALSE(hits[0].delivery.empty());
}

TEST_F(WebhookTest, AProjectWebhookFiresForASucceededJob) {
  ASSERT_TRUE(ensureProject(api(), "hooked"));
  HttpResult set = api().request("PATCH", "/api/v1/projects/hooked",
                                 Json({{"webhook_url", receiver_.url("/project")}}).dump());
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json["webhook_url"], receiver_.url("/project"));
  // A URL that is not http(s) is refused, naming the field.
  HttpResult bad = api().request("PATCH", "/api/v1/projects/hooked",
                                 Json({{"webhook_url", "ftp://x.example/"}}).dump());
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.json["error"]["field"], "webhook_url") << bad.body;

  Json spec = scriptJob("echo ok");
  spec["project"] = "hooked";
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  ASSERT_EQ(api().waitDone(id)["state"], "succeeded");
  ASSERT_TRUE(waitForEvent(id, "WebhookDelivered")) << joinLines(api().eventLines(id));
  std::vector<Receiver::Hit> hits = receiver_.hitsOn("/project");
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].event, "job.succeeded");
  EXPECT_EQ(hits[0].body["job"]["id"], id);
  EXPECT_EQ(hits[0].body["job"]["project"], "hooked");
}

TEST_F(WebhookTest, AJobSpecWithABadWebhookIsRefused) {
  Json spec = scriptJob("true");
  spec["notify"] = {{"webhook", "hooks.example.org/x"}};
  HttpResult res = api().post("/api/v1/jobs", spec.dump());
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_EQ(res.json["error"]["field"], "notify.webhook") << res.body;
}

TEST_F(WebhookTest, APostOwedWhenTheServerIsKilledIsSentAfterTheRestart) {
  receiver_.setFailing(true);
  Json spec = scriptJob("exit 1");
  spec["notify"] = {{"webhook", receiver_.url("/owed")}};
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  ASSERT_EQ(api().waitDone(id)["state"], "failed");
  // The first attempt was refused (503): the delivery row is in the store.
  ASSERT_TRUE(waitFor([&] { return !receiver_.hitsOn("/owed").empty(); }, 20s, 50ms));
  server_->kill();
  receiver_.setFailing(false);
  ASSERT_TRUE(server_->start());
  // The retry after the default 5s backoff delivers it.
  ASSERT_TRUE(waitForEvent(id, "after 2 attempts", 30s)) << joinLines(api().eventLines(id));
  std::vector<Receiver::Hit> hits = receiver_.hitsOn("/owed");
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].delivery, hits[1].delivery);  // one delivery, sent twice
}

}  // namespace
}  // namespace ty::e2e
