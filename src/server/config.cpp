#include "server/config.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "codec/job_codec.h"
#include "codec/object_reader.h"
#include "codec/queue_codec.h"
#include "common/units.h"
#include "core/placement.h"
#include "gpu/topology.h"

namespace ty {

namespace {

// gpu_topology: one string ("X,NV12;NV12,X") or a list of rows, each a
// string ("X NV12") or a list of cells ([X, NV12]); kept as one string with
// rows joined by ';', and parsed here so that a mistake is reported with the
// rest of the file rather than at start.
Status readGpuTopology(const Json& v, std::string& out) {
  const char* key = "gpu_topology";
  auto cells = [](const Json& row, std::string& text) {
    if (row.is_string()) {
      text = row.get<std::string>();
      return true;
    }
    if (!row.is_array()) return false;
    text.clear();
    for (const Json& cell : row) {
      if (!cell.is_string()) return false;
      text += (text.empty() ? "" : ",") + cell.get<std::string>();
    }
    return true;
  };
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string row;
      if (!cells(v[i], row) || row.find(';') != std::string::npos) {
        return Status::invalidArgument(
            "row " + std::to_string(i + 1) +
                " must be a string of cells (\"X NV12\") or a list of them ([X, NV12])",
            key);
      }
      text += (i == 0 ? "" : ";") + row;
    }
  } else {
    return Status::invalidArgument(
        "must be a matrix of nvidia-smi topo -m cells: a string with rows separated by ';' "
        "(\"X,NV12;NV12,X\") or a list of rows",
        key);
  }
  // Empty means "ask NVML", as an empty fake_gpus means "use NVML".
  if (!text.empty()) TY_RETURN_IF_ERROR(parseGpuTopology(text, key).status());
  out = text;
  return Status::ok();
}

// A scheduler key naming one of a few choices: `name` gives the current
// (default) value's name, `parse` maps a name back (nullopt: unknown).
template <typename T, typename Name, typename Parse>
Status readChoice(ObjectReader& r, const char* key, const char* what, T& value, Name name,
                  Parse parse, const char* choices) {
  std::string text = name(value);
  TY_RETURN_IF_ERROR(r.string(key, text));
  auto parsed = parse(text);
  if (!parsed) {
    return Status::invalidArgument(
        std::string("unknown ") + what + " \"" + text + "\"; use " + choices,
        std::string("scheduler.") + key);
  }
  value = *parsed;
  return Status::ok();
}

Status readScheduler(const Json& j, SchedulerSettings& s) {
  ObjectReader r(j, "scheduler", "config");
  TY_RETURN_IF_ERROR(r.check());
  TY_RETURN_IF_ERROR(r.string("placement", s.placement));
  // The core names the policies it has; its message is reused under this key.
  if (auto made = makePlacementPolicy(s.placement, {}); !made.isOk()) {
    return Status::invalidArgument(made.status().message(), "scheduler.placement");
  }
  TY_RETURN_IF_ERROR(r.duration("fair_share_half_life", s.fair_share_half_life));
  TY_RETURN_IF_ERROR(r.boolean("backfill", s.backfill));
  TY_RETURN_IF_ERROR(r.boolean("preemption", s.preemption));
  TY_RETURN_IF_ERROR(r.boolean("borrow_within_cohort", s.borrow_within_cohort));
  TY_RETURN_IF_ERROR(r.boolean("reclaim_respects_priority", s.reclaim_respects_priority));
  TY_RETURN_IF_ERROR(readChoice(r, "service_levels", "service levels", s.service_levels,
                                serviceLevelsName, parseServiceLevels,
                                "none, least-attained or shortest-remaining"));
  if (s.service_levels != ServiceLevels::kNone && !s.reclaim_respects_priority) {
    // Levels change as jobs run; reclaim that ignores them stops a job of a
    // higher level, which then stops its preemptor back, pass after pass.
    return Status::invalidArgument(
        "must be true while service_levels is " + std::string(serviceLevelsName(s.service_levels)) +
            ": reclaim across levels makes jobs preempt each other in turn; set "
            "service_levels: none to turn it off",
        "scheduler.reclaim_respects_priority");
  }
  TY_RETURN_IF_ERROR(r.duration("las_threshold", s.las_threshold));
  if (s.las_threshold <= 0) {
    return Status::invalidArgument("must be a positive GPU-time such as 1h",
                                   "scheduler.las_threshold");
  }
  TY_RETURN_IF_ERROR(readChoice(r, "order", "order", s.order, jobOrderName, parseJobOrder,
                                "fair-share or least-attained-service"));
  if (const Json* queues = r.get("queues")) {
    if (!queues->is_array()) {
      return Status::invalidArgument("must be a list of queues", "scheduler.queues");
    }
    s.queues.clear();
    std::set<std::string> seen;
    for (size_t i = 0; i < queues->size(); ++i) {
      std::string path = "scheduler.queues[" + std::to_string(i) + "]";
      QueueConfig q;
      TY_RETURN_IF_ERROR(readQueue((*queues)[i], path, q));
      if (!seen.insert(q.name).second) {
        return Status::invalidArgument("queue \"" + q.name + "\" is defined twice", path + ".name");
      }
      s.queues.push_back(std::move(q));
    }
  }
  return r.finish();
}

