#include "core/backfill.h"

#include <algorithm>

namespace ty {

void sortReleases(std::vector<Release>& releases) {
  std::stable_sort(releases.begin(), releases.end(), [](const Release& a, const Release& b) {
    if ((a.at == 0) != (b.at == 0)) return b.at == 0;
    return a.at < b.at;
  });
}

bool endsBefore(Timestamp now, DurationMs max_runtime, Timestamp shadow) {
  return max_runtime > 0 && shadow > 0 && now + max_runtime <= shadow;
}

std::optional<Reservation> reserve(ClusterState& future, const std::vector<Release>& releases,
                                   const GangRequest& gang, PlacementPolicy& policy, Rng& rng,
                                   Timestamp now) {
  // Fitting only gets easier as releases are applied, so the first count
  // of releases that fits is found by binary search; the state moves
  // between counts by giving and taking releases back.
  std::size_t applied = 0;
  auto moveTo = [&](std::size_t k) {
    while (applied < k) {
      giveAll(future, releases[applied].choices, releases[applied].shape);
      ++applied;
    }
    while (applied > k) {
      --applied;
      takeAll(future, releases[applied].choices, releases[applied].shape);
    }
  };
  auto fits = [&](std::size_t k) {
    moveTo(k);
    auto placed = placeGang(future, policy, gang, rng);
    if (!placed) return false;
    giveAll(future, *placed, gang.shape);
    return true;
  };
  std::optional<Reservation> out;
  if (fits(releases.size())) {
    std::size_t lo = 0;
    std::size_t hi = releases.size();  // fits(hi) holds
    while (lo < hi) {
      std::size_t mid = lo + (hi - lo) / 2;
      if (fits(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    moveTo(hi);
    auto placed = placeGang(future, policy, gang, rng);
    if (placed) {
      giveAll(future, *placed, gang.shape);
      out = Reservation{hi == 0 ? now : releases[hi - 1].at, std::move(*placed)};
    }
  }
  moveTo(0);
  return out;
}

}  // namespace ty
