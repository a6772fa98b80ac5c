// WebhookNotifier against a real HTTP receiver on loopback. Time is a
// ManualClock: a retry is due when the test moves the clock, never after a
// sleep; scan() and deliverDue() are called directly.
#include "server/webhook_notifier.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "codec/job_codec.h"
#include "common/temp_dir_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace ty {
namespace {

constexpr Timestamp kStart = 1'800'000'000'000;

// One request as the receiver saw it.
struct Received {
  std::string path;
  std::string body;
  httplib::Headers headers;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// An HTTP server on 127.0.0.1 that answers POSTs with scripted statuses
// (200 once the script runs out) and remembers every request.
class Receiver {
 public:
  Receiver() {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      received_.push_back({req.path, req.body, req.headers});
      int status = 200;
      if (!script_.empty()) {
        status = script_.front();
        script_.pop_front();
      }
      res.status = status;
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    // The socket listens from here on; connections wait in its backlog
    // until the accept loop runs.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  void answer(std::initializer_list<int> statuses) {
    std::lock_guard lock(mu_);
    script_.insert(script_.end(), statuses);
  }
  std::vector<Received> received() {
    std::lock_guard lock(mu_);
    return received_;
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::deque<int> script_;
  std::vector<Received> received_;
};

class WebhookNotifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    openStore();
    ASSERT_TRUE(store_->createProject({"ml", 1}).isOk());
    options_.initial_backoff = 5'000;
    options_.max_backoff = 20'000;
    options_.max_attempts = 4;
    options_.timeout = 5'000;
    options_.api_url = "http://trainyard.example:8080";
  }
  void TearDown() override { store_.reset(); }
  void openStore() {
    store_.reset();
    auto s = openSqliteStore((dir_ / "store.db").string());
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    store_ = std::move(s).value();
  }
  std::unique_ptr<WebhookNotifier> notifier() {
    return std::make_unique<WebhookNotifier>(*store_, clock_, options_);
  }

  // A job of project "ml" that ended in `state` just now.
  JobId finishedJob(JobState state, const std::string& webhook, std::vector<JobState> on = {}) {
    std::vector<Job> jobs(1);
    Job& j = jobs[0];
    j.spec.name = "train";
    j.spec.project = "ml";
    j.spec.command = {"false"};
    j.spec.notify.webhook = webhook;
    j.spec.notify.on = std::move(on);
    j.user = "alice";
    j.created_at = clock_.now() - 60'000;
    EXPECT_TRUE(store_->createJobs(jobs, {}).isOk());
    j.state = state;
    j.started_at = clock_.now() - 30'000;
    j.finished_at = j.updated_at = clock_.now();
    j.exit_code = state == JobState::kFailed ? std::optional<int>(3) : std::optional<int>(0);
    j.reason = state == JobState::kFailed ? "exited with code 3" : "";
    WriteBatch b;
    b.jobs.push_back(j);
    EXPECT_TRUE(store_->apply(b).isOk());
    return j.id;
  }
  std::vector<WebhookDelivery> deliveries(JobId job) {
    auto d = store_->webhookDeliveries(job);
    EXPECT_TRUE(d.isOk()) << d.status().toString();
    return d.isOk() ? *d : std::vector<WebhookDelivery>{};
  }
  std::vector<Event> events(JobId job) {
    auto e = store_->events(job);
    EXPECT_TRUE(e.isOk()) << e.status().toString();
    return e.isOk() ? *e : std::vector<Event>{};
  }
  int deliverDue(WebhookNotifier& n) {
    auto tried = n.deliverDue();
    EXPECT_TRUE(tried.isOk()) << tried.status().toString();
    return tried.isOk() ? *tried : -1;
  }
  int scan(WebhookNotifier& n) {
    auto added = n.scan();
    EXPECT_TRUE(added.isOk()) << added.status().toString();
    return added.isOk() ? *added : -1;
  }

