#include "exec/log_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "exec/local/sys_util.h"
#include "exec/local/test_support.h"

namespace ty {
namespace {

using ::ty::testing::TempDir;

class LogFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(sys::makeDirs(layout_.replicaDir(key_, 0)).isOk()); }
  std::string path(int i) { return RunLayout::logPath(layout_.replicaDir(key_, 0), i); }
  void append(int i, const std::string& text) {
    std::ofstream out(path(i), std::ios::app);
    out << text;
  }
  // What the supervisor does: output.log.k -> .k+1, output.log -> .1.
  void rotate(int files) {
    ::unlink(path(files - 1).c_str());
    for (int i = files - 2; i >= 0; --i) ::rename(path(i).c_str(), path(i + 1).c_str());
  }

  TempDir dir_;
  RunLayout layout_{dir_.path()};
  AttemptKey key_{JobId(5), 2};
};

TEST_F(LogFilesTest, LayoutPaths) {
  RunLayout l("/data");
  EXPECT_EQ(l.replicaDir(AttemptKey{JobId(42), 3}, 1), "/data/jobs/42/attempt-3/replica-1");
  EXPECT_EQ(RunLayout::logPath("/d", 0), "/d/output.log");
  EXPECT_EQ(RunLayout::logPath("/d", 2), "/d/output.log.2");
  EXPECT_EQ(RunLayout::parseAttemptDirName("attempt-12"), 12);
  EXPECT_EQ(RunLayout::parseAttemptDirName("attempt-"), std::nullopt);
  EXPECT_EQ(RunLayout::parseReplicaDirName("replica-x"), std::nullopt);
}

TEST_F(LogFilesTest, ListsReplicasWithLogs) {
  append(0, "abc");
  ASSERT_TRUE(sys::makeDirs(layout_.replicaDir(AttemptKey{JobId(5), 1}, 3)).isOk());  // no log
  ASSERT_TRUE(sys::makeDirs(layout_.replicaDir(key_, 1)).isOk());
  std::ofstream(RunLayout::logPath(layout_.replicaDir(key_, 1), 0)) << "x";
  std::ofstream(RunLayout::logPath(layout_.replicaDir(key_, 1), 1)) << "yy";
  auto logs = listReplicaLogs(layout_, JobId(5));
  ASSERT_TRUE(logs.isOk());
  ASSERT_EQ(logs->size(), 2u);
  EXPECT_EQ((*logs)[0].replica, 0);
  EXPECT_EQ((*logs)[0].bytes, 3);
  EXPECT_EQ((*logs)[1].replica, 1);
  EXPECT_EQ((*logs)[1].bytes, 3);
  EXPECT_EQ((*logs)[1].files, 2);
  auto none = listReplicaLogs(layout_, JobId(6));
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->empty());
}

TEST_F(LogFilesTest, TailAcrossRotatedFiles) {
  append(2, "l1\nl2\n");
  append(1, "l3\nl4");
  append(0, "-cont\nl5\n");
  EXPECT_EQ(*tailLog(layout_, key_, 0, 1), "l5\n");
  EXPECT_EQ(*tailLog(layout_, key_, 0, 2), "l4-cont\nl5\n");
  EXPECT_EQ(*tailLog(layout_, key_, 0, 4), "l2\nl3\nl4-cont\nl5\n");
  EXPECT_EQ(*tailLog(layout_, key_, 0, 100), "l1\nl2\nl3\nl4-cont\nl5\n");
  EXPECT_EQ(*tailLog(layout_, key_, 0, 0), "");
  EXPECT_EQ(*tailLog(layout_, key_, 0, 100, 4), "l5\n");  // byte cap: newest bytes
  EXPECT_EQ(tailLog(layout_, key_, 1, 5).status().code(), StatusCode::kNotFound);
}

TEST_F(LogFilesTest, TailWithoutTrailingNewline) {
  append(0, "a\nb\nc");
  EXPECT_EQ(*tailLog(layout_, key_, 0, 2), "b\nc");
}

TEST_F(LogFilesTest, FollowFromOffsetAcrossRotation) {
  auto start = logEndCursor(layout_, key_, 0);
  ASSERT_TRUE(start.isOk());
  EXPECT_EQ(*start, LogCursor{});
  auto empty = readLogFrom(layout_, key_, 0, *start);
  ASSERT_TRUE(empty.isOk());
  EXPECT_EQ(empty->data, "");

  append(0, "abc");
  auto c1 = readLogFrom(layout_, key_, 0, LogCursor{0, 1});  // a plain byte offset
  ASSERT_TRUE(c1.isOk());
  EXPECT_EQ(c1->data, "bc");
  append(0, "def");
  auto c2 = readLogFrom(layout_, key_, 0, c1->next);
  EXPECT_EQ(c2->data, "def");
  auto c3 = readLogFrom(layout_, key_, 0, c2->next);
  EXPECT_EQ(c3->data, "");
  EXPECT_EQ(c3->next, c2->next);

  append(0, "ghi");  // written, then rotated before the reader came back
  rotate(3);
  append(0, "jkl");
  auto c4 = readLogFrom(layout_, key_, 0, c3->next, 2);
  EXPECT_EQ(c4->data, "gh");  // the rest of the rotated file first
  auto c5 = readLogFrom(layout_, key_, 0, c4->next);
  EXPECT_EQ(c5->data, "i");
  auto c6 = readLogFrom(layout_, key_, 0, c5->next);
  EXPECT_EQ(c6->data, "jkl");
  EXPECT_FALSE(c6->gap);

  // Rotated twice more: the file the cursor was in is gone. It is kept open
  // meanwhile so that its inode number cannot be given to the new
  // output.log: cursors name files by inode, and a reused number would read
  // as the same file (a follower two rotations behind, with the number
  // reused at once, misses the gap; the filesystem decides, so the test
  // rules it out rather than depend on it).
  sys::UniqueFd hold(::open(path(0).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(hold.valid());
  rotate(2);
  rotate(2);
  append(0, "xyz");
  auto c7 = readLogFrom(layout_, key_, 0, c6->next);
  EXPECT_EQ(c7->data, "xyz");
  EXPECT_TRUE(c7->gap);
  auto end = logEndCursor(layout_, key_, 0);
  EXPECT_EQ(*end, c7->next);
}

}  // namespace
}  // namespace ty
