#include "exec/local/cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <sstream>

#include "exec/local/sys_util.h"

namespace ty {

namespace {

constexpr std::int64_t kCfsPeriodUs = 100'000;

// The path of this process's cgroup for v1 `controller`, from the lines
// "<id>:<controllers>:<path>" of /proc/self/cgroup; "/" when not listed.
std::string selfPathFor(const std::string& self_text, const std::string& controller) {
  std::istringstream in(self_text);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':');
    size_t b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string list = line.substr(a + 1, b - a - 1);
    std::istringstream names(list);
    std::string name;
    while (std::getline(names, name, ',')) {
      if (name == controller) return line.substr(b + 1);
    }
  }
  return "/";
}

Status makeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return sys::errnoStatus("create cgroup", path);
  }
  return Status::ok();
}

}  // namespace

CgroupManager CgroupManager::detect(std::string parent_name, std::string root,
                                    std::string self_cgroup) {
  CgroupManager m;
  m.root_ = std::move(root);
  m.parent_name_ = std::move(parent_name);
  if (sys::fileExists(m.root_ + "/cgroup.controllers")) {
    m.version_ = CgroupVersion::kV2;
    return m;
  }
  if (sys::fileExists(m.root_ + "/memory/cgroup.procs") &&
      sys::fileExists(m.root_ + "/cpu/cgroup.procs")) {
    auto self = sys::readFile(self_cgroup);
    std::string text = self.isOk() ? *self : std::string();
    for (const char* c : {"cpu", "memory"}) {
      std::string own = selfPathFor(text, c);
      if (own == "/") own.clear();
      m.v1_bases_.emplace_back(c, m.root_ + "/" + c + own);
    }
    m.version_ = CgroupVersion::kV1;
  }
  return m;
}

Result<std::vector<std::string>> CgroupManager::create(const std::string& name,
                                                       const CgroupLimits& limits) const {
  std::vector<std::string> dirs;
  auto fail = [&dirs](Status s) -> Status {
    (void)release(dirs, 500);
    return s;
  };
  if (version_ == CgroupVersion::kNone) {
    return Status::unavailable("no cgroup v1 or v2 hierarchy found under " + root_);
  }
  if (version_ == CgroupVersion::kV2) {
    // Enabling controllers may fail when they are already on or not
    // available; the limit writes below tell which.
    (void)sys::writeExisting(root_ + "/cgroup.subtree_control", "+cpu +memory");
    const std::string parent = root_ + "/" + parent_name_;
    TY_RETURN_IF_ERROR(makeDir(parent));
    (void)sys::writeExisting(parent + "/cgroup.subtree_control", "+cpu +memory");
    const std::string dir = parent + "/" + name;
    TY_RETURN_IF_ERROR(makeDir(dir));
    dirs.push_back(dir);
    if (limits.cpu_milli > 0) {
      std::int64_t quota = limits.cpu_milli * kCfsPeriodUs / 1000;
      Status s = sys::writeExisting(dir + "/cpu.max",
                                    std::to_string(quota) + " " + std::to_string(kCfsPeriodUs));
      if (!s.isOk()) return fail(s);
    }
    if (limits.memory_bytes > 0) {
      Status s = sys::writeExisting(dir + "/memory.max", std::to_string(limits.memory_bytes));
      if (!s.isOk()) return fail(s);
    }
    return dirs;
  }
  for (const auto& [controller, base] : v1_bases_) {
    const std::string parent = base + "/" + parent_name_;
    Status s = makeDir(parent);
    if (!s.isOk()) return fail(s);
    const std::string dir = parent + "/" + name;
    s = makeDir(dir);
    if (!s.isOk()) return fail(s);
    dirs.push_back(dir);
    if (controller == "cpu" && limits.cpu_milli > 0) {
      std::int64_t quota = limits.cpu_milli * kCfsPeriodUs / 1000;
      s = sys::writeExisting(dir + "/cpu.cfs_period_us", std::to_string(kCfsPeriodUs));
      if (s.isOk()) s = sys::writeExisting(dir + "/cpu.cfs_quota_us", std::to_string(quota));
      if (!s.isOk()) return fail(s);
    }
    if (controller == "memory" && limits.memory_bytes > 0) {
      s = sys::writeExisting(dir + "/memory.limit_in_bytes", std::to_string(limits.memory_bytes));
      if (!s.isOk()) return fail(s);
    }
  }
  return dirs;
}

Status CgroupManager::join(const std::vector<std::string>& dirs, pid_t pid) {
  for (const auto& d : dirs) {
    TY_RETURN_IF_ERROR(sys::writeExisting(d + "/cgroup.procs", std::to_string(pid)));
  }
  return Status::ok();
}

std::vector<pid_t> CgroupManager::processes(const std::string& dir) {
  std::vector<pid_t> out;
  auto text = sys::readFile(dir + "/cgroup.procs");
  if (!text.isOk()) return out;
  std::istringstream in(*text);
  long long pid = 0;
  while (in >> pid) {
    if (pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  return out;
}

Status CgroupManager::release(const std::vector<std::string>& dirs, int timeout_ms) {
  std::int64_t deadline = sys::monotonicMs() + timeout_ms;
  Status first;
  for (const auto& d : dirs) {
    if (!sys::fileExists(d)) continue;
    // v2 kills the whole cgroup atomically where the kernel has cgroup.kill.
    if (sys::fileExists(d + "/cgroup.kill")) (void)sys::writeExisting(d + "/cgroup.kill", "1");
    for (;;) {
      std::vector<pid_t> pids = processes(d);
      for (pid_t p : pids) ::kill(p, SIGKILL);
      if (pids.empty() && ::rmdir(d.c_str()) == 0) break;
      if (!pids.empty() || errno == EBUSY) {
        if (sys::monotonicMs() >= deadline) {
          if (first.isOk()) first = Status::internal("cgroup " + d + " would not empty");
          break;
        }
        ::usleep(10'000);
        continue;
      }
      if (errno != ENOENT && first.isOk()) first = sys::errnoStatus("remove cgroup", d);
      break;
    }
  }
  return first;
}

}  // namespace ty
