#include <gtest/gtest.h>

#include <cmath>

#include "sim/report_svg.h"
#include "sim/report_table.h"

namespace ty {
namespace {

TEST(ReportTable, CsvQuotesOnlyWhenNeeded) {
  Table t{{"name", "value"}, {{"a,b", "1"}, {"say \"hi\"", "2.50"}}};
  EXPECT_EQ(toCsv(t), "name,value\n\"a,b\",1\n\"say \"\"hi\"\"\",2.50\n");
}

TEST(ReportTable, AlignedTextRightAlignsNumbers) {
  Table t{{"policy", "pct"}, {{"fgd", "4.9"}, {"random", "12.65"}}};
  EXPECT_EQ(toAlignedText(t), "policy  pct\nfgd       4.9\nrandom  12.65\n");
  EXPECT_EQ(formatNumber(std::nan("")), "-");
  EXPECT_EQ(formatNumber(1.0 / 3, 3), "0.333");
}

TEST(ReportSvg, OnePolylinePerSeriesAndEscapedNames) {
  LineChart c;
  c.title = "a < b";
  c.series = {{"x&y", {{0, 1}, {1, 2}}}, {"z", {{0, 2}, {1, std::nan("")}, {2, 3}}}};
  std::string svg = toSvg(c);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("a &lt; b"), std::string::npos);
  EXPECT_NE(svg.find("x&amp;y"), std::string::npos);
  std::size_t lines = 0;
  for (std::size_t p = svg.find("<polyline"); p != std::string::npos;
       p = svg.find("<polyline", p + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 3u);  // the NaN splits the second series in two
}

}  // namespace
}  // namespace ty
