// GPU topology from NVML or from an nvidia-smi style matrix.

#include "gpu/topology.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ty {
namespace {

constexpr int kMaxNvLinksPerCell = 64;  // NVML's limit is 18 a GPU today; leave room
constexpr std::size_t kMaxGpus = 256;   // as --fake-gpus
constexpr char kCells[] =
    "use X (a GPU with itself), NV<n> (n NVLinks), PIX, PXB, PHB, NODE or SYS, as "
    "`nvidia-smi topo -m` prints them";
constexpr char kExample[] = "e.g. \"X,NV12;NV12,X\"";

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Splits on any of `separators`, dropping empty pieces (so "a, b" and "a b"
// are two cells, and a trailing ';' adds no row).
std::vector<std::string_view> split(std::string_view text, std::string_view separators) {
  std::vector<std::string_view> out;
  std::size_t begin = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || separators.find(text[i]) != std::string_view::npos) {
      std::string_view piece = text.substr(begin, i - begin);
      while (!piece.empty() && isSpace(piece.front())) piece.remove_prefix(1);
      while (!piece.empty() && isSpace(piece.back())) piece.remove_suffix(1);
      if (!piece.empty()) out.push_back(piece);
      begin = i + 1;
    }
  }
  return out;
}

// A cell's score; -1 for X, nullopt for a cell that is not one.
std::optional<int> cellScore(std::string_view cell) {
  std::string c = upper(cell);
  if (c == "X") return -1;
  if (c == "PIX" || c == "PXB") return kLinkSamePcieSwitch;
  if (c == "PHB" || c == "NODE") return kLinkSameNumaNode;
  if (c == "SYS") return kLinkCrossSocket;
  if (c.size() < 3 || c.size() > 4 || c.compare(0, 2, "NV") != 0) return std::nullopt;
  int n = 0;
  for (std::size_t i = 2; i < c.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(c[i]))) return std::nullopt;
    n = n * 10 + (c[i] - '0');
  }
  if (n < 1 || n > kMaxNvLinksPerCell) return std::nullopt;
  return kLinkNvLinkBase + n;
}

std::string at(std::size_t row, std::size_t col) {
  return "row " + std::to_string(row + 1) + ", column " + std::to_string(col + 1);
}

}  // namespace

std::optional<int> linkScore(const GpuPairFacts& facts) {
  if (facts.nvlinks > 0) return kLinkNvLinkBase + facts.nvlinks;
  if (!facts.common_ancestor) return std::nullopt;
  int level = *facts.common_ancestor;
  if (level <= kNvmlTopologyMultiple) return kLinkSamePcieSwitch;
  if (level <= kNvmlTopologyNode) return kLinkSameNumaNode;
  return kLinkCrossSocket;
}

GpuLinks gpuLinksFromFacts(const std::vector<std::vector<GpuPairFacts>>& facts) {
  const std::size_t n = facts.size();
  GpuLinks links(n, std::vector<int>(n, 0));
  bool known = false;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n && j < facts[i].size(); ++j) {
      std::optional<int> score = linkScore(facts[i][j]);
      if (!score) continue;
      known = true;
      links[i][j] = links[j][i] = *score;
    }
  }
  if (!known) return {};
  return links;
}

std::string normalizePciBusId(std::string_view bus_id) {
  std::string id = lower(bus_id);
  std::size_t first = id.find(':');
  if (first == std::string::npos) return id;
  if (id.find(':', first + 1) == std::string::npos) return "0000:" + id;  // no domain
  std::string domain = id.substr(0, first);
  std::size_t nonzero = domain.find_first_not_of('0');
  domain = nonzero == std::string::npos ? "" : domain.substr(nonzero);
  if (domain.size() < 4) domain.insert(0, 4 - domain.size(), '0');
  return domain + id.substr(first);
}

