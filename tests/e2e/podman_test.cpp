// Container jobs through podman with a tiny image built from busybox-static.
// Skipped where podman is not installed.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "harness.h"

namespace ty::e2e {
namespace {

constexpr const char* kImage = "localhost/ty-e2e:busybox";

std::string findOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(full.c_str(), X_OK) == 0) return full;
  }
  return "";
}

// `tar -C rootfs -c . | podman import - IMAGE`, two argv processes joined by
// a pipe. Returns "" on success, else what went wrong.
std::string importRootfs(const std::string& tar, const std::string& podman,
                         const std::string& rootfs, const std::string& log_path) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return "pipe failed";
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<std::string> tar_args = {tar, "-C", rootfs, "-c", "."};
  std::vector<std::string> import_args = {podman, "import", "-", kImage};
  auto argvOf = [](std::vector<std::string>& a) {
    std::vector<char*> out;
    for (auto& s : a) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  };
  auto tar_argv = argvOf(tar_args);
  auto import_argv = argvOf(import_args);
  pid_t t = ::fork();
  if (t == 0) {
    ::dup2(p[1], 1);
    ::dup2(log_fd, 2);
    ::execv(tar_argv[0], tar_argv.data());
    _exit(127);
  }
  pid_t i = ::fork();
  if (i == 0) {
    ::dup2(p[0], 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(import_argv[0], import_argv.data());
    _exit(127);
  }
  ::close(p[0]);
  ::close(p[1]);
  ::close(log_fd);
  int ts = 0;
  int is = 0;
  ::waitpid(t, &ts, 0);
  ::waitpid(i, &is, 0);
  if (!WIFEXITED(ts) || WEXITSTATUS(ts) != 0) return "tar failed: " + readFile(log_path);
  if (!WIFEXITED(is) || WEXITSTATUS(is) != 0) return "podman import failed: " + readFile(log_path);
  return "";
}

class PodmanTest : public E2eTest {
 protected:
  void SetUp() override {
    podman_ = findOnPath("podman");
    if (podman_.empty()) {
      GTEST_SKIP() << "podman is not on PATH: container jobs are not tested here (CI installs "
                      "podman)";
    }
    E2eTest::SetUp();
  }
  std::vector<std::string> serverArgs() const override {
    return {"--fake-gpus", "4xA100-80GB", "--container-network", "none"};
  }
  std::string podman_;
};

TEST_F(PodmanTest, BusyboxImageJobRunsInAContainer) {
  ASSERT_TRUE(fileExists("/bin/busybox")) << "needs /bin/busybox (package busybox-static)";
  std::string tar = findOnPath("tar");
  ASSERT_FALSE(tar.empty()) << "tar is not on PATH";
  const std::string rootfs = tmp_.sub("rootfs");
  std::filesystem::create_directories(rootfs + "/bin");
  std::filesystem::create_directories(rootfs + "/tmp");
  std::filesystem::copy_file("/bin/busybox", rootfs + "/bin/busybox");
  for (const char* tool : {"sh", "echo", "cat", "env", "sleep", "true"}) {
    std::filesystem::create_symlink("busybox", rootfs + "/bin/" + tool);
  }
  std::string err = importRootfs(tar, podman_, rootfs, tmp_.sub("import.log"));
  ASSERT_TRUE(err.empty()) << err;

  Json spec = {{"image", kImage},
               {"command", {"sh", "-c", "echo in-container; env"}},
               {"grace_period", "1s"},
               {"env", {{"PATH", "/bin"}}}};
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  Json done = api().waitDone(id, 60s);
  auto events = api().eventLines(id);
  std::string log = api().logs(id);
  EXPECT_EQ(done.value("state", ""), "succeeded") << joinLines(events) << "log:\n" << log;
  EXPECT_NE(log.find("in-container"), std::string::npos) << log;
  EXPECT_NE(log.find("TRAINYARD_JOB_ID=" + std::to_string(id)), std::string::npos) << log;
}

}  // namespace
}  // namespace ty::e2e
