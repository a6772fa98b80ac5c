// Queues and quotas changed at run time: a change goes to the store first
// and is in force from the next scheduling pass; the stored queues outlive
// a restart and win over the config file's, which only seed an empty store;
// a queue with jobs cannot be deleted.
#include <gtest/gtest.h>

#include "codec/queue_codec.h"
#include "server/job_service_test_fixture.h"

namespace ty {
namespace {

using test::JobServiceTest;
using test::spec;

QueueConfig queue(const std::string& name, std::int64_t gpus) {
  QueueConfig q;
  q.name = name;
  q.project = name;
  q.quotas["gpu"] = Quota::units(gpus);
  return q;
}

JobSpec in(JobSpec s, const std::string& project) {
  s.project = project;
  return s;
}

std::vector<std::string> names(const std::vector<QueueConfig>& queues) {
  std::vector<std::string> out;
  for (const auto& q : queues) out.push_back(q.name);
  return out;
}

class JobServiceQueuesTest : public JobServiceTest {
 protected:
  // The config file's queues, seeding the (empty) store at this start.
  void withConfigQueues(std::vector<QueueConfig> queues) {
    options_.policy.queues = std::move(queues);
    restart();
  }
  const QueueView* view(const std::string& name) {
    views_ = service_->queues();
    for (const auto& v : views_) {
      if (v.name == name) return &v;
    }
    return nullptr;
  }
  std::vector<QueueView> views_;
};

TEST_F(JobServiceQueuesTest, TheConfigFileSeedsAnEmptyStore) {
  withConfigQueues({queue("vision", 2), queue("nlp", 2)});
  EXPECT_EQ(names(store_->listQueues().value()), (std::vector<std::string>{"vision", "nlp"}));
  ASSERT_NE(view("nlp"), nullptr);
}

TEST_F(JobServiceQueuesTest, APutQueueChangesTheNextPassAndSurvivesARestart) {
  withConfigQueues({queue("vision", 1)});
  auto first = submit(in(spec(1, "first"), "vision"), "alice");
  auto second = submit(in(spec(1, "second"), "vision"), "alice");
  ASSERT_TRUE(first.isOk() && second.isOk());
  waitState(first->id, JobState::kRunning);
  waitJob(second->id, [](const Job& j) {
    return j.reason.find("uses 1 of 1 nominal GPUs") != std::string::npos;
  });

  auto change = service_->putQueue(queue("vision", 2));
  ASSERT_TRUE(change.isOk()) << change.status().toString();
  EXPECT_FALSE(change->created);
  EXPECT_EQ(change->queue.quotas.at("gpu").nominal, 2000);
  // The next pass admits the job the old quota held back.
  waitState(second->id, JobState::kRunning);
  EXPECT_EQ(view("vision")->resources.at(0).nominal, 2000);

  // The config file still says 1 GPU; the stored queue wins.
  restart();
  EXPECT_EQ(store_->listQueues().value().at(0).quotas.at("gpu").nominal, 2000);
  ASSERT_NE(view("vision"), nullptr);
  EXPECT_EQ(view("vision")->resources.at(0).nominal, 2000);
  auto third = submit(in(spec(1, "third"), "vision"), "alice");
  ASSERT_TRUE(third.isOk());
  Job waiting = waitJob(third->id, [](const Job& j) {
    return j.reason.find("uses 2 of 2 nominal GPUs") != std::string::npos;
  });
  EXPECT_EQ(waiting.state, JobState::kPending);
}

TEST_F(JobServiceQueuesTest, ANewQueueTakesItsProjectsJobsAndADeletedOneRefusesThem) {
  withConfigQueues({queue("vision", 4)});
  EXPECT_EQ(submit(in(spec(1), "nlp"), "bob").status().field(), "project");
  auto change = service_->putQueue(queue("nlp", 1));
  ASSERT_TRUE(change.isOk()) << change.status().toString();
  EXPECT_TRUE(change->created);
  auto job = submit(in(spec(1), "nlp"), "bob");
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  EXPECT_EQ(job->spec.queue, "nlp");
  // A job larger than the new queue could ever hold is refused at submit.
  EXPECT_EQ(submit(in(spec(2), "nlp"), "bob").status().code(), StatusCode::kInfeasible);
  waitState(job->id, JobState::kRunning);
  exec_.finishAll({job->id, 1}, 0);
  waitState(job->id, JobState::kSucceeded);

  ASSERT_TRUE(service_->deleteQueue("nlp").isOk());
  EXPECT_EQ(names(store_->listQueues().value()), (std::vector<std::string>{"vision"}));
  EXPECT_EQ(submit(in(spec(1), "nlp"), "bob").status().field(), "project");
  EXPECT_EQ(service_->deleteQueue("nlp").code(), StatusCode::kNotFound);
}

TEST_F(JobServiceQueuesTest, AQueueWithJobsIsNotDeleted) {
  withConfigQueues({queue("vision", 4)});
  auto running = submit(in(spec(1, "running"), "vision"), "alice");
  auto pending = submit(in(spec(4, "pending"), "vision"), "alice");
  ASSERT_TRUE(running.isOk() && pending.isOk());
  waitState(running->id, JobState::kRunning);

  Status st = service_->deleteQueue("vision");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("1 pending job and 1 running job"), std::string::npos)
      << st.message();
  EXPECT_EQ(store_->listQueues().value().size(), 1u);

