#include "core/placement_gpus.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace ty {
namespace {

long choose(long n, long k) {
  long r = 1;
  for (long i = 1; i <= k; ++i) {
    r = r * (n - k + i) / i;
    if (r > kMaxGpuSets) return r;
  }
  return r;
}

struct LinkScore {
  int weakest = std::numeric_limits<int>::max();
  long sum = 0;
  bool operator>(const LinkScore& o) const {
    return weakest != o.weakest ? weakest > o.weakest : sum > o.sum;
  }
};

LinkScore scoreSet(const std::vector<std::vector<int>>& links, const std::vector<int>& set) {
  LinkScore s;
  for (std::size_t a = 0; a < set.size(); ++a) {
    for (std::size_t b = a + 1; b < set.size(); ++b) {
      int l = links[static_cast<std::size_t>(set[a])][static_cast<std::size_t>(set[b])];
      s.weakest = std::min(s.weakest, l);
      s.sum += l;
    }
  }
  return s;
}

std::vector<int> bestLinkedSet(const std::vector<std::vector<int>>& links,
                               const std::vector<int>& usable, std::size_t count) {
  if (choose(static_cast<long>(usable.size()), static_cast<long>(count)) <= kMaxGpuSets) {
    // Enumerate subsets in lexicographic order; a strict '>' keeps the first best.
    std::vector<std::size_t> idx(count);
    for (std::size_t i = 0; i < count; ++i) idx[i] = i;
    std::vector<int> best, cur(count);
    LinkScore best_score{-1, -1};
    while (true) {
      for (std::size_t i = 0; i < count; ++i) cur[i] = usable[idx[i]];
      LinkScore s = scoreSet(links, cur);
      if (best.empty() || s > best_score) {
        best = cur;
        best_score = s;
      }
      std::size_t i = count;
      while (i > 0 && idx[i - 1] == usable.size() - count + (i - 1)) --i;
      if (i == 0) break;
      ++idx[i - 1];
      for (std::size_t j = i; j < count; ++j) idx[j] = idx[j - 1] + 1;
    }
    return best;
  }
  // Greedy: grow from each start, adding the GPU that keeps the weakest link strongest.
  std::vector<int> best;
  LinkScore best_score{-1, -1};
  for (int start : usable) {
    std::vector<int> set{start};
    while (set.size() < count) {
      int pick = -1;
      LinkScore pick_score{-1, -1};
      for (int g : usable) {
        if (std::find(set.begin(), set.end(), g) != set.end()) continue;
        set.push_back(g);
        LinkScore s = scoreSet(links, set);
        set.pop_back();
        if (pick < 0 || s > pick_score) {
          pick = g;
          pick_score = s;
        }
      }
      set.push_back(pick);
    }
    std::sort(set.begin(), set.end());
    LinkScore s = scoreSet(links, set);
    if (best.empty() || s > best_score) {
      best = set;
      best_score = s;
    }
  }
  return best;
}

}  // namespace

std::vector<int> pickGpuPositions(const NodeFree& node, const ReplicaShape& shape,
                                  const std::vector<int>& usable) {
  const std::size_t count = static_cast<std::size_t>(shape.gpu_count);
  if (count == 0) return {};
  if (shape.isSharing()) {
    int best = usable.front();
    for (int p : usable) {
      if (node.gpu_free[static_cast<std::size_t>(p)] <
          node.gpu_free[static_cast<std::size_t>(best)]) {
        best = p;
      }
    }
    return {best};
  }
  const auto& links = node.info->gpu_links;
  if (count > 1 && usable.size() > count && links.size() == node.gpu_free.size()) {
    return bestLinkedSet(links, usable, count);
  }
  return std::vector<int>(usable.begin(), usable.begin() + static_cast<std::ptrdiff_t>(count));
}

}  // namespace ty
