#include "server/webhook_notifier.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sodium.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "codec/job_codec.h"

namespace ty {

namespace {

// Jobs are scanned from the watermark less this much, so that a job whose
// finish was committed a little after a scan read past its finished_at is
// still found. Rescanning is cheap: jobs with a delivery row are skipped by
// the store.
constexpr DurationMs kLateCommitWindow = 5 * 60'000;
// The watermark is written at least this often when there is nothing else
// to write, so that an idle server does not write every poll.
constexpr DurationMs kWatermarkStep = 60'000;
constexpr int kScanLimit = 500;
constexpr int kDueLimit = 100;

// The parts of an http(s) URL that httplib wants apart.
struct Target {
  std::string origin;  // "https://host:port"
  std::string host;    // without brackets
  std::string path;    // "/x?y", at least "/"
};

Result<Target> parseTarget(const std::string& url) {
  TY_RETURN_IF_ERROR(checkWebhookUrl(url, "url"));
  size_t scheme_end = url.find("://") + 3;
  size_t path_start = url.find_first_of("/?#", scheme_end);
  std::string authority = url.substr(scheme_end, path_start - scheme_end);
  Target t;
  t.origin = url.substr(0, scheme_end) + authority;
  t.path = path_start == std::string::npos ? "/" : url.substr(path_start);
  if (t.path.empty() || t.path[0] != '/') t.path = "/" + t.path;
  if (size_t hash = t.path.find('#'); hash != std::string::npos) t.path.resize(hash);
  if (!authority.empty() && authority[0] == '[') {
    t.host = authority.substr(1, authority.find(']') - 1);
  } else {
    t.host = authority.substr(0, authority.find(':'));
  }
  return t;
}

bool privateV4(std::uint32_t a) {  // host byte order
  auto in = [a](std::uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
  return in(0x00000000, 8) || in(0x0a000000, 8) || in(0x7f000000, 8) || in(0xa9fe0000, 16) ||
         in(0xac100000, 12) || in(0xc0a80000, 16) || in(0x64400000, 10);
}

bool privateV6(const in6_addr& a) {
  const unsigned char* b = a.s6_addr;
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b, kMapped, 12) == 0) {
    return privateV4((std::uint32_t{b[12]} << 24) | (b[13] << 16) | (b[14] << 8) | b[15]);
  }
  bool unspecified_or_loopback =
      std::all_of(b, b + 15, [](unsigned char c) { return c == 0; }) && (b[15] == 0 || b[15] == 1);
  return unspecified_or_loopback || (b[0] & 0xfe) == 0xfc ||
         (b[0] == 0xfe && (b[1] & 0xc0) == 0x80);
}

// Ok when every address `host` resolves to is public. The check happens just
// before the POST; a name that resolves differently a moment later (DNS
// rebinding) is not caught, which docs/configuration.md says.
Status checkPublicHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    return Status::unavailable("cannot resolve " + host + ": " + gai_strerror(rc));
  }
  bool is_private = false;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      is_private = is_private ||
                   privateV4(ntohl(reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr));
    } else if (a->ai_family == AF_INET6) {
      is_private = is_private || privateV6(reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    }
  }
  freeaddrinfo(found);
  if (is_private) {
    return Status::permissionDenied(host +
                                    " is a private or loopback address, which "
                                    "webhooks.allow_private_targets forbids");
  }
  return Status::ok();
}

const char* reasonPhrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 410:
      return "Gone";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

std::string statusText(int status) {
  std::string phrase = reasonPhrase(status);
  return std::to_string(status) + (phrase.empty() ? "" : " " + phrase);
}

Json timeOrNull(Timestamp t) { return t == 0 ? Json(nullptr) : Json(formatTimestamp(t)); }

std::string deliveryId(const WebhookDelivery& d) {
  return std::to_string(d.job.value()) + "-" + std::to_string(d.id);
}

std::string attemptsText(int n) { return std::to_string(n) + (n == 1 ? " attempt" : " attempts"); }

}  // namespace

Status validateWebhookOptions(const WebhookOptions& o) {
  if (o.max_attempts < 1 || o.max_attempts > 100) {
    return Status::invalidArgument("must be 1..100", "webhooks.max_attempts");
  }
  if (o.initial_backoff < 100) {
    return Status::invalidArgument("must be at least 100ms, such as 5s",
                                   "webhooks.initial_backoff");
  }
  if (o.max_backoff < o.initial_backoff) {
    return Status::invalidArgument("must be at least initial_backoff", "webhooks.max_backoff");
  }
  if (o.timeout < 1000 || o.timeout > 300'000) {
    return Status::invalidArgument("must be between 1s and 5m", "webhooks.timeout");
  }
  return Status::ok();
}

