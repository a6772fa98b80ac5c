// What `trainyard simulate jobs` reports per policy, and its output forms
// (table, JSON, per-job CSV). Pure functions over replay results.
//
// Definitions:
//   JCT             finish - submit.
//   queueing delay  JCT - time running: every wait, after preemptions too.
//   utilisation     busy GPU-time / (capacity x makespan); busy time counts
//                   lost work and restart overhead, which occupy GPUs.
//   makespan        last finish - first submit of the window.
//   Jain's index    (sum x)^2 / (n sum x^2) over the n queues (VCs) with
//                   jobs, x = the queue's mean bounded slowdown, slowdown =
//                   max(1, JCT / max(duration, 60 s)). 1 when every VC's
//                   jobs are slowed alike; 1/n when one VC bears it all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/job_replay.h"

namespace ty {

struct PolicySummary {
  std::string policy;
  std::size_t jobs = 0;
  double mean_jct_s = 0;
  double p99_jct_s = 0;
  double mean_queue_s = 0;
  double p99_queue_s = 0;
  double utilisation = 0;
  double makespan_s = 0;
  double jain = 0;
  std::int64_t preemptions = 0;
  double lost_gpu_hours = 0;  // work redone plus restart overhead
  double wall_s = 0;          // how long the replay took to compute
};

// The run's parameters, printed above the table and into the JSON.
struct ReplayReportHeader {
  std::string trace;
  std::string window;  // "2017-10-01 00:00:00 .. 2017-10-03 12:00:00, 4000 jobs"
  std::size_t jobs = 0;
  int skipped = 0;
  std::size_t queues = 0;
  std::string quota;  // "share" or "equal"
  int nodes = 0;
  int gpus_per_node = 0;
  double offered_load = 0;
  std::string estimate;
  DurationMs checkpoint_interval = 0;
  DurationMs restart_overhead = 0;
  std::uint64_t seed = 0;
};

// Nearest-rank percentile, p in (0, 100]; 0 for no values.
double percentile(std::vector<double> values, double p);
// Jain's fairness index of non-negative values; 1 for none or all zero.
double jainIndex(const std::vector<double>& values);
double boundedSlowdown(const JobOutcome& job);

// Total GPU-time of the jobs / (capacity x (last submit - first submit)).
double offeredLoad(const ReplayInput& input);

PolicySummary summarize(const ReplayResult& result, const ReplayInput& input);

std::string formatSummaryTable(const ReplayReportHeader& header,
                               const std::vector<PolicySummary>& rows);
std::string summaryJson(const ReplayReportHeader& header, const std::vector<PolicySummary>& rows);
// One row per job and policy:
// policy,job,queue,gpus,submitted_s,first_start_s,finished_s,duration_s,
// estimate_s,jct_s,queueing_s,preemptions,lost_work_s,overhead_s
// (times in seconds from the first submission).
std::string jobsCsv(const std::vector<ReplayResult>& results, const ReplayInput& input);

}  // namespace ty
