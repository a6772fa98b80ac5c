#include "common/units.h"

#include <gtest/gtest.h>

#include "common/status.h"
#include "common/time.h"

namespace ty {
namespace {

TEST(Units, ParsesMemory) {
  EXPECT_EQ(parseMemory("16Gi"), 16LL << 30);
  EXPECT_EQ(parseMemory("512Mi"), 512LL << 20);
  EXPECT_EQ(parseMemory("1G"), 1000000000LL);
  EXPECT_EQ(parseMemory("4096"), 4096);
  EXPECT_FALSE(parseMemory("16GB"));
  EXPECT_FALSE(parseMemory("-1Gi"));
  EXPECT_FALSE(parseMemory(""));
  EXPECT_FALSE(parseMemory("99999999999999999Ti"));
  EXPECT_EQ(formatMemory(16LL << 30), "16Gi");
}

TEST(Units, ParsesQuantities) {
  EXPECT_EQ(parseQuantity("2")->milli(), 2000);
  EXPECT_EQ(parseQuantity("0.25")->milli(), 250);
  EXPECT_EQ(parseQuantity("250m")->milli(), 250);
  EXPECT_FALSE(parseQuantity("0.0001"));
  EXPECT_FALSE(parseQuantity("1."));
  EXPECT_FALSE(parseQuantity("abc"));
  EXPECT_EQ(Quantity::fromMilli(1500).toString(), "1.5");
  EXPECT_EQ(Quantity::whole(3).toString(), "3");
}

TEST(Units, ParsesDurations) {
  EXPECT_EQ(parseDuration("2h"), 7'200'000);
  EXPECT_EQ(parseDuration("1h30m"), 5'400'000);
  EXPECT_EQ(parseDuration("500ms"), 500);
  EXPECT_EQ(parseDuration("2x"), -1);
  EXPECT_EQ(parseDuration("h"), -1);
  EXPECT_EQ(formatDuration(5'400'000), "1h30m");
  EXPECT_EQ(parseDuration("999999999999d"), -1);  // would overflow
  EXPECT_EQ(parseDuration("36500d"), 36500LL * 86'400'000);
  EXPECT_EQ(formatDuration(10'000), "10s");
}

TEST(Status, CarriesCodeFieldAndMessage) {
  Status s = Status::invalidArgument("must be >= 0", "resources.gpus");
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.toString(), "invalid_argument: resources.gpus: must be >= 0");
  Result<int> r = s;
  EXPECT_FALSE(r.isOk());
  EXPECT_EQ(r.status().field(), "resources.gpus");
  Result<int> v = 3;
  EXPECT_EQ(*v, 3);
}

TEST(Time, FormatsRfc3339) { EXPECT_EQ(formatTimestamp(1500), "1970-01-01T00:00:01.500Z"); }

}  // namespace
}  // namespace ty
