#include "api/api_server.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "api/http_status.h"
#include "common/units.h"
#include "exec/log_files.h"

namespace ty {
namespace {

constexpr const char* kJson = "application/json";

void writeJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump() + "\n", kJson);
}

// The caller's name. Identity comes with the auth layer; until then the
// CLI sends the local user name, checked for shape only.
std::string requestUser(const httplib::Request& req) {
  std::string u = req.get_header_value("X-Trainyard-User");
  if (u.empty() || u.size() > 64) return "anonymous";
  for (char c : u) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return "anonymous";
    }
  }
  return u;
}

Result<JobId> pathId(const httplib::Request& req) {
  try {
    return JobId(std::stoll(req.matches[1].str()));
  } catch (const std::exception&) {
    return Status::notFound("no such job: " + req.matches[1].str());
  }
}

// Parses an optional integer query parameter within [lo, hi].
Result<std::int64_t> queryInt(const httplib::Request& req, const std::string& name,
                              std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  if (!req.has_param(name)) return fallback;
  std::string v = req.get_param_value(name);
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used == v.size() && n >= lo && n <= hi) return static_cast<std::int64_t>(n);
  } catch (const std::exception&) {
  }
  return Status::invalidArgument(
      "must be a whole number between " + std::to_string(lo) + " and " + std::to_string(hi), name);
}

Json waitingToJson(const WaitInfo& w) {
  return {{"queue", w.queue},
          {"position", w.position},
          {"message", w.message},
          {"estimated_start", w.eta ? Json(w.eta) : Json(nullptr)}};
}

Result<bool> queryBool(const httplib::Request& req, const std::string& name) {
  if (!req.has_param(name)) return false;
  std::string v = req.get_param_value(name);
  if (v == "true" || v == "1" || v.empty()) return true;
  if (v == "false" || v == "0") return false;
  return Status::invalidArgument("must be true or false", name);
}

}  // namespace

ApiServer::ApiServer(Store& store, ControlPlane& control, RunLayout layout, ApiOptions options)
    : store_(store),
      control_(control),
      layout_(std::move(layout)),
      options_(options),
      http_(std::make_unique<httplib::Server>()) {
  addRoutes();
  int threads = options_.worker_threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(30, 0);
  http_->set_write_timeout(30, 0);
  http_->set_keep_alive_max_count(1000);
  // Small JSON answers must not wait for delayed ACKs (Nagle).
  http_->set_tcp_nodelay(true);
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 404) {
          writeError(res, Status::notFound("no route for " + req.method + " " + req.path +
                                           "; see GET /api/v1/openapi.json"));
        } else if (res.status == 413) {
          writeError(res, Status::tooLarge("request body is larger than " +
                                           std::to_string(options_.max_body_bytes) + " bytes"));
        } else if (res.status == 405) {
          writeError(res, Status::invalidArgument("method " + req.method + " is not allowed here"));
          res.status = 405;
        } else {
          Status s = res.status >= 500 ? Status::internal("internal error")
                                       : Status::invalidArgument("bad request");
          int status = res.status;
          writeError(res, s);
          res.status = status;
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_->set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        }
        spdlog::error("{} {}: unhandled exception: {}", req.method, req.path, what);
        writeError(res, Status::internal("internal error"));
      });
}

ApiServer::~ApiServer() { stop(); }

std::vector<RouteDoc> ApiServer::routeDocs() const {
  std::vector<RouteDoc> out;
  for (const auto& r : routes_) out.push_back(r.doc);
  return out;
}

