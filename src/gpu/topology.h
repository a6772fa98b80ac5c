// GPU topology: how well each pair of this machine's GPUs is connected, as
// NodeInfo::gpu_links scores it (higher is better): 0 across CPU sockets, 1
// same NUMA node, 2 same PCIe switch, 10 + n for n NVLinks.
//
// Two sources feed it: NVML (readNvmlTopology) and a matrix in the cells of
// `nvidia-smi topo -m` from the server config (parseGpuTopology). Turning
// what NVML reports into scores is pure (countNvLinks, gpuLinksFromFacts) so
// that it is tested without a driver. Free functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "gpu/nvml.h"

namespace ty {

// gpu_links[i][j], square, one row and column per GPU; empty: unknown.
using GpuLinks = std::vector<std::vector<int>>;

inline constexpr int kLinkCrossSocket = 0;
inline constexpr int kLinkSameNumaNode = 1;
inline constexpr int kLinkSamePcieSwitch = 2;
inline constexpr int kLinkNvLinkBase = 10;  // + the number of NVLinks

// What NVML says about one pair of GPUs.
struct GpuPairFacts {
  int nvlinks = 0;                     // NVLinks between them (countNvLinks)
  std::optional<int> common_ancestor;  // a kNvmlTopology* level; nullopt: NVML could not tell
};

// The score of one pair: 10 + nvlinks when they are NVLinked, else from the
// PCIe common ancestor: INTERNAL, SINGLE, MULTIPLE -> 2 (no host bridge on
// the way), HOSTBRIDGE, NODE -> 1, SYSTEM -> 0. nullopt when nothing is known.
std::optional<int> linkScore(const GpuPairFacts& facts);

// gpu_links from facts[i][j] (read for i < j only; the result is symmetric
// with 0 on the diagonal, which nobody reads). A pair nothing is known about
// scores 0, so that known-good pairs are preferred to it. Empty when no pair
// is known at all: then every pair is alike to the scheduler, rather than
// every pair the worst.
GpuLinks gpuLinksFromFacts(const std::vector<std::vector<GpuPairFacts>>& facts);

// NVLinks between each pair of GPUs, from each GPU's PCI bus id (bus_ids[i],
// "" when unknown) and the remote bus id of each of its active NVLinks
// (remotes[i]). Symmetric, 0 on the diagonal.
//  - Direct links: those of i whose remote is j. The larger of the two
//    sides' counts is kept, since a read that failed on one side must not
//    hide links the other side sees.
//  - Links through NVSwitches: a remote that is no GPU of this machine is a
//    switch; i and j talk through the switches both reach, as many links as
//    the side with fewer links into them has (the slower side bounds the
//    fabric). On HGX/DGX machines every link ends at a switch, and this reads
//    as nvidia-smi's NV18 for every pair.
// Bus ids are compared after normalizePciBusId.
std::vector<std::vector<int>> countNvLinks(const std::vector<std::string>& bus_ids,
                                           const std::vector<std::vector<std::string>>& remotes);

// One spelling per PCI address, as NVML writes both "00000000:3B:00.0"
// (busId) and "0000:3B:00.0" (busIdLegacy): lower case, the domain cut or
// padded to four digits ("0000:3b:00.0"). Text it cannot split is lower-cased.
std::string normalizePciBusId(std::string_view bus_id);

// Parses a matrix of `nvidia-smi topo -m` cells: rows separated by ';' or
// new lines, cells by ',' or blanks, e.g. "X,NV12,SYS;NV12,X,SYS;SYS,SYS,X".
// Cells (any case): X on the diagonal only; NV<n> (n NVLinks, 1..64) ->
// 10 + n; PIX, PXB -> 2; PHB, NODE -> 1; SYS -> 0. InvalidArgument with
// `field` when a row has the wrong number of cells, a cell is unknown or out
// of place, or the matrix is not symmetric; each message says the fix.
Result<GpuLinks> parseGpuTopology(std::string_view text, const std::string& field);

// gpu_links back in nvidia-smi cells, rows joined by ';' ("X,NV12;NV12,X"),
// for logs: 2 prints as PXB and 1 as NODE, the spellings the scheduler does
// not tell apart. "" for an empty matrix.
std::string formatGpuLinks(const GpuLinks& links);

struct NvmlTopology {
  GpuLinks links;    // empty when NVML told nothing
  std::string note;  // why links are empty or partial; "" when all went well
};

// Reads the topology of `devices` (nvmlDevice_t by GPU index; nullptr for a
// GPU NVML gave no handle for) through `nvml`: PCI bus ids, active NVLinks
// and their remote ends, and the common ancestor of each pair. Each of these
// NVML functions is optional; without them the pairs they would tell about
// are unknown. Never fails.
NvmlTopology readNvmlTopology(const NvmlLibrary& nvml, const std::vector<nvmlDevice_t>& devices);

}  // namespace ty
