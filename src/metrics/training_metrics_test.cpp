#include "metrics/training_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

#include "metrics/metrics_test_util.h"

namespace ty {
namespace {

using test::seriesOf;

TEST(TrainingMetrics, LatestValuePerJobAndNameAndEndedJobsGo) {
  prometheus::Registry registry;
  TrainingMetrics metrics(registry);
  metrics.update({{"1", "vision", "ada", "loss", 0.5},
                  {"1", "vision", "ada", "lr", 0.001},
                  {"2", "nlp", "bob", "loss", 2.0}});
  EXPECT_EQ(seriesOf(registry, "trainyard_job_metric"),
            (std::map<std::string, double>{
                {"job=1,name=loss,project=vision,user=ada", 0.5},
                {"job=1,name=lr,project=vision,user=ada", 0.001},
                {"job=2,name=loss,project=nlp,user=bob", 2.0},
            }));
  // Job 2 ended; job 1 reported a new loss.
  metrics.update({{"1", "vision", "ada", "loss", 0.25}, {"1", "vision", "ada", "lr", 0.001}});
  EXPECT_EQ(seriesOf(registry, "trainyard_job_metric"),
            (std::map<std::string, double>{
                {"job=1,name=loss,project=vision,user=ada", 0.25},
                {"job=1,name=lr,project=vision,user=ada", 0.001},
            }));
  EXPECT_EQ(metrics.seriesCount(), 2u);
  metrics.update({});
  EXPECT_TRUE(seriesOf(registry, "trainyard_job_metric").empty());
}

}  // namespace
}  // namespace ty
