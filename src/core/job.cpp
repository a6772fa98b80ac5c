#include "core/job.h"

#include <cctype>

namespace ty {

const char* jobStateName(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "pending";
    case JobState::kScheduled:
      return "scheduled";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kPreempted:
      return "preempted";
  }
  return "unknown";
}

std::optional<JobState> parseJobState(const std::string& s) {
  for (JobState st :
       {JobState::kPending, JobState::kScheduled, JobState::kRunning, JobState::kSucceeded,
        JobState::kFailed, JobState::kCancelled, JobState::kPreempted}) {
    if (s == jobStateName(st)) return st;
  }
  return std::nullopt;
}

bool isTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

const char* attemptStateName(AttemptState s) {
  switch (s) {
    case AttemptState::kLaunching:
      return "launching";
    case AttemptState::kRunning:
      return "running";
    case AttemptState::kEnded:
      return "ended";
  }
  return "unknown";
}

std::optional<AttemptState> parseAttemptState(const std::string& s) {
  for (AttemptState st : {AttemptState::kLaunching, AttemptState::kRunning, AttemptState::kEnded}) {
    if (s == attemptStateName(st)) return st;
  }
  return std::nullopt;
}

namespace {

bool validEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

bool validName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status validateSpec(const JobSpec& spec) {
  if (!spec.name.empty() && !validName(spec.name, 128)) {
    return Status::invalidArgument(
        "use 1-128 letters, digits, '-', '_' or '.' (got \"" + spec.name + "\")", "name");
  }
  if (!validName(spec.project, 64)) {
    return Status::invalidArgument("use 1-64 letters, digits, '-', '_' or '.'", "project");
  }
  if (spec.command.empty() && spec.script.empty()) {
    return Status::invalidArgument(
        "give the program to run: `command` (a list of arguments) or `script` (shell text)",
        "command");
  }
  if (!spec.command.empty() && !spec.script.empty()) {
    return Status::invalidArgument("give either `command` or `script`, not both", "script");
  }
  if (!spec.command.empty() && spec.command[0].empty()) {
    return Status::invalidArgument("the program name (first element) is empty", "command[0]");
  }
  for (size_t i = 0; i < spec.command.size(); ++i) {
    if (spec.command[i].find('\0') != std::string::npos) {
      return Status::invalidArgument("contains a NUL byte", "command[" + std::to_string(i) + "]");
    }
  }
  if (spec.resources.gpus < Quantity()) {
    return Status::invalidArgument("must be 0 or more", "resources.gpus");
  }
  if (!spec.resources.gpus.isWhole() && spec.resources.gpus > Quantity::whole(1)) {
    return Status::invalidArgument(
        "a share of one GPU (0.25) or whole GPUs (2); got " + spec.resources.gpus.toString(),
        "resources.gpus");
  }
  if (!spec.resources.gpus.isWhole() && spec.resources.gpus.milli() % 10 != 0) {
    return Status::invalidArgument(
        "GPU shares go in steps of 0.01; got " + spec.resources.gpus.toString(), "resources.gpus");
  }
  if (!spec.resources.gpus.isWhole() && spec.replicas > 1) {
    return Status::invalidArgument(
        "a share of a GPU is for single-replica jobs; ask for whole GPUs for a gang", "replicas");
  }
  if (spec.min_runtime < 0) return Status::invalidArgument("must be 0 or more", "min_runtime");
  for (const auto& [k, v] : spec.node_selector) {
    if (k.empty()) return Status::invalidArgument("label names must not be empty", "node_selector");
  }
  if (spec.resources.gpus > Quantity::whole(64)) {
    return Status::invalidArgument("at most 64 GPUs per replica; use more replicas",
                                   "resources.gpus");
  }
  if (spec.resources.memory_bytes < 0) {
    return Status::invalidArgument("must be 0 or more", "resources.memory");
  }
  if (spec.resources.memory_bytes > 0 && spec.resources.memory_bytes < (4LL << 20)) {
    return Status::invalidArgument("must be at least 4Mi (or unset for no limit)",
                                   "resources.memory");
  }
  if (spec.resources.cpus > Quantity::whole(4096)) {
    return Status::invalidArgument("at most 4096 CPUs per replica", "resources.cpus");
  }
  if (spec.replicas < 1 || spec.replicas > 1024) {
    return Status::invalidArgument("must be between 1 and 1024", "replicas");
  }
  for (const auto& [k, v] : spec.env) {
    if (!validEnvName(k)) {
      return Status::invalidArgument("is not a valid variable name (letters, digits, '_')",
                                     "env." + k);
    }
    if (k.rfind("TRAINYARD_", 0) == 0 || k == "CUDA_VISIBLE_DEVICES" ||
        k == "NVIDIA_VISIBLE_DEVICES") {
      return Status::invalidArgument("is set by Trainyard itself; remove it", "env." + k);
    }
    if (v.find('\0') != std::string::npos) {
      return Status::invalidArgument("contains a NUL byte", "env." + k);
    }
  }
  if (!spec.workdir.empty() && spec.workdir[0] != '/') {
    return Status::invalidArgument("must be an absolute path", "workdir");
  }
  if (spec.max_runtime < 0) return Status::invalidArgument("must be positive", "max_runtime");
  if (spec.grace_period < 0 || spec.grace_period > 3'600'000) {
    return Status::invalidArgument("must be between 0s and 1h", "grace_period");
  }
  if (spec.retries.backoff < 0 || spec.retries.backoff > 86'400'000) {
    return Status::invalidArgument("must be between 0s and 1d", "retries.backoff");
  }
  if (!spec.image.empty() && spec.image[0] == '-') {
    return Status::invalidArgument("an image name cannot start with '-'", "image");
  }
  return Status::ok();
}

}  // namespace ty
