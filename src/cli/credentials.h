// What `trainyard login` leaves behind for later commands: the API token,
// the server it belongs to and the CA certificate that server is trusted
// with, one small file each in the CLI's configuration directory:
//
//   $XDG_CONFIG_HOME/trainyard/   (or ~/.config/trainyard/), mode 0700
//     token     the API token, mode 0600
//     server    the server URL given at login
//     ca-cert   the absolute path of the CA certificate given at login
//
// Files are replaced atomically (a temporary file in the same directory,
// then rename), so a crash never leaves half a token and a concurrent reader
// sees the old file or the new one. Reading the token refuses a file that
// other users can access, as ssh does with private keys: a token readable by
// the group is a leaked token.
//
// CredentialStore is a value naming a directory; it holds no open files.
// Thread-compatible.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "common/status.h"

namespace ty {

// Environment variables the CLI reads.
inline constexpr const char* kTokenEnv = "TRAINYARD_TOKEN";
inline constexpr const char* kServerEnv = "TRAINYARD_SERVER";
inline constexpr const char* kCaCertEnv = "TRAINYARD_CA_CERT";

class CredentialStore {
 public:
  explicit CredentialStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // The store of the current user: $XDG_CONFIG_HOME/trainyard when that is
  // an absolute path (the XDG spec ignores relative ones), else
  // $HOME/.config/trainyard. Fails when neither variable is usable.
  static Result<CredentialStore> forCurrentUser();

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path tokenPath() const { return dir_ / "token"; }

  // The saved token; nullopt when there is none. Fails when the file can
  // be read by anyone but its owner, is owned by someone else, or does not
  // hold one token line. Messages name the file, never its contents.
  Result<std::optional<std::string>> readToken() const;
  Status saveToken(const std::string& token) const;
  // Removes the token file; ok when there was none.
  Status removeToken() const;

  // The server URL and CA certificate path saved at login; nullopt when
  // none was saved (or the file cannot be read: they are conveniences, the
  // flags and environment still work).
  std::optional<std::string> readServer() const;
  Status saveServer(const std::string& url) const;
  std::optional<std::string> readCaCert() const;
  Status saveCaCert(const std::string& path) const;
  Status removeCaCert() const;

 private:
  // Creates the directory (and missing parents) with mode 0700.
  Status ensureDir() const;
  // Writes `content` to dir_/name through a 0600 temporary file and rename.
  Status writeAtomically(const std::string& name, const std::string& content) const;
  std::optional<std::string> readLine(const std::string& name) const;
  Status removeFile(const std::string& name) const;

  std::filesystem::path dir_;
};

// Where the token a command sends comes from.
struct ResolvedToken {
  std::string token;
  // "TRAINYARD_TOKEN" or the token file's path: named in messages so that a
  // refused token can be traced to where it was configured.
  std::string source;
};

// The token to send to `server_url`: $TRAINYARD_TOKEN when set and
// non-empty, else the token file of `store` (when there is a store) if it
// was saved for this server: a token saved at login is never sent to
// another server (one named by --server or a project's environment could
// collect it). nullopt when there is none. Fails when the chosen token is
// not shaped like a Trainyard token or the file is unsafe (see readToken).
Result<std::optional<ResolvedToken>> resolveToken(const std::optional<CredentialStore>& store,
                                                  const std::string& server_url);

}  // namespace ty