std::vector<std::vector<int>> countNvLinks(const std::vector<std::string>& bus_ids,
                                           const std::vector<std::vector<std::string>>& remotes) {
  const std::size_t n = bus_ids.size();
  std::vector<std::string> bus(n);
  std::set<std::string> gpus;
  for (std::size_t i = 0; i < n; ++i) {
    if (bus_ids[i].empty()) continue;
    bus[i] = normalizePciBusId(bus_ids[i]);
    gpus.insert(bus[i]);
  }
  // direct[i][j]: links of i ending at j. switches[i]: i's links into
  // switches, by switch.
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<std::vector<std::string>> switch_links(n);
  for (std::size_t i = 0; i < n && i < remotes.size(); ++i) {
    for (const std::string& raw : remotes[i]) {
      if (raw.empty()) continue;
      std::string remote = normalizePciBusId(raw);
      if (gpus.count(remote) == 0) {
        switch_links[i].push_back(remote);
        continue;
      }
      for (std::size_t j = 0; j < n; ++j) {
        if (j != i && bus[j] == remote) ++direct[i][j];
      }
    }
  }
  std::vector<std::set<std::string>> reach(n);
  for (std::size_t i = 0; i < n; ++i)
    reach[i].insert(switch_links[i].begin(), switch_links[i].end());
  auto through = [&](std::size_t a, std::size_t b) {
    return static_cast<int>(std::count_if(switch_links[a].begin(), switch_links[a].end(),
                                          [&](const std::string& s) { return reach[b].count(s); }));
  };
  std::vector<std::vector<int>> links(n, std::vector<int>(n, 0));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      int count = std::max(direct[i][j], direct[j][i]) + std::min(through(i, j), through(j, i));
      links[i][j] = links[j][i] = count;
    }
  }
  return links;
}

Result<GpuLinks> parseGpuTopology(std::string_view text, const std::string& field) {
  std::vector<std::string_view> rows = split(text, ";\n");
  if (rows.empty()) {
    return Status::invalidArgument(
        std::string("is empty; give one row of cells per GPU, ") + kExample, field);
  }
  if (rows.size() > kMaxGpus) {
    return Status::invalidArgument("has " + std::to_string(rows.size()) + " rows; at most " +
                                       std::to_string(kMaxGpus) + " GPUs are supported",
                                   field);
  }
  const std::size_t n = rows.size();
  std::vector<std::vector<std::string_view>> cells(n);
  GpuLinks links(n, std::vector<int>(n, 0));
  for (std::size_t r = 0; r < n; ++r) {
    cells[r] = split(rows[r], ", \t\r");
    if (cells[r].size() != n) {
      return Status::invalidArgument(
          "row " + std::to_string(r + 1) + " has " + std::to_string(cells[r].size()) +
              " cells but there are " + std::to_string(n) +
              " rows; the matrix is square, one row and one column per GPU in index order, " +
              kExample,
          field);
    }
    for (std::size_t c = 0; c < n; ++c) {
      std::optional<int> score = cellScore(cells[r][c]);
      if (!score) {
        return Status::invalidArgument(
            at(r, c) + ": unknown cell \"" + std::string(cells[r][c]) + "\"; " + kCells, field);
      }
      if ((*score < 0) != (r == c)) {
        return Status::invalidArgument(
            at(r, c) + ": \"" + std::string(cells[r][c]) + "\" " +
                (r == c ? "on the diagonal; write X there (a GPU with itself)"
                        : "off the diagonal; X is only for a GPU with itself"),
            field);
      }
      links[r][c] = r == c ? 0 : *score;
    }
  }
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = r + 1; c < n; ++c) {
      if (links[r][c] != links[c][r]) {
        return Status::invalidArgument(
            at(r, c) + " is " + std::string(cells[r][c]) + " but " + at(c, r) + " is " +
                std::string(cells[c][r]) +
                "; a link reads the same from both GPUs, so the matrix must be symmetric",
            field);
      }
    }
  }
  return links;
}

