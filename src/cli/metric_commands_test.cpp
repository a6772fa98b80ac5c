#include "cli/metric_commands.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ty {
namespace {

TEST(MetricCommands, SparklineRisesAndFalls) {
  EXPECT_EQ(sparkline({0, 1, 2, 3, 4, 5, 6, 7}), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline({7, 0}), "█▁");
  EXPECT_EQ(sparkline({}), "");
  // Flat: the bottom line, not a division by zero.
  EXPECT_EQ(sparkline({3, 3, 3}), "▁▁▁");
}

TEST(MetricCommands, SparklineAveragesBucketsToTheWidth) {
  std::vector<double> values;
  for (int i = 0; i < 100; ++i) values.push_back(i < 50 ? 0 : 10);
  EXPECT_EQ(sparkline(values, 4), "▁▁██");
  // Each character is 3 UTF-8 bytes.
  EXPECT_EQ(sparkline(values, 24).size(), 24u * 3);
}

TEST(MetricCommands, ListTableWithTrends) {
  Json list = Json::parse(R"({"metrics":[
    {"name":"loss","count":3,"latest":{"id":3,"step":30,"value":0.25,"time":0}},
    {"name":"lr","count":1,"latest":{"id":4,"step":null,"value":0.001,"time":0}}]})");
  std::ostringstream out;
  renderMetricList(list, {{"loss", {1.0, 0.5, 0.25}}}, out);
  EXPECT_EQ(out.str(),
            "NAME  COUNT  LATEST  STEP  TREND\n"
            "loss  3      0.25    30    █▃▁\n"
            "lr    1      0.001   -\n");
  std::ostringstream none;
  renderMetricList(Json::parse(R"({"metrics":[]})"), {}, none);
  EXPECT_NE(none.str().find("No metrics reported yet"), std::string::npos);
}

TEST(MetricCommands, SeriesAsTableAndCsv) {
  Json series = Json::parse(R"({"name":"loss","points":[
    {"id":1,"step":10,"value":0.5,"time":1700000000000},
    {"id":2,"step":null,"value":0.125,"time":1700000001500}]})");
  std::ostringstream table;
  renderSeriesTable(series, table);
  EXPECT_EQ(table.str(),
            "STEP  VALUE  TIME\n"
            "10    0.5    2023-11-14T22:13:20.000Z\n"
            "-     0.125  2023-11-14T22:13:21.500Z\n");
  std::ostringstream csv;
  renderSeriesCsv(series, csv);
  EXPECT_EQ(csv.str(),
            "step,value,time\n"
            "10,0.5,2023-11-14T22:13:20.000Z\n"
            ",0.125,2023-11-14T22:13:21.500Z\n");
}

}  // namespace
}  // namespace ty
