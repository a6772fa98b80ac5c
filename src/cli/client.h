// ApiClient: the CLI's connection to a Trainyard server over HTTP or HTTPS.
// Sends the API token as `Authorization: Bearer`, and turns transport
// failures and API error bodies into Status values whose message is one
// line a person can act on (a refused token says to run `trainyard login`,
// a rate limit says when to retry). No message it makes contains the
// token. Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "codec/job_codec.h"
#include "common/status.h"

namespace httplib {
class Client;
class Result;
}  // namespace httplib

namespace ty {

struct ClientOptions {
  // scheme://host[:port], e.g. https://trainyard.example.com:8443.
  std::string base_url;
  // Sent as a Bearer token when not empty.
  std::string token;
  // Where the token came from ("TRAINYARD_TOKEN", a file): named when the
  // server refuses it.
  std::string token_source;
  // A PEM file of CA certificates trusted for https:// servers instead of
  // the system's; verification stays on either way.
  std::string ca_cert;
  // On 401, replace the server's message with the advice to log in. Off
  // for `trainyard login` itself, where a 401 means a wrong password.
  bool login_hint_on_401 = true;
};

class ApiClient {
 public:
  explicit ApiClient(ClientOptions options);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // Each returns the decoded JSON body: an empty object for 204 and other
  // empty answers. Fail with the server's error (code and message), or
  // kUnavailable when the server cannot be reached.
  Result<Json> get(const std::string& path);
  Result<Json> post(const std::string& path, const std::string& body,
                    const std::string& content_type = "application/json",
                    const std::map<std::string, std::string>& headers = {});
  Result<Json> put(const std::string& path, const std::string& body);
  Result<Json> patch(const std::string& path, const std::string& body);
  Result<Json> del(const std::string& path);
  // Streams a text response; `on_data` gets each chunk. Returns when the
  // server ends the response.
  Status stream(const std::string& path, const std::function<void(const char*, size_t)>& on_data);

  const std::string& baseUrl() const { return options_.base_url; }
  bool hasToken() const { return !options_.token.empty(); }

 private:
  Status transportError(const std::string& what) const;
  // The decoded body of a finished request, or its error.
  Result<Json> finish(httplib::Result& res) const;
  // Turns an error answer into a Status (see the class comment).
  Status errorStatus(int http_status, const std::string& body,
                     const std::string& retry_after) const;
  // Removes the token from text that is about to be shown.
  std::string scrub(std::string text) const;

  ClientOptions options_;
  // Set when base_url cannot be used; every call then fails with it.
  std::optional<Status> invalid_;
  std::unique_ptr<httplib::Client> http_;
};

// Checks that `url` is scheme://host[:port] with an http or https scheme
// (a trailing "/" is allowed) and returns it without the slash.
Result<std::string> normalizeServerUrl(const std::string& url);

// The server URL: the flag when given, else $TRAINYARD_SERVER, else the
// URL saved by `trainyard login`, else http://127.0.0.1:8080.
std::string serverUrl(const std::string& flag);

// The CA certificate file for talking to `server_url`: the flag, then
// $TRAINYARD_CA_CERT, then the one saved at login when `server_url` is the
// server saved with it (another server's CA would make a different server
// fail verification); empty for none.
std::string caCertPath(const std::string& flag, const std::string& server_url);

}  // namespace ty
