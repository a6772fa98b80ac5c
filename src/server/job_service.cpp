#include "server/job_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <set>

#include "codec/queue_codec.h"
#include "common/units.h"

namespace ty {

struct JobService::CancelRequest {
  JobId id;
  std::string user;
  std::promise<Result<Job>> reply;
};

// A job with a current attempt (placed, running or stopping).
struct JobService::Live {
  Attempt attempt;
  std::vector<std::optional<ReplicaExit>> exits;
  Timestamp deadline = 0;   // max_runtime kill time; 0: none
  Timestamp stop_sent = 0;  // SIGTERM sent; 0: not stopping
  Timestamp kill_at = 0;    // SIGKILL due
  bool kill_sent = false;
  bool timed_out = false;
  bool launch_failed = false;  // the executor could not start it
  int first_failed = -1;       // the replica that failed first, in time
};

// A GPU's health as setGpuHealth changed it, for the loop to act on.
struct JobService::HealthChange {
  std::string node;
  int gpu = 0;
  bool healthy = true;
  std::string reason;
};

// Collects one pass's writes (deduplicated by job and attempt) and the
// actions to take once they are committed.
class JobService::Pass {
 public:
  void put(const Job& job) { jobs_[job.id] = job; }
  void put(const Attempt& a) { attempts_[a.key] = a; }
  void event(JobId job, Timestamp t, std::string reason, std::string message,
             EventLevel level = EventLevel::kNormal) {
    events_.push_back({0, job, t, level, std::move(reason), std::move(message)});
  }
  void event(Event e) { events_.push_back(std::move(e)); }
  WriteBatch batch() const {
    WriteBatch b;
    for (const auto& [id, j] : jobs_) b.jobs.push_back(j);
    for (const auto& [k, a] : attempts_) b.attempts.push_back(a);
    b.events = events_;
    b.usage = usage;
    return b;
  }
  void clearWrites() {
    jobs_.clear();
    attempts_.clear();
    events_.clear();
    usage.clear();
  }
  std::vector<QueueUsage> usage;
  std::vector<JobId> launches;
  std::vector<std::pair<AttemptKey, int>> signals;
  std::vector<AttemptKey> releases;
  std::vector<std::pair<std::shared_ptr<CancelRequest>, Result<Job>>> replies;
  bool schedule = false;
  PassReport report;  // handed to options.on_pass once the pass is committed

 private:
  std::map<JobId, Job> jobs_;
  std::map<AttemptKey, Attempt> attempts_;
  std::vector<Event> events_;
};

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Why a job ended failed, as one of failureReasons().
const char* failureReason(bool timed_out, bool launch_failed, const ReplicaExit* first_failure) {
  if (timed_out) return "max_runtime";
  if (launch_failed) return "launch";
  if (first_failure != nullptr && first_failure->lost) return "lost";
  if (first_failure != nullptr && first_failure->signal != 0) return "signal";
  return "exit_code";
}

// The core words a reclaim "Preempted by job 12 (reclaim for project
// vision)"; every other preemption is one of precedence.
const char* preemptionReason(const Preemption& p) {
  return p.message.find("(reclaim for ") != std::string::npos ? "reclaim" : "priority";
}

std::string gpuList(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

std::string describePlacement(const std::vector<ReplicaPlacement>& replicas) {
  if (replicas.size() == 1) {
    const auto& r = replicas[0];
    return "Placed on " + r.node +
           (r.gpus.empty()
                ? " (no GPUs)"
                : ", GPU" + std::string(r.gpus.size() > 1 ? "s " : " ") + gpuList(r.gpus) +
                      (r.gpu_milli < 1000
                           ? " (share " + Quantity::fromMilli(r.gpu_milli).toString() + ")"
                           : ""));
  }
  std::string out = "Placed " + std::to_string(replicas.size()) + " replicas:";
  for (size_t i = 0; i < replicas.size(); ++i) {
    out += (i ? "; " : " ") + std::to_string(i) + " on " + replicas[i].node;
    if (!replicas[i].gpus.empty()) out += " GPUs " + gpuList(replicas[i].gpus);
  }
  return out;
}

std::string describeRequest(const JobSpec& s) {
  std::string out =
      s.resources.gpus.toString() + " GPU" + (s.resources.gpus == Quantity::whole(1) ? "" : "s");
  if (!s.resources.cpus.isZero()) out += ", " + s.resources.cpus.toString() + " CPUs";
  if (s.resources.memory_bytes) out += ", " + formatMemory(s.resources.memory_bytes) + " memory";
  if (s.replicas > 1) out += " per replica, " + std::to_string(s.replicas) + " replicas";
  return out;
}

// "Waiting: needs 4 GPUs, 2 free" -> "Waiting: needs # GPUs, # free".
std::string numberless(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += c;
    }
  }
  return out;
}

std::string defaultName(const JobSpec& s) {
  if (!s.command.empty()) {
    std::string base = s.command[0].substr(s.command[0].find_last_of('/') + 1);
    std::string out;
    for (char c : base)
      out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')
                 ? c
                 : '-';
    if (!out.empty() && out.size() <= 128) return out;
  }
  return "job";
}

// The shapes fragmentation-aware placement measures free capacity against,
// until the server has seen enough of its own jobs: mostly single GPUs,
// some shares and some multi-GPU jobs.
Workload defaultWorkload() {
  auto shape = [](int count, int milli) {
    ReplicaShape s;
    s.gpu_count = count;
    s.gpu_milli = milli;
    return s;
  };
  return {{shape(1, 1000), 0.4}, {shape(1, 500), 0.15}, {shape(1, 250), 0.1},
          {shape(2, 1000), 0.1}, {shape(4, 1000), 0.1}, {shape(8, 1000), 0.1},
          {shape(0, 1000), 0.05}};
}

}  // namespace

const std::vector<std::string>& failureReasons() {
  static const std::vector<std::string> kReasons = {"exit_code", "signal", "lost", "launch",
                                                    "max_runtime"};
  return kReasons;
}

JobService::JobService(Store& store, Executor& executor, const Clock& clock,
                       JobServiceOptions options)
    : store_(store),
      executor_(executor),
      clock_(clock),
      options_(std::move(options)),
      batcher_(store),
      rng_(options_.seed) {}

JobService::~JobService() { stop(); }

Status JobService::start() {
  TY_ASSIGN_OR_RETURN(placement_, makePlacementPolicy(options_.placement, defaultWorkload()));
  TY_RETURN_IF_ERROR(loadQueues());
  executor_.setObserver([this](const ReplicaExit& e) {
    std::lock_guard lock(inbox_mu_);
    exits_.push_back(e);
    inbox_cv_.notify_one();
  });
  Pass pass;
  TY_RETURN_IF_ERROR(recover(pass));
  // Pending jobs may fit now: schedule in the same pass as the recovery.
  accrueUsage(pass, clock_.now());
  schedulePass(pass, clock_.now());
  if (!commitAndAct(pass)) return Status::internal("could not commit recovered state");
  running_ = true;
  thread_ = std::thread([this] { loop(); });
  return Status::ok();
}

