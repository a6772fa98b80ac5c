#include "sim/job_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace ty {
namespace {

constexpr double kMsPerS = 1000.0;
constexpr DurationMs kSlowdownFloor = 60'000;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Seconds as hours with one decimal: the table's unit for times.
std::string hours(double seconds) { return fixed(seconds / 3600.0, 2); }

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto n = static_cast<double>(values.size());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n));
  rank = std::clamp<std::size_t>(rank, 1, values.size());
  return values[rank - 1];
}

double jainIndex(const std::vector<double>& values) {
  double sum = 0;
  double squares = 0;
  for (double v : values) {
    sum += v;
    squares += v * v;
  }
  if (values.empty() || squares == 0) return 1;
  return sum * sum / (static_cast<double>(values.size()) * squares);
}

double boundedSlowdown(const JobOutcome& job) {
  const double jct = static_cast<double>(job.jct());
  const double base = static_cast<double>(std::max(job.duration, kSlowdownFloor));
  return std::max(1.0, jct / base);
}

double offeredLoad(const ReplayInput& input) {
  if (input.jobs.size() < 2 || input.capacity() == 0) return 0;
  double work = 0;
  for (const SimJob& j : input.jobs) work += static_cast<double>(j.duration) * j.gpus;
  const double span =
      static_cast<double>(input.jobs.back().submitted - input.jobs.front().submitted);
  if (span <= 0) return 0;
  return work / (static_cast<double>(input.capacity()) * span);
}

PolicySummary summarize(const ReplayResult& result, const ReplayInput& input) {
  PolicySummary s;
  s.policy = result.policy;
  s.jobs = result.jobs.size();
  std::vector<double> jct;
  std::vector<double> queueing;
  std::vector<double> slowdown_sum(input.queues.size(), 0);
  std::vector<int> per_queue(input.queues.size(), 0);
  double lost_gpu_ms = 0;
  for (const JobOutcome& j : result.jobs) {
    jct.push_back(static_cast<double>(j.jct()) / kMsPerS);
    queueing.push_back(static_cast<double>(j.queueing()) / kMsPerS);
    slowdown_sum[static_cast<std::size_t>(j.queue)] += boundedSlowdown(j);
    ++per_queue[static_cast<std::size_t>(j.queue)];
    lost_gpu_ms += static_cast<double>(j.lost_work + j.overhead) * j.gpus;
  }
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };
  s.mean_jct_s = mean(jct);
  s.p99_jct_s = percentile(jct, 99);
  s.mean_queue_s = mean(queueing);
  s.p99_queue_s = percentile(queueing, 99);
  s.makespan_s = static_cast<double>(result.makespan()) / kMsPerS;
  const double capacity_ms =
      static_cast<double>(input.capacity()) * static_cast<double>(result.makespan());
  s.utilisation = capacity_ms > 0 ? static_cast<double>(result.busy_gpu_ms) / capacity_ms : 0;
  std::vector<double> queue_slowdown;
  for (std::size_t q = 0; q < per_queue.size(); ++q) {
    if (per_queue[q] > 0) queue_slowdown.push_back(slowdown_sum[q] / per_queue[q]);
  }
  s.jain = jainIndex(queue_slowdown);
  s.preemptions = result.preemptions;
  s.lost_gpu_hours = lost_gpu_ms / kMsPerS / 3600.0;
  return s;
}

