#include "server/metric_ingester.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "codec/training_metric_codec.h"

namespace ty {

MetricIngester::MetricIngester(Store& store, RunLayout layout, const Clock& clock,
                               MetricIngesterOptions options)
    : store_(store), layout_(std::move(layout)), clock_(clock), options_(options) {}

MetricIngester::~MetricIngester() { stop(); }

MetricIngesterStats MetricIngester::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Status MetricIngester::pollOnce() {
  std::lock_guard round(round_mu_);
  auto active = store_.activeJobs();
  if (!active.isOk()) return active.status();
  std::map<std::int64_t, const Job*> active_by_id;
  std::int64_t newest = max_seen_id_;
  for (const Job& job : *active) {
    active_by_id[job.id.value()] = &job;
    newest = std::max(newest, job.id.value());
  }
  // Jobs that ended since the last round: those watched then, and those
  // created after it that are already over (a short job can start and end
  // between two rounds).
  std::vector<Job> ended;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, w] : watched_) {
      if (active_by_id.contains(id)) continue;
      auto job = store_.getJob(JobId(id));
      if (job.isOk()) ended.push_back(std::move(*job));
    }
  }
  if (initialized_) {
    JobQuery q;
    q.limit = 100;
    for (bool more = true; more;) {
      auto page = store_.listJobs(q);
      if (!page.isOk()) return page.status();
      more = page->next_before != 0;
      q.before_id = page->next_before;
      for (Job& job : page->jobs) {
        if (job.id.value() <= max_seen_id_) {
          more = false;
          break;
        }
        newest = std::max(newest, job.id.value());
        if (!active_by_id.contains(job.id.value())) ended.push_back(std::move(job));
      }
    }
  } else {
    // After a start, jobs that ended while the server was down are not
    // looked for; running ones are read from the start of their files.
    JobQuery q;
    q.limit = 1;
    auto page = store_.listJobs(q);
    if (!page.isOk()) return page.status();
    if (!page->jobs.empty()) newest = std::max(newest, page->jobs[0].id.value());
  }

  const Timestamp now = clock_.now();
  std::lock_guard lock(mu_);
  // Reads attempts [from, to] of `job` a last time and forgets their cursors.
  auto finish = [&](const Job& job, int from, int to) {
    for (int n = std::max(from, 1); n <= to; ++n) {
      for (int r = 0; r < job.spec.replicas; ++r) {
        FileKey key{job.id.value(), n, r};
        ingestFile(key, now);
        cursors_.erase(key);
      }
    }
  };
  std::map<std::int64_t, int> watched;
  for (const Job& job : *active) {
    auto it = watched_.find(job.id.value());
    int from = it == watched_.end() ? 1 : it->second;
    const int current = job.attempts;
    // Earlier attempts (a retry between two rounds) are over.
    finish(job, from, current - 1);
    from = std::max(from, current);
    if (current > 0) {
      if (job.state == JobState::kRunning || job.state == JobState::kScheduled) {
        for (int r = 0; r < job.spec.replicas; ++r) ingestFile({job.id.value(), current, r}, now);
      } else {
        // Pending again (preempted, waiting to retry): this attempt is over.
        finish(job, from, current);
        from = current + 1;
      }
    }
    watched[job.id.value()] = from;
  }
  for (const Job& job : ended) {
    auto it = watched_.find(job.id.value());
    finish(job, it == watched_.end() ? 1 : it->second, job.attempts);
  }
  watched_ = std::move(watched);
  max_seen_id_ = newest;
  initialized_ = true;
  return Status::ok();
}

void MetricIngester::ingestFile(const FileKey& key, Timestamp now) {
  const auto& [job, attempt, replica] = key;
  const std::string path = layout_.metricsFile(AttemptKey{JobId(job), attempt}, replica);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) spdlog::warn("metrics: cannot open {}: {}", path, std::strerror(errno));
    return;
  }
  std::int64_t& cursor = cursors_[key];
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= cursor) {
    ::close(fd);
    return;
  }
  std::string data(
      static_cast<size_t>(std::min<std::int64_t>(st.st_size - cursor, options_.max_bytes_per_file)),
      '\0');
  ssize_t n;
  do {
    n = ::pread(fd, data.data(), data.size(), cursor);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return;
  data.resize(static_cast<size_t>(n));
  size_t end = data.rfind('\n');
  if (end == std::string::npos) {
    // A line longer than a whole read can never be a metric: skip it.
    if (static_cast<std::int64_t>(data.size()) == options_.max_bytes_per_file) {
      cursor += n;
      ++stats_.bad_lines;
    }
    return;
  }
  std::vector<TrainingPoint> points;
  std::int64_t lines = 0, bad = 0;
  size_t pos = 0;
  while (pos <= end) {
    size_t nl = data.find('\n', pos);
    std::string_view line(data.data() + pos, nl - pos);
    const std::int64_t offset = cursor + static_cast<std::int64_t>(pos);
    pos = nl + 1;
    // The file is in the job's directory, which the job can write (a
    // container mounts it): its content is parsed like any job output.
    auto report = parseTrainingMetricLine(line);
    if (!report.isOk()) {
      ++bad;
      continue;
    }
    ++lines;
    const std::string source = "log:" + std::to_string(attempt) + ":" + std::to_string(replica) +
                               ":" + std::to_string(offset);
    for (const auto& [name, value] : report->values) {
      TrainingPoint p;
      p.name = name;
      p.step = report->step;
      p.value = value;
      p.time = report->time.value_or(now);
      p.source = source;
      points.push_back(std::move(p));
    }
  }
  auto added = points.empty() ? Result<int>(0) : store_.appendTrainingPoints(JobId(job), points);
  if (!added.isOk() && added.status().code() != StatusCode::kNotFound) {
    // Retried next round from the same cursor; nothing is lost or doubled.
    spdlog::warn("metrics: cannot store the points of {}: {}", path, added.status().message());
    return;
  }
  cursor += static_cast<std::int64_t>(end + 1);
  stats_.lines += lines;
  stats_.bad_lines += bad;
  if (added.isOk()) stats_.points += *added;
}

void MetricIngester::start() {
  std::lock_guard lock(run_mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock lock(run_mu_);
    while (!stopping_) {
      lock.unlock();
      if (Status st = pollOnce(); !st.isOk()) {
        spdlog::warn("metrics: cannot list jobs: {}", st.message());
      }
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(options_.interval),
                     [this] { return stopping_; });
    }
  });
}

void MetricIngester::stop() {
  {
    std::lock_guard lock(run_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ty