void ApiServer::addRoutes() {
  using R = httplib::Request;
  using W = httplib::Response;
  const ParamDoc id{"id", "path", "integer", "job id"};
  routes_ = {
      {{"GET", "/healthz", "Liveness: the process answers", {}, "", {200}},
       [](const R&, W& res) {
         writeJson(res, 200, {{"status", "ok"}});
       }},
      {{"GET",
        "/readyz",
        "Readiness: the store is open and the reconcile loop runs",
        {},
        "",
        {200, 503}},
       [this](const R&, W& res) {
         if (control_.ready()) {
           writeJson(res, 200, {{"status", "ready"}});
         } else {
           writeError(res, Status::unavailable("not ready: store or reconcile loop is down"));
         }
       }},
      {{"GET", "/api/v1/openapi.json", "This document", {}, "", {200}},
       [this](const R&, W& res) { writeJson(res, 200, openApiDocument(routeDocs())); }},
      {{"POST",
        "/api/v1/jobs",
        "Submit a job (JSON, or YAML with Content-Type application/yaml); with an "
        "Idempotency-Key header a resent submission returns the first job (200)",
        {{"Idempotency-Key", "header", "string", "makes the submission safe to resend"}},
        "the job spec",
        {200, 201, 400, 413, 422}},
       [this](const R& q, W& s) { postJob(q, s); }},
      {{"GET",
        "/api/v1/jobs",
        "List jobs, newest first",
        {{"state", "query", "string", "pending, scheduled, running, succeeded, failed, cancelled"},
         {"project", "query", "string", "only this project"},
         {"user", "query", "string", "only this user's jobs"},
         {"limit", "query", "integer", "page size, 1-1000 (default 100)"},
         {"before", "query", "integer", "page cursor: next_before of the previous page"}},
        "",
        {200, 400}},
       [this](const R& q, W& s) { getJobs(q, s); }},
      {{"GET",
        "/api/v1/jobs/{id}",
        "A job: spec, state, current attempt, why it waits",
        {id},
        "",
        {200, 404}},
       [this](const R& q, W& s) { getJob(q, s); }},
      {{"POST",
        "/api/v1/jobs/{id}/cancel",
        "Cancel a job: SIGTERM, then SIGKILL after its grace period",
        {id},
        "",
        {200, 404, 409}},
       [this](const R& q, W& s) { cancelJob(q, s); }},
      {{"GET",
        "/api/v1/jobs/{id}/events",
        "The job's timeline in plain words",
        {id, {"after", "query", "integer", "only events with seq above this"}},
        "",
        {200, 404}},
       [this](const R& q, W& s) { getEvents(q, s); }},
      {{"GET",
        "/api/v1/jobs/{id}/attempts",
        "Every run of the job with its placement",
        {id},
        "",
        {200, 404}},
       [this](const R& q, W& s) { getAttempts(q, s); }},
      {{"GET",
        "/api/v1/jobs/{id}/logs",
        "stdout and stderr of one replica; follow streams until the job ends",
        {id,
         {"follow", "query", "boolean", "stream new lines until the job ends"},
         {"tail", "query", "integer", "only the last N lines"},
         {"replica", "query", "integer", "replica index (default 0)"},
         {"attempt", "query", "integer", "attempt number (default: the latest)"}},
        "",
        {200, 400, 404},
        "text/plain"},
       [this](const R& q, W& s) { getLogs(q, s); }},
      {{"GET", "/api/v1/nodes", "Nodes and their GPUs, with the job holding each", {}, "", {200}},
       [this](const R& q, W& s) { getNodes(q, s); }},
      {{"GET",
        "/api/v1/queues",
        "Queues with their quotas, what each uses and borrows, and fair-share usage",
        {},
        "",
        {200}},
       [this](const R& q, W& s) { getQueues(q, s); }},
  };
  for (const auto& r : routes_) {
    std::string pattern = routeRegex(r.doc.path);
    const Handler& h = r.handler;
    if (r.doc.method == "GET") {
      http_->Get(pattern, h);
    } else if (r.doc.method == "POST") {
      http_->Post(pattern, h);
    } else {
      std::abort();  // a method without a registration path is a bug here
    }
  }
}

Result<int> ApiServer::bind(const std::string& host, int port) {
  int bound =
      port == 0 ? http_->bind_to_any_port(host) : (http_->bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    return Status::unavailable("cannot listen on " + host + ":" + std::to_string(port) +
                               ": address in use or not available here");
  }
  return bound;
}

