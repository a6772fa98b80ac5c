#include "exec/local/proc_jobs.h"

#include <dirent.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <vector>

namespace ty {
namespace {

bool readWhole(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

bool parsePositive(std::string_view text, std::int64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out > 0;
}

}  // namespace

bool parseJobEnviron(const std::string& environ_bytes, ProcJobProcess& out) {
  std::int64_t job = 0;
  std::int64_t attempt = 0;
  std::string_view rest(environ_bytes);
  while (!rest.empty()) {
    std::size_t end = rest.find('\0');
    std::string_view entry = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (entry.starts_with("TRAINYARD_JOB_ID=")) {
      if (!parsePositive(entry.substr(17), job)) job = 0;
    } else if (entry.starts_with("TRAINYARD_ATTEMPT=")) {
      if (!parsePositive(entry.substr(18), attempt)) attempt = 0;
    }
  }
  if (job <= 0) return false;
  out.job = JobId(job);
  out.attempt = static_cast<int>(attempt);
  return true;
}

std::int64_t parseStatCpuTicks(const std::string& stat) {
  std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  // After "pid (comm)": field 3 (state) onwards; utime and stime are fields
  // 14 and 15, the 12th and 13th after the parenthesis.
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  std::int64_t utime = -1;
  std::int64_t stime = -1;
  auto number = [](const std::string& f, std::int64_t& v) {
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size()) v = -1;
  };
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) number(field, utime);
    if (i == 15) number(field, stime);
  }
  if (utime < 0 || stime < 0) return -1;
  return utime + stime;
}

ProcJobs scanProcJobs(const std::string& proc_root) {
  ProcJobs out;
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return out;
  std::vector<std::int64_t> pids;
  while (dirent* e = ::readdir(dir)) {
    std::int64_t pid = 0;
    if (parsePositive(e->d_name, pid)) pids.push_back(pid);
  }
  ::closedir(dir);
  static const double kTicksPerSecond = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::string text;
  for (std::int64_t pid : pids) {
    const std::string base = proc_root + "/" + std::to_string(pid);
    ProcJobProcess p;
    if (!readWhole(base + "/environ", text) || !parseJobEnviron(text, p)) continue;
    out.pids[pid] = p;
    if (!readWhole(base + "/stat", text)) continue;
    std::int64_t ticks = parseStatCpuTicks(text);
    if (ticks >= 0) out.cpu_seconds[p.job] += static_cast<double>(ticks) / kTicksPerSecond;
  }
  return out;
}

}  // namespace ty
