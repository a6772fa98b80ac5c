#include "api/request_util.h"

namespace ty {

void writeJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  // Stored text (names, log-derived reasons) may hold bytes that are not
  // UTF-8; they are replaced, never a reason to fail the answer.
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n",
                  "application/json");
}

void writeNoContent(httplib::Response& res) {
  res.status = 204;
  res.body.clear();
}

Result<std::int64_t> queryInt(const httplib::Request& req, const std::string& name,
                              std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  if (!req.has_param(name)) return fallback;
  std::string v = req.get_param_value(name);
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used == v.size() && n >= lo && n <= hi) return static_cast<std::int64_t>(n);
  } catch (const std::exception&) {
  }
  return Status::invalidArgument(
      "must be a whole number between " + std::to_string(lo) + " and " + std::to_string(hi), name);
}

Result<bool> queryBool(const httplib::Request& req, const std::string& name) {
  if (!req.has_param(name)) return false;
  std::string v = req.get_param_value(name);
  if (v == "true" || v == "1" || v.empty()) return true;
  if (v == "false" || v == "0") return false;
  return Status::invalidArgument("must be true or false", name);
}

Result<std::int64_t> pathId(const httplib::Request& req, const char* what, int n) {
  std::string text = pathParam(req, n);
  try {
    return static_cast<std::int64_t>(std::stoll(text));
  } catch (const std::exception&) {
    return Status::notFound(std::string("no such ") + what + ": " + text);
  }
}

std::string pathParam(const httplib::Request& req, int n) {
  return n < static_cast<int>(req.matches.size()) ? req.matches[n].str() : std::string();
}

Result<Json> jsonObjectBody(const httplib::Request& req) {
  std::string type = req.get_header_value("Content-Type");
  if (!type.empty() && type.find("json") == std::string::npos) {
    return Status::invalidArgument("Content-Type must be application/json (got " + type + ")");
  }
  if (req.body.empty()) return Status::invalidArgument("request body is empty: send a JSON object");
  auto body = parseBody(req.body, false);
  if (!body.isOk()) return body.status();
  if (!body->is_object()) return Status::invalidArgument("request body must be a JSON object");
  return body;
}

Result<Json> jsonOrYamlBody(const httplib::Request& req) {
  std::string type = req.get_header_value("Content-Type");
  bool yaml = type.find("yaml") != std::string::npos;
  if (!yaml && !type.empty() && type.find("json") == std::string::npos) {
    return Status::invalidArgument(
        "Content-Type must be application/json or application/yaml (got " + type + ")");
  }
  return parseBody(req.body, yaml);
}

}  // namespace ty
