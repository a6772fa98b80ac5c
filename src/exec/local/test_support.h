// Helpers for the local executor's tests (header-only, used by *_test.cpp
// only): polling with deadlines, process checks, and (from common) a
// temporary directory.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "common/temp_dir_test_util.h"

namespace ty::testing {

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
