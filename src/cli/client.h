// ApiClient: the CLI's connection to a Trainyard server over HTTP. Turns
// transport failures and API error bodies into Status values whose
// message is one line a person can act on. Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "codec/job_codec.h"
#include "common/status.h"

namespace httplib {
class Client;
}

namespace ty {

class ApiClient {
 public:
  explicit ApiClient(std::string base_url);
  ~ApiClient();

  Result<Json> get(const std::string& path);
  Result<Json> post(const std::string& path, const std::string& body,
                    const std::string& content_type = "application/json",
                    const std::map<std::string, std::string>& headers = {});
  // Streams a text response; `on_data` gets each chunk. Returns when the
  // server ends the response.
  Status stream(const std::string& path, const std::function<void(const char*, size_t)>& on_data);

  const std::string& baseUrl() const { return base_url_; }

 private:
  Status transportError(const std::string& what) const;
  std::string base_url_;
  std::unique_ptr<httplib::Client> http_;
};

// The server URL: the flag when given, else $TRAINYARD_SERVER, else the default.
std::string serverUrl(const std::string& flag);

}  // namespace ty
