// MetricIngester: moves the TRAINYARD_METRIC lines that supervisors copy to
// each replica's metrics.jsonl (exec/run_layout.h) into the store as
// training points, every ~2 s.
//
// Each round reads the new bytes of the files of every replica of the
// current attempt of each scheduled or running job, and a last time those
// of attempts that ended since the previous round (the job ended, was
// preempted or retried; also jobs that started and ended between two
// rounds, found as job ids above the newest one seen), so the final lines
// are not lost. Only whole lines are taken; the cursor stops after the last
// newline. Cursors live in memory: after a restart every file is read from
// the start again, which adds nothing, because each point's source is
// "log:<attempt>:<replica>:<byte offset of its line>" and the store keeps
// one point per (job, source, name).
//
// Thread-safe: rounds are serialised; stats() may be called at any time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "common/clock.h"
#include "exec/run_layout.h"
#include "store/store.h"

namespace ty {

struct MetricIngesterOptions {
  DurationMs interval = 2000;
  // Read at most this much of one file per round, so that one chatty job
  // does not hold up the others; the rest comes next round.
  std::int64_t max_bytes_per_file = 4 << 20;
};

struct MetricIngesterStats {
  std::int64_t lines = 0;      // metric lines read
  std::int64_t points = 0;     // points added to the store (not already there)
  std::int64_t bad_lines = 0;  // lines in a metrics file that are not metrics
};

class MetricIngester {
 public:
  MetricIngester(Store& store, RunLayout layout, const Clock& clock,
                 MetricIngesterOptions options = {});
  ~MetricIngester();  // stops the thread
  MetricIngester(const MetricIngester&) = delete;
  MetricIngester& operator=(const MetricIngester&) = delete;

  // One round, now. Fails when the list of jobs cannot be read; a file that
  // cannot be read or stored is retried next round (its cursor stays).
  Status pollOnce();
  // Runs pollOnce() every options.interval on a thread until stop().
  void start();
  void stop();

  MetricIngesterStats stats() const;

 private:
  // (job, attempt, replica)
  using FileKey = std::tuple<std::int64_t, int, int>;
  // Reads the new whole lines of one file and stores their points. Holds mu_.
  void ingestFile(const FileKey& key, Timestamp now);

  Store& store_;
  const RunLayout layout_;
  const Clock& clock_;
  const MetricIngesterOptions options_;

  mutable std::mutex mu_;
  std::map<FileKey, std::int64_t> cursors_;  // byte offset after the last whole line read
  // Jobs not finished at the last round -> their first attempt not yet read
  // to its end. Guarded by mu_.
  std::map<std::int64_t, int> watched_;
  MetricIngesterStats stats_;
  // One round at a time (the thread, or a test calling pollOnce()).
  std::mutex round_mu_;
  // Guarded by round_mu_: the newest job id seen, below which no job is new.
  std::int64_t max_seen_id_ = 0;
  bool initialized_ = false;

  std::mutex run_mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ty