void ApiServer::serve() { http_->listen_after_bind(); }

void ApiServer::stop() {
  stopping_ = true;
  if (http_) http_->stop();
}

void ApiServer::postJob(const httplib::Request& req, httplib::Response& res) {
  std::string type = req.get_header_value("Content-Type");
  bool yaml = type.find("yaml") != std::string::npos;
  if (!yaml && !type.empty() && type.find("json") == std::string::npos) {
    return writeError(res, Status::invalidArgument("Content-Type must be application/json or "
                                                   "application/yaml (got " +
                                                   type + ")"));
  }
  auto body = parseBody(req.body, yaml);
  if (!body.isOk()) return writeError(res, body.status());
  auto spec = specFromJson(*body);
  if (!spec.isOk()) return writeError(res, spec.status());
  std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 128 || std::any_of(key.begin(), key.end(), [](char c) {
        return !(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
                 c == ':');
      })) {
    return writeError(
        res, Status::invalidArgument("use at most 128 letters, digits, '-', '_', '.' or ':'",
                                     "Idempotency-Key"));
  }
  auto submitted = control_.submit(std::move(*spec), requestUser(req), key);
  if (!submitted.isOk()) return writeError(res, submitted.status());
  const Job& job = submitted->job;
  res.set_header("Location", "/api/v1/jobs/" + std::to_string(job.id.value()));
  // A resent submission gets the job it created the first time.
  if (submitted->replayed) res.set_header("Idempotent-Replayed", "true");
  writeJson(res, submitted->replayed ? 200 : 201, jobToJson(job));
}

void ApiServer::getJobs(const httplib::Request& req, httplib::Response& res) {
  JobQuery q;
  if (req.has_param("state")) {
    auto st = parseJobState(req.get_param_value("state"));
    if (!st) {
      return writeError(
          res, Status::invalidArgument("must be one of pending, scheduled, running, succeeded, "
                                       "failed, cancelled, preempted",
                                       "state"));
    }
    q.state = st;
  }
  q.project = req.get_param_value("project");
  q.user = req.get_param_value("user");
  auto limit = queryInt(req, "limit", 100, 1, 1000);
  if (!limit.isOk()) return writeError(res, limit.status());
  auto before = queryInt(req, "before", 0, 0, INT64_MAX);
  if (!before.isOk()) return writeError(res, before.status());
  q.limit = static_cast<int>(*limit);
  q.before_id = *before;
  auto page = store_.listJobs(q);
  if (!page.isOk()) return writeError(res, page.status());
  Json jobs = Json::array();
  for (const auto& j : page->jobs) {
    jobs.push_back(jobToJson(j));
    if (j.state == JobState::kPending) {
      if (auto w = control_.waitInfo(j.id)) {
        jobs.back()["reason"] = w->message;
        jobs.back()["waiting"] = waitingToJson(*w);
      }
    }
  }
  Json out = {{"jobs", jobs}};
  out["next_before"] = page->next_before ? Json(page->next_before) : Json(nullptr);
  writeJson(res, 200, out);
}

void ApiServer::getJob(const httplib::Request& req, httplib::Response& res) {
  auto id = pathId(req);
  if (!id.isOk()) return writeError(res, id.status());
  auto job = store_.getJob(*id);
  if (!job.isOk()) return writeError(res, job.status());
  Json out = jobToJson(*job);
  if (job->attempts > 0) {
    auto attempts = store_.attempts(*id);
    if (attempts.isOk() && !attempts->empty()) out["attempt"] = attemptToJson(attempts->back());
  }
  if (job->state == JobState::kPending) {
    if (auto w = control_.waitInfo(*id)) {
      out["waiting"] = waitingToJson(*w);
      out["reason"] = w->message;
    }
  }
  writeJson(res, 200, out);
}

void ApiServer::cancelJob(const httplib::Request& req, httplib::Response& res) {
  auto id = pathId(req);
  if (!id.isOk()) return writeError(res, id.status());
  auto job = control_.cancel(*id, requestUser(req));
  if (!job.isOk()) return writeError(res, job.status());
  writeJson(res, 200, jobToJson(*job));
}

