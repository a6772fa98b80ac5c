// What every client subcommand shares: the global options, the streams it
// reads and writes, how it fails, and how it connects to the server.
//
// Commands write through CliIo rather than std::cout so that tests can run
// a whole command line in process and read what a user would see.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "cli/client.h"
#include "codec/job_codec.h"
#include "common/status.h"

namespace ty {

struct CliIo {
  std::istream* in = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  // Whether `in` is a terminal: secrets are then asked for with a prompt
  // and without echo; otherwise they are read as lines (pipes, scripts).
  bool in_is_terminal = false;
  // Ends the command with an exit code. The process's version exits; tests
  // throw to get back control.
  std::function<void(int)> exit;
};

// std::cin/std::cout/std::cerr, the terminal test on fd 0, std::exit.
CliIo processIo();

// The options every client subcommand reads, set by the flag parser.
struct Globals {
  std::string server;
  std::string output = "table";
  std::string ca_cert;
  CliIo io;
};

// Prints "error: [field: ]message" and ends the command: exit code 2 for a
// flag given wrongly, else 1.
[[noreturn]] void fail(const Globals& g, const Status& s);

// A mistake in how the command was called, found before asking the server:
// exit code 2, like the usage errors the flag parser reports.
[[noreturn]] void usageError(const Globals& g, const std::string& what, const std::string& message);

template <typename T>
T orFail(const Globals& g, Result<T> r) {
  if (!r.isOk()) fail(g, r.status());
  return std::move(r).value();
}
inline void orFail(const Globals& g, const Status& s) {
  if (!s.isOk()) fail(g, s);
}

// Prints JSON/YAML when asked (-o json|yaml); returns false when the
// caller should print its table instead.
bool printStructured(const Globals& g, const Json& j);

// j[key] as text for tables: "-" when missing or null.
std::string str(const Json& j, const char* key);

// Percent-encodes a query value or a path segment.
std::string queryEncode(const std::string& v);

std::int64_t nowMs();

// The connection for a command: the server from --server, $TRAINYARD_SERVER
// or the login; the CA from --ca-cert, $TRAINYARD_CA_CERT or the login; the
// token from $TRAINYARD_TOKEN or the token file. Ends the command when the
// token file is unsafe or holds no token.
std::unique_ptr<ApiClient> connect(const Globals& g);

// One line from io.in. On a terminal, `prompt` goes to io.err first and,
// for a secret, echo is off while the line is typed. Fails at end of input.
Result<std::string> readLine(const CliIo& io, const std::string& prompt);
Result<std::string> readSecret(const CliIo& io, const std::string& prompt);

}  // namespace ty
