#include "core/preemption.h"

#include <algorithm>

namespace ty {

DurationMs workAtRisk(const VictimInfo& v, Timestamp now) {
  Timestamp since = std::max(v.started_at, v.last_checkpoint_at);
  return std::max<DurationMs>(0, now - since);
}

bool protectedByMinRuntime(const VictimInfo& v, Timestamp now) {
  return v.min_runtime > 0 && now - v.started_at < v.min_runtime;
}

bool stopsBefore(const VictimInfo& a, const VictimInfo& b, Timestamp now) {
  if (a.priority != b.priority) return a.priority < b.priority;
  DurationMs wa = workAtRisk(a, now);
  DurationMs wb = workAtRisk(b, now);
  if (wa != wb) return wa < wb;
  if (a.started_at != b.started_at) return a.started_at > b.started_at;
  return a.id > b.id;
}

std::optional<std::vector<std::size_t>> chooseVictims(std::size_t candidates,
                                                      const VictimSearch& search) {
  if (candidates == 0) return std::nullopt;
  // More victims only free more, so the shortest prefix of the stop order
  // that fits is found by galloping (1, 2, 4, ... victims) and then binary
  // search. The released prefix moves between probes by releasing or
  // restoring the difference: O(answer) state changes when few victims
  // suffice, O(log candidates) placement checks in all.
  std::size_t released = 0;
  auto moveTo = [&](std::size_t k) {
    while (released < k) search.release(released++);
    while (released > k) search.restore(--released);
  };
  std::size_t lo = 1;  // every prefix shorter than lo fails
  std::size_t hi = 1;
  for (;;) {
    moveTo(hi);
    if (search.fits()) break;
    if (hi == candidates) {
      moveTo(0);
      return std::nullopt;
    }
    lo = hi + 1;
    hi = std::min(candidates, hi * 2);
  }
  while (lo < hi) {
    std::size_t mid = lo + (hi - lo) / 2;
    moveTo(mid);
    if (search.fits()) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  moveTo(hi);
  // Drop victims that turn out not to be needed, most valuable first; the
  // last one added is needed by construction.
  std::vector<bool> kept(hi, true);
  constexpr std::size_t kMaxDropTries = 32;
  std::size_t tries = 0;
  for (std::size_t k = hi - 1; k-- > 0 && tries < kMaxDropTries; ++tries) {
    search.restore(k);
    if (search.fits()) {
      kept[k] = false;
    } else {
      search.release(k);
    }
  }
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < hi; ++k) {
    if (kept[k]) out.push_back(k);
  }
  for (auto it = out.rbegin(); it != out.rend(); ++it) search.restore(*it);
  return out;
}

}  // namespace ty
