// Helpers for the local executor's tests (header-only, used by *_test.cpp
// only): a temporary directory, polling with deadlines, process checks.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace ty::testing {

// A fresh directory under /tmp, removed with its contents at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ty-exec-test-XXXXXX";
    char* p = ::mkdtemp(tmpl);
    if (p != nullptr) path_ = p;
  }
  ~TempDir() { removeAll(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

  static void removeAll(const std::string& path) {
    if (path.empty()) return;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
      if (DIR* d = ::opendir(path.c_str())) {
        while (dirent* e = ::readdir(d)) {
          std::string name = e->d_name;
          if (name != "." && name != "..") removeAll(path + "/" + name);
        }
        ::closedir(d);
      }
      ::rmdir(path.c_str());
    } else {
      ::unlink(path.c_str());
    }
  }

 private:
  std::string path_;
};

// Polls `pred` every 10 ms until it holds or `timeout_ms` passes.
inline bool waitFor(const std::function<bool()>& pred, int timeout_ms = 10'000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// True while the process exists and is not a zombie.
inline bool processAlive(pid_t pid) {
  std::string stat = readText("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  if (stat.empty() || close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  return state != 'Z' && state != 'X';
}

// TRAINYARD_BIN: the built `trainyard` executable (it runs `__supervise`).
inline std::string trainyardBin() {
  const char* bin = std::getenv("TRAINYARD_BIN");
  return bin == nullptr ? std::string() : std::string(bin);
}

}  // namespace ty::testing
