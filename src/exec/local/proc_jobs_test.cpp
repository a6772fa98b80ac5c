#include "exec/local/proc_jobs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace ty {
namespace {

using namespace std::string_literals;

TEST(ProcJobsTest, ParsesTheJobFromTheEnvironment) {
  ProcJobProcess p;
  ASSERT_TRUE(parseJobEnviron("PATH=/bin\0TRAINYARD_JOB_ID=42\0TRAINYARD_ATTEMPT=3\0"s, p));
  EXPECT_EQ(p.job, JobId(42));
  EXPECT_EQ(p.attempt, 3);
  EXPECT_FALSE(parseJobEnviron("PATH=/bin\0HOME=/root\0"s, p));
  EXPECT_FALSE(parseJobEnviron("TRAINYARD_JOB_ID=x42\0"s, p));
  EXPECT_FALSE(parseJobEnviron("MY_TRAINYARD_JOB_ID=42\0"s, p));
  ASSERT_TRUE(parseJobEnviron("TRAINYARD_JOB_ID=7"s, p));  // no trailing NUL
  EXPECT_EQ(p.attempt, 0);
}

TEST(ProcJobsTest, CountsCpuTicksAfterTheCommandName) {
  // A command name with spaces and a parenthesis; utime 150, stime 50.
  const std::string stat =
      "1234 (my (odd) cmd) S 1 1234 1234 0 -1 4194560 500 0 0 0 150 50 0 0 20 0 1 0 100 0 0";
  EXPECT_EQ(parseStatCpuTicks(stat), 200);
  EXPECT_EQ(parseStatCpuTicks("garbage"), -1);
  EXPECT_EQ(parseStatCpuTicks("1 (x) S 1 2"), -1);
}

// A real child process with a known job in its environment is found by a
// scan of the real /proc, and one without is not.
TEST(ProcJobsTest, FindsAChildProcessByItsEnvironment) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char* argv[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                    const_cast<char*>("while :; do :; done"), nullptr};
    char* envp[] = {const_cast<char*>("TRAINYARD_JOB_ID=987654"),
                    const_cast<char*>("TRAINYARD_ATTEMPT=2"), nullptr};
    ::execve("/bin/sh", argv, envp);
    ::_exit(127);
  }
  // The environment is the child's own only after execve: scan until it is
  // (bounded, no sleeping on a timer).
  ProcJobs jobs;
  for (int i = 0; i < 100000 && jobs.pids.count(child) == 0; ++i) jobs = scanProcJobs();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_EQ(jobs.pids.count(child), 1u);
  EXPECT_EQ(jobs.pids[child].job, JobId(987654));
  EXPECT_EQ(jobs.pids[child].attempt, 2);
  EXPECT_EQ(jobs.pids.count(::getpid()), 0u);
  EXPECT_EQ(jobs.cpu_seconds.count(JobId(987654)), 1u);
  EXPECT_GE(jobs.cpu_seconds[JobId(987654)], 0.0);
}

TEST(ProcJobsTest, MissingProcDirectoryIsEmpty) {
  ProcJobs jobs = scanProcJobs("/nonexistent-proc");
  EXPECT_TRUE(jobs.pids.empty());
}

}  // namespace
}  // namespace ty
