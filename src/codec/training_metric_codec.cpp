#include "codec/training_metric_codec.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ty {
namespace {

constexpr std::size_t kMaxReportsPerPost = 1000;

bool validKey(const std::string& key) {
  if (key.empty() || key.size() > 128) return false;
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

// A finite number as a double; nullopt for anything else (booleans, which
// nlohmann also counts as numbers when asked loosely, included).
std::optional<double> finiteNumber(const Json& v) {
  if (!v.is_number()) return std::nullopt;
  double d = v.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

Status readStep(const Json& v, TrainingReport& out) {
  if (v.is_number_unsigned() || v.is_number_integer()) {
    std::int64_t s = v.get<std::int64_t>();
    if (s < 0 || (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX)) {
      return Status::invalidArgument("must be a non-negative integer", "step");
    }
    out.step = s;
    return Status::ok();
  }
  // 100.0 is a step too: Python's f-strings and json.dumps of floats give it.
  auto d = finiteNumber(v);
  if (!d || *d < 0 || *d != std::floor(*d) || *d > 9.0e15) {
    return Status::invalidArgument("must be a non-negative integer", "step");
  }
  out.step = static_cast<std::int64_t>(*d);
  return Status::ok();
}

Status readTime(const Json& v, TrainingReport& out) {
  auto d = finiteNumber(v);
  // Seconds since the epoch: 0 .. year 2500, so ms cannot overflow.
  if (!d || *d < 0 || *d > 16'725'225'600.0) {
    return Status::invalidArgument("must be seconds since the epoch", "time");
  }
  out.time = static_cast<Timestamp>(std::llround(*d * 1000.0));
  return Status::ok();
}

Status readValue(const std::string& name, const Json& v, TrainingReport& out) {
  if (!validMetricName(name)) {
    return Status::invalidArgument(
        "\"" + name.substr(0, 40) + "\" is not a metric name ([a-zA-Z_][a-zA-Z0-9_.:/-]{0,127})",
        "metrics");
  }
  auto d = finiteNumber(v);
  if (!d) return Status::invalidArgument("must be a finite number", name);
  out.values.emplace_back(name, *d);
  return Status::ok();
}

Status checkCount(const TrainingReport& r) {
  if (r.values.empty()) return Status::invalidArgument("names no metric", "metrics");
  if (r.values.size() > kMaxMetricsPerReport) {
    return Status::invalidArgument(
        "has more than " + std::to_string(kMaxMetricsPerReport) + " metrics", "metrics");
  }
  return Status::ok();
}

Result<PostedReport> readPosted(const Json& j) {
  if (!j.is_object()) return Status::invalidArgument("each report must be a JSON object");
  PostedReport out;
  for (const auto& [k, v] : j.items()) {
    if (k == "step") {
      TY_RETURN_IF_ERROR(readStep(v, out.report));
    } else if (k == "time") {
      TY_RETURN_IF_ERROR(readTime(v, out.report));
    } else if (k == "key") {
      if (!v.is_string() || !validKey(v.get<std::string>())) {
        return Status::invalidArgument("must be 1-128 letters, digits, '.', '_', ':' or '-'",
                                       "key");
      }
      out.key = v.get<std::string>();
    } else if (k == "metrics") {
      if (!v.is_object()) return Status::invalidArgument("must be an object", "metrics");
      for (const auto& [name, value] : v.items()) {
        TY_RETURN_IF_ERROR(readValue(name, value, out.report));
      }
    } else {
      return Status::invalidArgument("unknown field; use step, metrics, time and key", k);
    }
  }
  TY_RETURN_IF_ERROR(checkCount(out.report));
  return out;
}

}  // namespace

bool validMetricName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  auto c0 = static_cast<unsigned char>(name[0]);
  if (!(std::isalpha(c0) || c0 == '_')) return false;
  for (char ch : name.substr(1)) {
    auto c = static_cast<unsigned char>(ch);
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == ':' || c == '/' || c == '-')) {
      return false;
    }
  }
  // isalpha/isalnum follow the C locale, which is plain ASCII here.
  return true;
}

bool hasTrainingMetricPrefix(std::string_view line) {
  return line.substr(0, kTrainingMetricPrefix.size()) == kTrainingMetricPrefix;
}

Result<TrainingReport> parseTrainingMetricLine(std::string_view line) {
  if (!hasTrainingMetricPrefix(line)) {
    return Status::invalidArgument("does not start with TRAINYARD_METRIC");
  }
  if (line.size() > kMaxTrainingMetricLine) {
    return Status::invalidArgument("longer than " + std::to_string(kMaxTrainingMetricLine) +
                                   " bytes");
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  line.remove_prefix(kTrainingMetricPrefix.size());
  // No exceptions: a job's output is untrusted text.
  Json j = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::invalidArgument("is not one JSON object after TRAINYARD_METRIC");
  }
  TrainingReport out;
  for (const auto& [k, v] : j.items()) {
    if (k == "step") {
      TY_RETURN_IF_ERROR(readStep(v, out));
    } else if (k == "time") {
      TY_RETURN_IF_ERROR(readTime(v, out));
    } else {
      TY_RETURN_IF_ERROR(readValue(k, v, out));
    }
  }
  TY_RETURN_IF_ERROR(checkCount(out));
  return out;
}

Result<std::vector<PostedReport>> parseTrainingMetricBody(const Json& body) {
  std::vector<PostedReport> out;
  if (body.is_array()) {
    if (body.empty()) return Status::invalidArgument("the list of reports is empty");
    if (body.size() > kMaxReportsPerPost) {
      return Status::invalidArgument("at most " + std::to_string(kMaxReportsPerPost) +
                                     " reports per request");
    }
    for (const Json& j : body) {
      TY_ASSIGN_OR_RETURN(PostedReport r, readPosted(j));
      out.push_back(std::move(r));
    }
    return out;
  }
  TY_ASSIGN_OR_RETURN(PostedReport r, readPosted(body));
  out.push_back(std::move(r));
  return out;
}

}  // namespace ty
