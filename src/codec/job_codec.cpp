#include "codec/job_codec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "codec/object_reader.h"
#include "common/units.h"

namespace ty {
namespace {

// YAML aliases can make a tiny document expand enormously; the expansion is
// counted and cut off.
constexpr int kMaxYamlNodes = 100'000;

Json yamlToJson(const YAML::Node& node, int& budget) {
  if (--budget < 0) return nullptr;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      Json arr = Json::array();
      for (const auto& item : node) arr.push_back(yamlToJson(item, budget));
      return arr;
    }
    case YAML::NodeType::Map: {
      Json obj = Json::object();
      for (const auto& kv : node) obj[kv.first.as<std::string>()] = yamlToJson(kv.second, budget);
      return obj;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted: always a string
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      if (s == "null" || s == "~") return nullptr;
      if (!s.empty()) {
        char* end = nullptr;
        errno = 0;
        long long n = std::strtoll(s.c_str(), &end, 10);
        if (*end == '\0' && errno == 0 &&
            (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-'))
          return n;
        double d = std::strtod(s.c_str(), &end);
        if (*end == '\0' &&
            (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.'))
          return d;
      }
      return s;
    }
  }
  return nullptr;
}

void jsonToYamlEmit(const Json& j, YAML::Emitter& out) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      out << YAML::Key << it.key() << YAML::Value;
      jsonToYamlEmit(*it, out);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& v : j) jsonToYamlEmit(v, out);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();
  }
}

template <typename T>
Result<T> wrapJson(const std::function<T()>& f, const char* what) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::internal(std::string("decode ") + what + ": " + e.what());
  }
}

