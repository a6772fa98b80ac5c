// Job traces for `trainyard simulate jobs`: the Philly job CSV (as derived
// by the Pollux OSDI'21 artifact) read into plain values, and the window of
// it a replay uses.
//
// Only what a trace row says is kept: submit time, true duration, GPUs and
// the virtual cluster (VC) that becomes the job's queue. The true duration
// is for the replay engine alone; policies see estimates (job_replay.h).
// Plain functions over values; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace ty {

struct TraceJob {
  std::int64_t id = 0;      // 1-based, in submission order once a window is selected
  Timestamp submitted = 0;  // ms since epoch (UTC)
  DurationMs duration = 0;  // true run time on its GPUs
  int gpus = 0;             // total GPUs of the job
  std::string queue;        // the VC hash ("11cb48")
  int line = 0;             // line in the source file, for messages
};

// "2017-10-09 07:01:55" (UTC) -> ms since epoch. InvalidArgument when the
// text is not of that form or names no real date.
Result<Timestamp> parseTraceTime(std::string_view text);

// Reads a Philly CSV: a header naming at least timestamp, duration,
// num_gpus and cluster (any order; other columns such as gpu_time are
// ignored), then one job per line. Fails with InvalidArgument naming the
// source, the line and the column ("philly.csv:12: column 3 (num_gpus):
// ..."). Rows keep file order (the Philly file is not sorted).
Result<std::vector<TraceJob>> parsePhillyCsv(std::istream& in, const std::string& source);
// Same, from a file; NotFound when it cannot be opened.
Result<std::vector<TraceJob>> readPhillyCsv(const std::string& path);

// Which part of a trace to replay: jobs submitted at or after `from` and
// before `until`, the first `limit` of them (0: all).
struct TraceWindow {
  std::optional<Timestamp> from;
  std::optional<Timestamp> until;
  std::size_t limit = 0;
};

// Sorts by submit time (file line breaks ties), keeps the window and
// numbers the kept jobs 1..n in that order.
std::vector<TraceJob> selectWindow(std::vector<TraceJob> jobs, const TraceWindow& window);

}  // namespace ty