  ASSERT_TRUE(service_->cancel(pending->id, "alice").isOk());
  st = service_->deleteQueue("vision");
  EXPECT_NE(st.message().find("still has 1 running job;"), std::string::npos) << st.message();
  exec_.finishAll({running->id, 1}, 0);
  waitState(running->id, JobState::kSucceeded);
  EXPECT_TRUE(service_->deleteQueue("vision").isOk());
  EXPECT_TRUE(store_->listQueues().value().empty());
}

TEST_F(JobServiceQueuesTest, AQuotaBelowUseIsAllowedAndTheNoteSaysSo) {
  withConfigQueues({queue("vision", 4)});
  auto held = submit(in(spec(3), "vision"), "alice");
  ASSERT_TRUE(held.isOk());
  waitState(held->id, JobState::kRunning);
  ASSERT_TRUE(eventually([&] {
    const QueueView* v = view("vision");
    return v != nullptr && v->resources.at(0).used == 3000;
  }));
  auto change = service_->putQueue(queue("vision", 2));
  ASSERT_TRUE(change.isOk()) << change.status().toString();
  EXPECT_NE(change->note.find("queue vision uses 3 GPUs, above the new nominal 2"),
            std::string::npos)
      << change->note;
  // Nothing is stopped for it.
  EXPECT_TRUE(exec_.signals().empty());
  EXPECT_EQ(job(held->id).state, JobState::kRunning);
}

TEST_F(JobServiceQueuesTest, AnInvalidOrUnstoredChangeChangesNothing) {
  withConfigQueues({queue("vision", 4)});
  QueueConfig bad = queue("vision", 1);
  bad.quotas["gpu"].lending_limit = 2000;
  auto r = service_->putQueue(bad);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "quota.gpu.lending_limit");
  EXPECT_EQ(service_->putQueue(queue("Vision", 1)).status().field(), "name");

  flaky_->fail_queue_writes = 2;
  EXPECT_EQ(service_->putQueue(queue("vision", 1)).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(service_->deleteQueue("vision").code(), StatusCode::kUnavailable);
  // Neither the store nor the queues in force moved: a 4-GPU job is taken.
  EXPECT_EQ(store_->listQueues().value().at(0).quotas.at("gpu").nominal, 4000);
  EXPECT_TRUE(submit(in(spec(4), "vision"), "alice").isOk());
}

TEST_F(JobServiceQueuesTest, ChangedQueuesAreUsedWhenTheConfigFileNamesNone) {
  withConfigQueues({});
  ASSERT_TRUE(service_->putQueue(queue("default", 1)).isOk());
  restart();
  ASSERT_NE(view("default"), nullptr);
  EXPECT_EQ(view("default")->resources.at(0).nominal, 1000);
  EXPECT_EQ(submit(spec(2), "alice").status().code(), StatusCode::kInfeasible);
}

}  // namespace
}  // namespace ty
