#include "core/service_levels.h"

#include <algorithm>
#include <bit>

namespace ty {
namespace {

int levelled(int priority, int level) { return priority * kServiceLevelsPerPriority + level; }

}  // namespace

std::int64_t serviceOver(const Resources& per_replica, int replicas, DurationMs ms) {
  return per_replica.gpus.milli() * std::max(1, replicas) * std::max<DurationMs>(0, ms) / 1000;
}

std::int64_t attemptService(const JobSpec& spec, const Attempt& attempt) {
  if (attempt.state != AttemptState::kEnded || attempt.started_at <= 0) return 0;
  return serviceOver(spec.resources, spec.replicas, attempt.finished_at - attempt.started_at);
}

std::int64_t attainedService(const JobSpec& spec, const std::vector<Attempt>& attempts) {
  std::int64_t total = 0;
  for (const Attempt& a : attempts) total += attemptService(spec, a);
  return total;
}

const char* serviceLevelsName(ServiceLevels s) {
  switch (s) {
    case ServiceLevels::kNone:
      return "none";
    case ServiceLevels::kLeastAttained:
      return "least-attained";
    case ServiceLevels::kShortestRemaining:
      return "shortest-remaining";
  }
  return "none";
}

std::optional<ServiceLevels> parseServiceLevels(std::string_view name) {
  for (ServiceLevels s :
       {ServiceLevels::kNone, ServiceLevels::kLeastAttained, ServiceLevels::kShortestRemaining}) {
    if (name == serviceLevelsName(s)) return s;
  }
  return std::nullopt;
}

int serviceLevel(const ServiceLevelConfig& config, std::int64_t attained_gpu_ms,
                 std::int64_t remaining_gpu_ms) {
  switch (config.kind) {
    case ServiceLevels::kNone:
      return 0;
    case ServiceLevels::kLeastAttained:
      return attained_gpu_ms < config.las_threshold_gpu_ms ? 1 : 0;
    case ServiceLevels::kShortestRemaining: {
      if (remaining_gpu_ms <= 0) return 0;  // no estimate: lowest
      // One level per doubling of GPU-seconds left: 1 GPU-s or less is the
      // top level, 2^62 GPU-s would be level 1.
      const auto gpu_s =
          static_cast<std::uint64_t>(std::max<std::int64_t>(1, remaining_gpu_ms / 1000));
      const int doublings = std::bit_width(gpu_s) - 1;  // floor(log2)
      return std::clamp(kServiceLevelsPerPriority - 1 - doublings, 1,
                        kServiceLevelsPerPriority - 1);
    }
  }
  return 0;
}

std::string precedenceReason(int priority, int level, int other_priority, int other_level) {
  // Undo the folding: level 0 .. kServiceLevelsPerPriority - 1 was added to
  // own priority x kServiceLevelsPerPriority.
  const auto own = [](int folded, int l) {
    return l < 0 ? folded : (folded - l) / kServiceLevelsPerPriority;
  };
  const int mine = own(priority, level), theirs = own(other_priority, other_level);
  if (mine != theirs || level < 0 || other_level < 0) {
    return "higher priority " + std::to_string(mine) + " > " + std::to_string(theirs);
  }
  return "higher service level " + std::to_string(level) + " > " + std::to_string(other_level);
}

void applyServiceLevels(QueueSnapshot& queues, const ServiceLevelConfig& config, Timestamp now) {
  if (config.kind == ServiceLevels::kNone) return;
  for (PendingJob& p : queues.pending) {
    const std::int64_t remaining =
        p.max_runtime > 0 ? serviceOver(p.per_replica, p.replicas, p.max_runtime) : 0;
    p.service_level = serviceLevel(config, p.attained_service, remaining);
    p.priority = levelled(p.priority, p.service_level);
  }
  for (RunningJob& r : queues.running) {
    const int replicas = static_cast<int>(r.replicas.size());
    const DurationMs ran = std::max<DurationMs>(0, now - r.started_at);
    const std::int64_t attained = r.attained_service + serviceOver(r.per_replica, replicas, ran);
    // Past its estimate a job has (by its own word) almost nothing left.
    const std::int64_t remaining =
        r.max_runtime > 0
            ? std::max<std::int64_t>(1, serviceOver(r.per_replica, replicas, r.max_runtime - ran))
            : 0;
    r.service_level = serviceLevel(config, attained, remaining);
    r.priority = levelled(r.priority, r.service_level);
  }
}

}  // namespace ty
