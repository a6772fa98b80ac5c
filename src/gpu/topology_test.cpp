#include "gpu/topology.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

GpuPairFacts ancestor(int level) {
  GpuPairFacts f;
  f.common_ancestor = level;
  return f;
}

TEST(LinkScore, NvLinksWinOverThePcieAncestor) {
  GpuPairFacts f = ancestor(kNvmlTopologySystem);
  f.nvlinks = 12;
  EXPECT_EQ(linkScore(f), 22);
  f.common_ancestor.reset();
  EXPECT_EQ(linkScore(f), 22);
}

TEST(LinkScore, MapsEachAncestorLevel) {
  EXPECT_EQ(linkScore(ancestor(kNvmlTopologyInternal)), kLinkSamePcieSwitch);
  EXPECT_EQ(linkScore(ancestor(kNvmlTopologySingle)), kLinkSamePcieSwitch);
  EXPECT_EQ(linkScore(ancestor(kNvmlTopologyMultiple)), kLinkSamePcieSwitch);
  EXPECT_EQ(linkScore(ancestor(kNvmlTopologyHostBridge)), kLinkSameNumaNode);
  EXPECT_EQ(linkScore(ancestor(kNvmlTopologyNode)), kLinkSameNumaNode);
  EXPECT_EQ(linkScore(ancestor(kNvmlTopologySystem)), kLinkCrossSocket);
  EXPECT_EQ(linkScore(GpuPairFacts{}), std::nullopt);
}

TEST(GpuLinksFromFacts, SymmetricFromTheUpperTriangle) {
  std::vector<std::vector<GpuPairFacts>> facts(3, std::vector<GpuPairFacts>(3));
  facts[0][1].nvlinks = 4;
  facts[0][2] = ancestor(kNvmlTopologySystem);
  facts[1][2] = ancestor(kNvmlTopologyNode);
  // The lower triangle is not read.
  facts[2][0].nvlinks = 18;
  EXPECT_EQ(gpuLinksFromFacts(facts), (GpuLinks{{0, 14, 0}, {14, 0, 1}, {0, 1, 0}}));
}

TEST(GpuLinksFromFacts, UnknownPairsScoreZeroAndAllUnknownIsEmpty) {
  std::vector<std::vector<GpuPairFacts>> facts(3, std::vector<GpuPairFacts>(3));
  EXPECT_TRUE(gpuLinksFromFacts(facts).empty());
  facts[0][1] = ancestor(kNvmlTopologySingle);
  EXPECT_EQ(gpuLinksFromFacts(facts), (GpuLinks{{0, 2, 0}, {2, 0, 0}, {0, 0, 0}}));
  EXPECT_TRUE(gpuLinksFromFacts({}).empty());
  EXPECT_TRUE(gpuLinksFromFacts({{GpuPairFacts{}}}).empty());  // one GPU: no pairs
}