// {burst: 20, per_second: 5}
Status readRateLimit(ObjectReader& parent, const char* key, auth::TokenBucketConfig& out) {
  const Json* j = parent.get(key);
  if (!j) return Status::ok();
  std::string path = std::string("api.") + key;
  ObjectReader r(*j, path, "config");
  TY_RETURN_IF_ERROR(r.check());
  int burst = static_cast<int>(out.capacity);
  TY_RETURN_IF_ERROR(r.integer("burst", burst, 1, 1'000'000));
  out.capacity = burst;
  if (const Json* rate = r.get("per_second")) {
    if (!rate->is_number() || rate->get<double>() < 0.001 || rate->get<double>() > 1e6) {
      return Status::invalidArgument("must be a number of requests per second from 0.001",
                                     path + ".per_second");
    }
    out.refill_per_second = rate->get<double>();
  }
  TY_RETURN_IF_ERROR(r.finish());
  if (Status st = auth::validateTokenBucket(out); !st.isOk()) {
    return Status::invalidArgument(st.message(), path);
  }
  return Status::ok();
}

Status readApi(const Json& j, ApiSettings& a) {
  ObjectReader r(j, "api", "config");
  TY_RETURN_IF_ERROR(r.check());
  TY_RETURN_IF_ERROR(readRateLimit(r, "rate_limit", a.gateway.rate_limit));
  TY_RETURN_IF_ERROR(readRateLimit(r, "login_rate_limit", a.gateway.login_rate_limit));
  if (const Json* lock = r.get("lockout")) {
    ObjectReader l(*lock, "api.lockout", "config");
    TY_RETURN_IF_ERROR(l.check());
    TY_RETURN_IF_ERROR(l.integer("failures", a.gateway.lockout.max_failures, 1, 1000));
    TY_RETURN_IF_ERROR(l.duration("window", a.gateway.lockout.window));
    TY_RETURN_IF_ERROR(l.duration("duration", a.gateway.lockout.lockout));
    TY_RETURN_IF_ERROR(l.finish());
    if (Status st = auth::validateLoginGuard(a.gateway.lockout); !st.isOk()) {
      return Status::invalidArgument(st.message(), "api.lockout");
    }
  }
  auto positive = [&](const char* key, DurationMs& out, DurationMs min) -> Status {
    TY_RETURN_IF_ERROR(r.duration(key, out));
    if (out < min) {
      return Status::invalidArgument("must be at least " + std::to_string(min / 1000) + "s",
                                     std::string("api.") + key);
    }
    return Status::ok();
  };
  TY_RETURN_IF_ERROR(positive("request_timeout", a.request_timeout, 1000));
  TY_RETURN_IF_ERROR(positive("idle_timeout", a.idle_timeout, 1000));
  TY_RETURN_IF_ERROR(positive("session_ttl", a.gateway.session_ttl, 60'000));
  return r.finish();
}

// A number in [lo, hi]; InvalidArgument naming gpu_monitor.<key> otherwise.
Status readNumber(ObjectReader& r, const char* key, double lo, double hi, const char* what,
                  double& out) {
  const Json* v = r.get(key);
  if (!v) return Status::ok();
  if (!v->is_number() || v->get<double>() < lo || v->get<double>() > hi) {
    return Status::invalidArgument(std::string("must be ") + what, r.path(key));
  }
  out = v->get<double>();
  return Status::ok();
}

Status readGpuMonitor(const Json& j, GpuMonitorSettings& g) {
  ObjectReader r(j, "gpu_monitor", "config");
  TY_RETURN_IF_ERROR(r.check());
  TY_RETURN_IF_ERROR(r.boolean("enabled", g.enabled));
  TY_RETURN_IF_ERROR(r.duration("sample_interval", g.sample_interval));
  if (g.sample_interval < 100) {
    return Status::invalidArgument("must be at least 100ms, such as 5s",
                                   "gpu_monitor.sample_interval");
  }
  DiagnosisConfig& d = g.diagnosis;
  TY_RETURN_IF_ERROR(readNumber(r, "idle_util_percent", 0.001, 100,
                                "a percentage above 0 and at most 100, such as 5",
                                d.idle_util_percent));
  TY_RETURN_IF_ERROR(r.duration("idle_after", d.idle_after));
  TY_RETURN_IF_ERROR(r.duration("idle_stop_after", d.idle_stop_after));
  TY_RETURN_IF_ERROR(readNumber(r, "input_bound_util_percent", 0.001, 100,
                                "a percentage above 0 and at most 100, such as 40",
                                d.input_bound_util_percent));
  TY_RETURN_IF_ERROR(r.duration("input_bound_window", d.input_bound_window));
  TY_RETURN_IF_ERROR(r.boolean("kill_ghosts", d.kill_ghosts));
  TY_RETURN_IF_ERROR(r.finish());
  if (d.input_bound_window < g.sample_interval) {
    return Status::invalidArgument("must be at least sample_interval (" +
                                       formatDuration(g.sample_interval) +
                                       "): the window averages several samples",
                                   "gpu_monitor.input_bound_window");
  }
  return validateDiagnosisConfig(d);
}

Status readWebhooks(const Json& j, WebhookOptions& w) {
  ObjectReader r(j, "webhooks", "config");
  TY_RETURN_IF_ERROR(r.check());
  TY_RETURN_IF_ERROR(r.integer("max_attempts", w.max_attempts, 1, 100));
  TY_RETURN_IF_ERROR(r.duration("initial_backoff", w.initial_backoff));
  TY_RETURN_IF_ERROR(r.duration("max_backoff", w.max_backoff));
  TY_RETURN_IF_ERROR(r.duration("timeout", w.timeout));
  TY_RETURN_IF_ERROR(r.boolean("allow_private_targets", w.allow_private_targets));
  if (r.get("secret") != nullptr) {
    return Status::invalidArgument(
        "is read from the environment (TRAINYARD_WEBHOOK_SECRET), not the config file",
        "webhooks.secret");
  }
  TY_RETURN_IF_ERROR(r.finish());
  return validateWebhookOptions(w);
}

}  // namespace

Status readConfig(const Json& j, ServerConfig& c) {
  ObjectReader r(j, "", "config");
  TY_RETURN_IF_ERROR(r.check());
  TY_RETURN_IF_ERROR(r.string("listen", c.listen));
  TY_RETURN_IF_ERROR(r.string("data_dir", c.data_dir));
  TY_RETURN_IF_ERROR(r.string("fake_gpus", c.fake_gpus));
  TY_RETURN_IF_ERROR(r.string("nvml_library", c.nvml_library));
  if (const Json* topology = r.get("gpu_topology")) {
    TY_RETURN_IF_ERROR(readGpuTopology(*topology, c.gpu_topology));
  }
  TY_RETURN_IF_ERROR(r.string("node_name", c.node_name));
  auto body = static_cast<std::int64_t>(c.max_body_bytes);
  TY_RETURN_IF_ERROR(r.memory("max_body_bytes", body));
  if (body < 1024) return Status::invalidArgument("must be at least 1Ki", "max_body_bytes");
  c.max_body_bytes = static_cast<std::size_t>(body);
  TY_RETURN_IF_ERROR(r.integer("worker_threads", c.worker_threads, 4, 1024));
  TY_RETURN_IF_ERROR(r.memory("log_max_bytes", c.log_max_bytes));
  if (c.log_max_bytes < 4096)
    return Status::invalidArgument("must be at least 4Ki", "log_max_bytes");
  TY_RETURN_IF_ERROR(r.integer("log_max_files", c.log_max_files, 1, 100));
  TY_RETURN_IF_ERROR(r.string("podman", c.podman));
  TY_RETURN_IF_ERROR(r.string("container_runtime", c.container_runtime));
  TY_RETURN_IF_ERROR(r.string("container_network", c.container_network));
  TY_RETURN_IF_ERROR(r.boolean("cgroups", c.cgroups));
  TY_RETURN_IF_ERROR(r.string("tls_cert", c.tls_cert));
  TY_RETURN_IF_ERROR(r.string("tls_key", c.tls_key));
  TY_RETURN_IF_ERROR(r.string("bootstrap_token_file", c.bootstrap_token_file));
  TY_RETURN_IF_ERROR(r.string("web_root", c.web_root));
  if (const Json* api = r.get("api")) TY_RETURN_IF_ERROR(readApi(*api, c.api));
  if (const Json* sched = r.get("scheduler"))
    TY_RETURN_IF_ERROR(readScheduler(*sched, c.scheduler));
  if (const Json* gpu = r.get("gpu_monitor"))
    TY_RETURN_IF_ERROR(readGpuMonitor(*gpu, c.gpu_monitor));
  if (const Json* hooks = r.get("webhooks")) TY_RETURN_IF_ERROR(readWebhooks(*hooks, c.webhooks));
  return r.finish();
}

Status loadConfigFile(const std::string& path, ServerConfig& c) {
  std::ifstream in(path);
  if (!in) return Status::invalidArgument("cannot read " + path, "--config");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parseBody(text.str(), /*yaml=*/true);
  if (!parsed.isOk()) return parsed.status().withContext(path);
  Status st = readConfig(*parsed, c);
  // The message alone would not name the key at fault: "ty.yaml: gpu_topology: ...".
  if (!st.isOk()) return st.withContext(st.field().empty() ? path : path + ": " + st.field());
  return Status::ok();
}

std::string defaultWebRoot() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  // Without /proc (it is always there on Linux): relative to the working
  // directory, which is right when the server runs from the checkout.
  std::filesystem::path dir = ec ? std::filesystem::current_path(ec) : exe.parent_path();
  return (dir / ".." / "web" / "dist").lexically_normal().string();
}

Status parseListen(const std::string& listen, std::string& host, int& port) {
  auto colon = listen.rfind(':');
  auto fail = [&] {
    return Status::invalidArgument(
        "must be HOST:PORT such as 127.0.0.1:8080 (got \"" + listen + "\")", "--listen");
  };
  if (colon == std::string::npos || colon == 0) return fail();
  host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::string p = listen.substr(colon + 1);
  if (p.empty() || p.size() > 5) return fail();
  for (char ch : p) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) return fail();
  }
  port = std::stoi(p);
  if (port > 65535) return fail();
  return Status::ok();
}

}  // namespace ty