void JobService::stop() {
  {
    std::lock_guard lock(inbox_mu_);
    stop_ = true;
    inbox_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  running_ = false;
}

void JobService::wake() {
  std::lock_guard lock(inbox_mu_);
  poke_ = true;
  inbox_cv_.notify_all();
}

bool JobService::ready() const { return running_ && !needs_recovery_ && store_.healthy(); }

Result<ControlPlane::Submitted> JobService::submit(JobSpec spec, const std::string& user,
                                                   const std::string& idempotency_key) {
  if (spec.name.empty()) spec.name = defaultName(spec);
  TY_RETURN_IF_ERROR(validateSpec(spec));
  // Until the job is stored, its queue may not be deleted (see admission_mu_).
  std::shared_lock admission(admission_mu_);
  const PolicyConfig policy = policyNow();
  TY_RETURN_IF_ERROR(resolveQueue(spec, policy.queues));
  TY_RETURN_IF_ERROR(checkFeasible(spec, options_.nodes));
  // A job over its queue's ceiling (nominal plus all it may ever borrow)
  // would wait for ever: refuse it here, before anything is stored.
  TY_RETURN_IF_ERROR(checkQuota(spec, policy, options_.nodes));
  Job job;
  job.spec = std::move(spec);
  job.user = user;
  job.state = JobState::kPending;
  job.created_at = job.updated_at = clock_.now();
  job.idempotency_key = idempotency_key;
  std::vector<Event> events = {{0, JobId(), job.created_at, EventLevel::kNormal, "Submitted",
                                "Submitted by " + user + ": " + describeRequest(job.spec)}};
  bool replayed = false;
  const auto write_start = std::chrono::steady_clock::now();
  Status written = batcher_.submit(job, std::move(events), replayed);
  if (options_.on_pass) {
    PassReport r;
    r.store_operations.emplace_back("create_jobs", secondsSince(write_start));
    report(r);
  }
  TY_RETURN_IF_ERROR(written);
  admission.unlock();
  if (!replayed) {
    std::lock_guard lock(inbox_mu_);
    new_jobs_.push_back(job);
    inbox_cv_.notify_one();
  }
  return Submitted{std::move(job), replayed};
}

Result<Job> JobService::cancel(JobId id, const std::string& user) {
  auto req = std::make_shared<CancelRequest>();
  req->id = id;
  req->user = user;
  auto reply = req->reply.get_future();
  {
    std::lock_guard lock(inbox_mu_);
    if (stop_) return Status::unavailable("the server is shutting down; try again");
    cancels_.push_back(req);
    inbox_cv_.notify_one();
  }
  if (reply.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    return Status::unavailable(
        "the cancel is queued but not confirmed within 30s; check the job's state before "
        "trying again");
  }
  return reply.get();
}

void JobService::report(const PassReport& r) const {
  if (options_.on_pass) options_.on_pass(r);
}

Status JobService::setGpuHealth(const std::string& node, int gpu_index, bool healthy,
                                const std::string& reason) {
  const GpuInfo* gpu = nullptr;
  for (const NodeInfo& n : options_.nodes) {
    if (n.name != node) continue;
    for (const GpuInfo& g : n.gpus) {
      if (g.index == gpu_index) gpu = &g;
    }
  }
  if (gpu == nullptr) {
    return Status::notFound("no GPU " + std::to_string(gpu_index) + " on node " + node);
  }
  const std::string why = healthy ? "" : (reason.empty() ? "marked unhealthy" : reason);
  {
    std::lock_guard lock(health_mu_);
    auto it = health_.find({node, gpu_index});
    const bool was_healthy = it != health_.end() ? it->second.healthy : gpu->healthy;
    const std::string was_why = it != health_.end() ? it->second.reason : "";
    if (it != health_.end() && was_healthy == healthy && was_why == why) return Status::ok();
    Timestamp since =
        was_healthy != healthy || it == health_.end() ? clock_.now() : it->second.since;
    health_[{node, gpu_index}] = GpuHealth{healthy, why, since};
  }
  spdlog::info("GPU {} of node {} {}", gpu_index, node,
               healthy ? "is healthy again" : "is unhealthy, no new jobs go to it: " + why);
  std::lock_guard lock(inbox_mu_);
  health_changes_.push_back({node, gpu_index, healthy, why});
  inbox_cv_.notify_one();
  return Status::ok();
}

std::vector<GpuHealthView> JobService::gpuHealth() const {
  std::vector<GpuHealthView> out;
  std::lock_guard lock(health_mu_);
  for (const NodeInfo& n : options_.nodes) {
    for (const GpuInfo& g : n.gpus) {
      GpuHealthView v{n.name, g.index, g.uuid, g.healthy, "", 0};
      if (auto it = health_.find({n.name, g.index}); it != health_.end()) {
        v.healthy = it->second.healthy;
        v.reason = it->second.reason;
        v.since = it->second.since;
      } else if (!g.healthy) {
        v.reason = "reported unhealthy when the server started";
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::vector<NodeInfo> JobService::nodesNow() const {
  std::vector<NodeInfo> nodes = options_.nodes;
  std::lock_guard lock(health_mu_);
  if (health_.empty()) return nodes;
  for (NodeInfo& n : nodes) {
    for (GpuInfo& g : n.gpus) {
      if (auto it = health_.find({n.name, g.index}); it != health_.end()) {
        g.healthy = it->second.healthy;
      }
    }
  }
  return nodes;
}

void JobService::recordEvents(std::vector<Event> events) {
  if (events.empty()) return;
  std::lock_guard lock(inbox_mu_);
  for (Event& e : events) recorded_events_.push_back(std::move(e));
  inbox_cv_.notify_one();
}

void JobService::handleHealthChange(const HealthChange& change, Pass& pass, Timestamp now) {
  // Either way the next pass sees another cluster: a healthy GPU may start
  // a waiting job, an unhealthy one changes why jobs wait.
  pass.schedule = true;
  if (change.healthy) return;
  for (const auto& [id, live] : live_) {
    for (const auto& r : live->attempt.replicas) {
      if (r.node != change.node ||
          std::find(r.gpus.begin(), r.gpus.end(), change.gpu) == r.gpus.end()) {
        continue;
      }
      pass.event(id, now, "GpuUnhealthy",
                 "GPU " + std::to_string(change.gpu) + " of node " + change.node +
                     " is unhealthy (" + change.reason +
                     "); the job keeps running on it, but no new job is placed there",
                 EventLevel::kWarning);
      break;
    }
  }
}

std::string JobService::unhealthyNote(const PendingJob& job, const ClusterSnapshot& cluster) const {
  const ReplicaShape shape = job.shape();
  if (shape.gpu_count == 0) return "";
  for (const NodeState& n : cluster.nodes) {
    bool selected = true;
    for (const auto& [key, value] : shape.node_selector) {
      auto it = n.info.labels.find(key);
      selected = selected && it != n.info.labels.end() && it->second == value;
    }
    if (!selected) continue;
    int healthy_fit = 0;
    std::vector<int> sick;
    for (const GpuInfo& g : n.info.gpus) {
      if (!gpuModelMatches(shape.gpu_types, g.model)) continue;
      auto used = n.gpu_used_milli.find(g.index);
      if ((used == n.gpu_used_milli.end() ? 0 : used->second) + shape.gpu_milli > 1000) continue;
      if (g.healthy) {
        ++healthy_fit;
      } else {
        sick.push_back(g.index);
      }
    }
    if (healthy_fit >= shape.gpu_count ||
        healthy_fit + static_cast<int>(sick.size()) < shape.gpu_count) {
      continue;
    }
    std::string reasons;
    {
      std::lock_guard lock(health_mu_);
      for (int g : sick) {
        auto it = health_.find({n.info.name, g});
        std::string why = it != health_.end() ? it->second.reason : "reported at start";
        if (reasons.find(why) == std::string::npos) reasons += (reasons.empty() ? "" : "; ") + why;
      }
    }
    return (sick.size() == 1 ? "GPU " + gpuList(sick) + " of node " + n.info.name + " is"
                             : "GPUs " + gpuList(sick) + " of node " + n.info.name + " are") +
           " unhealthy (" + reasons + ") and take" + (sick.size() == 1 ? "s" : "") + " no new jobs";
  }
  return "";
}

std::vector<NodeView> JobService::nodes() const {
  std::lock_guard lock(view_mu_);
  return node_view_;
}

std::optional<WaitInfo> JobService::waitInfo(JobId id) const {
  std::lock_guard lock(view_mu_);
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return std::nullopt;
  return it->second;
}

Status JobService::resolveQueue(JobSpec& spec, const std::vector<QueueConfig>& queues) {
  auto names = [&] {
    std::string out;
    for (const auto& q : queues) out += (out.empty() ? "" : ", ") + q.name;
    return out;
  };
  if (queues.empty()) {
    // No queues configured: everyone shares one queue without limits.
    if (spec.queue.empty()) spec.queue = "default";
    if (spec.queue != "default") {
      return Status::invalidArgument(
          "no queue \"" + spec.queue + "\": this server has only the queue \"default\"", "queue");
    }
    return Status::ok();
  }
  if (!spec.queue.empty()) {
    for (const auto& q : queues) {
      if (q.name == spec.queue) return Status::ok();
    }
    return Status::invalidArgument("no queue \"" + spec.queue + "\"; queues: " + names(), "queue");
  }
  for (const auto& q : queues) {
    if (q.project == spec.project) {
      spec.queue = q.name;
      return Status::ok();
    }
  }
  for (const auto& q : queues) {
    if (q.name == "default") {
      spec.queue = q.name;
      return Status::ok();
    }
  }
  return Status::invalidArgument("project \"" + spec.project +
                                     "\" has no queue; give one with `queue` (" + names() +
                                     ") or ask an admin to add a queue for the project",
                                 "project");
}

std::vector<RunningJob> JobService::runningJobs() const {
  std::vector<RunningJob> out;
  out.reserve(live_.size());
  for (const auto& [id, live] : live_) {
    const Job& job = active_.at(id);
    RunningJob r = runningJobOf(job, live->attempt);
    r.stopping = live->stop_sent > 0;
    r.preempted_by = job.preempted_by;
    if (auto a = attained_.find(id); a != attained_.end()) r.attained_service = a->second;
    out.push_back(std::move(r));
  }
  return out;
}

void JobService::accrueUsage(Pass& pass, Timestamp now) {
  // Called before a pass changes who runs: what ran since the last call is
  // charged to its queue.
  DurationMs half_life = options_.policy.fair_share_half_life;
  DurationMs elapsed = usage_as_of_ > 0 ? std::max<Timestamp>(0, now - usage_as_of_) : 0;
  std::map<std::string, ResourceRate> held = heldByQueue(runningJobs());
  for (const auto& [name, rate] : held) usage_[name];  // queues that just started using
  for (auto& [name, u] : usage_) {
    auto it = held.find(name);
    u = accumulateUsage(u, it == held.end() ? ResourceRate{} : it->second, elapsed, half_life);
    // Written with the pass, so a restart remembers who used the cluster.
    pass.usage.push_back({name, u.gpu / 1000, u.cpu / 1000, u.memory / double(1LL << 30), now});
  }
  usage_as_of_ = now;
}

void JobService::applyPreemption(const Preemption& p, Pass& pass, Timestamp now) {
  auto jit = active_.find(p.victim);
  auto lit = live_.find(p.victim);
  if (jit == active_.end() || lit == live_.end() || lit->second->stop_sent > 0) return;
  Job& job = jit->second;
  job.preempted_by = p.preemptor;
  job.preempt_requested_at = now;
  job.reason = p.message;
  job.updated_at = now;
  pass.put(job);
  beginStop(job, *lit->second, pass, now, "Preempted",
            p.message + ": sending SIGTERM to checkpoint, SIGKILL after " +
                formatDuration(job.spec.grace_period) + " if still running");
}

std::vector<QueueView> JobService::queueView() const {
  std::map<std::string, QueueView> by_name;
  std::vector<std::string> order;
  auto entry = [&](const std::string& name) -> QueueView& {
    auto it = by_name.find(name);
    if (it != by_name.end()) return it->second;
    order.push_back(name);
    QueueView& v = by_name[name];
    v.name = name;
    return v;
  };
  const std::vector<QueueConfig> queues = queuesNow();
  for (const auto& q : queues) {
    QueueView& v = entry(q.name);
    v.cohort = q.cohort;
    v.weight = q.weight;
    v.projects = {q.project};
    for (const auto& [res, quota] : q.quotas) {
      v.resources.push_back({res, quota.nominal, quota.borrowing_limit.value_or(-1),
                             quota.lending_limit.value_or(-1), 0});
    }
  }
  if (queues.empty()) entry("default").projects = {};
  auto resource = [](QueueView& v, const std::string& name) -> QueueView::Resource& {
    for (auto& r : v.resources) {
      if (r.name == name) return r;
    }
    v.resources.push_back({name, -1, -1, -1, 0});
    return v.resources.back();
  };
  for (const auto& [id, job] : active_) {
    QueueView& v = entry(job.spec.queue);
    auto lit = live_.find(id);
    if (lit == live_.end()) {
      if (job.state == JobState::kPending) v.pending += 1;
      continue;
    }
    v.running += 1;
    const auto& replicas = lit->second->attempt.replicas;
    const auto n = static_cast<std::int64_t>(replicas.size());
    for (const auto& r : replicas) {
      resource(v, "gpu").used += static_cast<std::int64_t>(r.gpus.size()) * r.gpu_milli;
      for (auto& quota : v.resources) {
        if (quota.name.rfind("gpu:", 0) != 0) continue;
        for (const auto& node : options_.nodes) {
          if (node.name != r.node) continue;
          for (const auto& g : node.gpus) {
            bool held = std::find(r.gpus.begin(), r.gpus.end(), g.index) != r.gpus.end();
            if (held && gpuModelMatches({quota.name.substr(4)}, g.model)) quota.used += r.gpu_milli;
          }
        }
      }
    }
    if (!job.spec.resources.cpus.isZero()) {
      resource(v, "cpu").used += job.spec.resources.cpus.milli() * n;
    }
    if (job.spec.resources.memory_bytes > 0) {
      resource(v, "memory").used += job.spec.resources.memory_bytes * n;
    }
  }
  for (const auto& [name, u] : usage_) entry(name).usage_gpu_hours = u.gpu / 1000 / 3.6e6;
  // Borrowed and lent, by the scheduler's own cohort accounting over what
  // each queue uses now.
  QuotaLedger ledger(queues);
  for (const auto& q : queues) {
    ResourceAmounts used;
    for (const auto& r : by_name[q.name].resources) used[r.name] = r.used;
    ledger.add(ledger.find(q.name), used);
  }
  std::vector<QueueView> out;
  for (const auto& name : order) {
    QueueView& v = by_name[name];
    if (v.resources.empty()) resource(v, "gpu");
    const int index = ledger.find(name);
    for (auto& r : v.resources) {
      r.borrowed = ledger.borrowed(index, r.name);
      r.lent = ledger.lent(index, r.name);
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<QueueView> JobService::queues() const {
  std::lock_guard lock(view_mu_);
  return queue_view_;
}

std::vector<QueueConfig> JobService::queueConfigs() const { return queuesNow(); }

std::vector<QueueConfig> JobService::queuesNow() const {
  std::lock_guard lock(queues_mu_);
  return queues_;
}

PolicyConfig JobService::policyNow() const {
  PolicyConfig policy = options_.policy;
  policy.queues = queuesNow();
  return policy;
}

void JobService::setQueues(std::vector<QueueConfig> queues) {
  {
    std::lock_guard lock(queues_mu_);
    queues_ = std::move(queues);
  }
  std::lock_guard lock(inbox_mu_);
  reschedule_ = true;
  inbox_cv_.notify_one();
}

namespace {

// Equal when both lists hold the same queues with the same configs in the
// same order (the order picks a project's queue). The codec's form is
// exact, so equal JSON is equal queues.
bool sameQueues(const std::vector<QueueConfig>& a, const std::vector<QueueConfig>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (queueToJson(a[i]) != queueToJson(b[i])) return false;
  }
  return true;
}

// How the config file's queues differ from the stored ones, by name:
// "nlp differs; vision only in the config file; speech only in the store".
std::string queueDifferences(const std::vector<QueueConfig>& file,
                             const std::vector<QueueConfig>& stored) {
  std::map<std::string, Json> in_store;
  for (const auto& q : stored) in_store[q.name] = queueToJson(q);
  std::vector<std::string> parts;
  std::set<std::string> in_file;
  for (const auto& q : file) {
    in_file.insert(q.name);
    auto it = in_store.find(q.name);
    if (it == in_store.end()) {
      parts.push_back(q.name + " only in the config file");
    } else if (it->second != queueToJson(q)) {
      parts.push_back(q.name + " differs");
    }
  }
  for (const auto& q : stored) {
    if (!in_file.count(q.name)) parts.push_back(q.name + " only in the store");
  }
  if (parts.empty()) parts.push_back("the same queues in another order");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string queueNames(const std::vector<QueueConfig>& queues) {
  std::string out;
  for (const auto& q : queues) out += (out.empty() ? "" : ", ") + q.name;
  return out.empty() ? "none" : out;
}

}  // namespace

Status JobService::loadQueues() {
  TY_ASSIGN_OR_RETURN(std::vector<QueueConfig> stored, store_.listQueues());
  const std::vector<QueueConfig>& file = options_.policy.queues;
  if (stored.empty() && !file.empty()) {
    // The first start (or one after every queue was deleted): the config
    // file's queues become the stored ones. All are checked before any is
    // written, so a bad one leaves the store as it was.
    for (size_t i = 0; i < file.size(); ++i) {
      std::string path = "scheduler.queues[" + std::to_string(i) + "]";
      if (Status st = validateQueue(file[i], path); !st.isOk()) return st;
    }
    for (const auto& q : file) {
      if (Status st = store_.putQueue(q); !st.isOk()) {
        return st.withContext("storing queue " + q.name + " of the config file");
      }
    }
    spdlog::info(
        "queues: stored the config file's scheduler.queues ({}); from now on the stored queues "
        "are used: change them with `trainyard queue set` and `trainyard queue delete`",
        queueNames(file));
    stored = file;
  } else if (!file.empty() && !sameQueues(stored, file)) {
    spdlog::warn(
        "queues: the config file's scheduler.queues differ from the queues in the store ({}); "
        "the stored queues ({}) are used, since the config file only seeds a store that has "
        "none. Change them with `trainyard queue set NAME -f queue.yaml` and `trainyard queue "
        "delete NAME` (PUT and DELETE /api/v1/queues/{{name}})",
        queueDifferences(file, stored), queueNames(stored));
  } else if (file.empty() && !stored.empty()) {
    spdlog::info("queues: using the {} stored queues ({}); the config file names none",
                 stored.size(), queueNames(stored));
  }
  std::lock_guard lock(queues_mu_);
  queues_ = std::move(stored);
  return Status::ok();
}

std::string JobService::queueChangeNote(const QueueConfig& queue,
                                        const std::vector<QueueConfig>& queues,
                                        bool created) const {
  std::vector<std::string> notes;
  // Use as of the last pass, against the new nominal quotas.
  std::vector<QueueView> view = this->queues();
  for (const auto& v : view) {
    if (v.name != queue.name) continue;
    for (const auto& r : v.resources) {
      auto q = queue.quotas.find(r.name);
      if (q == queue.quotas.end() || r.used <= q->second.nominal) continue;
      notes.push_back("queue " + queue.name + " uses " + formatAmount(r.name, r.used) + " " +
                      resourceNoun(r.name) + ", above the new nominal " +
                      formatAmount(r.name, q->second.nominal) +
                      ". Running jobs are not stopped for it: new jobs of the queue wait until "
                      "its use is back within quota, and the use above nominal counts as "
                      "borrowed, which queues of its cohort may reclaim by the scheduler's "
                      "preemption rules");
    }
  }
  if (auto project = store_.getProject(queue.project);
      !project.isOk() && project.status().code() == StatusCode::kNotFound) {
    notes.push_back("project " + queue.project +
                    " does not exist yet; create it with `trainyard projects create " +
                    queue.project + "` so that its members can submit to this queue");
  }
  bool has_default = false;
  for (const auto& q : queues) has_default = has_default || q.name == "default";
  if (created && queues.size() == 1 && !has_default) {
    // The server ran without queues, which puts every job in one unlimited
    // queue; from now on a job needs a queue.
    notes.push_back(
        "this is the only queue: jobs of projects without a queue of their own are now "
        "refused until there is a queue named default");
  }
  std::string out;
  for (const auto& n : notes) out += (out.empty() ? "" : "; ") + n;
  return out;
}

Result<QueueChange> JobService::putQueue(QueueConfig queue) {
  TY_RETURN_IF_ERROR(validateQueue(queue));
  std::unique_lock admission(admission_mu_);
  std::vector<QueueConfig> queues = queuesNow();
  auto it = std::find_if(queues.begin(), queues.end(),
                         [&](const QueueConfig& q) { return q.name == queue.name; });
  bool created = it == queues.end();
  // A new queue goes last, as in the store.
  if (created) {
    queues.push_back(queue);
  } else {
    *it = queue;
  }
  // The store first: a change that was not recorded is not made.
  TY_RETURN_IF_ERROR(store_.putQueue(queue));
  std::string note = queueChangeNote(queue, queues, created);
  setQueues(std::move(queues));
  spdlog::info("queues: {} queue {}: {}", created ? "created" : "changed", queue.name,
               describeQuotas(queue));
  return QueueChange{std::move(queue), created, std::move(note)};
}

Status JobService::deleteQueue(const std::string& name) {
  std::unique_lock admission(admission_mu_);
  std::vector<QueueConfig> queues = queuesNow();
  auto it = std::find_if(queues.begin(), queues.end(),
                         [&](const QueueConfig& q) { return q.name == name; });
  if (it == queues.end()) return Status::notFound(queueNotFoundMessage(name));
  // Counted in the store: every submitted job is there, including those
  // the loop has not taken in yet.
  TY_ASSIGN_OR_RETURN(std::vector<Job> active, store_.activeJobs());
  int pending = 0;
  int running = 0;
  for (const Job& job : active) {
    if (job.spec.queue != name) continue;
    (job.state == JobState::kPending ? pending : running) += 1;
  }
  if (pending + running > 0) {
    auto jobs = [](int n, const char* what) {
      return std::to_string(n) + " " + what + " job" + (n == 1 ? "" : "s");
    };
    std::string held = pending > 0 && running > 0
                           ? jobs(pending, "pending") + " and " + jobs(running, "running")
                           : (pending > 0 ? jobs(pending, "pending") : jobs(running, "running"));
    const bool one = pending + running == 1;
    return Status::failedPrecondition("queue " + name + " still has " + held + "; cancel " +
                                      (one ? "it or wait for it" : "them or wait for them") +
                                      " to finish, then delete the queue");
  }
  TY_RETURN_IF_ERROR(store_.deleteQueue(name));
  queues.erase(it);
  setQueues(std::move(queues));
  spdlog::info("queues: deleted queue {}", name);
  return Status::ok();
}

Status JobService::recover(Pass& pass) {
  // Built aside and swapped in only when the whole store was read.
  std::map<JobId, Job> active;
  std::map<JobId, std::unique_ptr<Live>> lives;
  Pass fresh;
  TY_ASSIGN_OR_RETURN(auto jobs, store_.activeJobs());
  Timestamp now = clock_.now();
  std::map<JobId, std::int64_t> attained;
  for (auto& job : jobs) {
    JobId id = job.id;
    std::vector<Attempt> attempts;
    if (job.attempts > 0) {
      TY_ASSIGN_OR_RETURN(attempts, store_.attempts(id));
      if (std::int64_t served = attainedService(job.spec, attempts); served > 0) {
        attained[id] = served;
      }
    }
    if (job.state == JobState::kScheduled || job.state == JobState::kRunning) {
      if (attempts.empty()) {
        return Status::internal("job " + std::to_string(id.value()) + " is " +
                                jobStateName(job.state) + " without an attempt");
      }
      auto live = std::make_unique<Live>();
      live->attempt = attempts.back();
      live->exits.resize(live->attempt.replicas.size());
      if (job.spec.max_runtime > 0 && live->attempt.started_at > 0) {
        live->deadline = live->attempt.started_at + job.spec.max_runtime;
      }
      if (job.cancel_requested_at > 0) {
        live->stop_sent = job.cancel_requested_at;
        live->kill_at = job.cancel_requested_at + job.spec.grace_period;
      } else if (job.preempted_by.value()) {
        live->stop_sent = job.preempt_requested_at;
        live->kill_at = job.preempt_requested_at + job.spec.grace_period;
      }
      lives[id] = std::move(live);
      fresh.launches.push_back(id);
    } else if (job.state == JobState::kPending && job.cancel_requested_at > 0) {
      job.state = JobState::kCancelled;
      job.finished_at = job.updated_at = now;
      fresh.put(job);
      fresh.event(id, now, "Cancelled", "Cancelled before it started");
      continue;
    }
    active[id] = std::move(job);
  }
  TY_ASSIGN_OR_RETURN(auto usage, store_.queueUsage());
  std::map<std::string, DecayedUsage> decayed;
  Timestamp as_of = 0;
  for (const auto& u : usage) {
    decayed[u.queue] = {u.gpu_ms * 1000, u.cpu_ms * 1000, u.memory_gib_ms * double(1LL << 30)};
    as_of = std::max(as_of, u.as_of);
  }
  active_ = std::move(active);
  live_ = std::move(lives);
  attained_ = std::move(attained);
  usage_ = std::move(decayed);
  // Jobs kept running while the server was down: the first pass charges
  // their queues for that time too.
  usage_as_of_ = as_of;
  fresh.schedule = true;
  pass = std::move(fresh);
  return Status::ok();
}

void JobService::loop() {
  while (true) {
    std::vector<Job> new_jobs;
    std::vector<std::shared_ptr<CancelRequest>> cancels;
    std::vector<ReplicaExit> exits;
    std::vector<HealthChange> health_changes;
    std::vector<Event> recorded;
    bool reschedule = false;
    {
      std::unique_lock lock(inbox_mu_);
      Timestamp now = clock_.now();
      Timestamp next = nextDeadline(now);
      auto has_work = [&] {
        return stop_ || poke_ || reschedule_ || !new_jobs_.empty() || !cancels_.empty() ||
               !exits_.empty() || !health_changes_.empty() || !recorded_events_.empty();
      };
      if (!has_work()) {
        if (next > 0) {
          inbox_cv_.wait_for(lock, std::chrono::milliseconds(std::max<Timestamp>(1, next - now)),
                             has_work);
        } else {
          inbox_cv_.wait(lock, has_work);
        }
      }
      if (stop_) break;
      poke_ = false;
      if (needs_recovery_) {
        // The store failed under us: nothing is acted on until the whole
        // state could be read back. What arrived stays in the inbox.
        lock.unlock();
        Pass pass;
        Status st = recover(pass);
        if (!st.isOk()) {
          spdlog::error("reading the store back failed, retrying in 1s: {}", st.toString());
          continue;
        }
        needs_recovery_ = false;
        accrueUsage(pass, clock_.now());
        schedulePass(pass, clock_.now());
        commitAndAct(pass);
        continue;
      }
      new_jobs.swap(new_jobs_);
      cancels.swap(cancels_);
      exits.swap(exits_);
      health_changes.swap(health_changes_);
      recorded.swap(recorded_events_);
      reschedule = reschedule_;
      reschedule_ = false;
    }
    Timestamp now = clock_.now();
    Pass pass;
    pass.schedule = reschedule;
    accrueUsage(pass, now);
    for (auto& job : new_jobs) {
      JobId id = job.id;
      active_.emplace(id, std::move(job));
      pass.schedule = true;
    }
    for (const auto& c : cancels) handleCancel(c, pass, now);
    for (const auto& e : exits) handleExit(e, pass, now);
    for (const auto& h : health_changes) handleHealthChange(h, pass, now);
    for (Event& e : recorded) {
      // An event of a job the store lacks would fail the whole batch.
      if (!active_.count(e.job) && !store_.getJob(e.job).isOk()) {
        spdlog::warn("dropping event {} of unknown job {}", e.reason, e.job.value());
        continue;
      }
      e.seq = 0;
      pass.event(std::move(e));
    }
    handleTimers(pass, now);
    if (pass.schedule) schedulePass(pass, now);
    commitAndAct(pass);
  }
  // Pending cancels get an answer rather than a timeout.
  std::lock_guard lock(inbox_mu_);
  for (auto& c : cancels_) c->reply.set_value(Status::unavailable("the server is shutting down"));
  cancels_.clear();
}

Timestamp JobService::nextDeadline(Timestamp now) const {
  if (needs_recovery_) return now + 1000;
  Timestamp next = 0;
  auto consider = [&](Timestamp t) {
    if (t > 0 && (next == 0 || t < next)) next = t;
  };
  for (const auto& [id, live] : live_) {
    if (live->stop_sent == 0) consider(live->deadline);
    if (live->stop_sent > 0 && !live->kill_sent) consider(live->kill_at);
  }
  bool any_pending = false;
  for (const auto& [id, job] : active_) {
    if (job.state != JobState::kPending) continue;
    any_pending = true;
    if (job.not_before > now) consider(job.not_before);
  }
  if (any_pending) {
    for (const auto& [id, live] : live_) {
      const Job& job = active_.at(id);
      if (job.spec.min_runtime > 0 && live->attempt.started_at > 0) {
        Timestamp until = live->attempt.started_at + job.spec.min_runtime;
        if (until > now) consider(until);
      }
    }
  }
  return next;
}

void JobService::handleCancel(const std::shared_ptr<CancelRequest>& req_ptr, Pass& pass,
                              Timestamp now) {
  CancelRequest& req = *req_ptr;
  // Answered after the pass commits, so the caller sees durable state.
  auto reply = [&](Result<Job> r) { pass.replies.push_back({req_ptr, std::move(r)}); };
  auto it = active_.find(req.id);
  if (it == active_.end()) {
    auto stored = store_.getJob(req.id);
    if (!stored.isOk()) return reply(stored.status());
    return reply(Status::failedPrecondition("job " + std::to_string(req.id.value()) + " already " +
                                            jobStateName(stored->state) +
                                            "; there is nothing to cancel"));
  }
  Job& job = it->second;
  if (job.cancel_requested_at > 0) return reply(job);  // idempotent
  job.cancel_requested_at = now;
  job.updated_at = now;
  auto lit = live_.find(job.id);
  if (lit == live_.end()) {
    job.state = JobState::kCancelled;
    job.finished_at = now;
    job.reason = "Cancelled by " + req.user;
    pass.put(job);
    pass.event(job.id, now, "Cancelled", "Cancelled by " + req.user + " before it started");
    Job done = job;
    active_.erase(it);
    attained_.erase(done.id);
    {
      std::lock_guard lock(view_mu_);
      waiting_.erase(done.id);
      next_waiting_.erase(done.id);
    }
    return reply(done);
  }
  job.reason = "Cancel requested by " + req.user;
  pass.put(job);
  beginStop(job, *lit->second, pass, now, "Stopping",
            "Cancel requested by " + req.user + ": sending SIGTERM, SIGKILL after " +
                formatDuration(job.spec.grace_period) + " if still running");
  reply(job);
}

void JobService::beginStop(Job& job, Live& live, Pass& pass, Timestamp now,
                           const std::string& reason, const std::string& why) {
  if (live.stop_sent > 0) return;
  live.stop_sent = now;
  live.kill_at = now + job.spec.grace_period;
  pass.event(job.id, now, reason, why);
  pass.signals.push_back({live.attempt.key, SIGTERM});
}

void JobService::handleExit(const ReplicaExit& exit, Pass& pass, Timestamp now) {
  auto lit = live_.find(exit.key.job);
  auto jit = active_.find(exit.key.job);
  if (lit == live_.end() || jit == active_.end()) return;
  Live& live = *lit->second;
  if (live.attempt.key != exit.key || exit.replica < 0 ||
      exit.replica >= static_cast<int>(live.exits.size()) || live.exits[exit.replica]) {
    return;
  }
  Job& job = jit->second;
  live.exits[exit.replica] = exit;
  bool failed = exit.lost || exit.exit_code != 0;
  if (failed && live.first_failed < 0) live.first_failed = exit.replica;
  if (job.spec.replicas > 1) {
    pass.event(job.id, now, "ReplicaExited",
               "Replica " + std::to_string(exit.replica) + " " + exit.message,
               failed ? EventLevel::kWarning : EventLevel::kNormal);
  }
  bool all_done = std::all_of(live.exits.begin(), live.exits.end(),
                              [](const auto& e) { return e.has_value(); });
  if (all_done) {
    finishAttempt(job, live, pass, now);
    return;
  }
  if (failed) {
    beginStop(job, live, pass, now, "Stopping",
              "Replica " + std::to_string(exit.replica) + " " + exit.message +
                  ": stopping the other replicas");
  }
}

void JobService::finishAttempt(Job& job, Live& live, Pass& pass, Timestamp now) {
  Attempt& a = live.attempt;
  // The replica that failed first decides how the attempt ended.
  const ReplicaExit* first_failure = nullptr;
  if (live.first_failed >= 0) first_failure = &*live.exits[live.first_failed];
  a.state = AttemptState::kEnded;
  a.finished_at = now;
  if (std::int64_t served = attemptService(job.spec, a); served > 0) attained_[job.id] += served;
  a.exit_code = first_failure ? first_failure->exit_code : 0;
  job.exit_code = a.exit_code;
  job.finished_at = now;
  job.updated_at = now;
  std::string what;
  if (first_failure) {
    what = first_failure->message;
    if (job.spec.replicas > 1)
      what = "Replica " + std::to_string(first_failure->replica) + " " + what;
    if (!what.empty())
      what[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(what[0])));
  } else {
    what = "Exited with code 0";
  }
  a.reason = what;
  pass.put(a);

  if (job.cancel_requested_at > 0) {
    job.state = JobState::kCancelled;
    job.reason = "Cancelled";
    pass.event(job.id, now, "Cancelled", "Cancelled: " + what);
  } else if (job.preempted_by.value()) {
    // Whatever the exit code: a job that checkpoints on SIGTERM and exits 0
    // has not finished its work.
    job.state = JobState::kPending;
    job.finished_at = 0;
    job.exit_code.reset();
    job.preemptions += 1;
    job.reason =
        "Preempted by job " + std::to_string(job.preempted_by.value()) + "; waiting to run again";
    a.reason = "Preempted by job " + std::to_string(job.preempted_by.value()) + ": " + what;
    pass.put(a);
    pass.event(job.id, now, "Requeued",
               "Stopped for job " + std::to_string(job.preempted_by.value()) + " (" + what +
                   "); back in the queue, it resumes from its last checkpoint");
    job.preempted_by = JobId();
    job.preempt_requested_at = 0;
  } else if (live.timed_out) {
    job.state = JobState::kFailed;
    job.reason = "Killed: exceeded max_runtime " + formatDuration(job.spec.max_runtime);
    pass.event(job.id, now, "Failed", job.reason + " (" + what + ")", EventLevel::kWarning);
    pass.report.failures[failureReason(true, false, first_failure)] += 1;
  } else if (!first_failure) {
    job.state = JobState::kSucceeded;
    job.reason = what;
    pass.event(job.id, now, "Succeeded", what);
  } else {
    int retries_used = job.attempts - 1 - job.preemptions;
    if (retries_used < job.spec.retries.limit) {
      int k = retries_used + 1;
      DurationMs delay = job.spec.retries.backoff;
      for (int i = 1; i < k && delay < 3'600'000; ++i) delay *= 2;
      delay = std::min<DurationMs>(delay, 3'600'000);
      job.state = JobState::kPending;
      job.not_before = now + delay;
      job.finished_at = 0;
      job.reason = what + ", retry " + std::to_string(k) + " of " +
                   std::to_string(job.spec.retries.limit) + " in " + formatDuration(delay);
      pass.event(job.id, now, "Retrying", job.reason, EventLevel::kWarning);
    } else {
      job.state = JobState::kFailed;
      job.reason = what;
      if (job.spec.retries.limit > 0) job.reason += " (no retries left)";
      pass.event(job.id, now, "Failed", job.reason, EventLevel::kWarning);
      pass.report.failures[failureReason(false, live.launch_failed, first_failure)] += 1;
    }
  }
  pass.put(job);
  pass.releases.push_back(a.key);
  pass.schedule = true;
  JobId id = job.id;
  live_.erase(id);
  if (isTerminal(job.state)) {
    active_.erase(id);
    attained_.erase(id);
  }
}

void JobService::handleTimers(Pass& pass, Timestamp now) {
  for (auto& [id, live] : live_) {
    Job& job = active_.at(id);
    if (live->stop_sent == 0 && live->deadline > 0 && now >= live->deadline) {
      live->timed_out = true;
      beginStop(job, *live, pass, now, "Stopping",
                "Killed: exceeded max_runtime " + formatDuration(job.spec.max_runtime) +
                    ": sending SIGTERM, SIGKILL after " + formatDuration(job.spec.grace_period));
    }
    if (live->stop_sent > 0 && !live->kill_sent && now >= live->kill_at) {
      live->kill_sent = true;
      pass.event(
          id, now, "Killing",
          "Grace period of " + formatDuration(job.spec.grace_period) + " is over: sending SIGKILL",
          EventLevel::kWarning);
      pass.signals.push_back({live->attempt.key, SIGKILL});
    }
  }
  bool any_pending = false;
  for (const auto& [id, job] : active_) {
    if (job.state != JobState::kPending) continue;
    any_pending = true;
    if (job.not_before > 0 && job.not_before <= now) pass.schedule = true;
  }
  // A running job whose min_runtime protection ended may now make room
  // for a waiting one by preemption.
  if (any_pending) {
    for (const auto& [id, live] : live_) {
      Timestamp until = live->attempt.started_at + active_.at(id).spec.min_runtime;
      if (active_.at(id).spec.min_runtime > 0 && until > last_timer_check_ && until <= now) {
        pass.schedule = true;
      }
    }
  }
  last_timer_check_ = now;
}

void JobService::schedulePass(Pass& pass, Timestamp now) {
  // Timed with a steady clock, not clock_: this is the server's own cost,
  // which a clock moved by hand would not show.
  const auto pass_start = std::chrono::steady_clock::now();
  ClusterSnapshot cluster;
  std::map<std::string, size_t> node_index;
  for (const auto& n : nodesNow()) {
    node_index[n.name] = cluster.nodes.size();
    cluster.nodes.push_back({n, {}, Quantity(), 0});
  }
  for (const auto& [id, live] : live_) {
    const Job& job = active_.at(id);
    for (const auto& r : live->attempt.replicas) {
      auto it = node_index.find(r.node);
      if (it == node_index.end()) continue;
      NodeState& ns = cluster.nodes[it->second];
      for (int g : r.gpus) ns.gpu_used_milli[g] += r.gpu_milli;
      ns.used_cpus += job.spec.resources.cpus;
      ns.used_memory += job.spec.resources.memory_bytes;
    }
  }
  QueueSnapshot queues;
  queues.running = runningJobs();
  if (options_.policy.preemption) {
    // Victims are chosen to lose the least work since their last checkpoint.
    for (auto& r : queues.running) r.last_checkpoint_at = executor_.lastCheckpoint(r.id);
  }
  for (const auto& [id, job] : active_) {
    if (job.state != JobState::kPending || job.not_before > now || job.cancel_requested_at > 0) {
      continue;
    }
    queues.pending.push_back(pendingJobOf(job));
    if (auto a = attained_.find(id); a != attained_.end()) {
      queues.pending.back().attained_service = a->second;
    }
  }
  if (queues.pending.empty()) {
    next_waiting_.clear();
    return;
  }
  queues.usage = usage_;
  PolicyConfig policy = policyNow();
  policy.placement = placement_.get();
  applyServiceLevels(queues, options_.levels, now);
  Decision d = schedule(cluster, queues, policy, now, rng_);
  if (!d.placements.empty())
    pass.report.decisions["start"] += static_cast<int>(d.placements.size());
  for (const auto& p : d.preemptions) {
    // Counted when the stop begins: a victim already stopping is not
    // stopped twice.
    auto lit = live_.find(p.victim);
    if (lit != live_.end() && lit->second->stop_sent == 0) {
      pass.report.decisions["preempt"] += 1;
      pass.report.preemptions[preemptionReason(p)] += 1;
    }
    applyPreemption(p, pass, now);
  }
  for (auto& p : d.placements) {
    Job& job = active_.at(p.job);
    auto live = std::make_unique<Live>();
    job.attempts += 1;
    job.state = JobState::kScheduled;
    job.not_before = 0;
    job.updated_at = now;
    job.exit_code.reset();
    job.reason = describePlacement(p.replicas);
    live->attempt.key = {job.id, job.attempts};
    live->attempt.state = AttemptState::kLaunching;
    live->attempt.replicas = p.replicas;
    live->attempt.created_at = now;
    live->attempt.master_port = options_.pick_port ? options_.pick_port() : 29500;
    live->attempt.pids.assign(p.replicas.size(), 0);
    live->exits.resize(p.replicas.size());
    pass.put(job);
    pass.put(live->attempt);
    pass.event(job.id, now, "Placed",
               job.reason + " (attempt " + std::to_string(job.attempts) + ")");
    live_[job.id] = std::move(live);
    pass.launches.push_back(job.id);
  }
  std::map<JobId, WaitInfo> waiting;
  std::map<JobId, const PendingJob*> pending_by_id;
  for (const PendingJob& p : queues.pending) pending_by_id[p.id] = &p;
  for (auto& w : d.waiting) {
    Job& job = active_.at(w.job);
    if (w.reason == WaitReason::kCapacity) {
      // The core counts an unhealthy GPU as not there; say that it is
      // there but out of service, since it is what the job waits for.
      if (auto it = pending_by_id.find(w.job); it != pending_by_id.end()) {
        if (std::string note = unhealthyNote(*it->second, cluster); !note.empty()) {
          w.message += "; " + note;
        }
      }
    }
    waiting[w.job] = {w.queue, w.position, w.message, w.estimated_start};
    // Free counts change with every job that ends; the job's row and its
    // timeline change only when the reason itself does. The live message
    // is published through waitInfo().
    if (numberless(job.reason) != numberless(w.message)) {
      job.reason = w.message;
      job.updated_at = now;
      pass.put(job);
      pass.event(job.id, now, "Waiting", w.message);
    }
  }
  // Published by publish(), once this pass is committed.
  next_waiting_ = std::move(waiting);
  pass.report.scheduling_seconds = secondsSince(pass_start);
}

void JobService::launch(Job& job, Live& live, Pass& pass, Timestamp now) {
  LaunchRequest req;
  req.key = live.attempt.key;
  req.spec = job.spec;
  req.replicas = live.attempt.replicas;
  req.master_port = live.attempt.master_port;
  for (const auto& r : req.replicas) {
    std::vector<GpuInfo> gpus;
    for (const auto& n : options_.nodes) {
      if (n.name != r.node) continue;
      for (int idx : r.gpus) {
        for (const auto& g : n.gpus) {
          if (g.index == idx) gpus.push_back(g);
        }
      }
    }
    req.replica_gpus.push_back(std::move(gpus));
  }
  auto result = executor_.launch(req);
  now = clock_.now();  // launches of one pass run one after another
  if (!result.isOk()) {
    // Replicas started before the failure must not outlive the attempt.
    (void)executor_.signal(req.key, SIGKILL);
    live.launch_failed = true;
    for (size_t r = 0; r < live.exits.size(); ++r) {
      if (!live.exits[r]) {
        live.exits[r] = ReplicaExit{req.key, static_cast<int>(r),
                                    127,     0,
                                    true,    "could not start: " + result.status().message()};
        if (live.first_failed < 0) live.first_failed = static_cast<int>(r);
      }
    }
    finishAttempt(job, live, pass, now);
    return;
  }
  for (const auto& w : result->warnings) {
    pass.event(job.id, now, "Warning", w, EventLevel::kWarning);
  }
  std::string started;
  std::string adopted;
  for (const auto& s : result->started) {
    if (s.replica < 0 || s.replica >= static_cast<int>(live.attempt.pids.size())) continue;
    live.attempt.pids[s.replica] = s.pid;
    std::string& list = s.adopted ? adopted : started;
    list += (list.empty() ? "" : ", ") + std::to_string(s.pid);
  }
  bool was_running = live.attempt.state == AttemptState::kRunning;
  live.attempt.state = AttemptState::kRunning;
  if (live.attempt.started_at == 0) live.attempt.started_at = now;
  if (job.spec.max_runtime > 0) live.deadline = live.attempt.started_at + job.spec.max_runtime;
  job.state = JobState::kRunning;
  if (!was_running) job.started_at = live.attempt.started_at;
  job.updated_at = now;
  pass.put(live.attempt);
  pass.put(job);
  if (live.stop_sent > 0) {
    // Recovered while stopping: the adopted processes get the signal again.
    (void)executor_.signal(live.attempt.key, live.kill_sent ? SIGKILL : SIGTERM);
  }
  bool many = result->started.size() > 1;
  if (!started.empty())
    pass.event(job.id, now, "Started", std::string("Started pid") + (many ? "s " : " ") + started);
  if (!adopted.empty()) {
    pass.event(job.id, now, "Adopted",
               std::string("Adopted running pid") + (many ? "s " : " ") + adopted +
                   " after a server restart");
  }
}

bool JobService::commitAndAct(Pass& pass) {
  // Each round commits what is pending, then acts on it: launches come
  // only after their placements are durable, and their results are
  // committed in the next round before anyone is told.
  for (int round = 0; round < 8; ++round) {
    WriteBatch batch = pass.batch();
    if (!batch.empty()) {
      const auto write_start = std::chrono::steady_clock::now();
      Status st = store_.apply(batch);
      pass.report.store_operations.emplace_back("commit", secondsSince(write_start));
      if (!st.isOk()) {
        // Nothing of this pass is acted on; the state is read back from
        // the store before anything else happens.
        spdlog::error("store write failed, reloading state from the store: {}", st.toString());
        for (auto& [req, r] : pass.replies) {
          req->reply.set_value(Status::unavailable("could not record the change: " + st.message()));
        }
        needs_recovery_ = true;
        // Nothing of it happened: only the time spent is reported.
        pass.report.decisions.clear();
        pass.report.preemptions.clear();
        pass.report.failures.clear();
        report(pass.report);
        return false;
      }
    }
    pass.clearWrites();
    // Readers see what was just committed before any later round can
    // commit more: a job seen running is no longer listed as waiting.
    publish();
    for (const auto& [key, sig] : pass.signals) {
      Status st = executor_.signal(key, sig);
      if (!st.isOk()) spdlog::warn("signal {} to {}: {}", sig, key.toString(), st.toString());
    }
    pass.signals.clear();
    for (auto& [req, r] : pass.replies) req->reply.set_value(std::move(r));
    pass.replies.clear();
    for (const auto& key : pass.releases) executor_.release(key);
    pass.releases.clear();
    if (pass.launches.empty()) {
      report(pass.report);
      return true;
    }
    Timestamp now = clock_.now();
    std::vector<JobId> launches;
    launches.swap(pass.launches);
    for (JobId id : launches) {
      auto lit = live_.find(id);
      auto jit = active_.find(id);
      if (lit == live_.end() || jit == active_.end()) continue;
      launch(jit->second, *lit->second, pass, now);
    }
  }
  spdlog::error("reconcile pass did not settle");
  report(pass.report);
  return false;
}

void JobService::publish() {
  std::vector<NodeView> view;
  std::map<std::pair<std::string, int>, std::vector<JobId>> holders;
  std::map<std::pair<std::string, int>, int> held_milli;
  std::map<std::string, std::pair<Quantity, std::int64_t>> used;
  for (const auto& [id, live] : live_) {
    const Job& job = active_.at(id);
    for (const auto& r : live->attempt.replicas) {
      for (int g : r.gpus) {
        holders[{r.node, g}].push_back(id);
        held_milli[{r.node, g}] += r.gpu_milli;
      }
      used[r.node].first += job.spec.resources.cpus;
      used[r.node].second += job.spec.resources.memory_bytes;
    }
  }
  std::map<std::pair<std::string, int>, std::string> unhealthy;
  for (const GpuHealthView& h : gpuHealth()) {
    if (!h.healthy) unhealthy[{h.node, h.gpu}] = h.reason;
  }
  for (const auto& n : nodesNow()) {
    NodeView v;
    v.info = n;
    for (const auto& g : n.gpus) {
      auto it = holders.find({n.name, g.index});
      if (it == holders.end()) {
        v.gpus.push_back({g, {}, 0, ""});
      } else {
        v.gpus.push_back({g, it->second, held_milli[{n.name, g.index}], ""});
      }
      if (auto u = unhealthy.find({n.name, g.index}); u != unhealthy.end()) {
        v.gpus.back().unhealthy_reason = u->second;
      }
    }
    v.used_cpus = used[n.name].first;
    v.used_memory = used[n.name].second;
    view.push_back(std::move(v));
  }
  std::vector<QueueView> queues = queueView();
  std::lock_guard lock(view_mu_);
  node_view_ = std::move(view);
  queue_view_ = std::move(queues);
  waiting_ = next_waiting_;
}

}  // namespace ty
