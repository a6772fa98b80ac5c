#include "core/gpu_diagnosis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <utility>

namespace ty {
namespace {

constexpr std::int64_t kMib = std::int64_t{1} << 20;

// Durations in events read best rounded: "31m", not "31m2s417ms".
std::string roughDuration(DurationMs d) {
  if (d >= 60'000) return formatDuration(d / 60'000 * 60'000);
  if (d >= 1000) return formatDuration(d / 1000 * 1000);
  return formatDuration(std::max<DurationMs>(d, 0));
}

// "10:02 UTC": the time of day is what a person compares with their logs.
std::string timeOfDay(Timestamp t) {
  std::int64_t seconds = t / 1000;
  std::int64_t of_day = ((seconds % 86400) + 86400) % 86400;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d:%02d UTC", static_cast<int>(of_day / 3600),
                static_cast<int>(of_day / 60 % 60));
  return buf;
}

std::string percent(double v) { return std::to_string(static_cast<long>(std::lround(v))) + "%"; }

std::string memoryText(const std::optional<std::int64_t>& bytes) {
  if (!bytes) return "an unknown amount of memory";
  return std::to_string(*bytes / kMib) + " MiB";
}

std::string gpuName(const GpuObservation& gpu) {
  std::string s = "GPU " + std::to_string(gpu.index);
  if (!gpu.uuid.empty()) s += " (" + gpu.uuid + ")";
  return s;
}

Event warning(JobId job, Timestamp now, const char* reason, std::string message) {
  Event e;
  e.job = job;
  e.time = now;
  e.level = EventLevel::kWarning;
  e.reason = reason;
  e.message = std::move(message);
  return e;
}

// XIDs that mean the hardware or its firmware failed, so that the next job
// on the GPU would fail too. The others (13, 31, 43, 45, ...) are raised by
// an application's own faults and say nothing about the GPU.
bool isHardwareXid(std::uint64_t xid) {
  switch (xid) {
    case 48:
    case 61:
    case 62:
    case 64:
    case 74:
    case 79:
    case 92:
    case 95:
    case 119:
    case 120:
      return true;
    default:
      return false;
  }
}

// The idle-allocation and input-bound findings of one job.
void diagnoseJob(const JobObservation& job, const std::map<int, const GpuObservation*>& gpus,
                 const DiagnosisInput& input, const DiagnosisConfig& config,
                 DiagnosisState::JobState& js, DiagnosisOutput& out) {
  // Utilisation of the job's GPUs; unknown when any of them is unread, since
  // a GPU that cannot be read is not known to be idle.
  bool known = !job.gpus.empty();
  bool all_idle = true;
  double sum = 0;
  for (int g : job.gpus) {
    auto it = gpus.find(g);
    if (it == gpus.end() || !it->second->util_percent) {
      known = false;
      break;
    }
    double u = *it->second->util_percent;
    sum += u;
    if (u >= config.idle_util_percent) all_idle = false;
  }
  const double mean = known ? sum / static_cast<double>(job.gpus.size()) : 0;

  JobIdleValue idle{job.job, job.project, job.user, 0};
  if (known && all_idle) {
    if (js.idle_since == 0) {
      js.idle_since = input.now;
      js.idle_util_sum = 0;
      js.idle_rounds = 0;
    }
    js.idle_util_sum += mean;
    ++js.idle_rounds;
    const DurationMs idle_for = input.now - js.idle_since;
    idle.seconds = static_cast<double>(idle_for) / 1000.0;
    if (idle_for >= config.idle_after && js.idle_event_at == 0) {
      js.idle_event_at = input.now;
      const std::size_t n = job.gpus.size();
      std::string whose = n == 1 ? "its GPU" : "its " + std::to_string(n) + " GPUs";
      out.events.push_back(warning(job.job, input.now, kEventGpuIdle,
                                   "GPU idle for " + roughDuration(idle_for) + ": " + whose +
                                       " averaged " + percent(js.idle_util_sum / js.idle_rounds) +
                                       " utilisation since " + timeOfDay(js.idle_since) +
                                       "; if the job is stuck, cancel it (trainyard cancel " +
                                       std::to_string(job.job.value()) + ")"));
    }
    if (config.idle_stop_after > 0 && js.idle_event_at != 0 && !js.stop_requested &&
        input.now - js.idle_event_at >= config.idle_stop_after) {
      js.stop_requested = true;
      std::string why = "stopped: its GPUs stayed under " + percent(config.idle_util_percent) +
                        " utilisation for " + roughDuration(idle_for) +
                        ", and the idle warning was given " +
                        roughDuration(input.now - js.idle_event_at) +
                        " ago (gpu_monitor.idle_stop_after); the GPUs go to waiting jobs";
      out.events.push_back(warning(job.job, input.now, kEventIdleStop, why));
      out.stops.push_back({job.job, why});
    }
  } else if (known) {
    // Busy again: a new spell starts from zero and is reported anew.
    js.idle_since = 0;
    js.idle_event_at = 0;
    js.stop_requested = false;
  }
  out.idle_seconds.push_back(std::move(idle));

  // Input-bound: the window's averages, once it spans input_bound_window.
  if (known && job.cpu_fraction) {
    js.recent.push_back({input.now, mean, *job.cpu_fraction});
  }
  const Timestamp horizon = input.now - config.input_bound_window;
  // Keep one sample at or before the horizon, so the window is known to be
  // covered.
  while (js.recent.size() >= 2 && js.recent[1].time <= horizon) js.recent.erase(js.recent.begin());
  if (js.recent.empty() || js.recent.front().time > horizon) return;
  double util = 0;
  double cpu = 0;
  for (const DiagnosisState::Sample& s : js.recent) {
    util += s.util;
    cpu += s.cpu;
  }
  util /= static_cast<double>(js.recent.size());
  cpu /= static_cast<double>(js.recent.size());
  const bool bound = util < config.input_bound_util_percent && cpu >= config.cpu_saturated_fraction;
  if (bound && !js.input_bound_reported) {
    js.input_bound_reported = true;
    out.events.push_back(warning(
        job.job, input.now, kEventInputBound,
        "GPU idle " + percent(100 - util) + " of the time over the last " +
            roughDuration(config.input_bound_window) + " while the job's CPU is at " +
            percent(std::min(cpu, 1.0) * 100) +
            ": likely data loading; raise data loader workers or stage the dataset on local "
            "disk"));
  } else if (!bound) {
    js.input_bound_reported = false;  // the episode is over; a new one is reported again
  }
}

}  // namespace

Status validateDiagnosisConfig(const DiagnosisConfig& c) {
  auto pct = [](double v) { return v > 0 && v <= 100; };
  if (!pct(c.idle_util_percent)) {
    return Status::invalidArgument("must be a percentage above 0 and at most 100",
                                   "gpu_monitor.idle_util_percent");
  }
  if (!pct(c.input_bound_util_percent)) {
    return Status::invalidArgument("must be a percentage above 0 and at most 100",
                                   "gpu_monitor.input_bound_util_percent");
  }
  if (c.idle_after <= 0) {
    return Status::invalidArgument("must be a positive duration such as 30m",
                                   "gpu_monitor.idle_after");
  }
  if (c.idle_stop_after < 0) {
    return Status::invalidArgument("must be a duration such as 1h, or 0 to never stop idle jobs",
                                   "gpu_monitor.idle_stop_after");
  }
  if (c.input_bound_window <= 0) {
    return Status::invalidArgument("must be a positive duration such as 5m",
                                   "gpu_monitor.input_bound_window");
  }
  if (!(c.cpu_saturated_fraction > 0 && c.cpu_saturated_fraction <= 1)) {
    return Status::invalidArgument("must be a fraction above 0 and at most 1",
                                   "gpu_monitor.cpu_saturated_fraction");
  }
  return Status::ok();
}

std::string describeXid(std::uint64_t xid) {
  const char* text = nullptr;
  switch (xid) {
    case 13:
      text = "graphics engine exception (usually the application's fault)";
      break;
    case 31:
      text = "GPU memory page fault (usually the application's fault)";
      break;
    case 43:
      text = "GPU stopped processing (usually the application's fault)";
      break;
    case 45:
      text = "preemptive cleanup after an earlier error";
      break;
    case 48:
      text = "double-bit ECC error";
      break;
    case 61:
    case 62:
      text = "internal micro-controller error";
      break;
    case 63:
      text = "ECC page retirement or row remapping recorded";
      break;
    case 64:
      text = "ECC page retirement or row remapping failed";
      break;
    case 74:
      text = "NVLink error";
      break;
    case 79:
      text = "GPU has fallen off the bus";
      break;
    case 92:
      text = "high single-bit ECC error rate";
      break;
    case 94:
      text = "contained ECC error";
      break;
    case 95:
      text = "uncontained ECC error";
      break;
    case 119:
      text = "GSP firmware timed out";
      break;
    case 120:
      text = "GSP firmware error";
      break;
    default:
      text = "see NVIDIA's XID catalogue";
  }
  return "XID " + std::to_string(xid) + ": " + text;
}

DiagnosisOutput diagnoseGpus(const DiagnosisInput& input, const DiagnosisConfig& config,
                             DiagnosisState& state) {
  DiagnosisOutput out;
  std::map<int, const GpuObservation*> gpus;
  for (const GpuObservation& g : input.gpus) gpus[g.index] = &g;

  // Jobs: idle and input-bound. State of jobs no longer observed goes.
  std::map<JobId, DiagnosisState::JobState> jobs;
  for (const JobObservation& job : input.jobs) {
    DiagnosisState::JobState js;
    if (auto it = state.jobs.find(job.job); it != state.jobs.end()) js = std::move(it->second);
    diagnoseJob(job, gpus, input, config, js, out);
    jobs[job.job] = std::move(js);
  }
  state.jobs = std::move(jobs);

  // Which running jobs are on each GPU, for the health events.
  std::map<int, std::vector<JobId>> jobs_on;
  for (const JobObservation& job : input.jobs) {
    for (int g : job.gpus) jobs_on[g].push_back(job.job);
  }

  std::set<std::int64_t> candidates;
  for (const GpuObservation& gpu : input.gpus) {
    DiagnosisState::GpuState& gs = state.gpus[gpu.index];

    // Faults. The volatile count starts at 0 when the driver loads, so a
    // first reading above 0 has risen too; a lower one means the GPU was
    // reset, which clears what the count had said.
    std::string new_fault;
    if (gpu.ecc_double_bit) {
      const std::uint64_t count = *gpu.ecc_double_bit;
      if (count > gs.ecc_double_bit) {
        new_fault = "ECC double-bit errors rose from " + std::to_string(gs.ecc_double_bit) +
                    " to " + std::to_string(count);
      } else if (count < gs.ecc_double_bit && gs.fault.rfind("ECC", 0) == 0) {
        gs.fault.clear();
      }
      gs.ecc_double_bit = count;
    }
    for (std::uint64_t xid : gpu.xids) {
      if (isHardwareXid(xid)) new_fault = describeXid(xid);
    }
    if (!new_fault.empty()) {
      gs.fault = new_fault;
      for (JobId j : jobs_on[gpu.index]) {
        out.events.push_back(warning(j, input.now, kEventGpuUnhealthy,
                                     gpuName(gpu) + " of this job is unhealthy: " + new_fault +
                                         "; no new jobs are placed on it. This job may fail or "
                                         "compute wrong results on it: check its output"));
      }
    }

    // Ghosts: processes whose pid is no running job's.
    std::string ghost;
    int ghosts = 0;
    if (gpu.processes) {
      std::vector<std::int64_t>& ghost_pids = out.ghost_pids[gpu.index];
      for (const GpuProcessObservation& p : *gpu.processes) {
        auto owner = input.pid_owners.find(p.pid);
        if (owner != input.pid_owners.end() && owner->second.running) continue;
        candidates.insert(p.pid);
        if (state.ghost_candidates.count(p.pid) == 0) continue;  // one more round to exit
        ++ghosts;
        ghost_pids.push_back(p.pid);
        if (ghost.empty()) {
          ghost = "ghost process " + std::to_string(p.pid) + " holds " +
                  memoryText(p.used_memory_bytes);
        }
        // Only a leftover of one of our ended jobs is ever killed; a foreign
        // process is reported and waited out.
        const bool ours = owner != input.pid_owners.end();
        const bool kill = ours && config.kill_ghosts && state.ghosts_killed.count(p.pid) == 0;
        if (state.ghosts_reported.insert(p.pid).second && ours) {
          out.events.push_back(
              warning(owner->second.job, input.now, kEventGhostProcess,
                      "process " + std::to_string(p.pid) + " of this job still holds " +
                          memoryText(p.used_memory_bytes) + " on " + gpuName(gpu) +
                          " after the job ended; the GPU is kept out of scheduling until it exits" +
                          (config.kill_ghosts ? "; killing it (gpu_monitor.kill_ghosts)"
                                              : "; kill it, or set gpu_monitor.kill_ghosts")));
        }
        if (kill) {
          state.ghosts_killed.insert(p.pid);
          out.kills.push_back({p.pid, owner->second.job});
        }
      }
      if (ghosts > 1) ghost += " (and " + std::to_string(ghosts - 1) + " more)";
      gs.ghost = ghost;
    }
    // An unreadable process list keeps the last verdict: a ghost is not
    // known to be gone.
    out.ghost_processes[gpu.index] = gpu.processes ? ghosts : (gs.ghost.empty() ? 0 : 1);

    const std::string reason = !gs.fault.empty() ? gs.fault : gs.ghost;
    const bool unhealthy = !reason.empty();
    if (unhealthy != gs.unhealthy || reason != gs.reported_reason) {
      out.health.push_back({gpu.index, !unhealthy, reason});
      gs.unhealthy = unhealthy;
      gs.reported_reason = reason;
    }
    if (unhealthy) out.unhealthy[gpu.index] = reason;
  }
  // A pid seen again later is a new candidate: it may be a new process.
  state.ghost_candidates = std::move(candidates);
  for (std::set<std::int64_t>* seen : {&state.ghosts_reported, &state.ghosts_killed}) {
    for (auto it = seen->begin(); it != seen->end();) {
      it = state.ghost_candidates.count(*it) ? std::next(it) : seen->erase(it);
    }
  }
  return out;
}

}  // namespace ty