TEST(NormalizePciBusId, OneSpellingPerAddress) {
  EXPECT_EQ(normalizePciBusId("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalizePciBusId("0000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalizePciBusId("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalizePciBusId("00010000:3B:00.0"), "10000:3b:00.0");
  EXPECT_EQ(normalizePciBusId("0001:3B:00.0"), "0001:3b:00.0");
  EXPECT_EQ(normalizePciBusId("Weird"), "weird");
}

TEST(CountNvLinks, DirectLinksMatchedByBusId) {
  // GPU 0 and 1: 4 links (bus ids spelt differently on each side); GPU 2
  // none; GPU 1 to GPU 2's neighbour that is not here is not counted as a
  // link to anyone.
  std::vector<std::string> bus = {"00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0"};
  std::vector<std::vector<std::string>> remotes = {
      {"0000:0f:00.0", "0000:0f:00.0", "0000:0F:00.0", "00000000:0F:00.0"},
      {"00000000:07:00.0", "00000000:07:00.0", "00000000:07:00.0", "00000000:07:00.0"},
      {}};
  EXPECT_EQ(countNvLinks(bus, remotes),
            (std::vector<std::vector<int>>{{0, 4, 0}, {4, 0, 0}, {0, 0, 0}}));
}

TEST(CountNvLinks, ALinkSeenFromOneSideOnlyStillCounts) {
  std::vector<std::string> bus = {"0000:07:00.0", "0000:0f:00.0"};
  std::vector<std::vector<std::string>> remotes = {{"0000:0f:00.0", "0000:0f:00.0"}, {}};
  EXPECT_EQ(countNvLinks(bus, remotes), (std::vector<std::vector<int>>{{0, 2}, {2, 0}}));
}

TEST(CountNvLinks, LinksThroughSharedSwitchesCount) {
  // HGX-like: each GPU has 6 links to switches A and B (3 each); GPU 2 reaches
  // only switch A with 2 links; GPU 3 reaches no switch.
  std::vector<std::string> bus = {"0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0"};
  const std::string a = "0000:a0:00.0";
  const std::string b = "0000:b0:00.0";
  std::vector<std::vector<std::string>> remotes = {
      {a, a, a, b, b, b}, {a, a, a, b, b, b}, {a, a}, {}};
  std::vector<std::vector<int>> links = countNvLinks(bus, remotes);
  EXPECT_EQ(links[0][1], 6);
  EXPECT_EQ(links[1][0], 6);
  EXPECT_EQ(links[0][2], 2);  // bounded by GPU 2's two links into A
  EXPECT_EQ(links[2][0], 2);
  EXPECT_EQ(links[0][3], 0);
  EXPECT_EQ(links[2][3], 0);
}

TEST(CountNvLinks, UnknownBusIdsAndEmptyRemotes) {
  EXPECT_EQ(countNvLinks({"", ""}, {{}, {}}), (std::vector<std::vector<int>>{{0, 0}, {0, 0}}));
  EXPECT_TRUE(countNvLinks({}, {}).empty());
}

TEST(ParseGpuTopology, ReadsNvidiaSmiCells) {
  Result<GpuLinks> links = parseGpuTopology(
      "X,NV12,PIX,SYS; NV12,X,PXB,NODE;pix pxb x phb;SYS NODE PHB X;", "gpu_topology");
  ASSERT_TRUE(links.isOk()) << links.status().toString();
  EXPECT_EQ(*links, (GpuLinks{{0, 22, 2, 0}, {22, 0, 2, 1}, {2, 2, 0, 1}, {0, 1, 1, 0}}));
  // New lines separate rows too, and a single GPU is a 1x1 matrix.
  EXPECT_EQ(parseGpuTopology("X\tNV1\nNV1\tX\n", "f").value(), (GpuLinks{{0, 11}, {11, 0}}));
  EXPECT_EQ(parseGpuTopology("X", "f").value(), (GpuLinks{{0}}));
}

TEST(ParseGpuTopology, ErrorsNameTheFieldAndTheFix) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"", "is empty; give one row of cells per GPU"},
           {" ; ", "is empty"},
           {"X,SYS;SYS,X;X", "row 1 has 2 cells but there are 3 rows"},
           {"X,SYS;SYS", "row 2 has 1 cells but there are 2 rows"},
           {"X,NVL;NVL,X", "row 1, column 2: unknown cell \"NVL\"; use X"},
           {"X,NV0;NV0,X", "unknown cell \"NV0\""},
           {"X,NV65;NV65,X", "unknown cell \"NV65\""},
           {"X,X;SYS,X", "row 1, column 2: \"X\" off the diagonal"},
           {"SYS,SYS;SYS,X", "row 1, column 1: \"SYS\" on the diagonal; write X there"},
           {"X,NV4;SYS,X", "row 1, column 2 is NV4 but row 2, column 1 is SYS"},
       }) {
    Result<GpuLinks> r = parseGpuTopology(c.text, "gpu_topology");
    ASSERT_FALSE(r.isOk()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), "gpu_topology") << c.text;
    EXPECT_TRUE(contains(r.status().message(), c.says)) << c.text << ": " << r.status().message();
  }
}

TEST(FormatGpuLinks, BackToCells) {
  EXPECT_EQ(formatGpuLinks({{0, 22, 2}, {22, 0, 1}, {2, 1, 0}}),
            "X,NV12,PXB;NV12,X,NODE;PXB,NODE,X");
  EXPECT_EQ(formatGpuLinks({{0, 0}, {0, 0}}), "X,SYS;SYS,X");
  EXPECT_EQ(formatGpuLinks({}), "");
  std::string text = "X,NV4,SYS;NV4,X,PXB;SYS,PXB,X";
  EXPECT_EQ(formatGpuLinks(parseGpuTopology(text, "f").value()), text);
}

}  // namespace
}  // namespace ty