DurationMs webhookBackoff(const WebhookOptions& o, int failed, Rng& rng) {
  DurationMs delay = o.initial_backoff;
  for (int i = 1; i < failed && delay < o.max_backoff; ++i) delay *= 2;
  delay = std::min(delay, o.max_backoff);
  return delay - static_cast<DurationMs>(rng.below(static_cast<std::uint64_t>(delay / 5) + 1));
}

std::string webhookSignature(const std::string& secret, const std::string& body) {
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(secret.data()),
                              secret.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(body.data()),
                                body.size());
  crypto_auth_hmacsha256_final(&state, mac);
  static const char kHex[] = "0123456789abcdef";
  std::string out = "sha256=";
  for (unsigned char c : mac) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string webhookPayload(const Job& job, const WebhookDelivery& d, const std::string& api_url) {
  Json j = {
      {"id", job.id.value()},
      {"name", job.spec.name},
      {"project", job.spec.project},
      {"user", job.user},
      {"state", jobStateName(job.state)},
      {"reason", job.reason},
      {"exit_code", job.exit_code ? Json(*job.exit_code) : Json(nullptr)},
      {"attempts", job.attempts},
      {"submitted_at", timeOrNull(job.created_at)},
      {"started_at", timeOrNull(job.started_at)},
      {"finished_at", timeOrNull(job.finished_at)},
      {"url", api_url + "/api/v1/jobs/" + std::to_string(job.id.value())},
  };
  Json body = {{"event", d.event}, {"delivery", deliveryId(d)}, {"job", j}};
  // Invalid UTF-8 in a name or reason is replaced rather than thrown on.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string redactWebhookUrl(const std::string& url) {
  Result<Target> t = parseTarget(url);
  if (!t.isOk()) return "(invalid URL)";
  return t->origin + (t->path == "/" ? "/" : "/…");
}

WebhookNotifier::WebhookNotifier(Store& store, const Clock& clock, WebhookOptions options,
                                 std::uint64_t seed)
    : store_(store), clock_(clock), options_(std::move(options)), rng_(seed) {}

WebhookNotifier::~WebhookNotifier() { stop(); }

Result<int> WebhookNotifier::scan() {
  const Timestamp now = clock_.now();
  TY_ASSIGN_OR_RETURN(Timestamp watermark, store_.webhookWatermark());
  // The first scan of a store looks back one window only: jobs that finished
  // before webhooks existed are not announced.
  const Timestamp since = (watermark == 0 ? now : watermark) - kLateCommitWindow;
  TY_ASSIGN_OR_RETURN(std::vector<Job> jobs, store_.jobsAwaitingWebhook(since, kScanLimit));
  std::map<std::string, std::string> project_urls;  // this scan's reads
  std::vector<WebhookDelivery> rows;
  for (const Job& job : jobs) {
    std::vector<std::string> urls;
    const NotifySpec& n = job.spec.notify;
    if (!n.webhook.empty() &&
        (n.on.empty() || std::find(n.on.begin(), n.on.end(), job.state) != n.on.end())) {
      urls.push_back(n.webhook);
    }
    auto cached = project_urls.find(job.spec.project);
    if (cached == project_urls.end()) {
      Result<Project> p = store_.getProject(job.spec.project);
      if (!p.isOk() && p.status().code() != StatusCode::kNotFound) return p.status();
      cached = project_urls.emplace(job.spec.project, p.isOk() ? p->webhook_url : "").first;
    }
    if (!cached->second.empty() &&
        std::find(urls.begin(), urls.end(), cached->second) == urls.end()) {
      urls.push_back(cached->second);
    }
    for (const std::string& url : urls) {
      WebhookDelivery d;
      d.job = job.id;
      d.url = url;
      d.event = std::string("job.") + jobStateName(job.state);
      d.created_at = now;
      d.next_attempt_at = now;
      rows.push_back(std::move(d));
    }
  }
  // When the page was full, the watermark moves only to the last job read,
  // so that the rest are found by the next scan.
  Timestamp mark = now;
  if (static_cast<int>(jobs.size()) == kScanLimit) mark = std::min(now, jobs.back().finished_at);
  if (rows.empty() && mark - watermark < kWatermarkStep) return 0;
  TY_RETURN_IF_ERROR(store_.addWebhookDeliveries(rows, std::max(mark, watermark)));
  return static_cast<int>(rows.size());
}

