// WebhookNotifier: tells HTTP(S) endpoints when jobs finish.
//
// Where a POST is owed comes from two places: a job's own
// `notify.webhook` (filtered by `notify.on`) and its project's
// `webhook_url`. The notifier never touches the scheduler: it finds
// finished jobs in the store (Store::jobsAwaitingWebhook, from a watermark
// kept in the store minus a window for late commits), writes one delivery
// row per (job, URL) before it sends anything, and then works through the
// due rows from its own thread. A crash at any moment therefore loses no
// notification: rows not yet written are found again by the next scan (the
// watermark only moves after the rows are committed), rows written but not
// yet marked delivered are sent again. Delivery is at-least-once; receivers
// dedupe on the X-Trainyard-Delivery header, which is the same on every
// retry of one delivery.
//
// Retries: a failed POST (no answer, a timeout, 408, 429, 5xx) is tried
// again after an exponential backoff with jitter (initial_backoff doubling,
// capped at max_backoff) until max_attempts; any other 4xx or a 3xx gives up
// at once (the receiver refused it; repeating will not help). The outcome is
// written as an event on the job.
//
// Threading: scan() and deliverDue() may be called from any one thread at
// a time (tests call them directly with a ManualClock); start() runs them on
// a thread of the notifier's own until stop(). Borrows the store and the
// clock, which must outlive it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/rng.h"
#include "common/status.h"
#include "common/time.h"
#include "store/store.h"

namespace ty {

// The `webhooks:` section of the server config (docs/configuration.md),
// plus what the server fills in at start.
struct WebhookOptions {
  int max_attempts = 8;                // POSTs per delivery before giving up (1..100)
  DurationMs initial_backoff = 5'000;  // delay after the first failure; doubles each time
  DurationMs max_backoff = 600'000;    // the cap on that delay
  DurationMs timeout = 10'000;         // connect, and each read or write
  // Refuse targets that resolve to loopback, private, link-local or
  // carrier-grade NAT addresses (so that a job spec cannot make the server
  // POST into its own network). Allowed by default: most clusters notify
  // services on their own network.
  bool allow_private_targets = true;
  // Set by the server, not the config file:
  DurationMs poll_interval = 1'000;  // how often the thread scans and sends
  std::string secret;                // HMAC-SHA256 key; empty: no signature header
  std::string api_url;               // "https://host:port", for each job's link
  std::string version = "0.1.0";     // in the User-Agent
};

// InvalidArgument naming `webhooks.<field>` for values out of range.
Status validateWebhookOptions(const WebhookOptions& options);

// The delay before attempt `failed + 1` after `failed` failures (>= 1):
// initial_backoff * 2^(failed-1) capped at max_backoff, less up to a fifth
// chosen by `rng` so that many deliveries failing together do not retry in
// step.
DurationMs webhookBackoff(const WebhookOptions& options, int failed, Rng& rng);

// "sha256=" and the lowercase hex HMAC-SHA256 of `body` under `secret`: the
// X-Trainyard-Signature header.
std::string webhookSignature(const std::string& secret, const std::string& body);

// The JSON body POSTed for `delivery` of `job`. The same for every attempt,
// so that a signature or a digest of it identifies the notification.
std::string webhookPayload(const Job& job, const WebhookDelivery& delivery,
                           const std::string& api_url);

// "https://hooks.example.org/…": the URL as events and logs show it. The
// path and query are left out because they often carry the receiver's
// secret (chat services put it there).
std::string redactWebhookUrl(const std::string& url);

class WebhookNotifier {
 public:
  WebhookNotifier(Store& store, const Clock& clock, WebhookOptions options,
                  std::uint64_t seed = 0x7e61);
  ~WebhookNotifier();  // stop()s
  WebhookNotifier(const WebhookNotifier&) = delete;
  WebhookNotifier& operator=(const WebhookNotifier&) = delete;

  // Writes the delivery rows owed for jobs that finished since the last
  // scan, then moves the watermark. Returns how many rows it added; fails
  // with the store's status (nothing is lost: the next scan tries again).
  Result<int> scan();
  // Tries every delivery due now once, recording each outcome (and the
  // final one as a job event). Returns how many it tried.
  Result<int> deliverDue();

  // Runs scan() and deliverDue() every poll_interval on its own thread.
  void start();
  // Stops the thread, after the POST in flight (at most `timeout`).
  void stop();

 private:
  struct Outcome {
    bool ok = false;
    bool retry = false;  // worth another attempt
    std::string error;   // "500 Internal Server Error", "connection refused", ...
  };
  Outcome post(const WebhookDelivery& d, const std::string& body);
  Status deliver(WebhookDelivery d);
  void run();

  Store& store_;
  const Clock& clock_;
  const WebhookOptions options_;
  Rng rng_;  // used by one thread at a time (see above)

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ty
