#include "codec/queue_codec.h"

#include <cmath>
#include <optional>

#include "codec/object_reader.h"
#include "common/units.h"

namespace ty {
namespace {

constexpr char kNameRule[] = "use 1-64 lower-case letters, digits, '.', '_' or '-'";

std::string at(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// A GPU or CPU amount. Integers and strings ("0.5", "250m") go through the
// reader every spec uses; a JSON fraction is converted here, exactly, since
// the shared reader prints it with six significant digits first and would
// turn 10000.25 into 10000.2 without a word.
Status readUnits(ObjectReader& r, const char* key, std::optional<std::int64_t>& out) {
  const Json* v = r.get(key);
  if (!v) return Status::ok();
  if (v->is_number_float()) {
    double milli = v->get<double>() * 1000;
    double whole = std::round(milli);
    if (!(milli >= 0) || whole >= 1e15 || std::abs(milli - whole) > 1e-6 * std::max(1.0, milli)) {
      return Status::invalidArgument(
          "must be a non-negative number such as 8 or 0.5 (at most 3 decimals)", r.path(key));
    }
    out = static_cast<std::int64_t>(whole);
    return Status::ok();
  }
  Quantity units;
  TY_RETURN_IF_ERROR(r.quantity(key, units, "8 or 0.5"));
  out = units.milli();
  return Status::ok();
}

// One resource's quota; amounts come out in milli-units and bytes.
Status readQuota(const Json& j, const std::string& path, const std::string& resource,
                 const char* what, Quota& q) {
  ObjectReader r(j, path, what);
  TY_RETURN_IF_ERROR(r.check());
  auto amount = [&](const char* key, std::optional<std::int64_t>& out) -> Status {
    if (resource != "memory") return readUnits(r, key, out);
    if (!r.get(key)) return Status::ok();
    std::int64_t bytes = 0;
    TY_RETURN_IF_ERROR(r.memory(key, bytes));
    out = bytes;
    return Status::ok();
  };
  std::optional<std::int64_t> nominal;
  TY_RETURN_IF_ERROR(amount("nominal", nominal));
  if (!nominal) return Status::invalidArgument("is required", at(path, "nominal"));
  q.nominal = *nominal;
  TY_RETURN_IF_ERROR(amount("borrowing_limit", q.borrowing_limit));
  TY_RETURN_IF_ERROR(amount("lending_limit", q.lending_limit));
  return r.finish();
}

// An amount as the config writes it: GPUs and CPUs as numbers (whole ones
// as integers), memory with the largest unit that divides it exactly, else
// in bytes, so that reading it back gives the same amount.
Json amountToJson(const std::string& resource, std::int64_t amount) {
  if (resource == "memory") {
    for (std::int64_t unit : {1LL << 40, 1LL << 30, 1LL << 20, 1LL << 10}) {
      if (amount >= unit && amount % unit == 0) return formatMemory(amount);
    }
    return amount;
  }
  if (amount % 1000 == 0) return amount / 1000;
  return static_cast<double>(amount) / 1000;
}

std::string amountText(const std::string& resource, std::int64_t amount) {
  Json j = amountToJson(resource, amount);
  return j.is_string() ? j.get<std::string>() : j.dump();
}

}  // namespace

bool validQueueName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool knownQuotaResource(const std::string& res) {
  return res == "gpu" || res == "cpu" || res == "memory" ||
         (res.rfind("gpu:", 0) == 0 && res.size() > 4);
}

Status readQueue(const Json& j, const std::string& path, QueueConfig& queue, const char* what) {
  ObjectReader r(j, path, what);
  TY_RETURN_IF_ERROR(r.check());
  QueueConfig q;
  q.name = queue.name;
  TY_RETURN_IF_ERROR(r.string("name", q.name));
  if (q.name.empty()) return Status::invalidArgument("is required", at(path, "name"));
  q.project = q.name;
  TY_RETURN_IF_ERROR(r.string("project", q.project));
  TY_RETURN_IF_ERROR(r.string("cohort", q.cohort));
  if (const Json* w = r.get("weight")) {
    if (!w->is_number()) {
      return Status::invalidArgument("must be a number above 0 and at most 1000",
                                     at(path, "weight"));
    }
    q.weight = w->get<double>();
  }
  if (const Json* quota = r.get("quota")) {
    if (!quota->is_object()) {
      return Status::invalidArgument("must be a map of resource: {nominal: ...}",
                                     at(path, "quota"));
    }
    for (auto it = quota->begin(); it != quota->end(); ++it) {
      const std::string& res = it.key();
      std::string res_path = at(path, "quota." + res);
      if (!knownQuotaResource(res)) {
        return Status::invalidArgument(
            "unknown resource; use gpu, gpu:<model> (e.g. gpu:A100), cpu or memory", res_path);
      }
      TY_RETURN_IF_ERROR(readQuota(*it, res_path, res, what, q.quotas[res]));
    }
  }
  TY_RETURN_IF_ERROR(r.finish());
  TY_RETURN_IF_ERROR(validateQueue(q, path));
  queue = std::move(q);
  return Status::ok();
}

Status validateQueue(const QueueConfig& q, const std::string& path) {
  if (!validQueueName(q.name)) {
    return Status::invalidArgument(std::string(kNameRule) + " for a queue name", at(path, "name"));
  }
  if (!validQueueName(q.project)) {
    return Status::invalidArgument(std::string(kNameRule) + " for a project name",
                                   at(path, "project"));
  }
  if (!q.cohort.empty() && !validQueueName(q.cohort)) {
    return Status::invalidArgument(std::string(kNameRule) + " for a cohort name (or leave it out)",
                                   at(path, "cohort"));
  }
  if (!(q.weight > 0 && q.weight <= 1000)) {
    return Status::invalidArgument("must be a number above 0 and at most 1000", at(path, "weight"));
  }
  for (const auto& [res, quota] : q.quotas) {
    std::string res_path = at(path, "quota." + res);
    if (!knownQuotaResource(res)) {
      return Status::invalidArgument(
          "unknown resource; use gpu, gpu:<model> (e.g. gpu:A100), cpu or memory", res_path);
    }
    auto negative = [](const std::optional<std::int64_t>& v) { return v && *v < 0; };
    if (quota.nominal < 0) {
      return Status::invalidArgument("must not be negative", res_path + ".nominal");
    }
    if (negative(quota.borrowing_limit)) {
      return Status::invalidArgument("must not be negative", res_path + ".borrowing_limit");
    }
    if (negative(quota.lending_limit)) {
      return Status::invalidArgument("must not be negative", res_path + ".lending_limit");
    }
    if (quota.lending_limit && *quota.lending_limit > quota.nominal) {
      return Status::invalidArgument("must not exceed nominal: a queue lends only what it has",
                                     res_path + ".lending_limit");
    }
  }
  return Status::ok();
}

Json queueToJson(const QueueConfig& q) {
  Json out = {{"name", q.name}, {"project", q.project}};
  if (!q.cohort.empty()) out["cohort"] = q.cohort;
  if (q.weight == std::floor(q.weight) && q.weight < 1e9) {
    out["weight"] = static_cast<std::int64_t>(q.weight);
  } else {
    out["weight"] = q.weight;
  }
  Json quota = Json::object();
  for (const auto& [res, limit] : q.quotas) {
    Json one = {{"nominal", amountToJson(res, limit.nominal)}};
    if (limit.borrowing_limit) one["borrowing_limit"] = amountToJson(res, *limit.borrowing_limit);
    if (limit.lending_limit) one["lending_limit"] = amountToJson(res, *limit.lending_limit);
    quota[res] = std::move(one);
  }
  out["quota"] = std::move(quota);
  return out;
}

std::string describeQuotas(const QueueConfig& q) {
  std::string out;
  for (const auto& [res, limit] : q.quotas) {
    if (!out.empty()) out += "; ";
    out += res + " nominal " + amountText(res, limit.nominal);
    if (limit.borrowing_limit) out += " borrowing " + amountText(res, *limit.borrowing_limit);
    if (limit.lending_limit) out += " lending " + amountText(res, *limit.lending_limit);
  }
  return out.empty() ? "no quota" : out;
}

}  // namespace ty
