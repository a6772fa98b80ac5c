// Test helper shared by every layer's tests (header-only, used by *_test.cpp
// only): a fresh temporary directory that is removed with its contents when
// the object goes out of scope, so a test cannot leak files into the next one.
// It depends on nothing but the standard library and POSIX so that any
// layer's tests can use it, gtest or not.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace ty::testing {

class TempDir {
 public:
  // `prefix` starts the directory's name, so a directory left behind by a
  // crashed test tells which test made it. mkdtemp failing leaves path()
  // empty; callers assert on that in SetUp, where a failure can be reported.
  explicit TempDir(std::string_view prefix = "ty-test-") {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string tmpl = (base / (std::string(prefix) + "XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) != nullptr) {
      path_ = tmpl;
      fs_path_ = tmpl;
    }
  }
  ~TempDir() {
    if (path_.empty()) return;
    // Never throws from a destructor; a leftover directory is only litter.
    std::error_code ec;
    std::filesystem::remove_all(fs_path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The directory, in whichever form the code under test takes.
  const std::string& path() const { return path_; }
  const std::filesystem::path& fsPath() const { return fs_path_; }

  // A path inside the directory: `dir / "store.db"`.
  std::filesystem::path operator/(const std::filesystem::path& rel) const { return fs_path_ / rel; }

 private:
  std::string path_;
  std::filesystem::path fs_path_;
};

}  // namespace ty::testing