  ::ty::testing::TempDir dir_{"ty_webhook_"};
  std::unique_ptr<Store> store_;
  ManualClock clock_{kStart};
  WebhookOptions options_;
  Receiver receiver_;
};

TEST_F(WebhookNotifierTest, RetriesWithBackoffThenDelivers) {
  receiver_.answer({500, 503});
  JobId job = finishedJob(JobState::kFailed, receiver_.url("/hook?k=1"));
  auto n = notifier();
  EXPECT_EQ(scan(*n), 1);
  EXPECT_EQ(scan(*n), 0);  // the row exists: a second scan adds nothing

  EXPECT_EQ(deliverDue(*n), 1);
  std::vector<WebhookDelivery> d = deliveries(job);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].attempts, 1);
  EXPECT_TRUE(d[0].pending());
  EXPECT_EQ(d[0].last_error, "500 Internal Server Error");
  // Backoff after one failure: 5s less up to a fifth of jitter.
  EXPECT_GE(d[0].next_attempt_at, kStart + 4'000);
  EXPECT_LE(d[0].next_attempt_at, kStart + 5'000);
  EXPECT_EQ(deliverDue(*n), 0);  // not due yet

  clock_.advance(5'000);
  EXPECT_EQ(deliverDue(*n), 1);
  d = deliveries(job);
  EXPECT_EQ(d[0].attempts, 2);
  EXPECT_EQ(d[0].last_error, "503 Service Unavailable");
  EXPECT_GE(d[0].next_attempt_at, clock_.now() + 8'000);  // 10s less up to a fifth

  clock_.advance(10'000);
  EXPECT_EQ(deliverDue(*n), 1);
  d = deliveries(job);
  EXPECT_EQ(d[0].attempts, 3);
  EXPECT_EQ(d[0].delivered_at, clock_.now());
  EXPECT_EQ(d[0].last_error, "");
  clock_.advance(60'000);
  EXPECT_EQ(deliverDue(*n), 0);

  // Three POSTs of one body, with one delivery id.
  std::vector<Received> got = receiver_.received();
  ASSERT_EQ(got.size(), 3u);
  for (const Received& r : got) {
    EXPECT_EQ(r.path, "/hook");
    EXPECT_EQ(r.body, got[0].body);
    EXPECT_EQ(r.header("X-Trainyard-Event"), "job.failed");
    EXPECT_EQ(r.header("X-Trainyard-Delivery"), got[0].header("X-Trainyard-Delivery"));
    EXPECT_EQ(r.header("Content-Type"), "application/json");
    EXPECT_EQ(r.header("User-Agent"), "trainyard/0.1.0");
    EXPECT_EQ(r.header("X-Trainyard-Signature"), "");  // no secret configured
  }
  Json body = Json::parse(got[0].body);
  EXPECT_EQ(body["event"], "job.failed");
  EXPECT_EQ(body["delivery"], got[0].header("X-Trainyard-Delivery"));
  EXPECT_EQ(body["job"]["id"], job.value());
  EXPECT_EQ(body["job"]["project"], "ml");
  EXPECT_EQ(body["job"]["user"], "alice");
  EXPECT_EQ(body["job"]["state"], "failed");
  EXPECT_EQ(body["job"]["exit_code"], 3);
  EXPECT_EQ(body["job"]["reason"], "exited with code 3");
  EXPECT_EQ(body["job"]["finished_at"], formatTimestamp(kStart));
  EXPECT_EQ(body["job"]["url"],
            "http://trainyard.example:8080/api/v1/jobs/" + std::to_string(job.value()));

  // One event, for the outcome; the URL's path (often a secret) is left out.
  std::vector<Event> ev = events(job);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].reason, "WebhookDelivered");
  EXPECT_EQ(ev[0].message,
            "Webhook job.failed delivered to " + receiver_.url("/…") + " after 3 attempts");
}

TEST_F(WebhookNotifierTest, AClientErrorGivesUpAtOnce) {
  receiver_.answer({410});
  JobId job = finishedJob(JobState::kFailed, receiver_.url("/gone"));
  auto n = notifier();
  EXPECT_EQ(scan(*n), 1);
  EXPECT_EQ(deliverDue(*n), 1);
  std::vector<WebhookDelivery> d = deliveries(job);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].attempts, 1);
  EXPECT_EQ(d[0].given_up_at, kStart);
  EXPECT_EQ(d[0].last_error, "410 Gone");
  clock_.advance(3'600'000);
  EXPECT_EQ(deliverDue(*n), 0);
  EXPECT_EQ(receiver_.received().size(), 1u);
  std::vector<Event> ev = events(job);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].level, EventLevel::kWarning);
  EXPECT_EQ(ev[0].reason, "WebhookFailed");
  EXPECT_EQ(ev[0].message,
            "Webhook job.failed to " + receiver_.url("/…") + " given up after 1 attempt: 410 Gone");
}

