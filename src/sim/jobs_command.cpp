// `trainyard simulate jobs`: replays a window of a Philly job trace through
// each named policy on the same simulated cluster and prints one summary
// row per policy (docs/simulator.md, "Job replay").
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "sim/job_metrics.h"
#include "sim/job_policies.h"
#include "sim/job_replay.h"
#include "sim/job_trace.h"
#include "sim/simulate_command.h"

namespace ty {
namespace {

struct JobsOptions {
  std::string trace;
  std::string from;
  std::string until;
  std::size_t limit = 0;
  int nodes = 64;
  int gpus_per_node = 8;
  std::string policies = "fifo,sjf,tiresias,trainyard,trainyard-las,trainyard-fair-share";
  std::string estimate = "factor";
  std::string checkpoint = "10m";
  std::string restart_overhead = "30s";
  double las_threshold_gpu_hours = 1;
  double starvation_factor = 0;
  std::string quota = "share";
  std::string min_runtime = "0";
  std::string stop_grace = "30s";
  std::string fair_share_half_life = "7d";
  bool no_backfill = false;
  bool no_preemption = false;
  bool no_queues = false;
  std::uint64_t seed = 1;
  std::string output = "table";
  std::string csv;
};

[[noreturn]] void fail(const Status& s) {
  std::cerr << "error: " << (s.field().empty() ? "" : s.field() + ": ") << s.message() << "\n";
  std::exit(s.code() == StatusCode::kInvalidArgument ? 2 : 1);
}

template <typename T>
T orFail(Result<T> r) {
  if (!r.isOk()) fail(r.status());
  return std::move(r).value();
}

// "2017-10-01" or "2017-10-01 06:00:00".
Result<Timestamp> parseWhen(const std::string& text, const char* flag) {
  Result<Timestamp> t = parseTraceTime(text.size() == 10 ? text + " 00:00:00" : text);
  if (!t.isOk()) return Status::invalidArgument(t.status().message(), flag);
  return t;
}

Result<DurationMs> parseInterval(const std::string& text, const char* flag) {
  if (text == "none" || text == "0") return DurationMs{0};
  DurationMs d = parseDuration(text);
  if (d < 0) return Status::invalidArgument("expected a duration such as 10m, or none", flag);
  return d;
}

std::string traceTime(Timestamp t) {
  std::string s = formatTimestamp(t);  // 2017-10-01T00:00:00.000Z
  return s.substr(0, 10) + " " + s.substr(11, 8);
}

void run(const JobsOptions& o) {
  TraceWindow window;
  if (!o.from.empty()) window.from = orFail(parseWhen(o.from, "--from"));
  if (!o.until.empty()) window.until = orFail(parseWhen(o.until, "--until"));
  window.limit = o.limit;

  InputOptions in_opts;
  in_opts.nodes = o.nodes;
  in_opts.gpus_per_node = o.gpus_per_node;
  in_opts.seed = o.seed;
  if (o.estimate == "factor") {
    in_opts.estimate = EstimateMode::kFactor;
  } else if (o.estimate != "none") {
    fail(Status::invalidArgument("expected none or factor", "--estimate"));
  }
  if (o.quota == "equal") {
    in_opts.quota = QuotaMode::kEqual;
  } else if (o.quota != "share") {
    fail(Status::invalidArgument("expected share or equal", "--quota"));
  }
  ReplayOptions replay;
  replay.seed = o.seed;
  replay.checkpoint_interval = orFail(parseInterval(o.checkpoint, "--checkpoint-interval"));
  replay.restart_overhead = orFail(parseInterval(o.restart_overhead, "--restart-overhead"));
  PolicyOptions policy_opts;
  policy_opts.las_threshold_gpu_ms =
      static_cast<std::int64_t>(o.las_threshold_gpu_hours * 3'600'000.0);
  policy_opts.starvation_factor = o.starvation_factor;
  policy_opts.min_runtime = orFail(parseInterval(o.min_runtime, "--min-runtime"));
  policy_opts.stop_grace = orFail(parseInterval(o.stop_grace, "--stop-grace"));
  policy_opts.fair_share_half_life =
      orFail(parseInterval(o.fair_share_half_life, "--fair-share-half-life"));
  policy_opts.backfill = !o.no_backfill;
  policy_opts.preemption = !o.no_preemption;
  policy_opts.queues = !o.no_queues;

  // Make every policy first, so a misspelt name fails before minutes of work.
  std::vector<std::unique_ptr<ReplayPolicy>> policies;
  std::stringstream names(o.policies);
  for (std::string name; std::getline(names, name, ',');) {
    if (!name.empty()) policies.push_back(orFail(makeReplayPolicy(name, policy_opts)));
  }
  if (policies.empty()) fail(Status::invalidArgument("name at least one policy", "--policies"));

  std::vector<TraceJob> trace = selectWindow(orFail(readPhillyCsv(o.trace)), window);
  if (trace.empty()) fail(Status::invalidArgument("no jobs in the chosen window", "--from"));
  ReplayInput input = orFail(makeReplayInput(trace, in_opts));

  ReplayReportHeader header;
  header.trace = o.trace;
  header.window = traceTime(trace.front().submitted) + " .. " + traceTime(trace.back().submitted);
  header.jobs = input.jobs.size();
  header.skipped = input.skipped_too_large;
  header.queues = input.queues.size();
  header.quota = o.quota;
  header.nodes = input.nodes;
  header.gpus_per_node = input.gpus_per_node;
  header.offered_load = offeredLoad(input);
  header.estimate = estimateModeName(input.estimate);
  header.checkpoint_interval = replay.checkpoint_interval;
  header.restart_overhead = replay.restart_overhead;
  header.seed = o.seed;

  std::vector<PolicySummary> rows;
  std::vector<ReplayResult> results;
  for (auto& policy : policies) {
    const auto t0 = std::chrono::steady_clock::now();
    ReplayResult result = orFail(runReplay(input, *policy, replay));
    PolicySummary row = summarize(result, input);
    row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rows.push_back(row);
    if (!o.csv.empty()) results.push_back(std::move(result));
  }
  if (!o.csv.empty()) {
    std::ofstream csv(o.csv);
    csv << jobsCsv(results, input);
    if (!csv) fail(Status::unavailable("cannot write " + o.csv));
  }
  std::cout << (o.output == "json" ? summaryJson(header, rows) : formatSummaryTable(header, rows));
}

}  // namespace

void addJobsCommand(CLI::App& simulate) {
  auto o = std::make_shared<JobsOptions>();
  CLI::App* cmd = simulate.add_subcommand(
      "jobs", "Time-based replay of a job trace with queues and preemption");
  cmd->add_option("--trace", o->trace, "Philly job CSV (timestamp,duration,num_gpus,...,cluster)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--from", o->from, "First submit time kept, \"2017-10-01[ 06:00:00]\" (UTC)");
  cmd->add_option("--until", o->until, "Keep jobs submitted before this time");
  cmd->add_option("--limit", o->limit, "At most this many jobs (0: all in the window)");
  cmd->add_option("--nodes", o->nodes, "Simulated nodes")->capture_default_str();
  cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node")->capture_default_str();
  std::string names;
  for (const auto& n : replayPolicyNames()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--policies", o->policies, "Comma list of " + names)->capture_default_str();
  cmd->add_option("--estimate", o->estimate,
                  "Run-time estimates users give: none, or factor (duration x uniform(1,3))")
      ->capture_default_str();
  cmd->add_option("--checkpoint-interval", o->checkpoint,
                  "Work between checkpoints; a preempted job loses what came after the last "
                  "(none: it starts over)")
      ->capture_default_str();
  cmd->add_option("--restart-overhead", o->restart_overhead,
                  "GPU time a preempted job spends restarting")
      ->capture_default_str();
  cmd->add_option("--las-threshold", o->las_threshold_gpu_hours,
                  "Attained GPU-hours at which tiresias and trainyard-las demote a job")
      ->capture_default_str();
  cmd->add_option("--starvation-factor", o->starvation_factor,
                  "Tiresias: promote a job waiting this many times its run time (0: off)")
      ->capture_default_str();
  cmd->add_option("--quota", o->quota, "VC quotas: share (of GPU-time) or equal")
      ->capture_default_str();
  cmd->add_option("--min-runtime", o->min_runtime,
                  "trainyard: no job is preempted before it ran this long")
      ->capture_default_str();
  cmd->add_option("--stop-grace", o->stop_grace,
                  "trainyard: how long a preempted job keeps its GPUs while stopping")
      ->capture_default_str();
  cmd->add_option("--fair-share-half-life", o->fair_share_half_life,
                  "trainyard: half-life of the VCs' decayed usage in the fair-share order")
      ->capture_default_str();
  cmd->add_flag("--no-backfill", o->no_backfill, "trainyard: turn EASY backfill off");
  cmd->add_flag("--no-preemption", o->no_preemption, "trainyard: turn preemption off");
  cmd->add_flag("--no-queues", o->no_queues, "trainyard: no VC queues or quotas");
  cmd->add_option("--seed", o->seed, "Seed of estimates and policy randomness")
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--csv", o->csv, "Write one row per job and policy to this file");
  cmd->callback([o] { run(*o); });
}

}  // namespace ty
