// The training-metric part of MemoryStore (see store.h for the contract).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "store/memory/memory_store.h"

namespace ty {

Result<int> MemoryStore::appendTrainingPoints(JobId job, const std::vector<TrainingPoint>& points) {
  for (const TrainingPoint& p : points) TY_RETURN_IF_ERROR(validateTrainingPoint(p));
  std::lock_guard lock(mu_);
  if (!jobs_.contains(job.value())) return Status::notFound(jobNotFoundMessage(job));
  int added = 0;
  for (const TrainingPoint& p : points) {
    if (!point_reports_.emplace(job.value(), p.source, p.name).second) continue;
    TrainingPoint stored = p;
    stored.id = ++last_point_id_;
    points_[job.value()].push_back(std::move(stored));
    ++added;
  }
  return added;
}

Result<std::vector<TrainingPoint>> MemoryStore::trainingSeries(JobId job,
                                                               const TrainingSeriesQuery& query) {
  TY_RETURN_IF_ERROR(validateTrainingSeriesQuery(query));
  std::lock_guard lock(mu_);
  if (!jobs_.contains(job.value())) return Status::notFound(jobNotFoundMessage(job));
  std::vector<TrainingPoint> out;
  auto it = points_.find(job.value());
  if (it == points_.end()) return out;
  for (const TrainingPoint& p : it->second) {
    if (p.id <= query.after_id || p.name != query.name) continue;
    if (query.max_points == 0 && static_cast<int>(out.size()) >= query.limit) break;
    out.push_back(p);
  }
  if (query.max_points > 0) return downsampleTrainingPoints(std::move(out), query.max_points);
  return out;
}

Result<std::vector<TrainingMetricSummary>> MemoryStore::trainingMetrics(JobId job) {
  std::lock_guard lock(mu_);
  if (!jobs_.contains(job.value())) return Status::notFound(jobNotFoundMessage(job));
  std::map<std::string, TrainingMetricSummary> by_name;
  if (auto it = points_.find(job.value()); it != points_.end()) {
    for (const TrainingPoint& p : it->second) {
      TrainingMetricSummary& s = by_name[p.name];
      s.name = p.name;
      ++s.count;
      s.latest = p;  // ids increase along the vector
    }
  }
  std::vector<TrainingMetricSummary> out;
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  return out;
}

Result<std::vector<LatestTrainingPoint>> MemoryStore::latestTrainingMetrics(
    const std::vector<JobId>& jobs) {
  // A set: ordered by id, each job once.
  const std::set<JobId> wanted(jobs.begin(), jobs.end());
  std::lock_guard lock(mu_);
  std::vector<LatestTrainingPoint> out;
  for (JobId job : wanted) {
    auto it = points_.find(job.value());
    if (it == points_.end()) continue;
    std::map<std::string, const TrainingPoint*> latest;
    for (const TrainingPoint& p : it->second) latest[p.name] = &p;  // ids increase
    for (const auto& [name, p] : latest) out.push_back({job, *p});
  }
  return out;
}

}  // namespace ty
