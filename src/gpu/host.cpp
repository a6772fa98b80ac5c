// describeLocalNode and the parsers of /proc and cgroup files it uses.

#include "gpu/host.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ty {
namespace {

// A cgroup v1 "no limit" is a page-rounded LLONG_MAX; anything at or above
// this is treated as unlimited.
constexpr std::int64_t kUnlimitedFloor = std::int64_t{1} << 62;

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Non-negative decimal without sign or junk; nullopt otherwise or on overflow.
std::optional<std::int64_t> parseCount(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::int64_t n = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    if (n > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

// The cgroup v2 directory of this process ("/sys/fs/cgroup/<path>"), or the
// root when it cannot be told.
std::string cgroupV2Dir() {
  std::optional<std::string> text = readFile("/proc/self/cgroup");
  if (text) {
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
    }
  }
  return "/sys/fs/cgroup";
}

int onlineCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 0;
}

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

}  // namespace

std::optional<std::int64_t> parseMemTotal(const std::string& meminfo) {
  std::istringstream lines(meminfo);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream fields(line.substr(9));
    std::string value;
    std::string unit;
    fields >> value >> unit;
    std::optional<std::int64_t> n = parseCount(value);
    if (!n) return std::nullopt;
    std::int64_t scale = 1;
    if (unit == "kB") {
      scale = 1024;
    } else if (!unit.empty()) {
      return std::nullopt;
    }
    if (*n > INT64_MAX / scale) return std::nullopt;
    return *n * scale;
  }
  return std::nullopt;
}

std::optional<std::int64_t> parseCgroupMemoryLimit(const std::string& text) {
  std::optional<std::int64_t> n = parseCount(trim(text));
  if (!n || *n <= 0 || *n >= kUnlimitedFloor) return std::nullopt;
  return n;
}

std::optional<Quantity> parseCgroupCpuMax(const std::string& text) {
  std::istringstream fields(trim(text));
  std::string quota;
  std::string period;
  fields >> quota >> period;
  std::optional<std::int64_t> q = parseCount(quota);
  std::optional<std::int64_t> p =
      period.empty() ? std::optional<std::int64_t>(100000) : parseCount(period);
  if (!q || !p || *q <= 0 || *p <= 0 || *q > INT64_MAX / 1000) return std::nullopt;
  std::int64_t milli = *q * 1000 / *p;
  if (milli <= 0) milli = 1;
  return Quantity::fromMilli(milli);
}

NodeInfo describeLocalNode(std::string name, std::vector<GpuInfo> gpus) {
  NodeInfo node;
  std::string host = hostName();
  node.name = name.empty() ? host : std::move(name);
  node.gpus = std::move(gpus);
  if (!host.empty()) node.labels["hostname"] = host;

  node.cpus = Quantity::whole(onlineCpus());
  const std::string v2 = cgroupV2Dir();
  for (const std::string& path : {v2 + "/cpu.max", std::string("/sys/fs/cgroup/cpu.max")}) {
    if (std::optional<std::string> text = readFile(path)) {
      std::optional<Quantity> quota = parseCgroupCpuMax(*text);
      if (quota && *quota < node.cpus) node.cpus = *quota;
      break;
    }
  }

  if (std::optional<std::string> meminfo = readFile("/proc/meminfo")) {
    node.memory_bytes = parseMemTotal(*meminfo).value_or(0);
  }
  for (const std::string& path : {v2 + "/memory.max", std::string("/sys/fs/cgroup/memory.max"),
                                  std::string("/sys/fs/cgroup/memory/memory.limit_in_bytes")}) {
    if (std::optional<std::string> text = readFile(path)) {
      std::optional<std::int64_t> limit = parseCgroupMemoryLimit(*text);
      if (limit && (node.memory_bytes == 0 || *limit < node.memory_bytes)) {
        node.memory_bytes = *limit;
      }
    }
  }
  return node;
}

}  // namespace ty
