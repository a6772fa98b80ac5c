#include "api/api_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>

#include "api/http_status.h"
#include "api/identity_routes.h"
#include "api/request_util.h"
#include "api/training_metric_routes.h"
#include "auth/tokens.h"
#include "metrics/exposition.h"

namespace ty {
namespace {

Json waitingToJson(const WaitInfo& w) {
  return {{"queue", w.queue},
          {"position", w.position},
          {"message", w.message},
          {"estimated_start", w.eta ? Json(w.eta) : Json(nullptr)}};
}

// The projects a job listing or count covers: `project` when given (Ok only
// when the caller may read its jobs; NotFound for one it cannot see), else
// every project the caller may read jobs of, into `within` (left unset for
// a global admin's unscoped token, which reads them all).
Status readableProjects(Caller& caller, const std::string& project,
                        std::optional<std::vector<std::string>>& within) {
  if (!project.empty()) return caller.allow(auth::Permission::kReadJobs, {project, ""}, "project");
  const auth::Principal& p = caller.principal;
  caller.checked = true;
  if (p.is_admin && !p.token_project) return Status::ok();
  std::vector<std::string> visible;
  for (const auto& [name, role] : p.projects) {
    if (auth::authorize(p, auth::Permission::kReadJobs, {name, ""}) == auth::Decision::kAllow) {
      visible.push_back(name);
    }
  }
  if (p.is_admin && p.token_project) visible = {*p.token_project};
  within = std::move(visible);
  return Status::ok();
}

}  // namespace

ApiServer::ApiServer(Store& store, ControlPlane& control, RunLayout layout, const Clock& clock,
                     ApiOptions options)
    : store_(store),
      control_(control),
      layout_(std::move(layout)),
      clock_(clock),
      options_(std::move(options)),
      metrics_(registry_, options_.version),
      gateway_(store, clock, options_.gateway) {
  gateway_.setObserver([this](const Route& route, int status, double seconds) {
    metrics_.observeRequest(route.doc.path, route.doc.method, status, seconds);
  });
  if (options_.tls_cert.empty() != options_.tls_key.empty()) {
    setup_ = Status::invalidArgument("give both --tls-cert and --tls-key, or neither",
                                     options_.tls_cert.empty() ? "--tls-cert" : "--tls-key");
  }
  for (const auto& [file, flag] :
       {std::pair{options_.tls_cert, "--tls-cert"}, std::pair{options_.tls_key, "--tls-key"}}) {
    std::error_code ec;
    if (setup_.isOk() && !file.empty() && !std::filesystem::is_regular_file(file, ec)) {
      setup_ = Status::invalidArgument("no such file: " + file, flag);
    }
  }
  if (setup_.isOk() && tls()) {
    auto https =
        std::make_unique<httplib::SSLServer>(options_.tls_cert.c_str(), options_.tls_key.c_str());
    if (!https->is_valid()) {
      setup_ = Status::invalidArgument(
          "cannot use the certificate " + options_.tls_cert + " with the key " + options_.tls_key +
              ": both must be PEM and the key must match the certificate",
          "--tls-key");
    }
    http_ = std::move(https);
  }
  if (!http_) http_ = std::make_unique<httplib::Server>();
  addRoutes();
  if (setup_.isOk()) setup_ = validateRoutes(routes_);
  setUpHttp();
}

void ApiServer::setUpHttp() {
  int threads = options_.worker_threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  auto secs = [](DurationMs ms) { return std::pair<time_t, time_t>(ms / 1000, ms % 1000 * 1000); };
  http_->set_read_timeout(secs(options_.request_timeout).first,
                          secs(options_.request_timeout).second);
  http_->set_write_timeout(secs(options_.request_timeout).first,
                           secs(options_.request_timeout).second);
  http_->set_keep_alive_timeout(std::max<time_t>(1, options_.idle_timeout / 1000));
  http_->set_keep_alive_max_count(1000);
  // Small JSON answers must not wait for delayed ACKs (Nagle).
  http_->set_tcp_nodelay(true);
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        // A browser following a link into the web UI gets the app, which
        // shows its own not-found page; API clients get the JSON below.
        if (web_ui_.answerNotFound(req, res)) return httplib::Server::HandlerResponse::Handled;
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

void ApiServer::addRoutes() {
  using R = httplib::Request;
  using W = httplib::Response;
  using C = Caller;
  using P = auth::Permission;
  const ParamDoc id{"id", "path", "integer", "job id"};
  routes_ = {
      {{"GET", "/healthz", "Liveness: the process answers", {}, "", {200}},
       Access::publicRoute(),
       [](const R&, W& res, C&) {
         writeJson(res, 200, {{"status", "ok"}});
       }},
      {{"GET",
        "/readyz",
        "Readiness: the store is open and the reconcile loop runs",
        {},
        "",
        {200, 503}},
       Access::publicRoute(),
       [this](const R&, W& res, C&) {
         if (control_.ready()) {
           writeJson(res, 200, {{"status", "ready"}});
         } else {
           writeError(res, Status::unavailable("not ready: store or reconcile loop is down"));
         }
       }},
      {{"GET", "/api/v1/openapi.json", "This document", {}, "", {200}},
       Access::publicRoute(),
       [this](const R&, W& res, C&) { writeJson(res, 200, openApiDocument(routes_)); }},
      // Public like the probes, so that Prometheus scrapes without a user;
      // the handler asks for the scrape token when one is configured.
      {{"GET",
        "/metrics",
        "Control-plane metrics in the Prometheus text format (queues, quotas, jobs by state, "
        "GPU holders, request latency); needs \"Authorization: Bearer <metrics token>\" when "
        "the server has one",
        {},
        "",
        {200, 401, 503},
        "text/plain"},
       Access::publicRoute(),
       [this](const R& q, W& s, C& c) { getMetrics(q, s, c); }},
      {{"POST",
        "/api/v1/jobs",
        "Submit a job (JSON, or YAML with Content-Type application/yaml); with an "
        "Idempotency-Key header a resent submission returns the first job (200)",
        {{"Idempotency-Key", "header", "string", "makes the submission safe to resend"}},
        "the job spec",
        {200, 201, 400, 401, 403, 404, 413, 422}},
       Access::resource(P::kSubmitJobs),
       [this](const R& q, W& s, C& c) { postJob(q, s, c); }},
      {{"GET",
        "/api/v1/jobs",
        "List jobs, newest first, of the projects the caller may read",
        {{"state", "query", "string", "pending, scheduled, running, succeeded, failed, cancelled"},
         {"project", "query", "string", "only this project"},
         {"user", "query", "string", "only this user's jobs"},
         {"limit", "query", "integer", "page size, 1-1000 (default 100)"},
         {"before", "query", "integer", "page cursor: next_before of the previous page"},
         {"queue", "query", "string",
          "only jobs of this queue: those naming it, and those of projects whose queue it is"}},
        "",
        {200, 400, 401, 404}},
       Access::resource(P::kReadJobs),
       [this](const R& q, W& s, C& c) { getJobs(q, s, c); }},
      {{"GET",
        "/api/v1/jobs/counts",
        "Jobs by state, of the projects the caller may read: every pending and running job, "
        "and the jobs that finished since a time",
        {{"since", "query", "integer",
          "count finished jobs from this time on (ms since epoch; default 24 hours ago)"},
         {"project", "query", "string", "only this project"}},
        "",
        {200, 400, 401, 404}},
       Access::resource(P::kReadJobs),
       [this](const R& q, W& s, C& c) { getJobCounts(q, s, c); }},
      {{"GET",
        "/api/v1/jobs/{id}",
        "A job: spec, state, current attempt, why it waits",
        {id},
        "",
        {200, 401, 404}},
       Access::resource(P::kReadJobs),
       [this](const R& q, W& s, C& c) { getJob(q, s, c); }},
      {{"POST",
        "/api/v1/jobs/{id}/cancel",
        "Cancel a job: SIGTERM, then SIGKILL after its grace period",
        {id},
        "",
        {200, 401, 403, 404, 409}},
       Access::resource(P::kCancelJobs),
       [this](const R& q, W& s, C& c) { cancelJob(q, s, c); }},
      {{"GET",
        "/api/v1/jobs/{id}/events",
        "The job's timeline in plain words",
        {id, {"after", "query", "integer", "only events with seq above this"}},
        "",
        {200, 401, 404}},
       Access::resource(P::kReadEvents),
       [this](const R& q, W& s, C& c) { getEvents(q, s, c); }},
      {{"GET",
        "/api/v1/jobs/{id}/attempts",
        "Every run of the job with its placement",
        {id},
        "",
        {200, 401, 404}},
       Access::resource(P::kReadJobs),
       [this](const R& q, W& s, C& c) { getAttempts(q, s, c); }},
      {{"GET",
        "/api/v1/jobs/{id}/logs",
        "stdout and stderr of one replica; follow streams until the job ends; with cursor, "
        "the bytes since the cursor (at most 1 MiB) and the next cursor in X-Log-Cursor, the "
        "attempt in X-Log-Attempt, and X-Log-Done: true once the job ended and all was read",
        {id,
         {"follow", "query", "boolean", "stream new lines until the job ends"},
         {"tail", "query", "integer", "only the last N lines"},
         {"replica", "query", "integer", "replica index (default 0)"},
         {"attempt", "query", "integer", "attempt number (default: the latest)"},
         {"cursor", "query", "string",
          "read on from here: X-Log-Cursor of the previous answer, or \"start\" (with tail: "
          "the last N lines first)"}},
        "",
        {200, 400, 401, 404},
        "text/plain"},
       Access::resource(P::kReadLogs),
       [this](const R& q, W& s, C& c) { getLogs(q, s, c); }},
      {{"GET",
        "/api/v1/nodes",
        "Nodes and their GPUs, with the jobs holding each (of projects the caller may read)",
        {},
        "",
        {200, 401}},
       Access::fixed(P::kReadCluster),
       [this](const R& q, W& s, C& c) { getNodes(q, s, c); }},
      {{"GET",
        "/api/v1/queues",
        "Queues with their quotas, what each uses and borrows, and fair-share usage",
        {},
        "",
        {200, 401}},
       Access::fixed(P::kReadCluster),
       [this](const R& q, W& s, C& c) { getQueues(q, s, c); }},
      {{"PUT",
        "/api/v1/queues/{name}",
        "Create a queue or replace its whole config (project, cohort, weight, quotas); stored, "
        "and in force from the next scheduling pass. The answer's note says what a quota below "
        "current use means",
        {{"name", "path", "string", "queue name"}},
        "the queue as in the config file's scheduler.queues (JSON, or YAML with Content-Type "
        "application/yaml), without name or with the one in the path",
        {200, 400, 401, 403}},
       Access::fixed(P::kManageQueues),
       [this](const R& q, W& s, C& c) { putQueue(q, s, c); }},
      {{"DELETE",
        "/api/v1/queues/{name}",
        "Delete a queue; refused (409) while it has pending or running jobs",
        {{"name", "path", "string", "queue name"}},
        "",
        {204, 401, 403, 404, 409}},
       Access::fixed(P::kManageQueues),
       [this](const R& q, W& s, C& c) { deleteQueue(q, s, c); }},
  };
  for (Route& r : gateway_.sessionRoutes()) routes_.push_back(std::move(r));
  for (Route& r :
       identityRoutes(IdentityContext{&store_, &clock_, options_.gateway.password_params})) {
    routes_.push_back(std::move(r));
  }
  for (Route& r : trainingMetricRoutes({&store_, &clock_})) routes_.push_back(std::move(r));
  for (Route& r : web_ui_.routes()) routes_.push_back(std::move(r));
  for (size_t i = 0; i < routes_.size(); ++i) {
    std::string pattern = routeRegex(routes_[i].doc.path);
    // routes_ is not resized after this, so the reference stays valid.
    httplib::Server::Handler h = [this, &route = routes_[i]](const R& q, W& s) {
      gateway_.handle(route, q, s);
    };
    const std::string& m = routes_[i].doc.method;
    if (m == "GET") {
      http_->Get(pattern, h);
    } else if (m == "POST") {
      http_->Post(pattern, h);
    } else if (m == "PUT") {
      http_->Put(pattern, h);
    } else if (m == "PATCH") {
      http_->Patch(pattern, h);
    } else if (m == "DELETE") {
      http_->Delete(pattern, h);
    } else if (setup_.isOk()) {
      setup_ = Status::invalidArgument(
          "route " + m + " " + routes_[i].doc.path + " has a method the server cannot serve",
          "routes");
    }
  }
}

Result<int> ApiServer::bind(const std::string& host, int port) {
  if (!setup_.isOk()) return setup_;
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

Result<Job> ApiServer::visibleJob(const httplib::Request& req, Caller& caller,
                                  auth::Permission permission) {
  TY_ASSIGN_OR_RETURN(std::int64_t id, pathId(req, "job"));
  auto job = store_.getJob(JobId(id));
  if (!job.isOk()) return job.status();
  // The message of a hidden job is the store's for a missing one, so a
  // caller cannot tell another project's job from no job.
  Status allowed = caller.allow(permission, {job->spec.project, job->user}, "job");
  if (allowed.code() == StatusCode::kNotFound)
    return Status::notFound(jobNotFoundMessage(JobId(id)));
  if (!allowed.isOk()) return allowed;
  return job;
}

void ApiServer::postJob(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  auto body = jsonOrYamlBody(req);
  if (!body.isOk()) return writeError(res, body.status());
  auto spec = specFromJson(*body);
  if (!spec.isOk()) return writeError(res, spec.status());
  // Who may submit where comes before anything else is looked at; a
  // project the caller cannot see reads as one that does not exist.
  const std::string no_project =
      "no such project \"" + spec->project + "\"; `trainyard projects` lists yours";
  Status allowed =
      caller.allow(auth::Permission::kSubmitJobs, {spec->project, caller.user()}, "project");
  if (allowed.code() == StatusCode::kNotFound) {
    return writeError(res, Status::notFound(no_project));
  }
  if (!allowed.isOk()) {
    return writeError(res, Status::permissionDenied(
                               "your role in project " + spec->project +
                               " does not allow submitting jobs; ask a project admin for the "
                               "engineer role"));
  }
  if (auto project = store_.getProject(spec->project); !project.isOk()) {
    return writeError(res, project.status().code() == StatusCode::kNotFound
                               ? Status::notFound(no_project)
                               : project.status());
  }
  std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 128 || std::any_of(key.begin(), key.end(), [](char c) {
        return !(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
                 c == ':');
      })) {
    return writeError(
        res, Status::invalidArgument("use at most 128 letters, digits, '-', '_', '.' or ':'",
                                     "Idempotency-Key"));
  }
  const std::string project = spec->project;
  auto submitted = control_.submit(std::move(*spec), caller.user(), key);
  if (!submitted.isOk()) return writeError(res, submitted.status());
  const Job& job = submitted->job;
  if (submitted->replayed && job.spec.project != project) {
    // The key names a job of another project, which this request's
    // permission does not cover (the caller may have left that project).
    return writeError(res, Status::failedPrecondition(
                               "this Idempotency-Key was already used for a job in another "
                               "project; use a new key"));
  }
  caller.audit_detail = (submitted->replayed ? "resent job " : "submitted job ") +
                        std::to_string(job.id.value()) + " in project " + job.spec.project;
  res.set_header("Location", "/api/v1/jobs/" + std::to_string(job.id.value()));
  // A resent submission gets the job it created the first time.
  if (submitted->replayed) res.set_header("Idempotent-Replayed", "true");
  writeJson(res, submitted->replayed ? 200 : 201, jobToJson(job));
}

void ApiServer::getJobs(const httplib::Request& req, httplib::Response& res, Caller& caller) {
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
  if (Status allowed = readableProjects(caller, q.project, q.within_projects); !allowed.isOk()) {
    return writeError(res, allowed);
  }
  if (req.has_param("queue")) {
    // A queue that does not exist holds no jobs: an empty list, as for a
    // user who has none.
    std::vector<QueueConfig> queues = control_.queueConfigs();
    const std::string name = req.get_param_value("queue");
    // Without queues every job is in the one queue "default".
    if (!queues.empty() || name != "default") {
      q.queue = JobQuery::QueueFilter{name, std::move(queues)};
    }
  }
  auto limit = queryInt(req, "limit", 100, 1, 1000);
  if (!limit.isOk()) return writeError(res, limit.status());
  auto before = queryInt(req, "before", 0, 0, INT64_MAX);
  if (!before.isOk()) return writeError(res, before.status());
  q.limit = static_cast<int>(*limit);
  q.before_id = *before;
  const auto read_start = std::chrono::steady_clock::now();
  auto page = store_.listJobs(q);
  metrics_.observeStoreOperation(
      "list_jobs",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count());
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

void ApiServer::getJobCounts(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  constexpr DurationMs kDay = 24LL * 3600 * 1000;
  auto since = queryInt(req, "since", std::max<Timestamp>(0, clock_.now() - kDay), 0, INT64_MAX);
  if (!since.isOk()) return writeError(res, since.status());
  JobCountQuery q;
  q.finished_since = *since;
  q.project = req.get_param_value("project");
  if (Status allowed = readableProjects(caller, q.project, q.within_projects); !allowed.isOk()) {
    return writeError(res, allowed);
  }
  auto counts = store_.countJobs(q);
  if (!counts.isOk()) return writeError(res, counts.status());
  // Every state is present, so that a client needs no default.
  Json by_state = Json::object();
  for (JobState s :
       {JobState::kPending, JobState::kScheduled, JobState::kRunning, JobState::kSucceeded,
        JobState::kFailed, JobState::kCancelled, JobState::kPreempted}) {
    auto it = counts->find(s);
    by_state[jobStateName(s)] = it == counts->end() ? 0 : it->second;
  }
  writeJson(res, 200, {{"since", *since}, {"by_state", by_state}});
}

void ApiServer::getJob(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  auto job = visibleJob(req, caller, auth::Permission::kReadJobs);
  if (!job.isOk()) return writeError(res, job.status());
  Json out = jobToJson(*job);
  if (job->attempts > 0) {
    auto attempts = store_.attempts(job->id);
    if (attempts.isOk() && !attempts->empty()) out["attempt"] = attemptToJson(attempts->back());
  }
  if (job->state == JobState::kPending) {
    if (auto w = control_.waitInfo(job->id)) {
      out["waiting"] = waitingToJson(*w);
      out["reason"] = w->message;
    }
  }
  writeJson(res, 200, out);
}

void ApiServer::cancelJob(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  auto visible = visibleJob(req, caller, auth::Permission::kCancelJobs);
  if (!visible.isOk()) {
    if (visible.status().code() == StatusCode::kPermissionDenied) {
      return writeError(res, Status::permissionDenied(
                                 "not allowed to cancel this job: engineers cancel their own jobs, "
                                 "project admins any job of the project"));
    }
    return writeError(res, visible.status());
  }
  auto job = control_.cancel(visible->id, caller.user());
  if (!job.isOk()) return writeError(res, job.status());
  caller.audit_detail = "cancelled job " + std::to_string(job->id.value());
  writeJson(res, 200, jobToJson(*job));
}

void ApiServer::getEvents(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  auto job = visibleJob(req, caller, auth::Permission::kReadEvents);
  if (!job.isOk()) return writeError(res, job.status());
  auto after = queryInt(req, "after", 0, 0, INT64_MAX);
  if (!after.isOk()) return writeError(res, after.status());
  auto events = store_.events(job->id, *after);
  if (!events.isOk()) return writeError(res, events.status());
  Json arr = Json::array();
  for (const auto& e : *events) arr.push_back(eventToJson(e));
  writeJson(res, 200, {{"events", arr}});
}

void ApiServer::getAttempts(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  auto job = visibleJob(req, caller, auth::Permission::kReadJobs);
  if (!job.isOk()) return writeError(res, job.status());
  auto attempts = store_.attempts(job->id);
  if (!attempts.isOk()) return writeError(res, attempts.status());
  Json arr = Json::array();
  for (const auto& a : *attempts) arr.push_back(attemptToJson(a));
  writeJson(res, 200, {{"attempts", arr}});
}

void ApiServer::getMetrics(const httplib::Request& req, httplib::Response& res, Caller&) {
  if (!options_.metrics_token.empty()) {
    auto bearer = auth::parseBearer(req.get_header_value("Authorization"));
    // Compared as hashes, in constant time, so the answer's timing does not
    // tell how much of a guess was right.
    if (!bearer ||
        !auth::hashesEqual(auth::tokenHash(*bearer), auth::tokenHash(options_.metrics_token))) {
      writeError(res, Status::unauthenticated(
                          "GET /metrics needs \"Authorization: Bearer <metrics token>\" on "
                          "this server"));
      res.set_header("WWW-Authenticate", "Bearer realm=\"trainyard\"");
      return;
    }
  }
  std::lock_guard lock(scrape_mu_);
  // Every job not in a terminal state, in one read shared by the control
  // plane's series and the running jobs' training metrics. Terminal states
  // are not exported as gauges: their totals only grow.
  const auto read_start = std::chrono::steady_clock::now();
  auto active = store_.activeJobs();
  metrics_.observeStoreOperation(
      "active_jobs",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count());
  if (!active.isOk()) return writeError(res, active.status());
  auto snapshot = metricsSnapshot(*active);
  if (!snapshot.isOk()) return writeError(res, snapshot.status());
  metrics_.update(*snapshot);
  auto training = runningJobTrainingMetrics(store_, *active);
  if (!training.isOk()) return writeError(res, training.status());
  training_metrics_.update(*training);
  res.status = 200;
  std::string body = serializeText(registry_);
  if (options_.extra_metrics) body += options_.extra_metrics();
  res.set_content(body, kPrometheusTextContentType);
}

Result<ControlPlaneSnapshot> ApiServer::metricsSnapshot(const std::vector<Job>& active) {
  ControlPlaneSnapshot out;
  const std::vector<QueueView> queues = control_.queues();
  const Timestamp now = clock_.now();

  // The counts by state and the oldest pending job of each queue come from
  // the same listing.
  const std::map<std::string, Timestamp> oldest_pending =
      oldestPendingByQueue(control_.queueConfigs(), active);
  std::map<std::int64_t, const Job*> by_id;
  for (const Job& j : active) {
    ++out.jobs[{jobStateName(j.state), j.spec.project}];
    by_id.emplace(j.id.value(), &j);
  }

  for (const QueueView& q : queues) {
    QueueMetricsRow row;
    row.name = q.name;
    row.pending = q.pending;
    row.running = q.running;
    if (auto it = oldest_pending.find(q.name); it != oldest_pending.end()) {
      row.oldest_wait_seconds =
          static_cast<double>(std::max<Timestamp>(0, now - it->second)) / 1000.0;
    }
    for (const QueueView::Resource& r : q.resources) {
      row.resources.push_back({r.name, r.nominal, r.used});
    }
    out.queues.push_back(std::move(row));
  }

  // A holder that finished between the two reads is looked up once.
  std::map<std::int64_t, std::optional<Job>> looked_up;
  for (const NodeView& n : control_.nodes()) {
    for (const GpuView& g : n.gpus) {
      for (JobId h : g.holders) {
        const Job* job = nullptr;
        if (auto it = by_id.find(h.value()); it != by_id.end()) {
          job = it->second;
        } else {
          auto [it2, fresh] = looked_up.try_emplace(h.value());
          if (fresh) {
            if (auto j = store_.getJob(h); j.isOk()) it2->second = std::move(*j);
          }
          if (it2->second) job = &*it2->second;
        }
        out.gpus.push_back({n.info.name, g.gpu.index, g.gpu.uuid, std::to_string(h.value()),
                            job ? job->spec.project : "", job ? job->user : ""});
      }
    }
  }
  for (const GpuHealthView& h : control_.gpuHealth()) {
    if (!h.healthy) out.unhealthy_gpus.push_back({h.node, h.gpu, h.uuid, h.reason});
  }
  return out;
}

}  // namespace ty