Json optionalInt(const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

Json specToJson(const JobSpec& s) {
  Json j;
  j["name"] = s.name;
  j["project"] = s.project;
  if (!s.queue.empty()) j["queue"] = s.queue;
  if (!s.command.empty()) j["command"] = s.command;
  if (!s.script.empty()) j["script"] = s.script;
  if (!s.image.empty()) j["image"] = s.image;
  Json r;
  r["gpus"] = s.resources.gpus.isWhole() ? Json(s.resources.gpus.wholeUnits())
                                         : Json(s.resources.gpus.toString());
  if (!s.resources.cpus.isZero()) {
    r["cpus"] = s.resources.cpus.isWhole() ? Json(s.resources.cpus.wholeUnits())
                                           : Json(s.resources.cpus.toString());
  }
  if (s.resources.memory_bytes) {
    // Exact units read back as text ("16Gi"); anything else as bytes.
    std::string text = formatMemory(s.resources.memory_bytes);
    if (text.find('.') == std::string::npos) {
      r["memory"] = text;
    } else {
      r["memory"] = s.resources.memory_bytes;
    }
  }
  if (!s.resources.gpu_types.empty()) r["gpu_type"] = s.resources.gpu_types;
  j["resources"] = r;
  j["replicas"] = s.replicas;
  if (!s.env.empty()) j["env"] = s.env;
  if (!s.workdir.empty()) j["workdir"] = s.workdir;
  j["priority"] = s.priority;
  if (s.max_runtime) j["max_runtime"] = formatDuration(s.max_runtime);
  if (s.min_runtime) j["min_runtime"] = formatDuration(s.min_runtime);
  if (!s.node_selector.empty()) j["node_selector"] = s.node_selector;
  if (!s.same_label.empty()) j["same_label"] = s.same_label;
  j["grace_period"] = formatDuration(s.grace_period);
  j["retries"] = {{"limit", s.retries.limit}, {"backoff", formatDuration(s.retries.backoff)}};
  if (!s.notify.webhook.empty() || !s.notify.on.empty()) {
    Json n = Json::object();
    if (!s.notify.webhook.empty()) n["webhook"] = s.notify.webhook;
    if (!s.notify.on.empty()) {
      Json on = Json::array();
      for (JobState st : s.notify.on) on.push_back(jobStateName(st));
      n["on"] = on;
    }
    j["notify"] = n;
  }
  return j;
}

Result<JobSpec> specFromJson(const Json& j) {
  JobSpec s;
  ObjectReader r(j, "");
  TY_RETURN_IF_ERROR(r.check());
  TY_RETURN_IF_ERROR(r.string("name", s.name));
  TY_RETURN_IF_ERROR(r.string("project", s.project));
  TY_RETURN_IF_ERROR(r.string("queue", s.queue));
  TY_RETURN_IF_ERROR(r.stringList("command", s.command));
  TY_RETURN_IF_ERROR(r.string("script", s.script));
  TY_RETURN_IF_ERROR(r.string("image", s.image));
  if (const Json* res = r.get("resources")) {
    ObjectReader rr(*res, "resources");
    TY_RETURN_IF_ERROR(rr.check());
    TY_RETURN_IF_ERROR(rr.quantity("gpus", s.resources.gpus, "1 or 2"));
    TY_RETURN_IF_ERROR(rr.quantity("cpus", s.resources.cpus, "4 or 0.5"));
    TY_RETURN_IF_ERROR(rr.memory("memory", s.resources.memory_bytes));
    TY_RETURN_IF_ERROR(rr.stringList("gpu_type", s.resources.gpu_types));
    TY_RETURN_IF_ERROR(rr.finish());
  }
  TY_RETURN_IF_ERROR(r.integer("replicas", s.replicas, 1, 1024));
  TY_RETURN_IF_ERROR(r.stringMap("env", s.env));
  TY_RETURN_IF_ERROR(r.string("workdir", s.workdir));
  TY_RETURN_IF_ERROR(r.integer("priority", s.priority, -1000000, 1000000));
  TY_RETURN_IF_ERROR(r.duration("max_runtime", s.max_runtime));
  TY_RETURN_IF_ERROR(r.duration("min_runtime", s.min_runtime));
  TY_RETURN_IF_ERROR(r.stringMap("node_selector", s.node_selector));
  TY_RETURN_IF_ERROR(r.string("same_label", s.same_label));
  TY_RETURN_IF_ERROR(r.duration("grace_period", s.grace_period));
  if (const Json* rt = r.get("retries")) {
    ObjectReader rr(*rt, "retries");
    TY_RETURN_IF_ERROR(rr.check());
    TY_RETURN_IF_ERROR(rr.integer("limit", s.retries.limit, 0, 100));
    TY_RETURN_IF_ERROR(rr.duration("backoff", s.retries.backoff));
    TY_RETURN_IF_ERROR(rr.finish());
  }
  if (const Json* n = r.get("notify")) {
    ObjectReader nr(*n, "notify");
    TY_RETURN_IF_ERROR(nr.check());
    TY_RETURN_IF_ERROR(nr.string("webhook", s.notify.webhook));
    if (!s.notify.webhook.empty()) {
      TY_RETURN_IF_ERROR(checkWebhookUrl(s.notify.webhook, "notify.webhook"));
    }
    std::vector<std::string> on;
    TY_RETURN_IF_ERROR(nr.stringList("on", on));
    for (const std::string& name : on) {
      std::optional<JobState> st = parseJobState(name);
      if (!st || !isTerminal(*st)) {
        return Status::invalidArgument(
            "unknown state \"" + name + "\": use succeeded, failed or cancelled", "notify.on");
      }
      if (std::find(s.notify.on.begin(), s.notify.on.end(), *st) == s.notify.on.end()) {
        s.notify.on.push_back(*st);
      }
    }
    TY_RETURN_IF_ERROR(nr.finish());
  }
  TY_RETURN_IF_ERROR(r.finish());
  return s;
}

Status checkWebhookUrl(const std::string& url, const std::string& field) {
  const std::string hint = ": give an http:// or https:// URL (\"https://hooks.example.org/x\")";
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return Status::invalidArgument("\"" + url + "\" is not a webhook URL" + hint, field);
  }
  if (url.size() > 2048) return Status::invalidArgument("longer than 2048 characters", field);
  // Whitespace and control characters would let a URL smuggle a second
  // header line or request into what the notifier sends.
  for (unsigned char c : url) {
    if (c <= 0x20 || c == 0x7f) {
      return Status::invalidArgument("contains a space or a control character" + hint, field);
    }
  }
  std::string host = rest.substr(0, rest.find_first_of("/?#"));
  if (host.empty() || host.find('@') != std::string::npos) {
    return Status::invalidArgument("\"" + url + "\" has no host (or has credentials)" + hint,
                                   field);
  }
  return Status::ok();
}

