#include "server/gpu_monitor.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

#include "gpu/gpu_provider.h"
#include "metrics/exposition.h"
#include "metrics/families.h"
#include "server/config.h"
#include "server/job_service.h"
#include "store/store.h"

namespace ty {
namespace {

GpuObservation observe(const GpuSample& s) {
  GpuObservation g;
  g.index = s.index;
  g.uuid = s.uuid;
  g.util_percent = s.gpu_util_percent;
  g.ecc_double_bit = s.ecc_double_bit_volatile;
  g.xids = s.xids;
  if (s.processes) {
    g.processes.emplace();
    for (const GpuProcessSample& p : *s.processes) {
      g.processes->push_back({p.pid, p.used_memory_bytes});
    }
  }
  return g;
}

}  // namespace

GpuMonitor::GpuMonitor(std::unique_ptr<GpuReader> reader, NodesView nodes, JobLookup lookup,
                       ProcScanner scan, const Clock& clock, GpuMonitorOptions options,
                       GpuMonitorActions actions)
    : sampler_(std::move(reader)),
      nodes_(std::move(nodes)),
      lookup_(std::move(lookup)),
      scan_(std::move(scan)),
      clock_(clock),
      options_(std::move(options)),
      actions_(std::move(actions)),
      metrics_(registry_, options_.node),
      idle_seconds_(gaugeFamily(registry_, "trainyard_job_gpu_idle_seconds",
                                "How long all GPUs of a running job have stayed under the idle "
                                "threshold (gpu_monitor.idle_util_percent); 0 while any is busy.")),
      ghost_processes_(gaugeFamily(registry_, "trainyard_ghost_gpu_processes",
                                   "Processes on a GPU that belong to no running job.")) {}

GpuMonitor::~GpuMonitor() { stop(); }

void GpuMonitor::start() {
  if (!loop_) loop_ = std::make_unique<SamplingLoop>(options_.interval, [this] { round(); });
}

void GpuMonitor::stop() {
  if (loop_) loop_->stop();
}

std::string GpuMonitor::exposition() const {
  std::lock_guard<std::mutex> lock(mu_);
  return serializeText(registry_);
}

void GpuMonitor::round() {
  const Timestamp now = clock_.now();
  NodeSample sample = sampler_.sample();
  // Logged when they change, not every round (as the node exporter does).
  if (sample.problems != last_problems_) {
    for (const std::string& p : sample.problems) spdlog::warn("GPU monitor: {}", p);
    if (sample.problems.empty() && !last_problems_.empty()) {
      spdlog::info("GPU monitor: all GPU reads succeed again");
    }
    last_problems_ = sample.problems;
  }
  ProcJobs procs = scan_ ? scan_() : ProcJobs{};

  // Jobs are looked up once per round, whether they hold GPUs or own pids.
  std::map<JobId, std::optional<Job>> jobs;
  auto job = [&](JobId id) -> const std::optional<Job>& {
    auto [it, fresh] = jobs.try_emplace(id);
    if (fresh && lookup_) it->second = lookup_(id);
    return it->second;
  };

  GpuAttribution attribution;
  DiagnosisInput input;
  input.now = now;
  std::map<JobId, JobObservation> holders;
  for (const NodeView& n : nodes_ ? nodes_() : std::vector<NodeView>{}) {
    if (n.info.name != options_.node) continue;
    for (const GpuView& g : n.gpus) {
      for (JobId h : g.holders) {
        const std::optional<Job>& j = job(h);
        JobObservation& o = holders[h];
        o.job = h;
        o.project = j ? j->spec.project : "";
        o.user = j ? j->user : "";
        o.gpus.push_back(g.gpu.index);
        // A shared GPU is labelled with its first holder.
        attribution.holders.try_emplace(g.gpu.index,
                                        GpuHolder{std::to_string(h.value()), o.project, o.user});
      }
    }
  }

  for (const auto& [pid, p] : procs.pids) {
    attribution.process_jobs[pid] = std::to_string(p.job.value());
    const std::optional<Job>& j = job(p.job);
    // A process of an earlier attempt outlived it: a leftover, even while
    // the job runs again.
    bool running = j && !isTerminal(j->state) && j->state != JobState::kPending &&
                   (p.attempt == 0 || p.attempt == j->attempts);
    input.pid_owners[pid] = PidOwner{p.job, running};
  }

  // CPU use since the last round, as a fraction of what the job may use.
  std::map<JobId, CpuMark> marks;
  for (auto& [id, o] : holders) {
    auto cpu = procs.cpu_seconds.find(id);
    if (cpu == procs.cpu_seconds.end()) continue;
    marks[id] = CpuMark{now, cpu->second};
    auto prev = cpu_marks_.find(id);
    if (prev == cpu_marks_.end() || now <= prev->second.time) continue;
    const double used = cpu->second - prev->second.cpu_seconds;
    if (used < 0) continue;  // a process exited and took its time with it
    double cpus = options_.node_cpus;
    if (const std::optional<Job>& j = job(id); j && j->spec.resources.cpus.milli() > 0) {
      cpus = static_cast<double>(j->spec.resources.cpus.milli()) / 1000.0 *
             std::max(1, j->spec.replicas);
    }
    const double wall = static_cast<double>(now - prev->second.time) / 1000.0;
    o.cpu_fraction = std::clamp(used / (wall * std::max(cpus, 0.001)), 0.0, 1.0);
  }
  cpu_marks_ = std::move(marks);
  for (auto& [id, o] : holders) input.jobs.push_back(std::move(o));
  for (const GpuSample& s : sample.gpus) input.gpus.push_back(observe(s));

  DiagnosisOutput out = diagnoseGpus(input, options_.diagnosis, diagnosis_);
  // A GPU is idle since its holders' idle spell began (the earliest, when
  // shared).
  std::map<int, Timestamp> idle_since;
  for (const JobObservation& o : input.jobs) {
    auto js = diagnosis_.jobs.find(o.job);
    if (js == diagnosis_.jobs.end() || js->second.idle_since == 0) continue;
    for (int g : o.gpus) {
      auto [it, fresh] = idle_since.try_emplace(g, js->second.idle_since);
      if (!fresh) it->second = std::min(it->second, js->second.idle_since);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    metrics_.update(sample, attribution);
    updateDiagnosisSeries(sample, out);
    updateLive(now, sample, out, idle_since);
  }

  for (const Event& e : out.events) {
    spdlog::warn("GPU monitor: job {}: {}: {}", e.job.value(), e.reason, e.message);
  }
  if (!out.events.empty() && actions_.record_events) actions_.record_events(std::move(out.events));
  for (const GpuHealthChange& h : out.health) {
    if (h.healthy) {
      spdlog::info("GPU monitor: GPU {} is healthy again and back in scheduling", h.gpu);
    } else {
      spdlog::warn("GPU monitor: GPU {} is out of scheduling: {}", h.gpu, h.reason);
    }
    if (actions_.set_gpu_health) actions_.set_gpu_health(options_.node, h.gpu, h.healthy, h.reason);
  }
  for (const ProcessKill& k : out.kills) {
    spdlog::warn("GPU monitor: killing process {}, left behind by ended job {}", k.pid,
                 k.job.value());
    if (actions_.kill_process) actions_.kill_process(k.pid, k.job);
  }
  for (const JobStop& s : out.stops) {
    spdlog::warn("GPU monitor: stopping job {}: {}", s.job.value(), s.why);
    if (actions_.stop_job) actions_.stop_job(s.job, s.why);
  }
}

void GpuMonitor::updateDiagnosisSeries(const NodeSample& sample, const DiagnosisOutput& out) {
  for (const JobIdleValue& v : out.idle_seconds) {
    idle_seconds_.set(
        {{"job", std::to_string(v.job.value())}, {"project", v.project}, {"user", v.user}},
        v.seconds);
  }
  std::map<int, std::string> uuids;
  for (const GpuSample& s : sample.gpus) uuids[s.index] = s.uuid;
  for (const auto& [gpu, count] : out.ghost_processes) {
    ghost_processes_.set(
        {{"gpu", std::to_string(gpu)}, {"UUID", uuids[gpu]}, {"Hostname", options_.node}}, count);
  }
  idle_seconds_.sweep();
  ghost_processes_.sweep();
}

void GpuMonitor::updateLive(Timestamp now, const NodeSample& sample, const DiagnosisOutput& out,
                            const std::map<int, Timestamp>& idle_since) {
  // A GPU missing from this round (its count could not be read) keeps its
  // history but has no current reading.
  for (auto& [index, g] : live_) {
    g.view.util_percent.reset();
    g.view.memory_used_bytes.reset();
    g.view.idle_since = 0;
  }
  for (const GpuSample& s : sample.gpus) {
    LiveGpu& g = live_[s.index];
    g.view.util_percent = s.gpu_util_percent;
    g.view.memory_used_bytes = s.memory_used_bytes;
    if (s.gpu_util_percent) {
      g.ring.emplace_back(now, *s.gpu_util_percent);
      if (g.ring.size() > kGpuHistorySamples) g.ring.pop_front();
    }
    auto idle = idle_since.find(s.index);
    g.view.idle_since = idle == idle_since.end() ? 0 : idle->second;
    // An unread process list keeps the last known ghosts, as the ghost
    // count does.
    if (auto ghosts = out.ghost_pids.find(s.index); ghosts != out.ghost_pids.end()) {
      g.view.ghost_pids = ghosts->second;
    }
  }
}

GpuLiveState GpuMonitor::liveState() const {
  std::lock_guard<std::mutex> lock(mu_);
  GpuLiveState out;
  for (const auto& [index, g] : live_) {
    GpuLiveView& v = out[{options_.node, index}];
    v = g.view;
    v.history.assign(g.ring.begin(), g.ring.end());
  }
  return out;
}

bool killLeftoverProcess(std::int64_t pid, JobId job, const std::string& proc_root) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string environ_bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ProcJobProcess owner;
  if (!in.good() && !in.eof()) return false;
  if (!parseJobEnviron(environ_bytes, owner) || owner.job != job) return false;
  return ::kill(static_cast<pid_t>(pid), SIGKILL) == 0;
}

std::unique_ptr<GpuMonitor> makeGpuMonitor(const ServerConfig& config, const NodeInfo& node,
                                           JobService& service, Store& store, const Clock& clock) {
  if (!config.gpu_monitor.enabled || node.gpus.empty()) return nullptr;
  std::unique_ptr<GpuReader> reader;
  if (!config.fake_gpus.empty()) {
    Result<std::vector<GpuInfo>> gpus = parseFakeGpus(config.fake_gpus, node.name);
    if (!gpus.isOk()) return nullptr;  // already refused by describeServerNode
    reader = newFakeGpuReader(std::move(*gpus));
  } else {
    Result<std::unique_ptr<GpuReader>> nvml = openNvmlGpuReader(config.nvml_library);
    if (!nvml.isOk()) {
      spdlog::warn("GPU monitor off: {}", nvml.status().message());
      return nullptr;
    }
    reader = std::move(*nvml);
  }
  GpuMonitorOptions options;
  options.node = node.name;
  options.interval = config.gpu_monitor.sample_interval;
  options.diagnosis = config.gpu_monitor.diagnosis;
  options.node_cpus = static_cast<double>(node.cpus.milli()) / 1000.0;
  GpuMonitorActions actions;
  actions.record_events = [&service](std::vector<Event> events) {
    service.recordEvents(std::move(events));
  };
  actions.set_gpu_health = [&service](const std::string& n, int gpu, bool healthy,
                                      const std::string& reason) {
    if (Status st = service.setGpuHealth(n, gpu, healthy, reason); !st.isOk()) {
      spdlog::warn("GPU monitor: GPU {}: {}", gpu, st.message());
    }
  };
  // The event recorded before says why; "trainyard" is the canceller.
  actions.stop_job = [&service](JobId id, const std::string&) {
    if (auto r = service.cancel(id, "trainyard"); !r.isOk()) {
      spdlog::warn("GPU monitor: cannot stop job {}: {}", id.value(), r.status().message());
    }
  };
  actions.kill_process = [](std::int64_t pid, JobId job) {
    if (!killLeftoverProcess(pid, job)) {
      spdlog::warn("GPU monitor: process {} of job {} was not killed (gone, or no longer its)", pid,
                   job.value());
    }
  };
  return std::make_unique<GpuMonitor>(
      std::move(reader), [&service] { return service.nodes(); },
      [&store](JobId id) -> std::optional<Job> {
        Result<Job> job = store.getJob(id);
        if (!job.isOk()) return std::nullopt;
        return std::move(job).value();
      },
      [] { return scanProcJobs(); }, clock, options, std::move(actions));
}

}  // namespace ty