void ApiServer::getEvents(const httplib::Request& req, httplib::Response& res) {
  auto id = pathId(req);
  if (!id.isOk()) return writeError(res, id.status());
  auto after = queryInt(req, "after", 0, 0, INT64_MAX);
  if (!after.isOk()) return writeError(res, after.status());
  auto job = store_.getJob(*id);
  if (!job.isOk()) return writeError(res, job.status());
  auto events = store_.events(*id, *after);
  if (!events.isOk()) return writeError(res, events.status());
  Json arr = Json::array();
  for (const auto& e : *events) arr.push_back(eventToJson(e));
  writeJson(res, 200, {{"events", arr}});
}

void ApiServer::getAttempts(const httplib::Request& req, httplib::Response& res) {
  auto id = pathId(req);
  if (!id.isOk()) return writeError(res, id.status());
  auto job = store_.getJob(*id);
  if (!job.isOk()) return writeError(res, job.status());
  auto attempts = store_.attempts(*id);
  if (!attempts.isOk()) return writeError(res, attempts.status());
  Json arr = Json::array();
  for (const auto& a : *attempts) arr.push_back(attemptToJson(a));
  writeJson(res, 200, {{"attempts", arr}});
}

void ApiServer::getNodes(const httplib::Request&, httplib::Response& res) {
  Json nodes = Json::array();
  for (const auto& n : control_.nodes()) {
    Json gpus = Json::array();
    for (const auto& g : n.gpus) {
      Json j = gpuToJson(g.gpu);
      j["job"] = g.holders.empty() ? Json(nullptr) : Json(g.holders[0].value());
      Json jobs = Json::array();
      for (JobId h : g.holders) jobs.push_back(h.value());
      j["jobs"] = jobs;
      j["used"] = Quantity::fromMilli(g.used_milli).toString();
      gpus.push_back(j);
    }
    nodes.push_back({{"name", n.info.name},
                     {"labels", n.info.labels},
                     {"cpus", n.info.cpus.toString()},
                     {"memory_bytes", n.info.memory_bytes},
                     {"used_cpus", n.used_cpus.toString()},
                     {"used_memory_bytes", n.used_memory},
                     {"gpus", gpus}});
  }
  writeJson(res, 200, {{"nodes", nodes}});
}

namespace {

// An amount of a queue resource as text: GPUs and CPUs as numbers, memory
// with a unit, no limit as null.
Json resourceAmount(const std::string& resource, std::int64_t amount) {
  if (amount < 0) return nullptr;
  if (resource == "memory") return formatMemory(amount);
  return Quantity::fromMilli(amount).toString();
}

}  // namespace

void ApiServer::getQueues(const httplib::Request&, httplib::Response& res) {
  Json queues = Json::array();
  for (const auto& q : control_.queues()) {
    Json resources = Json::array();
    for (const auto& r : q.resources) {
      resources.push_back({{"name", r.name},
                           {"nominal", resourceAmount(r.name, r.nominal)},
                           {"borrowing_limit", resourceAmount(r.name, r.borrowing_limit)},
                           {"lending_limit", resourceAmount(r.name, r.lending_limit)},
                           {"used", resourceAmount(r.name, r.used)}});
    }
    queues.push_back({{"name", q.name},
                      {"cohort", q.cohort},
                      {"weight", q.weight},
                      {"projects", q.projects},
                      {"resources", resources},
                      {"usage_gpu_hours", q.usage_gpu_hours},
                      {"pending", q.pending},
                      {"running", q.running}});
  }
  writeJson(res, 200, {{"queues", queues}});
}

