#include "api/training_metric_routes.h"

#include <sodium.h>

#include <array>
#include <map>
#include <memory>
#include <string>

#include "api/http_status.h"
#include "api/request_util.h"
#include "auth/passwords.h"
#include "codec/training_metric_codec.h"

namespace ty {
namespace {

// A source key for a report the job sent without one: random, so that two
// reports never collide (and a retry of such a report is a new one).
std::string freshKey() {
  auth::ensureSodium();
  std::array<unsigned char, 12> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  std::array<char, 25> hex{};
  sodium_bin2hex(hex.data(), hex.size(), bytes.data(), bytes.size());
  return std::string("srv-") + hex.data();
}

class Handlers {
 public:
  explicit Handlers(const TrainingMetricContext& ctx) : store_(*ctx.store), clock_(*ctx.clock) {}

  void get(const httplib::Request& req, httplib::Response& res, Caller& caller) {
    auto job = visibleJob(req, caller, auth::Permission::kReadMetrics);
    if (!job.isOk()) return writeError(res, job.status());
    if (!req.has_param("name")) {
      auto names = store_.trainingMetrics(job->id);
      if (!names.isOk()) return writeError(res, names.status());
      Json arr = Json::array();
      for (const TrainingMetricSummary& m : *names) {
        arr.push_back(
            {{"name", m.name}, {"count", m.count}, {"latest", trainingPointToJson(m.latest)}});
      }
      return writeJson(res, 200, {{"job", job->id.value()}, {"metrics", arr}});
    }
    TrainingSeriesQuery q;
    q.name = req.get_param_value("name");
    if (!validMetricName(q.name)) {
      return writeError(
          res, Status::invalidArgument("is not a metric name ([a-zA-Z_][a-zA-Z0-9_.:/-]{0,127})",
                                       "name"));
    }
    auto after = queryInt(req, "after", 0, 0, INT64_MAX);
    if (!after.isOk()) return writeError(res, after.status());
    auto limit = queryInt(req, "limit", 10'000, 1, 100'000);
    if (!limit.isOk()) return writeError(res, limit.status());
    auto max_points = queryInt(req, "max_points", 0, 0, 100'000);
    if (!max_points.isOk()) return writeError(res, max_points.status());
    if (*max_points == 1) {
      return writeError(res, Status::invalidArgument("must be 0 (all) or 2-100000", "max_points"));
    }
    q.after_id = *after;
    q.limit = static_cast<int>(*limit);
    q.max_points = static_cast<int>(*max_points);
    auto points = store_.trainingSeries(job->id, q);
    if (!points.isOk()) return writeError(res, points.status());
    Json arr = Json::array();
    for (const TrainingPoint& p : *points) arr.push_back(trainingPointToJson(p));
    Json out = {{"job", job->id.value()}, {"name", q.name}, {"points", arr}};
    // A full page has a cursor; a thinned series is the whole series.
    bool more = q.max_points == 0 && static_cast<int>(points->size()) == q.limit;
    out["next_after"] = more ? Json(points->back().id) : Json(nullptr);
    writeJson(res, 200, out);
  }

  void post(const httplib::Request& req, httplib::Response& res, Caller& caller) {
    Result<Job> job = Status::internal("unset");
    if (caller.job_attempt) {
      // The gateway checked the token against this job and its running
      // attempt: the job reports about itself.
      caller.checked = true;
      job = store_.getJob(caller.job_attempt->job);
    } else {
      // Who may change the job: its owner (engineers) or a project admin.
      job = visibleJob(req, caller, auth::Permission::kCancelJobs);
    }
    if (!job.isOk()) return writeError(res, job.status());
    auto body = parseBody(req.body, /*yaml=*/false);
    if (!body.isOk()) return writeError(res, body.status());
    auto reports = parseTrainingMetricBody(*body);
    if (!reports.isOk()) return writeError(res, reports.status());
    const Timestamp now = clock_.now();
    std::vector<TrainingPoint> points;
    for (const PostedReport& r : *reports) {
      const std::string source = "api:" + (r.key.empty() ? freshKey() : r.key);
      for (const auto& [name, value] : r.report.values) {
        TrainingPoint p;
        p.name = name;
        p.step = r.report.step;
        p.value = value;
        p.time = r.report.time.value_or(now);
        p.source = source;
        points.push_back(std::move(p));
      }
    }
    auto added = store_.appendTrainingPoints(job->id, points);
    if (!added.isOk()) return writeError(res, added.status());
    caller.audit_detail = "reported " + std::to_string(*added) + " metric points of job " +
                          std::to_string(job->id.value());
    // Points already stored (a retried key) are not an error: the report
    // is there either way.
    writeJson(res, 200, {{"added", *added}, {"ignored", static_cast<int>(points.size()) - *added}});
  }

 private:
  Result<Job> visibleJob(const httplib::Request& req, Caller& caller, auth::Permission permission) {
    TY_ASSIGN_OR_RETURN(std::int64_t id, pathId(req, "job"));
    if (caller.job_attempt) {
      // A job token reads its own job (the gateway let nothing else in).
      caller.checked = true;
      if (caller.job_attempt->job.value() != id)
        return Status::notFound(jobNotFoundMessage(JobId(id)));
      return store_.getJob(JobId(id));
    }
    auto job = store_.getJob(JobId(id));
    if (!job.isOk()) return job.status();
    Status allowed = caller.allow(permission, {job->spec.project, job->user}, "job");
    if (allowed.code() == StatusCode::kNotFound) {
      return Status::notFound(jobNotFoundMessage(JobId(id)));
    }
    if (!allowed.isOk()) return allowed;
    return job;
  }

  Store& store_;
  const Clock& clock_;
};

}  // namespace

Json trainingPointToJson(const TrainingPoint& p) {
  return {{"id", p.id},
          {"step", p.step ? Json(*p.step) : Json(nullptr)},
          {"value", p.value},
          {"time", p.time}};
}

std::vector<Route> trainingMetricRoutes(const TrainingMetricContext& ctx) {
  using R = httplib::Request;
  using W = httplib::Response;
  using P = auth::Permission;
  auto h = std::make_shared<Handlers>(ctx);
  const ParamDoc id{"id", "path", "integer", "job id"};
  return {
      {{"GET",
        "/api/v1/jobs/{id}/metrics",
        "Training metrics the job reported: without name, every metric with its count and "
        "latest point; with name, that series, oldest first",
        {id,
         {"name", "query", "string", "one metric's series"},
         {"max_points", "query", "integer",
          "thin the whole series to at most this many points (first, last, evenly spaced)"},
         {"after", "query", "integer", "only points with id above this (next_after of a page)"},
         {"limit", "query", "integer", "page size, 1-100000 (default 10000)"}},
        "",
        {200, 400, 401, 404}},
       Access::resource(P::kReadMetrics).withJobToken(),
       [h](const R& q, W& s, Caller& c) { h->get(q, s, c); }},
      {{"POST",
        "/api/v1/jobs/{id}/metrics",
        "Report training metrics of the job: by its owner, a project admin, or the job itself "
        "with its TRAINYARD_JOB_TOKEN; a report with a key already stored adds nothing",
        {id},
        "{\"step\": 100, \"metrics\": {\"loss\": 0.31}, \"time\": <seconds>, \"key\": \"...\"} "
        "(step, time and key optional) or a list of up to 1000 such",
        {200, 400, 401, 403, 404, 413}},
       Access::resource(P::kCancelJobs).withJobToken(),
       [h](const R& q, W& s, Caller& c) { h->post(q, s, c); }},
  };
}

Result<std::vector<TrainingMetricSample>> runningJobTrainingMetrics(
    Store& store, const std::vector<Job>& active) {
  std::vector<const Job*> running;
  std::vector<JobId> ids;
  for (const Job& job : active) {
    if (job.state != JobState::kRunning) continue;
    running.push_back(&job);
    ids.push_back(job.id);
  }
  std::vector<TrainingMetricSample> out;
  if (ids.empty()) return out;
  // A job deleted since `active` was read simply has no points here.
  TY_ASSIGN_OR_RETURN(std::vector<LatestTrainingPoint> latest, store.latestTrainingMetrics(ids));
  // Grouped by job (the store orders by id, then name), to be emitted in
  // the order of `active`.
  std::map<JobId, std::vector<const TrainingPoint*>> by_job;
  for (const LatestTrainingPoint& p : latest) by_job[p.job].push_back(&p.latest);
  for (const Job* job : running) {
    auto it = by_job.find(job->id);
    if (it == by_job.end()) continue;
    const std::string id = std::to_string(job->id.value());
    for (const TrainingPoint* p : it->second) {
      out.push_back({id, job->spec.project, job->user, p->name, p->value});
    }
  }
  return out;
}

}  // namespace ty
