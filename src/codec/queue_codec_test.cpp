#include "codec/queue_codec.h"

#include <gtest/gtest.h>

#include "codec/job_codec.h"

namespace ty {
namespace {

void expectSame(const QueueConfig& a, const QueueConfig& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.project, b.project);
  EXPECT_EQ(a.cohort, b.cohort);
  EXPECT_EQ(a.weight, b.weight);
  ASSERT_EQ(a.quotas.size(), b.quotas.size());
  for (const auto& [res, q] : a.quotas) {
    ASSERT_TRUE(b.quotas.count(res)) << res;
    const Quota& o = b.quotas.at(res);
    EXPECT_EQ(q.nominal, o.nominal) << res;
    EXPECT_EQ(q.borrowing_limit, o.borrowing_limit) << res;
    EXPECT_EQ(q.lending_limit, o.lending_limit) << res;
  }
}

Result<QueueConfig> read(const std::string& text, const std::string& name = "") {
  auto j = parseBody(text, /*yaml=*/true);
  if (!j.isOk()) return j.status();
  QueueConfig q;
  q.name = name;
  TY_RETURN_IF_ERROR(readQueue(*j, "", q, "queue"));
  return q;
}

TEST(QueueCodec, RoundTripsEveryField) {
  QueueConfig q;
  q.name = "nlp";
  q.project = "language";
  q.cohort = "lab";
  q.weight = 2.5;
  q.quotas["gpu"] = Quota::units(8, 4, 8);
  q.quotas["gpu:A100"] = Quota::units(8, 0);
  q.quotas["cpu"] = Quota{10'000'250, std::nullopt, 1500};  // 10000.25 CPUs, lends 1.5
  q.quotas["memory"] = Quota{512LL << 30, (1LL << 30) + 1, std::nullopt};
  Json j = queueToJson(q);
  // Through text, as the store and the API carry it.
  auto back = read(j.dump());
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  expectSame(q, *back);
  EXPECT_EQ(queueToJson(*back), j);
}

TEST(QueueCodec, WritesUnitsAsNumbersAndMemoryWithAUnit) {
  QueueConfig q;
  q.name = "vision";
  q.project = "vision";
  q.quotas["gpu"] = Quota{500, std::nullopt, std::nullopt};
  q.quotas["cpu"] = Quota::units(64);
  q.quotas["memory"] = Quota{512LL << 30, std::nullopt, std::nullopt};
  Json j = queueToJson(q);
  EXPECT_EQ(j["quota"]["gpu"]["nominal"], Json(0.5));
  EXPECT_EQ(j["quota"]["cpu"]["nominal"], Json(64));
  EXPECT_EQ(j["quota"]["memory"]["nominal"], Json("512Gi"));
  EXPECT_FALSE(j["quota"]["gpu"].contains("borrowing_limit"));
  EXPECT_FALSE(j.contains("cohort"));
  EXPECT_EQ(describeQuotas(q), "cpu nominal 64; gpu nominal 0.5; memory nominal 512Gi");
}

TEST(QueueCodec, TakesTheNameFromOutsideWhenTheBodyHasNone) {
  auto q = read("{cohort: lab, quota: {gpu: {nominal: 8, lending_limit: 2}}}", "nlp");
  ASSERT_TRUE(q.isOk()) << q.status().toString();
  EXPECT_EQ(q->name, "nlp");
  EXPECT_EQ(q->project, "nlp");  // defaults to the name
  EXPECT_EQ(q->quotas.at("gpu").nominal, 8000);
  EXPECT_EQ(q->quotas.at("gpu").lending_limit, 2000);
  EXPECT_EQ(read("{weight: 2}").status().field(), "name");
}

TEST(QueueCodec, ErrorsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"{name: NLP}", "name"},
      {"{name: nlp, project: 'a b'}", "project"},
      {"{name: nlp, cohort: Lab}", "cohort"},
      {"{name: nlp, weight: 0}", "weight"},
      {"{name: nlp, weight: heavy}", "weight"},
      {"{name: nlp, quota: [1]}", "quota"},
      {"{name: nlp, quota: {tpu: {nominal: 1}}}", "quota.tpu"},
      {"{name: nlp, quota: {gpu: {borrowing_limit: 1}}}", "quota.gpu.nominal"},
      {"{name: nlp, quota: {gpu: {nominal: -1}}}", "quota.gpu.nominal"},
      {"{name: nlp, quota: {gpu: {nominal: 0.0001}}}", "quota.gpu.nominal"},
      {"{name: nlp, quota: {gpu: {nominal: 2, lending_limit: 3}}}", "quota.gpu.lending_limit"},
      {"{name: nlp, quota: {memory: {nominal: lots}}}", "quota.memory.nominal"},
      {"{name: nlp, quota: {gpu: {nominal: 1, burst: 2}}}", "quota.gpu.burst"},
      {"{name: nlp, colour: red}", "colour"},
  };
  for (const auto& [text, field] : cases) {
    auto q = read(text);
    ASSERT_FALSE(q.isOk()) << text;
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(q.status().field(), field) << text << ": " << q.status().toString();
  }
}

TEST(QueueCodec, ValidateCatchesWhatNoReaderMade) {
  QueueConfig q;
  q.name = "nlp";
  q.project = "nlp";
  q.quotas["gpu"] = Quota{1000, std::nullopt, 2000};
  Status st = validateQueue(q, "queue");
  EXPECT_EQ(st.field(), "queue.quota.gpu.lending_limit");
  q.quotas["gpu"] = Quota{1000, -1, std::nullopt};
  EXPECT_EQ(validateQueue(q).field(), "quota.gpu.borrowing_limit");
  q.quotas.clear();
  EXPECT_TRUE(validateQueue(q).isOk());
  EXPECT_TRUE(validQueueName("nlp-batch.v2_a"));
  EXPECT_FALSE(validQueueName(""));
  EXPECT_FALSE(validQueueName(std::string(65, 'a')));
  EXPECT_FALSE(validQueueName("a/b"));
}

}  // namespace
}  // namespace ty
