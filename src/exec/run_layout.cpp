#include "exec/run_layout.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ty {

namespace {

std::optional<int> parsePrefixedNumber(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) {
    return std::nullopt;
  }
  long long v = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
    if (v > 1'000'000'000) return std::nullopt;
  }
  return static_cast<int>(v);
}

// Numbers parsed from the entries of `dir` by `parse`, ascending.
template <typename Parse>
Result<std::vector<int>> listNumbered(const std::string& dir, Parse parse) {
  std::vector<int> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return out;
    return Status::internal("open directory " + dir + ": " + std::strerror(errno));
  }
  while (dirent* e = ::readdir(d)) {
    if (auto n = parse(std::string(e->d_name))) out.push_back(*n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string RunLayout::jobDir(JobId job) const {
  return data_dir_ + "/jobs/" + std::to_string(job.value());
}

std::string RunLayout::metricsFile(const AttemptKey& key, int replica) const {
  return file(key, replica, kMetricsFile);
}

std::string RunLayout::checkpointMark(JobId job) const {
  return jobDir(job) + "/" + kCheckpointMark;
}

std::string RunLayout::attemptDir(const AttemptKey& key) const {
  return jobDir(key.job) + "/attempt-" + std::to_string(key.number);
}

std::string RunLayout::replicaDir(const AttemptKey& key, int replica) const {
  return attemptDir(key) + "/replica-" + std::to_string(replica);
}

std::string RunLayout::file(const AttemptKey& key, int replica, const char* name) const {
  return replicaDir(key, replica) + "/" + name;
}

std::string RunLayout::logPath(const std::string& replica_dir, int index) {
  std::string p = replica_dir + "/" + kLogFile;
  if (index > 0) p += "." + std::to_string(index);
  return p;
}

std::optional<int> RunLayout::parseAttemptDirName(const std::string& name) {
  return parsePrefixedNumber(name, "attempt-");
}

std::optional<int> RunLayout::parseReplicaDirName(const std::string& name) {
  return parsePrefixedNumber(name, "replica-");
}

Result<std::vector<int>> RunLayout::listAttempts(JobId job) const {
  return listNumbered(jobDir(job), parseAttemptDirName);
}

Result<std::vector<int>> RunLayout::listReplicas(const AttemptKey& key) const {
  return listNumbered(attemptDir(key), parseReplicaDirName);
}

}  // namespace ty
