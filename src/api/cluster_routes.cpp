// The cluster as the scheduler sees it: GET /api/v1/nodes (with each GPU's
// live state from the GPU monitor) and the queue routes (list, put, delete).
#include <algorithm>
#include <map>

#include "api/api_server.h"
#include "api/http_status.h"
#include "api/request_util.h"
#include "codec/queue_codec.h"
#include "common/units.h"
#include "core/queue.h"

namespace ty {

void ApiServer::getNodes(const httplib::Request&, httplib::Response& res, Caller& caller) {
  // A GPU held by a job of a project the caller cannot read shows as used,
  // without the job.
  std::map<std::int64_t, bool> readable;
  auto visible = [&](JobId id) {
    auto [it, fresh] = readable.try_emplace(id.value(), false);
    if (fresh) {
      auto job = store_.getJob(id);
      it->second =
          job.isOk() && auth::authorize(caller.principal, auth::Permission::kReadJobs,
                                        {job->spec.project, job->user}) == auth::Decision::kAllow;
    }
    return it->second;
  };
  const GpuLiveState live = options_.gpu_live ? options_.gpu_live() : GpuLiveState{};
  Json nodes = Json::array();
  for (const auto& n : control_.nodes()) {
    Json gpus = Json::array();
    for (const auto& g : n.gpus) {
      Json j = gpuToJson(g.gpu);
      // What the GPU monitor sees; null and empty where no monitor runs.
      static const GpuLiveView kUnknown;
      auto l = live.find({n.info.name, g.gpu.index});
      const GpuLiveView& v = l == live.end() ? kUnknown : l->second;
      j["util_percent"] = v.util_percent ? Json(*v.util_percent) : Json(nullptr);
      j["memory_used_bytes"] = v.memory_used_bytes ? Json(*v.memory_used_bytes) : Json(nullptr);
      Json history = Json::array();
      for (const auto& [time, percent] : v.history) history.push_back(Json::array({time, percent}));
      j["history"] = std::move(history);
      j["idle_since"] = v.idle_since ? Json(v.idle_since) : Json(nullptr);
      j["ghost_pids"] = v.ghost_pids;
      Json jobs = Json::array();
      for (JobId h : g.holders) {
        if (visible(h)) jobs.push_back(h.value());
      }
      j["job"] = jobs.empty() ? Json(nullptr) : jobs[0];
      j["jobs"] = jobs;
      j["used"] = Quantity::fromMilli(g.used_milli).toString();
      if (!g.gpu.healthy) j["unhealthy_reason"] = g.unhealthy_reason;
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

void ApiServer::getQueues(const httplib::Request&, httplib::Response& res, Caller&) {
  auto active = store_.activeJobs();
  if (!active.isOk()) return writeError(res, active.status());
  const std::map<std::string, Timestamp> oldest =
      oldestPendingByQueue(control_.queueConfigs(), *active);
  Json queues = Json::array();
  for (const auto& q : control_.queues()) {
    Json resources = Json::array();
    for (const auto& r : q.resources) {
      resources.push_back({{"name", r.name},
                           {"nominal", resourceAmount(r.name, r.nominal)},
                           {"borrowing_limit", resourceAmount(r.name, r.borrowing_limit)},
                           {"lending_limit", resourceAmount(r.name, r.lending_limit)},
                           {"used", resourceAmount(r.name, r.used)},
                           {"borrowed", resourceAmount(r.name, r.borrowed)},
                           {"lent", resourceAmount(r.name, r.lent)}});
    }
    auto it = oldest.find(q.name);
    queues.push_back(
        {{"name", q.name},
         {"cohort", q.cohort},
         {"weight", q.weight},
         {"projects", q.projects},
         {"resources", resources},
         {"usage_gpu_hours", q.usage_gpu_hours},
         {"pending", q.pending},
         {"running", q.running},
         {"oldest_pending_at", it == oldest.end() ? Json(nullptr) : Json(it->second)}});
  }
  writeJson(res, 200, {{"queues", queues}});
}

void ApiServer::putQueue(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  const std::string name = pathParam(req, 1);
  auto body = jsonOrYamlBody(req);
  if (!body.isOk()) return writeError(res, body.status());
  // The path names the queue; a body that names one must name the same, so
  // a file written for one queue is not stored under another by mistake.
  QueueConfig queue;
  queue.name = name;
  if (Status st = readQueue(*body, "", queue, "queue"); !st.isOk()) return writeError(res, st);
  if (queue.name != name) {
    return writeError(
        res, Status::invalidArgument("is \"" + queue.name + "\" but the path names queue \"" +
                                         name + "\"; leave it out or make them match",
                                     "name"));
  }
  auto change = control_.putQueue(std::move(queue));
  if (!change.isOk()) return writeError(res, change.status());
  caller.audit_detail = std::string(change->created ? "created" : "set") + " queue " +
                        change->queue.name + ": " + describeQuotas(change->queue);
  Json out = queueToJson(change->queue);
  if (!change->note.empty()) out["note"] = change->note;
  writeJson(res, 200, out);
}

void ApiServer::deleteQueue(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  const std::string name = pathParam(req, 1);
  if (Status st = control_.deleteQueue(name); !st.isOk()) return writeError(res, st);
  caller.audit_detail = "deleted queue " + name;
  writeNoContent(res);
}

}  // namespace ty
