#include "codec/training_metric_codec.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

TEST(TrainingMetricCodec, ParsesStepTimeAndValues) {
  auto r = parseTrainingMetricLine(
      R"(TRAINYARD_METRIC {"step":100,"loss":0.31,"lr":0.001,"time":1700000000.5})");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->step, 100);
  EXPECT_EQ(r->time, 1'700'000'000'500);
  ASSERT_EQ(r->values.size(), 2u);
  EXPECT_EQ(r->values[0].first, "loss");
  EXPECT_DOUBLE_EQ(r->values[0].second, 0.31);
  EXPECT_EQ(r->values[1].first, "lr");
}

TEST(TrainingMetricCodec, StepAndTimeAreOptionalAndCrlfIsAccepted) {
  auto r = parseTrainingMetricLine("TRAINYARD_METRIC {\"eval/acc\":1}\r");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_FALSE(r->step.has_value());
  EXPECT_FALSE(r->time.has_value());
  EXPECT_EQ(r->values.at(0).first, "eval/acc");
  // A float that is a whole number is a step too.
  EXPECT_EQ(parseTrainingMetricLine(R"(TRAINYARD_METRIC {"step":3.0,"x":1})")->step, 3);
}

TEST(TrainingMetricCodec, BadLinesAreNotMetrics) {
  for (const char* line : {
           "TRAINYARD_METRIC",
           "TRAINYARD_METRIC ",
           "TRAINYARD_METRIC {",
           "TRAINYARD_METRIC []",
           "TRAINYARD_METRIC {\"step\":1}",
           "TRAINYARD_METRIC {\"step\":-1,\"x\":1}",
           "TRAINYARD_METRIC {\"step\":1.5,\"x\":1}",
           "TRAINYARD_METRIC {\"x\":\"1\"}",
           "TRAINYARD_METRIC {\"x\":true}",
           "TRAINYARD_METRIC {\"x\":null}",
           "TRAINYARD_METRIC {\"x\":{\"y\":1}}",
           "TRAINYARD_METRIC {\"1x\":1}",
           "TRAINYARD_METRIC {\"a b\":1}",
           "TRAINYARD_METRIC {\"x\":1} trailing",
           "TRAINYARD_METRIC {\"x\":1,\"time\":-5}",
           "trainyard_metric {\"x\":1}",
           " TRAINYARD_METRIC {\"x\":1}",
           "TRAINYARD_METRIC\t{\"x\":1}",
       }) {
    EXPECT_FALSE(parseTrainingMetricLine(line).isOk()) << line;
  }
  std::string long_line = "TRAINYARD_METRIC {\"x\":1,\"pad\":" + std::string(20000, '1') + "}";
  EXPECT_FALSE(parseTrainingMetricLine(long_line).isOk());
}

TEST(TrainingMetricCodec, MetricNames) {
  EXPECT_TRUE(validMetricName("loss"));
  EXPECT_TRUE(validMetricName("_x"));
  EXPECT_TRUE(validMetricName("train/loss:avg-1.2"));
  EXPECT_TRUE(validMetricName(std::string(128, 'a')));
  EXPECT_FALSE(validMetricName(std::string(129, 'a')));
  EXPECT_FALSE(validMetricName(""));
  EXPECT_FALSE(validMetricName("9lives"));
  EXPECT_FALSE(validMetricName("-x"));
  EXPECT_FALSE(validMetricName("x y"));
  EXPECT_FALSE(validMetricName("x\"y"));
  EXPECT_FALSE(validMetricName("caf\xc3\xa9"));
}

TEST(TrainingMetricCodec, PostBodyOneOrMany) {
  auto one =
      parseTrainingMetricBody(Json::parse(R"({"step":5,"metrics":{"loss":0.5},"key":"k1"})"));
  ASSERT_TRUE(one.isOk()) << one.status().toString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].key, "k1");
  EXPECT_EQ((*one)[0].report.step, 5);
  auto many = parseTrainingMetricBody(
      Json::parse(R"([{"step":1,"metrics":{"a":1}},{"metrics":{"b":2},"time":10}])"));
  ASSERT_TRUE(many.isOk()) << many.status().toString();
  ASSERT_EQ(many->size(), 2u);
  EXPECT_EQ((*many)[1].report.time, 10'000);
  EXPECT_EQ((*many)[1].key, "");
}

TEST(TrainingMetricCodec, PostBodyErrorsNameTheField) {
  auto bad = [](const char* text) {
    auto r = parseTrainingMetricBody(Json::parse(text));
    EXPECT_FALSE(r.isOk()) << text;
    return r.isOk() ? Status::ok() : r.status();
  };
  EXPECT_EQ(bad(R"({"step":1})").field(), "metrics");
  EXPECT_EQ(bad(R"({"metrics":{"x":"y"}})").field(), "x");
  EXPECT_EQ(bad(R"({"metrics":{"x":1},"key":"a b"})").field(), "key");
  EXPECT_EQ(bad(R"({"metrics":{"x":1},"extra":1})").field(), "extra");
  (void)bad("[]");
  (void)bad("3");
}

}  // namespace
}  // namespace ty
