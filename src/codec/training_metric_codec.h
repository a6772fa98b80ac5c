// Training metrics as jobs report them, without any library: a line on
// stdout/stderr
//
//   TRAINYARD_METRIC {"step":100,"loss":0.31,"lr":0.001}
//
// or a POST /api/v1/jobs/{id}/metrics body ({"step":100,"metrics":{...}} or a
// list of such). The one place that decides what is a metric, shared by the
// supervisor (which copies recognised lines to metrics.jsonl), the server's
// ingester and the API. Pure functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codec/job_codec.h"
#include "common/status.h"
#include "common/time.h"

namespace ty {

// What starts a metric line; the JSON object follows it.
inline constexpr std::string_view kTrainingMetricPrefix = "TRAINYARD_METRIC ";
// Longer lines are not metrics: they would only bloat the store.
inline constexpr std::size_t kMaxTrainingMetricLine = 16 * 1024;
// At most this many values in one report.
inline constexpr std::size_t kMaxMetricsPerReport = 64;

// One report: some named values at one step (and time).
struct TrainingReport {
  std::optional<std::int64_t> step;                    // >= 0 when set
  std::optional<Timestamp> time;                       // ms since epoch, when the job gave one
  std::vector<std::pair<std::string, double>> values;  // name -> value, in name order
};

// [a-zA-Z_][a-zA-Z0-9_.:/-]{0,127}
bool validMetricName(std::string_view name);

// True when `line` starts with the prefix: worth parsing. Cheap.
bool hasTrainingMetricPrefix(std::string_view line);

// Parses one line (without its newline; a trailing '\r' is allowed). The
// object holds numbers only: "step" (a non-negative integer), optional
// "time" (seconds since the epoch, fractional allowed), every other key a
// metric name with a finite value. InvalidArgument saying why otherwise
// (no prefix, not JSON, a bad name, a non-number, no metric at all).
Result<TrainingReport> parseTrainingMetricLine(std::string_view line);

// A POST body: {"step":N,"metrics":{"loss":0.3},"time":T,"key":"k"} or a
// list of up to 1000 such. "key" (optional, [A-Za-z0-9._:-]{1,128}) makes a
// retry add nothing; it is returned per report ("" when absent).
struct PostedReport {
  TrainingReport report;
  std::string key;
};
Result<std::vector<PostedReport>> parseTrainingMetricBody(const Json& body);

}  // namespace ty
