// GET /api/v1/jobs/{id}/logs: a tail, a follow stream that moves on to
// retries, or cursor reads (what a browser uses, since compressed streams
// hold lines back).
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "api/api_server.h"
#include "api/http_status.h"
#include "api/request_util.h"
#include "exec/log_files.h"

namespace ty {
namespace {

// A position in the logs of a job's replica for cursor reads: the attempt
// and the place in its log. Written "<attempt>:<inode>:<offset>"; clients
// treat it as opaque.
struct LogPosition {
  int attempt = 0;  // 0: the job has no attempt yet
  LogCursor cursor;
};

std::string formatLogPosition(const LogPosition& p) {
  return std::to_string(p.attempt) + ":" + std::to_string(p.cursor.inode) + ":" +
         std::to_string(p.cursor.offset);
}

std::optional<LogPosition> parseLogPosition(const std::string& text) {
  LogPosition p;
  unsigned long long inode = 0;
  long long offset = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%d:%llu:%lld%n", &p.attempt, &inode, &offset, &used) != 3 ||
      used != static_cast<int>(text.size()) || p.attempt < 0 || offset < 0) {
    return std::nullopt;
  }
  p.cursor = LogCursor{inode, offset};
  return p;
}

}  // namespace

void ApiServer::getLogs(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  auto job = visibleJob(req, caller, auth::Permission::kReadLogs);
  if (!job.isOk()) return writeError(res, job.status());
  const JobId id = job->id;
  auto follow = queryBool(req, "follow");
  if (!follow.isOk()) return writeError(res, follow.status());
  auto replica = queryInt(req, "replica", 0, 0, job->spec.replicas - 1);
  if (!replica.isOk()) return writeError(res, replica.status());
  auto tail = queryInt(req, "tail", -1, 0, 1'000'000);
  if (!tail.isOk()) return writeError(res, tail.status());
  bool pinned = req.has_param("attempt");
  auto attempt = queryInt(req, "attempt", job->attempts, 1, std::max(1, job->attempts));
  if (!attempt.isOk()) {
    return writeError(res, Status::notFound("job " + std::to_string(id.value()) + " has " +
                                            std::to_string(job->attempts) + " attempts"));
  }
  const int r = static_cast<int>(*replica);
  auto initial = [this, r](const AttemptKey& key, std::int64_t tail_lines) -> std::string {
    if (key.number == 0) return "";
    auto text =
        tailLog(layout_, key, r, tail_lines < 0 ? SIZE_MAX : static_cast<size_t>(tail_lines),
                tail_lines < 0 ? (64u << 20) : (4u << 20));
    return text.isOk() ? *text : "";
  };
  AttemptKey key{id, static_cast<int>(*attempt)};
  if (req.has_param("cursor")) {
    if (*follow) {
      return writeError(
          res, Status::invalidArgument(
                   "give either follow or cursor: a cursor read does not stream", "cursor"));
    }
    return getLogsSince(req, res, *job, r, pinned, key.number, *tail);
  }
  if (!*follow) {
    res.status = 200;
    res.set_content(initial(key, *tail), "text/plain; charset=utf-8");
    return;
  }
  const int max_follows = std::max(1, options_.worker_threads - 8);
  if (follows_->fetch_add(1) >= max_follows) {
    follows_->fetch_sub(1);
    return writeError(
        res, Status::unavailable("too many log streams are open (" + std::to_string(max_follows) +
                                 "); try again later, or read without follow"));
  }
  // Follow: send what exists, then new bytes as they come, until the job
  // ends and its log is drained. Without a pinned attempt, later attempts
  // (retries) are followed too.
  auto cursor = std::make_shared<LogCursor>();
  auto state = std::make_shared<AttemptKey>(key);
  auto started = std::make_shared<bool>(false);
  std::int64_t tail_lines = *tail;
  int poll_ms = options_.log_poll_ms;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/plain; charset=utf-8",
      [this, cursor, state, started, tail_lines, poll_ms, pinned, r, initial](
          size_t, httplib::DataSink& sink) {
        if (!*started) {
          *started = true;
          if (state->number > 0) {
            auto end = logEndCursor(layout_, *state, r);
            if (end.isOk()) *cursor = *end;
            std::string first = initial(*state, tail_lines);
            if (!first.empty() && !sink.write(first.data(), first.size())) return false;
          }
        }
        // On shutdown the stream is cut (not ended): the client must not take
        // it for the end of the log.
        while (sink.is_writable() && !stopping_) {
          if (state->number > 0) {
            auto chunk = readLogFrom(layout_, *state, r, *cursor);
            if (chunk.isOk() && !chunk->data.empty()) {
              *cursor = chunk->next;
              return sink.write(chunk->data.data(), chunk->data.size());
            }
          }
          auto job = store_.getJob(state->job);
          if (!job.isOk()) {
            sink.done();
            return true;
          }
          bool newer = !pinned && job->attempts > state->number;
          bool attempt_over = job->attempts > state->number || isTerminal(job->state) ||
                              job->state == JobState::kPending;
          if (attempt_over && state->number > 0) {
            // Drain what the attempt wrote before it ended.
            auto last = readLogFrom(layout_, *state, r, *cursor);
            if (last.isOk() && !last->data.empty()) {
              *cursor = last->next;
              return sink.write(last->data.data(), last->data.size());
            }
          }
          if (newer) {
            *state = AttemptKey{state->job, job->attempts};
            *cursor = LogCursor{};
            continue;
          }
          if (isTerminal(job->state) || (pinned && attempt_over)) {
            sink.done();
            return true;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
        }
        return false;
      },
      [follows = follows_](bool) { follows->fetch_sub(1); });
}

