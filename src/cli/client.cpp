#include "cli/client.h"

#include <httplib.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>

#include "cli/credentials.h"

namespace ty {
namespace {

constexpr const char* kDefaultServer = "http://127.0.0.1:8080";

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

// The code an HTTP status implies when the body does not carry one (a
// proxy's error page, an HTTP library's own 400).
StatusCode codeFromHttp(int status) {
  switch (status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kFailedPrecondition;
    case 413:
      return StatusCode::kTooLarge;
    case 422:
      return StatusCode::kInfeasible;
    case 429:
      return StatusCode::kResourceExhausted;
    case 502:
    case 503:
    case 504:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kInternal;
  }
}

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::optional<CredentialStore> userStore() {
  auto store = CredentialStore::forCurrentUser();
  if (!store.isOk()) return std::nullopt;
  return *store;
}

}  // namespace

Result<std::string> normalizeServerUrl(const std::string& url) {
  // httplib accepts only scheme://host:port; anything after it (even "/")
  // would silently become part of the host name and fail as "cannot
  // connect", so refuse it here with a message that shows the shape.
  static const std::regex kShape(
      R"(^(https?)://([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?/?$)");
  if (!std::regex_match(url, kShape)) {
    return Status::invalidArgument(
        "\"" + url + "\" is not a server URL such as http://127.0.0.1:8080 or https://host:8443",
        "--server");
  }
  std::string out = url;
  if (out.back() == '/') out.pop_back();
  return out;
}

std::string serverUrl(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (std::string env = envOr(kServerEnv); !env.empty()) return env;
  if (auto store = userStore()) {
    if (auto saved = store->readServer()) return *saved;
  }
  return kDefaultServer;
}

std::string caCertPath(const std::string& flag, const std::string& server_url) {
  if (!flag.empty()) return flag;
  if (std::string env = envOr(kCaCertEnv); !env.empty()) return env;
  if (auto store = userStore()) {
    auto saved_server = store->readServer();
    auto saved_ca = store->readCaCert();
    if (saved_server && saved_ca) {
      auto a = normalizeServerUrl(*saved_server);
      auto b = normalizeServerUrl(server_url);
      if (a.isOk() && b.isOk() && *a == *b) return *saved_ca;
    }
  }
  return "";
}

ApiClient::ApiClient(ClientOptions options) : options_(std::move(options)) {
  auto url = normalizeServerUrl(options_.base_url);
  if (!url.isOk()) {
    invalid_ = url.status();
    return;
  }
  options_.base_url = *url;
  bool https = options_.base_url.rfind("https://", 0) == 0;
  if (!options_.ca_cert.empty()) {
    if (::access(options_.ca_cert.c_str(), R_OK) != 0) {
      invalid_ = Status::invalidArgument(
          "cannot read the CA certificate file \"" + options_.ca_cert + "\"", "--ca-cert");
      return;
    }
  }
  http_ = std::make_unique<httplib::Client>(options_.base_url);
  http_->set_connection_timeout(5, 0);
  http_->set_tcp_nodelay(true);
  http_->set_read_timeout(3600, 0);
  if (https) {
    // Verification is on by default in httplib; say so here so that no
    // later edit can turn it off unnoticed. A private CA is added as the
    // trust anchor instead of switching verification off.
    http_->enable_server_certificate_verification(true);
    if (!options_.ca_cert.empty()) http_->set_ca_cert_path(options_.ca_cert);
  }
  httplib::Headers headers;
  if (!options_.token.empty()) headers.emplace("Authorization", "Bearer " + options_.token);
  http_->set_default_headers(headers);
}

ApiClient::~ApiClient() = default;

std::string ApiClient::scrub(std::string text) const {
  if (options_.token.empty()) return text;
  for (size_t at = text.find(options_.token); at != std::string::npos;
       at = text.find(options_.token, at)) {
    text.replace(at, options_.token.size(), "ty_***");
  }
  return text;
}

Status ApiClient::transportError(const std::string& what) const {
  if (what.find("SSL") != std::string::npos) {
    return Status::unavailable(
        "cannot make a secure connection to " + options_.base_url + " (" + what +
        "); if the server uses a private CA or a self-signed certificate, pass it with "
        "--ca-cert FILE or TRAINYARD_CA_CERT");
  }
  return Status::unavailable("cannot reach the server at " + options_.base_url + " (" + what +
                             "); start it with `trainyard server` or point --server / "
                             "TRAINYARD_SERVER at it");
}

Status ApiClient::errorStatus(int http_status, const std::string& body,
                              const std::string& retry_after) const {
  Json parsed = Json::parse(body, nullptr, false);
  StatusCode code = codeFromHttp(http_status);
  std::string message;
  std::string field;
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
    const Json& e = parsed["error"];
    if (e.contains("code") && e["code"].is_string()) code = codeFromName(e["code"]);
    if (e.contains("message") && e["message"].is_string()) message = e["message"];
    if (e.contains("field") && e["field"].is_string()) field = e["field"];
  }
  if (message.empty()) message = "server answered HTTP " + std::to_string(http_status);
  message = scrub(message);
  if (http_status == 401 && options_.login_hint_on_401) {
    if (options_.token.empty()) {
      return Status::unauthenticated("not logged in to " + options_.base_url +
                                     ": run `trainyard login` (or set TRAINYARD_TOKEN)");
    }
    std::string refused = "the server refused the token from " + options_.token_source;
    // The server's message may already say what to do; say it once.
    if (message.find("trainyard login") != std::string::npos) {
      return Status::unauthenticated(refused + ": " + message);
    }
    return Status::unauthenticated(refused + " (" + message +
                                   "): it may have expired or been revoked; run `trainyard "
                                   "login`");
  }
  if (http_status == 429 && !retry_after.empty()) {
    message += " (retry after " + retry_after + " seconds)";
  }
  return statusFromCode(code, message, field);
}

