// The route table: every HTTP route of the API, with the documentation the
// OpenAPI document is generated from. A route exists only through this
// table, so the server and its OpenAPI document cannot drift apart.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>
#include <vector>

#include "codec/job_codec.h"

namespace ty {

struct ParamDoc {
  std::string name;
  std::string in;    // "path", "query" or "header"
  std::string type;  // "integer", "string", "boolean"
  std::string description;
};

struct RouteDoc {
  std::string method;  // "GET", "POST"
  std::string path;    // OpenAPI form: "/api/v1/jobs/{id}"
  std::string summary;
  std::vector<ParamDoc> params;
  std::string request_body;  // description of the body; empty: none
  std::vector<int> responses;
  std::string content_type = "application/json";  // of the 2xx response
};

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

struct Route {
  RouteDoc doc;
  Handler handler;
};

// "/api/v1/jobs/{id}" -> "/api/v1/jobs/(\d+)"; path parameters are numeric
// ids in this version.
std::string routeRegex(const std::string& path);
// The OpenAPI 3.0 document of `routes`.
Json openApiDocument(const std::vector<RouteDoc>& routes);

}  // namespace ty
