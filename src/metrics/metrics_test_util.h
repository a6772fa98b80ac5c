// Helpers of the metrics tests: the series of a family as values, and
// promtool's verdict on an exposition. Test code only.
#pragma once

#include <prometheus/registry.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace ty::test {

// The series of family `name` as "label=value,..." -> value (counters and
// gauges), labels in prometheus-cpp's (sorted) order.
inline std::map<std::string, double> seriesOf(const prometheus::Registry& registry,
                                              const std::string& name) {
  std::map<std::string, double> out;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& m : family.metric) {
      std::string key;
      for (const prometheus::ClientMetric::Label& l : m.label) {
        key += (key.empty() ? "" : ",") + l.name + "=" + l.value;
      }
      out[key] = family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return out;
}

// promtool's full path, or "" when it is not installed.
inline std::string findPromtool() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::filesystem::path candidate = std::filesystem::path(dir) / "promtool";
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

struct PromtoolResult {
  int exit_code = -1;
  std::string output;
};

// Pipes `text` into `promtool check metrics`.
inline PromtoolResult promtoolCheck(const std::string& promtool, const std::string& text) {
  std::filesystem::path out_path =
      std::filesystem::temp_directory_path() / ("ty_promtool_" + std::to_string(::getpid()));
  std::string command = promtool + " check metrics >" + out_path.string() + " 2>&1";
  PromtoolResult r;
  FILE* pipe = ::popen(command.c_str(), "w");
  if (pipe == nullptr) return r;
  std::fwrite(text.data(), 1, text.size(), pipe);
  int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out_path);
  std::stringstream buf;
  buf << in.rdbuf();
  r.output = buf.str();
  std::filesystem::remove(out_path);
  return r;
}

}  // namespace ty::test