namespace {

Result<Json> decodeOk(const httplib::Response& res) {
  if (res.body.empty()) return Json::object();
  Json body = Json::parse(res.body, nullptr, false);
  if (body.is_discarded()) return Status::internal("server sent a body that is not JSON");
  return body;
}

}  // namespace

Result<Json> ApiClient::finish(httplib::Result& res) const {
  if (!res) return transportError(httplib::to_string(res.error()));
  if (res->status >= 400) {
    return errorStatus(res->status, res->body, res->get_header_value("Retry-After"));
  }
  return decodeOk(*res);
}

Result<Json> ApiClient::get(const std::string& path) {
  if (invalid_) return *invalid_;
  auto res = http_->Get(path);
  return finish(res);
}

Result<Json> ApiClient::post(const std::string& path, const std::string& body,
                             const std::string& content_type,
                             const std::map<std::string, std::string>& headers) {
  if (invalid_) return *invalid_;
  httplib::Headers h(headers.begin(), headers.end());
  auto res = http_->Post(path, h, body, content_type);
  return finish(res);
}

Result<Json> ApiClient::put(const std::string& path, const std::string& body) {
  if (invalid_) return *invalid_;
  auto res = http_->Put(path, body, "application/json");
  return finish(res);
}

Result<Json> ApiClient::patch(const std::string& path, const std::string& body) {
  if (invalid_) return *invalid_;
  auto res = http_->Patch(path, body, "application/json");
  return finish(res);
}

Result<Json> ApiClient::del(const std::string& path) {
  if (invalid_) return *invalid_;
  auto res = http_->Delete(path);
  return finish(res);
}

Status ApiClient::stream(const std::string& path,
                         const std::function<void(const char*, size_t)>& on_data) {
  if (invalid_) return *invalid_;
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
    return errorStatus(res->status, error_body, res->get_header_value("Retry-After"));
  }
  return Status::ok();
}

}  // namespace ty