std::string formatSummaryTable(const ReplayReportHeader& h,
                               const std::vector<PolicySummary>& rows) {
  std::ostringstream out;
  out << "trace " << h.trace << ": " << h.window << "\n";
  out << h.jobs << " jobs";
  if (h.skipped > 0) out << " (" << h.skipped << " larger than the cluster left out)";
  out << ", " << h.queues << " queues (VCs, quota by " << h.quota << "), " << h.nodes << " nodes x "
      << h.gpus_per_node << " GPUs, offered load " << fixed(h.offered_load * 100, 1) << "%\n";
  out << "estimate " << h.estimate << ", checkpoint every "
      << (h.checkpoint_interval > 0 ? formatDuration(h.checkpoint_interval) : "never")
      << ", restart overhead " << formatDuration(h.restart_overhead) << ", seed " << h.seed
      << "\n\n";
  const char* cols[] = {"policy",      "mean JCT h", "p99 JCT h",  "mean queue h",
                        "p99 queue h", "util %",     "makespan h", "Jain",
                        "preemptions", "lost GPU-h", "replay s"};
  std::vector<std::vector<std::string>> cells;
  cells.emplace_back(std::begin(cols), std::end(cols));
  for (const PolicySummary& r : rows) {
    cells.push_back({r.policy, hours(r.mean_jct_s), hours(r.p99_jct_s), hours(r.mean_queue_s),
                     hours(r.p99_queue_s), fixed(r.utilisation * 100, 1), hours(r.makespan_s),
                     fixed(r.jain, 3), std::to_string(r.preemptions), fixed(r.lost_gpu_hours, 1),
                     fixed(r.wall_s, 1)});
  }
  std::vector<std::size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : cells) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c == 0) {
        out << row[c] << std::string(width[c] - row[c].size(), ' ');
      } else {
        out << "  " << std::string(width[c] - row[c].size(), ' ') << row[c];
      }
    }
    out << "\n";
  }
  return out.str();
}

std::string summaryJson(const ReplayReportHeader& h, const std::vector<PolicySummary>& rows) {
  std::ostringstream out;
  out << "{\"trace\":" << jsonString(h.trace) << ",\"window\":" << jsonString(h.window)
      << ",\"jobs\":" << h.jobs << ",\"skipped_too_large\":" << h.skipped
      << ",\"queues\":" << h.queues << ",\"quota\":" << jsonString(h.quota)
      << ",\"nodes\":" << h.nodes << ",\"gpus_per_node\":" << h.gpus_per_node
      << ",\"offered_load\":" << jsonNumber(h.offered_load)
      << ",\"estimate\":" << jsonString(h.estimate) << ",\"checkpoint_interval_s\":"
      << jsonNumber(static_cast<double>(h.checkpoint_interval) / kMsPerS)
      << ",\"restart_overhead_s\":" << jsonNumber(static_cast<double>(h.restart_overhead) / kMsPerS)
      << ",\"seed\":" << h.seed << ",\"policies\":[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const PolicySummary& r = rows[i];
    out << (i ? "," : "") << "{\"policy\":" << jsonString(r.policy) << ",\"jobs\":" << r.jobs
        << ",\"mean_jct_s\":" << jsonNumber(r.mean_jct_s)
        << ",\"p99_jct_s\":" << jsonNumber(r.p99_jct_s)
        << ",\"mean_queueing_s\":" << jsonNumber(r.mean_queue_s)
        << ",\"p99_queueing_s\":" << jsonNumber(r.p99_queue_s)
        << ",\"utilisation\":" << jsonNumber(r.utilisation)
        << ",\"makespan_s\":" << jsonNumber(r.makespan_s) << ",\"jain\":" << jsonNumber(r.jain)
        << ",\"preemptions\":" << r.preemptions
        << ",\"lost_gpu_hours\":" << jsonNumber(r.lost_gpu_hours)
        << ",\"replay_wall_s\":" << jsonNumber(r.wall_s) << "}";
  }
  out << "]}\n";
  return out.str();
}

std::string jobsCsv(const std::vector<ReplayResult>& results, const ReplayInput& input) {
  std::ostringstream out;
  out << "policy,job,queue,gpus,submitted_s,first_start_s,finished_s,duration_s,estimate_s,jct_s,"
         "queueing_s,preemptions,lost_work_s,overhead_s\n";
  for (const ReplayResult& r : results) {
    const double t0 = static_cast<double>(r.first_submit);
    auto sec = [&](Timestamp t) { return fixed((static_cast<double>(t) - t0) / kMsPerS, 3); };
    auto dur = [](DurationMs d) { return fixed(static_cast<double>(d) / kMsPerS, 3); };
    for (const JobOutcome& j : r.jobs) {
      out << r.policy << ',' << j.id.value() << ','
          << input.queues[static_cast<std::size_t>(j.queue)].name << ',' << j.gpus << ','
          << sec(j.submitted) << ',' << sec(j.first_start) << ',' << sec(j.finished) << ','
          << dur(j.duration) << ',' << dur(j.estimate) << ',' << dur(j.jct()) << ','
          << dur(j.queueing()) << ',' << j.preemptions << ',' << dur(j.lost_work) << ','
          << dur(j.overhead) << '\n';
    }
  }
  return out.str();
}

}  // namespace ty
