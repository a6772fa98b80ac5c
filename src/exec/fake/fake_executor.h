// FakeExecutor: the in-memory twin of the local executor for tests of the
// server. Records launches, signals and releases; the test ends replicas
// with chosen exit codes. Launch is idempotent like the real one: a
// running replica is adopted, an ended one has its exit reported again.
//
// Thread-safe. Exits are delivered to the observer from the thread that
// calls finish()/lose()/flush() (for launch() re-reports: the next flush()),
// never while the fake's lock is held, so an observer may call back into
// the fake.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "exec/executor.h"

namespace ty {

class FakeExecutor final : public Executor {
 public:
  struct SignalRecord {
    AttemptKey key;
    int sig = 0;
  };

  void setObserver(Observer observer) override;
  // Fails with the status set by failNextLaunch(), once; otherwise starts
  // replicas with fake pids (1000, 1001, ...).
  Result<LaunchResult> launch(const LaunchRequest& request) override;
  Status signal(const AttemptKey& key, int sig) override;
  void release(const AttemptKey& key) override;
  Timestamp lastCheckpoint(JobId job) const override;

  // --- test controls ---
  void failNextLaunch(Status status);
  // Warnings returned by every later launch.
  void setLaunchWarnings(std::vector<std::string> warnings);
  // When set, SIGTERM/SIGKILL (any signal but 0, SIGSTOP, SIGCONT) ends
  // running replicas at once as killed by that signal.
  void setExitOnSignal(bool on);
  // Ends a running replica: exit `code`, or killed by `sig` (code 128+sig).
  // False when it is not running.
  bool finish(const AttemptKey& key, int replica, int code, int sig = 0);
  // Ends every running replica of the attempt the same way.
  void finishAll(const AttemptKey& key, int code);
  // Ends a running replica as lost.
  bool lose(const AttemptKey& key, int replica);
  // Delivers exits queued by launch() (re-reports of ended replicas).
  void flush();
  // What lastCheckpoint() answers for `job`.
  void setCheckpoint(JobId job, Timestamp at);

  std::vector<LaunchRequest> launches() const;
  std::vector<SignalRecord> signals() const;
  std::vector<AttemptKey> releases() const;
  bool running(const AttemptKey& key, int replica) const;
  int runningCount() const;

 private:
  struct Replica {
    std::int64_t pid = 0;
    std::optional<ReplicaExit> exit;  // set once ended
  };
  using ReplicaId = std::pair<AttemptKey, int>;

  std::vector<ReplicaExit> endLocked(const AttemptKey& key, int replica, ReplicaExit e);
  void deliver(const std::vector<ReplicaExit>& exits);

  mutable std::mutex mu_;
  Observer observer_;
  std::map<ReplicaId, Replica> replicas_;
  std::vector<LaunchRequest> launches_;
  std::vector<SignalRecord> signals_;
  std::vector<AttemptKey> releases_;
  std::vector<ReplicaExit> pending_;
  std::vector<std::string> warnings_;
  std::map<JobId, Timestamp> checkpoints_;
  std::optional<Status> fail_next_;
  bool exit_on_signal_ = false;
  std::int64_t next_pid_ = 1000;
};

}  // namespace ty
