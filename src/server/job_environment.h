// JobEnvironment: the variables the server adds to each replica's
// environment so that a job can talk back to it without any setup:
//   TRAINYARD_API_URL    the API's base URL ("http://127.0.0.1:8080")
//   TRAINYARD_JOB_TOKEN  the attempt's job token (auth/job_tokens.h), good
//                        for POST/GET /api/v1/jobs/<id>/metrics only
// Set as LocalExecutorConfig::extra_env. The URL is known only once the API
// is bound, after the executor exists; until then it is left out.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "auth/job_tokens.h"
#include "common/ids.h"

namespace ty {

class JobEnvironment {
 public:
  explicit JobEnvironment(std::shared_ptr<const auth::JobTokens> tokens)
      : tokens_(std::move(tokens)) {}

  void setApiUrl(std::string url) {
    std::lock_guard lock(mu_);
    url_ = std::move(url);
  }

  std::map<std::string, std::string> operator()(const AttemptKey& key) const {
    std::map<std::string, std::string> env;
    env["TRAINYARD_JOB_TOKEN"] = tokens_->issue(key);
    std::lock_guard lock(mu_);
    if (!url_.empty()) env["TRAINYARD_API_URL"] = url_;
    return env;
  }

 private:
  std::shared_ptr<const auth::JobTokens> tokens_;
  mutable std::mutex mu_;
  std::string url_;
};

}  // namespace ty