Result<Json> parseBody(const std::string& body, bool yaml) {
  if (body.empty()) return Status::invalidArgument("request body is empty: send a job spec");
  if (yaml) {
    try {
      YAML::Node node = YAML::Load(body);
      int budget = kMaxYamlNodes;
      Json j = yamlToJson(node, budget);
      if (budget < 0) {
        return Status::invalidArgument("YAML expands to more than " +
                                       std::to_string(kMaxYamlNodes) + " values (aliases?)");
      }
      return j;
    } catch (const YAML::Exception& e) {
      return Status::invalidArgument(std::string("malformed YAML: ") + e.what());
    }
  }
  // Depth is bounded so a hostile body cannot exhaust the stack.
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  if (max_depth > 32) return Status::invalidArgument("JSON nested deeper than 32 levels");
  try {
    return Json::parse(body);
  } catch (const Json::exception& e) {
    // The parser's message ends with the text it last read, which may be a
    // password or a token: an error must never echo a secret.
    std::string what = e.what();
    if (size_t cut = what.find("; last read:"); cut != std::string::npos) what.resize(cut);
    return Status::invalidArgument("malformed JSON: " + what);
  }
}

std::string jsonToYaml(const Json& j) {
  YAML::Emitter out;
  jsonToYamlEmit(j, out);
  return std::string(out.c_str()) + "\n";
}

Json jobToJson(const Job& job) {
  Json j;
  j["id"] = job.id.value();
  j["name"] = job.spec.name;
  j["project"] = job.spec.project;
  j["user"] = job.user;
  j["state"] = jobStateName(job.state);
  j["spec"] = specToJson(job.spec);
  j["created_at"] = job.created_at;
  j["updated_at"] = job.updated_at;
  j["started_at"] = job.started_at;
  j["finished_at"] = job.finished_at;
  j["attempts"] = job.attempts;
  j["exit_code"] = optionalInt(job.exit_code);
  j["reason"] = job.reason;
  j["not_before"] = job.not_before;
  j["cancel_requested_at"] = job.cancel_requested_at;
  if (job.preempted_by.value()) {
    j["preempted_by"] = job.preempted_by.value();
    j["preempt_requested_at"] = job.preempt_requested_at;
  }
  if (job.preemptions) j["preemptions"] = job.preemptions;
  if (!job.idempotency_key.empty()) j["idempotency_key"] = job.idempotency_key;
  return j;
}

Result<Job> jobFromJson(const Json& j) {
  Job job;
  try {
    job.id = JobId(j.at("id").get<std::int64_t>());
    TY_ASSIGN_OR_RETURN(job.spec, specFromJson(j.at("spec")));
    job.user = j.at("user").get<std::string>();
    auto state = parseJobState(j.at("state").get<std::string>());
    if (!state) return Status::internal("decode job: unknown state");
    job.state = *state;
    job.created_at = j.value("created_at", Timestamp{0});
    job.updated_at = j.value("updated_at", Timestamp{0});
    job.started_at = j.value("started_at", Timestamp{0});
    job.finished_at = j.value("finished_at", Timestamp{0});
    job.attempts = j.value("attempts", 0);
    if (j.contains("exit_code") && !j["exit_code"].is_null()) job.exit_code = j["exit_code"];
    job.reason = j.value("reason", std::string());
    job.not_before = j.value("not_before", Timestamp{0});
    job.cancel_requested_at = j.value("cancel_requested_at", Timestamp{0});
    job.idempotency_key = j.value("idempotency_key", std::string());
    job.preempted_by = JobId(j.value("preempted_by", std::int64_t{0}));
    job.preempt_requested_at = j.value("preempt_requested_at", Timestamp{0});
    job.preemptions = j.value("preemptions", 0);
  } catch (const std::exception& e) {
    return Status::internal(std::string("decode job: ") + e.what());
  }
  return job;
}

