#include "cli/credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "auth/tokens.h"

namespace ty {
namespace {

std::string errnoText() { return std::strerror(errno); }

// "0644" for messages.
std::string modeText(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Reads all of fd. False on a read error.
bool readAll(int fd, std::string& out) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, static_cast<size_t>(n));
    // A token file is one line; anything this large is not one.
    if (out.size() > 64 * 1024) return true;
  }
}

bool writeAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The first line without its line ending and surrounding blanks.
std::string firstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  size_t b = line.find_first_not_of(" \t\r");
  size_t e = line.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : line.substr(b, e - b + 1);
}

}  // namespace

Result<CredentialStore> CredentialStore::forCurrentUser() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && xdg[0] == '/') {
    return CredentialStore(std::filesystem::path(xdg) / "trainyard");
  }
  if (const char* home = std::getenv("HOME"); home && home[0] == '/') {
    return CredentialStore(std::filesystem::path(home) / ".config" / "trainyard");
  }
  return Status::failedPrecondition(
      "cannot tell where to keep the login: neither XDG_CONFIG_HOME nor HOME is an absolute path; "
      "set TRAINYARD_TOKEN instead");
}

Status CredentialStore::ensureDir() const {
  // Create each missing level with 0700 ourselves: create_directories would
  // use the umask's mode, and a moment of a group-readable directory is
  // enough for another user to open it and keep the descriptor.
  std::filesystem::path partial;
  for (const auto& part : dir_) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::unavailable("cannot create " + partial.string() + ": " + errnoText());
    }
  }
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::unavailable(dir_.string() + " is not a directory");
  }
  return Status::ok();
}

Status CredentialStore::writeAtomically(const std::string& name, const std::string& content) const {
  TY_RETURN_IF_ERROR(ensureDir());
  std::filesystem::path target = dir_ / name;
  std::string tmpl = (dir_ / ("." + name + ".XXXXXX")).string();
  // mkstemp creates the file 0600 whatever the umask, so the secret is
  // never readable by others, not even before the rename.
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    return Status::unavailable("cannot create a file in " + dir_.string() + ": " + errnoText());
  auto fail = [&](const std::string& what) {
    std::string err = errnoText();
    ::close(fd);
    ::unlink(tmpl.c_str());
    return Status::unavailable("cannot " + what + " " + target.string() + ": " + err);
  };
  if (::fchmod(fd, 0600) != 0) return fail("protect");
  if (!writeAll(fd, content)) return fail("write");
  // The data must be on disk before the rename makes it the file: after a
  // crash the name points to the old content or the whole new content.
  if (::fsync(fd) != 0) return fail("write");
  if (::close(fd) != 0) {
    std::string err = errnoText();
    ::unlink(tmpl.c_str());
    return Status::unavailable("cannot write " + target.string() + ": " + err);
  }
  if (::rename(tmpl.c_str(), target.c_str()) != 0) {
    std::string err = errnoText();
    ::unlink(tmpl.c_str());
    return Status::unavailable("cannot replace " + target.string() + ": " + err);
  }
  // Make the rename itself durable; failing here loses nothing already
  // visible, so it is best effort.
  if (int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

std::optional<std::string> CredentialStore::readLine(const std::string& name) const {
  std::filesystem::path path = dir_ / name;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  bool ok = readAll(fd, text);
  ::close(fd);
  if (!ok) return std::nullopt;
  std::string line = firstLine(text);
  if (line.empty()) return std::nullopt;
  return line;
}

Status CredentialStore::removeFile(const std::string& name) const {
  std::filesystem::path path = dir_ / name;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::unavailable("cannot remove " + path.string() + ": " + errnoText());
  }
  return Status::ok();
}

Result<std::optional<std::string>> CredentialStore::readToken() const {
  std::filesystem::path path = tokenPath();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return Status::unavailable("cannot read " + path.string() + ": " + errnoText());
  }
  // Check the opened file, not the name: the name could be swapped between
  // a check and the open.
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string err = errnoText();
    ::close(fd);
    return Status::unavailable("cannot read " + path.string() + ": " + err);
  }
  if (st.st_uid != ::geteuid()) {
    ::close(fd);
    return Status::permissionDenied(path.string() +
                                    " belongs to another user; remove it and run `trainyard "
                                    "login` again");
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    return Status::permissionDenied(
        path.string() + " can be read by other users (mode " + modeText(st.st_mode) +
        "), so the token in it may have leaked; run `chmod 600 " + path.string() +
        "` if it cannot have, or revoke it and run `trainyard login` again");
  }
  std::string text;
  bool ok = readAll(fd, text);
  ::close(fd);
  if (!ok) return Status::unavailable("cannot read " + path.string() + ": " + errnoText());
  std::string token = firstLine(text);
  if (token.empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(token));
}

Status CredentialStore::saveToken(const std::string& token) const {
  return writeAtomically("token", token + "\n");
}

Status CredentialStore::removeToken() const { return removeFile("token"); }

std::optional<std::string> CredentialStore::readServer() const { return readLine("server"); }

Status CredentialStore::saveServer(const std::string& url) const {
  return writeAtomically("server", url + "\n");
}

std::optional<std::string> CredentialStore::readCaCert() const { return readLine("ca-cert"); }

Status CredentialStore::saveCaCert(const std::string& path) const {
  return writeAtomically("ca-cert", path + "\n");
}

Status CredentialStore::removeCaCert() const { return removeFile("ca-cert"); }

Result<std::optional<ResolvedToken>> resolveToken(const std::optional<CredentialStore>& store,
                                                  const std::string& server_url) {
  std::optional<ResolvedToken> found;
  auto trimmed = [](std::string u) {
    while (!u.empty() && u.back() == '/') u.pop_back();
    return u;
  };
  if (const char* env = std::getenv(kTokenEnv); env && *env) {
    found = ResolvedToken{firstLine(env), kTokenEnv};
  } else if (auto saved = store ? store->readServer() : std::nullopt;
             store && (!saved || trimmed(*saved) == trimmed(server_url))) {
    auto token = store->readToken();
    if (!token.isOk()) return token.status();
    if (token->has_value()) found = ResolvedToken{**token, store->tokenPath().string()};
  }
  if (found && !auth::looksLikeToken(found->token)) {
    // Name the source, never the value: it may be a secret of another kind.
    return Status::invalidArgument(found->source +
                                   " does not hold a Trainyard token (\"ty_\" and 43 more "
                                   "characters); run `trainyard login` again");
  }
  return found;
}

}  // namespace ty