void ApiServer::getLogs(const httplib::Request& req, httplib::Response& res) {
  auto id = pathId(req);
  if (!id.isOk()) return writeError(res, id.status());
  auto job = store_.getJob(*id);
  if (!job.isOk()) return writeError(res, job.status());
  auto follow = queryBool(req, "follow");
  if (!follow.isOk()) return writeError(res, follow.status());
  auto replica = queryInt(req, "replica", 0, 0, job->spec.replicas - 1);
  if (!replica.isOk()) return writeError(res, replica.status());
  auto tail = queryInt(req, "tail", -1, 0, 1'000'000);
  if (!tail.isOk()) return writeError(res, tail.status());
  bool pinned = req.has_param("attempt");
  auto attempt = queryInt(req, "attempt", job->attempts, 1, std::max(1, job->attempts));
  if (!attempt.isOk()) {
    return writeError(res, Status::notFound("job " + std::to_string(id->value()) + " has " +
                                            std::to_string(job->attempts) + " attempts"));
  }
  const int r = static_cast<int>(*replica);
  auto initial = [this, r](const AttemptKey& key, std::int64_t tail_lines) -> std::string {
    if (key.number == 0) return "";
    auto text =
        tailLog(layout_, key, r, tail_lines < 0 ? SIZE_MAX : static_cast<size_t>(tail_lines),
                tail_lines < 0 ? (64u << 20) : (4u << 20));
    return text.isOk() ? *text : "";
  };
  AttemptKey key{*id, static_cast<int>(*attempt)};
  if (!*follow) {
    res.status = 200;
    res.set_content(initial(key, *tail), "text/plain; charset=utf-8");
    return;
  }
  const int max_follows = std::max(1, options_.worker_threads - 8);
  if (follows_->fetch_add(1) >= max_follows) {
    follows_->fetch_sub(1);
    return writeError(
        res, Status::unavailable("too many log streams are open (" + std::to_string(max_follows) +
                                 "); try again later, or read without follow"));
  }
  // Follow: send what exists, then new bytes as they come, until the job
  // ends and its log is drained. Without a pinned attempt, later attempts
  // (retries) are followed too.
  auto cursor = std::make_shared<LogCursor>();
  auto state = std::make_shared<AttemptKey>(key);
  auto started = std::make_shared<bool>(false);
  std::int64_t tail_lines = *tail;
  int poll_ms = options_.log_poll_ms;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/plain; charset=utf-8",
      [this, cursor, state, started, tail_lines, poll_ms, pinned, r, initial](
          size_t, httplib::DataSink& sink) {
        if (!*started) {
          *started = true;
          if (state->number > 0) {
            auto end = logEndCursor(layout_, *state, r);
            if (end.isOk()) *cursor = *end;
            std::string first = initial(*state, tail_lines);
            if (!first.empty() && !sink.write(first.data(), first.size())) return false;
          }
        }
        // On shutdown the stream is cut (not ended): the client must not take
        // it for the end of the log.
        while (sink.is_writable() && !stopping_) {
          if (state->number > 0) {
            auto chunk = readLogFrom(layout_, *state, r, *cursor);
            if (chunk.isOk() && !chunk->data.empty()) {
              *cursor = chunk->next;
              return sink.write(chunk->data.data(), chunk->data.size());
            }
          }
          auto job = store_.getJob(state->job);
          if (!job.isOk()) {
            sink.done();
            return true;
          }
          bool newer = !pinned && job->attempts > state->number;
          bool attempt_over = job->attempts > state->number || isTerminal(job->state) ||
                              job->state == JobState::kPending;
          if (attempt_over && state->number > 0) {
            // Drain what the attempt wrote before it ended.
            auto last = readLogFrom(layout_, *state, r, *cursor);
            if (last.isOk() && !last->data.empty()) {
              *cursor = last->next;
              return sink.write(last->data.data(), last->data.size());
            }
          }
          if (newer) {
            *state = AttemptKey{state->job, job->attempts};
            *cursor = LogCursor{};
            continue;
          }
          if (isTerminal(job->state) || (pinned && attempt_over)) {
            sink.done();
            return true;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
        }
        return false;
      },
      [follows = follows_](bool) { follows->fetch_sub(1); });
}

}  // namespace ty
