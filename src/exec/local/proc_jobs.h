// Which process belongs to which job, read from /proc: every replica the
// local executor starts (containers included, whose processes are host
// processes too) carries TRAINYARD_JOB_ID and TRAINYARD_ATTEMPT in its
// environment, and its children inherit them. The GPU monitor uses this to
// tell a job's GPU processes from ghosts and to measure each job's CPU use.
//
// Free functions over a /proc directory (a fake one in tests). Processes
// come and go while the directory is read: an entry that cannot be read (it
// exited, or belongs to another user) is skipped, never an error.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/ids.h"

namespace ty {

struct ProcJobProcess {
  JobId job;
  int attempt = 0;  // 0 when TRAINYARD_ATTEMPT is missing or malformed
};

struct ProcJobs {
  std::map<std::int64_t, ProcJobProcess> pids;  // only processes of jobs
  // utime + stime of all of a job's processes alive now, in seconds.
  std::map<JobId, double> cpu_seconds;
};

// Scans `proc_root` ("/proc").
ProcJobs scanProcJobs(const std::string& proc_root = "/proc");

// The job of one process: TRAINYARD_JOB_ID and TRAINYARD_ATTEMPT from
// `environ_bytes` (NUL-separated NAME=VALUE entries, as
// /proc/<pid>/environ holds them). False when there is no valid job id.
bool parseJobEnviron(const std::string& environ_bytes, ProcJobProcess& out);

// utime + stime, in clock ticks, from the text of /proc/<pid>/stat; -1 when
// it cannot be parsed. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'.
std::int64_t parseStatCpuTicks(const std::string& stat);

}  // namespace ty