TEST_F(WebhookNotifierTest, TooManyRequestsIsRetriedAndAttemptsRunOut) {
  receiver_.answer({429, 500, 500, 500, 500});
  JobId job = finishedJob(JobState::kFailed, receiver_.url("/busy"));
  auto n = notifier();
  EXPECT_EQ(scan(*n), 1);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(deliverDue(*n), 1) << i;
    clock_.advance(options_.max_backoff);
  }
  EXPECT_EQ(deliverDue(*n), 0);
  std::vector<WebhookDelivery> d = deliveries(job);
  EXPECT_EQ(d[0].attempts, 4);
  EXPECT_NE(d[0].given_up_at, 0);
  EXPECT_EQ(receiver_.received().size(), 4u);
  EXPECT_EQ(events(job).back().message, "Webhook job.failed to " + receiver_.url("/…") +
                                            " given up after 4 attempts: "
                                            "500 Internal Server Error");
}

TEST_F(WebhookNotifierTest, AnUnreachableReceiverIsRetried) {
  // A port nobody listens on: bound (never listened on), then closed, so a
  // connection is refused at once.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x";
  ::close(fd);
  JobId job = finishedJob(JobState::kFailed, url);
  auto n = notifier();
  EXPECT_EQ(scan(*n), 1);
  EXPECT_EQ(deliverDue(*n), 1);
  std::vector<WebhookDelivery> d = deliveries(job);
  EXPECT_TRUE(d[0].pending());
  EXPECT_EQ(d[0].attempts, 1);
  EXPECT_FALSE(d[0].last_error.empty());
}

TEST_F(WebhookNotifierTest, ARestartResumesWhatWasOwedAndResendsNothingDelivered) {
  receiver_.answer({500});
  JobId pending = finishedJob(JobState::kFailed, receiver_.url("/a"));
  JobId delivered = finishedJob(JobState::kSucceeded, receiver_.url("/b"));
  {
    auto n = notifier();
    EXPECT_EQ(scan(*n), 2);
    EXPECT_EQ(deliverDue(*n), 2);  // /a answers 500, /b 200
  }
  // A job that finished while the server was down (or before its first
  // scan after the crash) is found by the next scan too.
  JobId late = finishedJob(JobState::kCancelled, receiver_.url("/c"));
  openStore();  // a new process over the same file
  auto n = notifier();
  EXPECT_EQ(scan(*n), 1);
  clock_.advance(options_.max_backoff);
  EXPECT_EQ(deliverDue(*n), 2);
  EXPECT_EQ(deliveries(pending)[0].attempts, 2);
  EXPECT_NE(deliveries(pending)[0].delivered_at, 0);
  EXPECT_NE(deliveries(late)[0].delivered_at, 0);
  EXPECT_EQ(deliveries(delivered)[0].attempts, 1);
  std::map<std::string, int> per_path;
  for (const Received& r : receiver_.received()) ++per_path[r.path];
  EXPECT_EQ(per_path, (std::map<std::string, int>{{"/a", 2}, {"/b", 1}, {"/c", 1}}));
}