WebhookNotifier::Outcome WebhookNotifier::post(const WebhookDelivery& d, const std::string& body) {
  Result<Target> target = parseTarget(d.url);
  if (!target.isOk()) return {false, false, target.status().message()};
  if (!options_.allow_private_targets) {
    Status pub = checkPublicHost(target->host);
    if (!pub.isOk()) return {false, pub.code() == StatusCode::kUnavailable, pub.message()};
  }
  httplib::Client client(target->origin);
  if (!client.is_valid()) return {false, false, "cannot make a client for " + target->origin};
  auto seconds = [](DurationMs ms) { return std::chrono::milliseconds(ms); };
  client.set_connection_timeout(seconds(options_.timeout));
  client.set_read_timeout(seconds(options_.timeout));
  client.set_write_timeout(seconds(options_.timeout));
  client.set_keep_alive(false);
  httplib::Headers headers = {
      {"User-Agent", "trainyard/" + options_.version},
      {"X-Trainyard-Event", d.event},
      {"X-Trainyard-Delivery", deliveryId(d)},
  };
  if (!options_.secret.empty()) {
    headers.emplace("X-Trainyard-Signature", webhookSignature(options_.secret, body));
  }
  httplib::Result res = client.Post(target->path, headers, body, "application/json");
  if (!res) return {false, true, httplib::to_string(res.error())};
  int status = res->status;
  if (status >= 200 && status < 300) return {true, false, ""};
  // 408 and 429 ask to come back later, 5xx is the receiver's trouble;
  // every other answer is a refusal that a retry would only repeat.
  bool retry = status == 408 || status == 429 || status >= 500;
  std::string error = statusText(status);
  if (status >= 300 && status < 400) error += " (redirects are not followed)";
  return {false, retry, error};
}

Status WebhookNotifier::deliver(WebhookDelivery d) {
  Result<Job> job = store_.getJob(d.job);
  Outcome out;
  if (job.isOk()) {
    out = post(d, webhookPayload(*job, d, options_.api_url));
  } else if (job.status().code() == StatusCode::kNotFound) {
    out = {false, false, "the job no longer exists"};
  } else {
    return job.status();  // try again on the next pass; no attempt was made
  }
  const Timestamp now = clock_.now();
  ++d.attempts;
  std::vector<Event> events;
  Event e;
  e.job = d.job;
  e.time = now;
  const std::string where = redactWebhookUrl(d.url);
  if (out.ok) {
    d.delivered_at = now;
    d.last_error.clear();
    e.reason = "WebhookDelivered";
    e.message =
        "Webhook " + d.event + " delivered to " + where + " after " + attemptsText(d.attempts);
    events.push_back(e);
    spdlog::info("job {}: {}", d.job.value(), e.message);
  } else if (!out.retry || d.attempts >= options_.max_attempts) {
    d.given_up_at = now;
    d.last_error = out.error;
    e.level = EventLevel::kWarning;
    e.reason = "WebhookFailed";
    e.message = "Webhook " + d.event + " to " + where + " given up after " +
                attemptsText(d.attempts) + ": " + out.error;
    events.push_back(e);
    spdlog::warn("job {}: {}", d.job.value(), e.message);
  } else {
    d.last_error = out.error;
    d.next_attempt_at = now + webhookBackoff(options_, d.attempts, rng_);
    spdlog::info("job {}: webhook to {} failed ({}), attempt {} of {}; next in {}", d.job.value(),
                 where, out.error, d.attempts, options_.max_attempts,
                 formatDuration(d.next_attempt_at - now));
  }
  if (!job.isOk()) events.clear();  // no job to hang the event on
  return store_.updateWebhookDelivery(d, events);
}

Result<int> WebhookNotifier::deliverDue() {
  TY_ASSIGN_OR_RETURN(std::vector<WebhookDelivery> due,
                      store_.dueWebhookDeliveries(clock_.now(), kDueLimit));
  int tried = 0;
  for (const WebhookDelivery& d : due) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    TY_RETURN_IF_ERROR(deliver(d));
    ++tried;
  }
  return tried;
}

void WebhookNotifier::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void WebhookNotifier::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WebhookNotifier::run() {
  while (true) {
    // Errors are logged and the pass repeated later: rows in the store keep
    // what is owed, so nothing is lost by waiting.
    if (Result<int> added = scan(); !added.isOk()) {
      spdlog::warn("webhooks: scan: {}", added.status().toString());
    }
    if (Result<int> tried = deliverDue(); !tried.isOk()) {
      spdlog::warn("webhooks: deliver: {}", tried.status().toString());
    }
    std::unique_lock lock(mu_);
    if (wake_.wait_for(lock, std::chrono::milliseconds(options_.poll_interval),
                       [this] { return stopping_; })) {
      return;
    }
  }
}

}  // namespace ty