void ApiServer::getLogsSince(const httplib::Request& req, httplib::Response& res, const Job& job,
                             int replica, bool pinned, int attempt, std::int64_t tail) {
  // The same steps as a follow stream, one poll per request: the job's
  // state (read before the log) tells whether the attempt has ended, so an
  // empty read after that means its log is complete. Without a pinned
  // attempt the cursor then moves on to the latest attempt (a retry).
  constexpr std::size_t kMaxAnswer = 1u << 20;
  const std::string text = req.get_param_value("cursor");
  LogPosition pos{attempt, LogCursor{}};
  bool from_tail = false;
  if (text != "start") {
    auto parsed = parseLogPosition(text);
    if (!parsed || parsed->attempt > job.attempts || (pinned && parsed->attempt != attempt)) {
      return writeError(
          res, Status::invalidArgument("must be \"start\" or the X-Log-Cursor of an earlier answer "
                                       "for this job, replica and attempt",
                                       "cursor"));
    }
    pos = *parsed;
  } else if (tail >= 0 && pos.attempt > 0) {
    from_tail = true;
  }
  std::string data;
  bool gap = false;
  bool at_end = true;  // the read reached the end of the log
  if (pos.attempt > 0) {
    const AttemptKey key{job.id, pos.attempt};
    if (from_tail) {
      // The end is taken before the tail: a line written in between comes
      // twice rather than never.
      auto end = logEndCursor(layout_, key, replica);
      if (!end.isOk()) return writeError(res, end.status());
      pos.cursor = *end;
      auto lines = tailLog(layout_, key, replica, static_cast<std::size_t>(tail), kMaxAnswer);
      if (lines.isOk()) data = std::move(*lines);
    } else {
      at_end = false;
      while (data.size() < kMaxAnswer) {
        auto chunk = readLogFrom(layout_, key, replica, pos.cursor, kMaxAnswer - data.size());
        if (!chunk.isOk()) return writeError(res, chunk.status());
        gap = gap || chunk->gap;
        pos.cursor = chunk->next;
        if (chunk->data.empty()) {
          at_end = true;
          break;
        }
        data += chunk->data;
      }
    }
  }
  const bool attempt_over =
      job.attempts > pos.attempt || isTerminal(job.state) || job.state == JobState::kPending;
  // Answers carry one attempt's bytes each: a retry's log starts in the
  // answer after the one that drained the attempt before it.
  const bool newer = !pinned && job.attempts > pos.attempt;
  bool done = false;
  if (at_end && attempt_over) {
    if (newer && data.empty()) {
      pos = LogPosition{job.attempts, LogCursor{}};
    } else if (!newer && (pinned || isTerminal(job.state))) {
      done = true;
    }
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Log-Cursor", formatLogPosition(pos));
  res.set_header("X-Log-Attempt", std::to_string(pos.attempt));
  res.set_header("X-Log-Done", done ? "true" : "false");
  // Bytes were rotated away between two reads: the client may say so.
  if (gap) res.set_header("X-Log-Gap", "true");
  res.set_content(data, "text/plain; charset=utf-8");
}

}  // namespace ty
