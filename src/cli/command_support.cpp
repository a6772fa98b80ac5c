#include "cli/command_support.h"

#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "cli/credentials.h"

namespace ty {
namespace {

// The terminal settings to put back if the user interrupts while echo is
// off: without this, Ctrl-C at a password prompt leaves a shell that does
// not show what is typed.
struct termios g_saved_termios;
volatile sig_atomic_t g_echo_off = 0;

void restoreEchoAndReraise(int sig) {
  if (g_echo_off) ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_termios);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Turns terminal echo off for its lifetime. Does nothing when fd 0 is not
// a terminal (io.in_is_terminal was set by a test).
class EchoOff {
 public:
  EchoOff() {
    if (::tcgetattr(STDIN_FILENO, &g_saved_termios) != 0) return;
    struct termios quiet = g_saved_termios;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    // Keep the newline echoed so the cursor moves on after Enter.
    quiet.c_lflag |= ECHONL;
    old_int_ = std::signal(SIGINT, restoreEchoAndReraise);
    old_term_ = std::signal(SIGTERM, restoreEchoAndReraise);
    if (::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0) g_echo_off = 1;
    active_ = true;
  }
  ~EchoOff() {
    if (!active_) return;
    if (g_echo_off) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved_termios);
    g_echo_off = 0;
    std::signal(SIGINT, old_int_);
    std::signal(SIGTERM, old_term_);
  }
  EchoOff(const EchoOff&) = delete;
  EchoOff& operator=(const EchoOff&) = delete;

 private:
  bool active_ = false;
  void (*old_int_)(int) = SIG_DFL;
  void (*old_term_)(int) = SIG_DFL;
};

Result<std::string> readOneLine(const CliIo& io, const std::string& prompt, bool secret) {
  if (io.in_is_terminal) {
    *io.err << prompt << std::flush;
  }
  std::string line;
  bool got;
  if (io.in_is_terminal && secret) {
    EchoOff quiet;
    got = static_cast<bool>(std::getline(*io.in, line));
  } else {
    got = static_cast<bool>(std::getline(*io.in, line));
  }
  if (!got) {
    std::string what = prompt.substr(0, prompt.find(':'));
    return Status::invalidArgument("no " + what + " given: the input ended first");
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

CliIo processIo() {
  CliIo io;
  io.in = &std::cin;
  io.out = &std::cout;
  io.err = &std::cerr;
  io.in_is_terminal = ::isatty(STDIN_FILENO) == 1;
  io.exit = [](int code) {
    std::cout.flush();
    std::exit(code);
  };
  return io;
}

void fail(const Globals& g, const Status& s) {
  *g.io.err << "error: " << (s.field().empty() ? "" : s.field() + ": ") << s.message() << "\n";
  int code = s.code() == StatusCode::kInvalidArgument && s.field().rfind("--", 0) == 0 ? 2 : 1;
  if (g.io.exit) g.io.exit(code);
  std::exit(code);
}

void usageError(const Globals& g, const std::string& what, const std::string& message) {
  *g.io.err << "error: " << what << ": " << message << "\n";
  if (g.io.exit) g.io.exit(2);
  std::exit(2);
}

bool printStructured(const Globals& g, const Json& j) {
  if (g.output == "json") {
    *g.io.out << j.dump(2) << "\n";
    return true;
  }
  if (g.output == "yaml") {
    *g.io.out << jsonToYaml(j);
    return true;
  }
  return false;
}

std::string str(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "-";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

std::string queryEncode(const std::string& v) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<ApiClient> connect(const Globals& g) {
  ClientOptions options;
  options.base_url = serverUrl(g.server);
  options.ca_cert = caCertPath(g.ca_cert, options.base_url);
  std::optional<CredentialStore> store;
  if (auto s = CredentialStore::forCurrentUser(); s.isOk()) store = *s;
  auto token = orFail(g, resolveToken(store, options.base_url));
  if (token) {
    options.token = token->token;
    options.token_source = token->source;
  }
  return std::make_unique<ApiClient>(std::move(options));
}

Result<std::string> readLine(const CliIo& io, const std::string& prompt) {
  return readOneLine(io, prompt, /*secret=*/false);
}

Result<std::string> readSecret(const CliIo& io, const std::string& prompt) {
  return readOneLine(io, prompt, /*secret=*/true);
}

}  // namespace ty
