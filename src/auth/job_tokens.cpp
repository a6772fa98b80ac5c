#include "auth/job_tokens.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "auth/passwords.h"

namespace ty::auth {
namespace {

constexpr std::size_t kKeyBytes = 32;

Status ioError(const char* what, const std::string& path) {
  return Status::internal(std::string(what) + " " + path + ": " + std::strerror(errno));
}

Result<std::string> readSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ioError("open", path);
  std::string out;
  char buf[256];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return ioError("read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > 4096) break;
  }
  ::close(fd);
  return out;
}

Result<std::string> decodeKey(const std::string& text, const std::string& path) {
  std::string hex = text;
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) hex.pop_back();
  std::array<unsigned char, kKeyBytes> bin{};
  size_t len = 0;
  if (hex.size() != kKeyBytes * 2 ||
      sodium_hex2bin(bin.data(), bin.size(), hex.data(), hex.size(), nullptr, &len, nullptr) != 0 ||
      len != kKeyBytes) {
    return Status::failedPrecondition(path + " is not a job token key (64 hex digits); remove it " +
                                      "to make a new one (running jobs' tokens stop working)");
  }
  return std::string(reinterpret_cast<const char*>(bin.data()), bin.size());
}

std::optional<std::int64_t> parsePositive(std::string_view s) {
  if (s.empty() || s.size() > 18 || s[0] == '0') return std::nullopt;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

}  // namespace

JobTokens::JobTokens(std::string key) : key_(std::move(key)) {
  if (key_.size() < kKeyBytes) {
    std::fprintf(stderr, "JobTokens: key of %zu bytes, need %zu\n", key_.size(), kKeyBytes);
    std::abort();
  }
}

Result<JobTokens> JobTokens::loadOrCreate(const std::string& path) {
  ensureSodium();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    TY_ASSIGN_OR_RETURN(std::string existing, readSmallFile(path));
    TY_ASSIGN_OR_RETURN(std::string key, decodeKey(existing, path));
    return JobTokens(std::move(key));
  }
  if (errno != ENOENT) return ioError("stat", path);
  std::array<unsigned char, kKeyBytes> bin{};
  randombytes_buf(bin.data(), bin.size());
  std::array<char, kKeyBytes * 2 + 1> hex{};
  sodium_bin2hex(hex.data(), hex.size(), bin.data(), bin.size());
  sodium_memzero(bin.data(), bin.size());
  std::string text = std::string(hex.data()) + "\n";
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("create", tmp);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  // link() fails when the key exists: whoever linked first wins, and every
  // server reads back the one key that is there.
  if (!ok || (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST)) {
    Status st = ioError("write", path);
    ::unlink(tmp.c_str());
    return st;
  }
  ::unlink(tmp.c_str());
  TY_ASSIGN_OR_RETURN(std::string stored, readSmallFile(path));
  TY_ASSIGN_OR_RETURN(std::string key, decodeKey(stored, path));
  return JobTokens(std::move(key));
}

std::string JobTokens::mac(const AttemptKey& key) const {
  const std::string msg =
      "job:" + std::to_string(key.job.value()) + ":" + std::to_string(key.number);
  std::array<unsigned char, crypto_auth_hmacsha256_BYTES> out{};
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, reinterpret_cast<const unsigned char*>(key_.data()),
                              key_.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(msg.data()),
                                msg.size());
  crypto_auth_hmacsha256_final(&st, out.data());
  std::array<char, crypto_auth_hmacsha256_BYTES * 2 + 1> hex{};
  sodium_bin2hex(hex.data(), hex.size(), out.data(), out.size());
  return hex.data();
}

std::string JobTokens::issue(const AttemptKey& key) const {
  return std::string(kJobTokenPrefix) + std::to_string(key.job.value()) + "_" +
         std::to_string(key.number) + "_" + mac(key);
}

std::optional<AttemptKey> JobTokens::verify(std::string_view token) const {
  if (!looksLikeJobToken(token) || token.size() > 128) return std::nullopt;
  std::string_view rest = token.substr(kJobTokenPrefix.size());
  size_t a = rest.find('_');
  if (a == std::string_view::npos) return std::nullopt;
  size_t b = rest.find('_', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  auto job = parsePositive(rest.substr(0, a));
  auto attempt = parsePositive(rest.substr(a + 1, b - a - 1));
  if (!job || !attempt || *attempt > 1'000'000) return std::nullopt;
  AttemptKey key{JobId(*job), static_cast<int>(*attempt)};
  std::string want = mac(key);
  std::string_view got = rest.substr(b + 1);
  if (got.size() != want.size()) return std::nullopt;
  if (sodium_memcmp(got.data(), want.data(), want.size()) != 0) return std::nullopt;
  return key;
}

}  // namespace ty::auth