Json placementToJson(const std::vector<ReplicaPlacement>& p) {
  Json arr = Json::array();
  for (const auto& r : p) {
    Json one = {{"node", r.node}, {"gpus", r.gpus}};
    if (r.gpu_milli != 1000) one["gpu_milli"] = r.gpu_milli;
    arr.push_back(std::move(one));
  }
  return arr;
}

Result<std::vector<ReplicaPlacement>> placementFromJson(const Json& j) {
  return wrapJson<std::vector<ReplicaPlacement>>(
      [&] {
        std::vector<ReplicaPlacement> out;
        for (const auto& r : j) {
          out.push_back({r.at("node").get<std::string>(), r.at("gpus").get<std::vector<int>>(),
                         r.value("gpu_milli", 1000)});
        }
        return out;
      },
      "placement");
}

Json attemptToJson(const Attempt& a) {
  Json j;
  j["job"] = a.key.job.value();
  j["number"] = a.key.number;
  j["state"] = attemptStateName(a.state);
  j["replicas"] = placementToJson(a.replicas);
  j["master_port"] = a.master_port;
  j["pids"] = a.pids;
  j["created_at"] = a.created_at;
  j["started_at"] = a.started_at;
  j["finished_at"] = a.finished_at;
  j["exit_code"] = optionalInt(a.exit_code);
  j["reason"] = a.reason;
  return j;
}

Result<Attempt> attemptFromJson(const Json& j) {
  Attempt a;
  try {
    a.key = {JobId(j.at("job").get<std::int64_t>()), j.at("number").get<int>()};
    auto st = parseAttemptState(j.at("state").get<std::string>());
    if (!st) return Status::internal("decode attempt: unknown state");
    a.state = *st;
    TY_ASSIGN_OR_RETURN(a.replicas, placementFromJson(j.at("replicas")));
    a.master_port = j.value("master_port", 0);
    a.pids = j.value("pids", std::vector<std::int64_t>{});
    a.created_at = j.value("created_at", Timestamp{0});
    a.started_at = j.value("started_at", Timestamp{0});
    a.finished_at = j.value("finished_at", Timestamp{0});
    if (j.contains("exit_code") && !j["exit_code"].is_null()) a.exit_code = j["exit_code"];
    a.reason = j.value("reason", std::string());
  } catch (const std::exception& e) {
    return Status::internal(std::string("decode attempt: ") + e.what());
  }
  return a;
}

Json eventToJson(const Event& e) {
  return {{"seq", e.seq},       {"job", e.job.value()},
          {"time", e.time},     {"level", e.level == EventLevel::kWarning ? "warning" : "normal"},
          {"reason", e.reason}, {"message", e.message}};
}

Result<Event> eventFromJson(const Json& j) {
  return wrapJson<Event>(
      [&] {
        Event e;
        e.seq = j.at("seq").get<std::int64_t>();
        e.job = JobId(j.at("job").get<std::int64_t>());
        e.time = j.at("time").get<Timestamp>();
        e.level =
            j.value("level", "normal") == "warning" ? EventLevel::kWarning : EventLevel::kNormal;
        e.reason = j.at("reason").get<std::string>();
        e.message = j.at("message").get<std::string>();
        return e;
      },
      "event");
}

Json gpuToJson(const GpuInfo& g) {
  return {{"index", g.index},
          {"uuid", g.uuid},
          {"model", g.model},
          {"memory", formatMemory(g.memory_bytes)},
          {"memory_bytes", g.memory_bytes},
          {"healthy", g.healthy}};
}

Json errorToJson(const Status& s) {
  Json e = {{"code", statusCodeName(s.code())}, {"message", s.message()}};
  if (!s.field().empty()) e["field"] = s.field();
  return {{"error", e}};
}

}  // namespace ty
