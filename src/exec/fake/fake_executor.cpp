#include "exec/fake/fake_executor.h"

#include <csignal>
#include <cstring>

namespace ty {

namespace {

ReplicaExit makeExit(const AttemptKey& key, int replica, int code, int sig) {
  ReplicaExit e;
  e.key = key;
  e.replica = replica;
  e.exit_code = sig != 0 ? 128 + sig : code;
  e.signal = sig;
  if (sig != 0) {
    const char* abbrev = ::sigabbrev_np(sig);
    e.message = std::string("killed by SIG") + (abbrev ? abbrev : std::to_string(sig).c_str());
  } else {
    e.message = "exited with code " + std::to_string(code);
  }
  return e;
}

}  // namespace

void FakeExecutor::setObserver(Observer observer) {
  std::lock_guard<std::mutex> lock(mu_);
  observer_ = std::move(observer);
}

Result<LaunchResult> FakeExecutor::launch(const LaunchRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  launches_.push_back(request);
  if (fail_next_) {
    Status s = *fail_next_;
    fail_next_.reset();
    return s;
  }
  if (request.replicas.empty()) return Status::invalidArgument("no replicas to launch");
  LaunchResult result;
  result.warnings = warnings_;
  for (int r = 0; r < static_cast<int>(request.replicas.size()); ++r) {
    auto it = replicas_.find({request.key, r});
    if (it == replicas_.end()) {
      Replica rep;
      rep.pid = next_pid_++;
      replicas_[{request.key, r}] = rep;
      result.started.push_back(ReplicaStarted{r, rep.pid, false});
    } else if (!it->second.exit) {
      result.started.push_back(ReplicaStarted{r, it->second.pid, true});
    } else {
      pending_.push_back(*it->second.exit);
    }
  }
  return result;
}

Status FakeExecutor::signal(const AttemptKey& key, int sig) {
  std::vector<ReplicaExit> exits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    signals_.push_back(SignalRecord{key, sig});
    if (exit_on_signal_ && sig != 0 && sig != SIGSTOP && sig != SIGCONT) {
      for (auto& [id, rep] : replicas_) {
        if (id.first != key || rep.exit) continue;
        auto e = endLocked(key, id.second, makeExit(key, id.second, 0, sig));
        exits.insert(exits.end(), e.begin(), e.end());
      }
    }
  }
  deliver(exits);
  return Status::ok();
}

void FakeExecutor::release(const AttemptKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  releases_.push_back(key);
}

Timestamp FakeExecutor::lastCheckpoint(JobId job) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = checkpoints_.find(job);
  return it == checkpoints_.end() ? 0 : it->second;
}

void FakeExecutor::setCheckpoint(JobId job, Timestamp at) {
  std::lock_guard<std::mutex> lock(mu_);
  checkpoints_[job] = at;
}

void FakeExecutor::failNextLaunch(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = std::move(status);
}

void FakeExecutor::setLaunchWarnings(std::vector<std::string> warnings) {
  std::lock_guard<std::mutex> lock(mu_);
  warnings_ = std::move(warnings);
}

void FakeExecutor::setExitOnSignal(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  exit_on_signal_ = on;
}

std::vector<ReplicaExit> FakeExecutor::endLocked(const AttemptKey& key, int replica,
                                                 ReplicaExit e) {
  auto it = replicas_.find({key, replica});
  if (it == replicas_.end() || it->second.exit) return {};
  it->second.exit = e;
  return {e};
}

bool FakeExecutor::finish(const AttemptKey& key, int replica, int code, int sig) {
  std::vector<ReplicaExit> exits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exits = endLocked(key, replica, makeExit(key, replica, code, sig));
  }
  deliver(exits);
  return !exits.empty();
}

void FakeExecutor::finishAll(const AttemptKey& key, int code) {
  std::vector<ReplicaExit> exits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, rep] : replicas_) {
      if (id.first != key || rep.exit) continue;
      auto e = endLocked(key, id.second, makeExit(key, id.second, code, 0));
      exits.insert(exits.end(), e.begin(), e.end());
    }
  }
  deliver(exits);
}

bool FakeExecutor::lose(const AttemptKey& key, int replica) {
  ReplicaExit e;
  e.key = key;
  e.replica = replica;
  e.exit_code = -1;
  e.lost = true;
  e.message = "lost: ended while nobody watched";
  std::vector<ReplicaExit> exits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exits = endLocked(key, replica, e);
  }
  deliver(exits);
  return !exits.empty();
}

void FakeExecutor::flush() {
  std::vector<ReplicaExit> exits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exits.swap(pending_);
  }
  deliver(exits);
}

void FakeExecutor::deliver(const std::vector<ReplicaExit>& exits) {
  Observer observer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    observer = observer_;
  }
  if (!observer) return;
  for (const auto& e : exits) observer(e);
}

std::vector<LaunchRequest> FakeExecutor::launches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return launches_;
}

std::vector<FakeExecutor::SignalRecord> FakeExecutor::signals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return signals_;
}

std::vector<AttemptKey> FakeExecutor::releases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return releases_;
}

bool FakeExecutor::running(const AttemptKey& key, int replica) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = replicas_.find({key, replica});
  return it != replicas_.end() && !it->second.exit;
}

int FakeExecutor::runningCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [id, rep] : replicas_) n += rep.exit ? 0 : 1;
  return n;
}

}  // namespace ty
