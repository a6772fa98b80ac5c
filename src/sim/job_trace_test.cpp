#include "sim/job_trace.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ty {
namespace {

Result<std::vector<TraceJob>> parse(const std::string& text) {
  std::istringstream in(text);
  return parsePhillyCsv(in, "t.csv");
}

TEST(JobTrace, ParsesTimeAsUtc) {
  Result<Timestamp> t = parseTraceTime("2017-10-09 07:01:55");
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(*t, 1507532515000);
  EXPECT_FALSE(parseTraceTime("2017-02-29 00:00:00").isOk());
  EXPECT_FALSE(parseTraceTime("2017-10-09T07:01:55").isOk());
}

TEST(JobTrace, ReadsRowsByHeaderName) {
  auto r = parse(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
      "2017-10-09 06:13:03,2951.5,8,23612.0,6214e9\n");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].duration, 66'000);
  EXPECT_EQ((*r)[1].duration, 2'951'500);
  EXPECT_EQ((*r)[1].gpus, 8);
  EXPECT_EQ((*r)[1].queue, "6214e9");
  EXPECT_EQ((*r)[1].line, 3);
}

TEST(JobTrace, ErrorsNameLineAndColumn) {
  auto bad_gpus = parse(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,a\n"
      "2017-10-09 07:01:55,66.0,x,66.0,a\n");
  ASSERT_FALSE(bad_gpus.isOk());
  EXPECT_EQ(bad_gpus.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_gpus.status().message().find("t.csv:3: column 3 (num_gpus)"), std::string::npos)
      << bad_gpus.status().message();

  auto bad_time =
      parse("timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-01 00:00:00,1,1,1,a\n");
  ASSERT_FALSE(bad_time.isOk());
  EXPECT_NE(bad_time.status().message().find("t.csv:2: column 1 (timestamp)"), std::string::npos);

  auto bad_duration =
      parse("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,-5,1,1,a\n");
  ASSERT_FALSE(bad_duration.isOk());
  EXPECT_NE(bad_duration.status().message().find("t.csv:2: column 2 (duration)"),
            std::string::npos);

  auto short_row = parse("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,1,1\n");
  ASSERT_FALSE(short_row.isOk());
  EXPECT_NE(short_row.status().message().find("t.csv:2: expected 5 columns, got 3"),
            std::string::npos);

  auto no_column = parse("timestamp,duration,gpus,cluster\n");
  ASSERT_FALSE(no_column.isOk());
  EXPECT_NE(no_column.status().message().find("t.csv:1: header has no column \"num_gpus\""),
            std::string::npos);
}

TEST(JobTrace, WindowSortsAndNumbers) {
  auto r = parse(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-03 00:00:00,1,1,1,a\n"
      "2017-10-01 00:00:00,1,1,1,a\n"
      "2017-10-02 00:00:00,1,1,1,b\n"
      "2017-10-02 00:00:00,2,1,2,c\n");
  ASSERT_TRUE(r.isOk());
  TraceWindow w;
  w.from = *parseTraceTime("2017-10-02 00:00:00");
  w.limit = 2;
  std::vector<TraceJob> jobs = selectWindow(*r, w);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].queue, "b");  // same time: file order
  EXPECT_EQ(jobs[1].queue, "c");
  EXPECT_EQ(jobs[0].id, 1);
  EXPECT_EQ(jobs[1].id, 2);
}

TEST(JobTrace, ReadsCommittedSample) {
  auto r = readPhillyCsv(std::string(TY_SOURCE_DIR) + "/tests/data/philly/philly_sample.csv");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->size(), 300u);
  EXPECT_EQ(readPhillyCsv("/nonexistent/philly.csv").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ty
