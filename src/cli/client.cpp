#include "cli/client.h"

#include <httplib.h>
#include <unistd.h>

#include <cstdlib>

namespace ty {
namespace {

std::string localUser() {
  const char* u = std::getenv("USER");
  if (u && *u) return u;
  return "anonymous";
}

StatusCode codeFromName(const std::string& name) {
  for (StatusCode c :
       {StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kAlreadyExists,
        StatusCode::kFailedPrecondition, StatusCode::kPermissionDenied,
        StatusCode::kUnauthenticated, StatusCode::kResourceExhausted, StatusCode::kUnavailable,
        StatusCode::kInfeasible, StatusCode::kTooLarge}) {
    if (name == statusCodeName(c)) return c;
  }
  return StatusCode::kInternal;
}

Status statusFromCode(StatusCode c, const std::string& msg, const std::string& field) {
  switch (c) {
    case StatusCode::kInvalidArgument:
      return Status::invalidArgument(msg, field);
    case StatusCode::kNotFound:
      return Status::notFound(msg);
    case StatusCode::kAlreadyExists:
      return Status::alreadyExists(msg);
    case StatusCode::kFailedPrecondition:
      return Status::failedPrecondition(msg);
    case StatusCode::kPermissionDenied:
      return Status::permissionDenied(msg);
    case StatusCode::kUnauthenticated:
      return Status::unauthenticated(msg);
    case StatusCode::kResourceExhausted:
      return Status::resourceExhausted(msg);
    case StatusCode::kUnavailable:
      return Status::unavailable(msg);
    case StatusCode::kInfeasible:
      return Status::infeasible(msg, field);
    case StatusCode::kTooLarge:
      return Status::tooLarge(msg, field);
    default:
      return Status::internal(msg);
  }
}

Result<Json> decode(const httplib::Result& res) {
  Json body = Json::parse(res->body, nullptr, false);
  if (res->status >= 400) {
    if (body.is_object() && body.contains("error") && body["error"].is_object()) {
      const Json& e = body["error"];
      return statusFromCode(codeFromName(e.value("code", "internal")), e.value("message", ""),
                            e.value("field", ""));
    }
    return Status::internal("server answered HTTP " + std::to_string(res->status));
  }
  if (body.is_discarded()) return Status::internal("server sent a body that is not JSON");
  return body;
}

}  // namespace

std::string serverUrl(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TRAINYARD_SERVER"); env && *env) return env;
  return "http://127.0.0.1:8080";
}

ApiClient::ApiClient(std::string base_url)
    : base_url_(std::move(base_url)), http_(std::make_unique<httplib::Client>(base_url_)) {
  http_->set_connection_timeout(5, 0);
  http_->set_tcp_nodelay(true);
  http_->set_read_timeout(3600, 0);
  http_->set_default_headers({{"X-Trainyard-User", localUser()}});
}

ApiClient::~ApiClient() = default;

Status ApiClient::transportError(const std::string& what) const {
  return Status::unavailable("cannot reach the server at " + base_url_ + " (" + what +
                             "); start it with `trainyard server` or point --server / "
                             "TRAINYARD_SERVER at it");
}

Result<Json> ApiClient::get(const std::string& path) {
  auto res = http_->Get(path);
  if (!res) return transportError(httplib::to_string(res.error()));
  return decode(res);
}

Result<Json> ApiClient::post(const std::string& path, const std::string& body,
                             const std::string& content_type,
                             const std::map<std::string, std::string>& headers) {
  httplib::Headers h(headers.begin(), headers.end());
  auto res = http_->Post(path, h, body, content_type);
  if (!res) return transportError(httplib::to_string(res.error()));
  return decode(res);
}

Status ApiClient::stream(const std::string& path,
                         const std::function<void(const char*, size_t)>& on_data) {
  std::string error_body;
  int status = 0;
  auto res = http_->Get(
      path,
      [&](const httplib::Response& r) {
        status = r.status;
        return true;
      },
      [&](const char* data, size_t len) {
        if (status >= 400) {
          error_body.append(data, len);
        } else {
          on_data(data, len);
        }
        return true;
      });
  if (!res) return transportError(httplib::to_string(res.error()));
  if (res->status >= 400) {
    res->body = error_body;
    auto decoded = decode(res);
    return decoded.status();
  }
  return Status::ok();
}

}  // namespace ty