std::string formatGpuLinks(const GpuLinks& links) {
  std::string out;
  for (std::size_t r = 0; r < links.size(); ++r) {
    if (r > 0) out += ';';
    for (std::size_t c = 0; c < links[r].size(); ++c) {
      if (c > 0) out += ',';
      int l = links[r][c];
      if (r == c) {
        out += 'X';
      } else if (l > kLinkNvLinkBase) {
        out += "NV" + std::to_string(l - kLinkNvLinkBase);
      } else if (l == kLinkSamePcieSwitch) {
        out += "PXB";
      } else if (l == kLinkSameNumaNode) {
        out += "NODE";
      } else if (l == kLinkCrossSocket) {
        out += "SYS";
      } else {
        out += std::to_string(l);
      }
    }
  }
  return out;
}

NvmlTopology readNvmlTopology(const NvmlLibrary& nvml, const std::vector<nvmlDevice_t>& devices) {
  NvmlTopology out;
  const std::size_t n = devices.size();
  if (n < 2) return out;  // no pairs: nothing to tell
  std::vector<std::string> problems;
  auto once = [&](const Status& s) {
    if (std::find(problems.begin(), problems.end(), s.message()) == problems.end()) {
      problems.push_back(s.message());
    }
  };

  // NVLinks: needs all three functions; a GPU that has none answers "Not
  // Supported" for link 0, and one with fewer than the maximum stops
  // answering past its last link, so any error ends that GPU's scan.
  std::vector<std::string> bus_ids(n);
  std::vector<std::vector<std::string>> remotes(n);
  bool nvlink_api = nvml.has(NvmlSymbol::kDeviceGetPciInfo) &&
                    nvml.has(NvmlSymbol::kDeviceGetNvLinkState) &&
                    nvml.has(NvmlSymbol::kDeviceGetNvLinkRemotePciInfo);
  if (nvlink_api) {
    for (std::size_t i = 0; i < n; ++i) {
      if (devices[i] == nullptr) continue;
      Result<nvmlPciInfo_t> pci = nvml.devicePciInfo(devices[i]);
      if (!pci.isOk()) {
        once(pci.status().withContext("GPU " + std::to_string(i)));
        continue;
      }
      bus_ids[i] = std::string(pci->busId, strnlen(pci->busId, sizeof pci->busId));
      for (unsigned link = 0; link < kNvmlNvLinkMaxLinks; ++link) {
        Result<bool> active = nvml.nvLinkActive(devices[i], link);
        if (!active.isOk()) break;
        if (!*active) continue;
        Result<nvmlPciInfo_t> remote = nvml.nvLinkRemotePciInfo(devices[i], link);
        if (!remote.isOk()) {
          once(remote.status().withContext("GPU " + std::to_string(i)));
          continue;
        }
        remotes[i].emplace_back(remote->busId, strnlen(remote->busId, sizeof remote->busId));
      }
    }
  } else {
    problems.push_back("no NVLink information (" + nvml.path() +
                       " lacks nvmlDeviceGetPciInfo_v3, nvmlDeviceGetNvLinkState or "
                       "nvmlDeviceGetNvLinkRemotePciInfo_v2)");
  }
  std::vector<std::vector<int>> nvlinks = countNvLinks(bus_ids, remotes);

  std::vector<std::vector<GpuPairFacts>> facts(n, std::vector<GpuPairFacts>(n));
  bool ancestor_api = nvml.has(NvmlSymbol::kDeviceGetTopologyCommonAncestor);
  if (!ancestor_api) {
    problems.push_back("no PCIe topology (" + nvml.path() +
                       " lacks nvmlDeviceGetTopologyCommonAncestor)");
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      facts[i][j].nvlinks = nvlinks[i][j];
      if (!ancestor_api || devices[i] == nullptr || devices[j] == nullptr) continue;
      Result<int> level = nvml.topologyCommonAncestor(devices[i], devices[j]);
      if (level.isOk()) {
        facts[i][j].common_ancestor = *level;
      } else {
        once(level.status());
      }
    }
  }
  out.links = gpuLinksFromFacts(facts);
  for (const std::string& p : problems) out.note += (out.note.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace ty