TEST_F(WebhookNotifierTest, ProjectWebhookAndTheJobsOnFilter) {
  ASSERT_TRUE(store_->setProjectWebhook("ml", receiver_.url("/project")).isOk());
  // Asked only on failure: the job's own URL stays quiet, the project's not.
  JobId ok = finishedJob(JobState::kSucceeded, receiver_.url("/job"), {JobState::kFailed});
  JobId plain = finishedJob(JobState::kCancelled, "");
  auto n = notifier();
  EXPECT_EQ(scan(*n), 2);
  EXPECT_EQ(deliverDue(*n), 2);
  ASSERT_EQ(deliveries(ok).size(), 1u);
  EXPECT_EQ(deliveries(ok)[0].url, receiver_.url("/project"));
  EXPECT_EQ(deliveries(ok)[0].event, "job.succeeded");
  ASSERT_EQ(deliveries(plain).size(), 1u);
  EXPECT_EQ(deliveries(plain)[0].event, "job.cancelled");
  for (const Received& r : receiver_.received()) EXPECT_EQ(r.path, "/project");
}

TEST_F(WebhookNotifierTest, SignsTheBodyWhenASecretIsSet) {
  options_.secret = "s3cret";
  JobId job = finishedJob(JobState::kFailed, receiver_.url("/signed"));
  auto n = notifier();
  EXPECT_EQ(scan(*n), 1);
  EXPECT_EQ(deliverDue(*n), 1);
  std::vector<Received> got = receiver_.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].header("X-Trainyard-Signature"), webhookSignature("s3cret", got[0].body));
  EXPECT_NE(got[0].header("X-Trainyard-Signature"), webhookSignature("other", got[0].body));
  EXPECT_NE(deliveries(job)[0].delivered_at, 0);
  // RFC 4231-style known answer, so receivers in other languages agree.
  EXPECT_EQ(webhookSignature("key", "The quick brown fox jumps over the lazy dog"),
            "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
}

TEST_F(WebhookNotifierTest, PrivateTargetsAreRefusedWhenTheConfigSaysSo) {
  options_.allow_private_targets = false;
  JobId job = finishedJob(JobState::kFailed, receiver_.url("/inside"));
  auto n = notifier();
  EXPECT_EQ(scan(*n), 1);
  EXPECT_EQ(deliverDue(*n), 1);
  std::vector<WebhookDelivery> d = deliveries(job);
  EXPECT_NE(d[0].given_up_at, 0);
  EXPECT_NE(d[0].last_error.find("private or loopback"), std::string::npos) << d[0].last_error;
  EXPECT_TRUE(receiver_.received().empty());
}

TEST_F(WebhookNotifierTest, OldJobsAreNotAnnouncedOnTheFirstScan) {
  JobId old = finishedJob(JobState::kFailed, receiver_.url("/old"));
  clock_.advance(24 * 3'600'000LL);
  auto n = notifier();
  EXPECT_EQ(scan(*n), 0);
  EXPECT_TRUE(deliveries(old).empty());
}

TEST(WebhookBackoff, DoublesWithJitterUpToTheCap) {
  WebhookOptions o;
  o.initial_backoff = 5'000;
  o.max_backoff = 600'000;
  Rng rng(1);
  const DurationMs want[] = {5'000,   10'000,  20'000,  40'000, 80'000,
                             160'000, 320'000, 600'000, 600'000};
  for (int failed = 1; failed <= 9; ++failed) {
    DurationMs d = webhookBackoff(o, failed, rng);
    EXPECT_LE(d, want[failed - 1]) << failed;
    EXPECT_GE(d, want[failed - 1] - want[failed - 1] / 5) << failed;
  }
  EXPECT_EQ(webhookBackoff(o, 1000, rng) <= 600'000, true);
}

TEST(WebhookOptions, AreChecked) {
  WebhookOptions o;
  EXPECT_TRUE(validateWebhookOptions(o).isOk());
  o.max_attempts = 0;
  EXPECT_EQ(validateWebhookOptions(o).field(), "webhooks.max_attempts");
  o = {};
  o.max_backoff = 1'000;
  EXPECT_EQ(validateWebhookOptions(o).field(), "webhooks.max_backoff");
}

TEST(WebhookUrl, IsRedactedToItsOrigin) {
  EXPECT_EQ(redactWebhookUrl("https://hooks.slack.com/services/T0/B0/secret"),
            "https://hooks.slack.com/…");
  EXPECT_EQ(redactWebhookUrl("http://[::1]:9000"), "http://[::1]:9000/");
}

}  // namespace
}  // namespace ty
