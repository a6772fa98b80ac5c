#include "api/routes.h"

namespace ty {

namespace {

std::string reasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "Done; no content";
    case 401:
      return "No valid credentials: send Authorization: Bearer <token>";
    case 403:
      return "The caller's role does not allow this";
    case 429:
      return "Too many requests; see Retry-After";
    case 400:
      return "Malformed or invalid request; the error names the field";
    case 404:
      return "No such resource, or one in a project the caller cannot see";
    case 409:
      return "Conflicts with the resource's state";
    case 413:
      return "Request body too large";
    case 422:
      return "The job can never run on this cluster or within its quota";
    case 503:
      return "Not ready";
    default:
      return "Response";
  }
}

Json errorSchema() {
  return {{"type", "object"},
          {"properties",
           {{"error",
             {{"type", "object"},
              {"required", {"code", "message"}},
              {"properties",
               {{"code", {{"type", "string"}}},
                {"message", {{"type", "string"}}},
                {"field", {{"type", "string"}}}}}}}}}};
}

}  // namespace

Json openApiDocument(const std::vector<Route>& routes) {
  Json paths = Json::object();
  for (const auto& route : routes) {
    const RouteDoc& r = route.doc;
    if (!r.in_openapi) continue;
    Json op;
    op["summary"] = r.summary;
    op["operationId"] = r.method + " " + r.path;
    Json params = Json::array();
    for (const auto& p : r.params) {
      params.push_back({{"name", p.name},
                        {"in", p.in},
                        {"required", p.in == "path"},
                        {"description", p.description},
                        {"schema", {{"type", p.type}}}});
    }
    if (!params.empty()) op["parameters"] = params;
    // Who may call it: no credentials, or a token or session and the
    // permission the gateway checks (x-permission).
    if (route.access.kind == Access::Kind::kPublic) {
      op["security"] = Json::array();
    } else {
      op["x-permission"] = auth::permissionName(route.access.permission);
    }
    bool job_spec = r.method == "POST" && r.path == "/api/v1/jobs";
    if (!r.request_body.empty()) {
      Json schema =
          job_spec ? Json{{"$ref", "#/components/schemas/JobSpec"}} : Json{{"type", "object"}};
      Json content = {{"application/json", {{"schema", schema}}}};
      if (job_spec) content["application/yaml"] = {{"schema", schema}};
      op["requestBody"] = {
          {"required", true}, {"description", r.request_body}, {"content", content}};
    }
    Json responses = Json::object();
    for (int s : r.responses) {
      Json resp = {{"description", reasonPhrase(s)}};
      if (s >= 400) {
        resp["content"] = {
            {"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}};
      } else if (s != 204) {
        resp["content"] = {
            {r.content_type,
             {{"schema", {{"type", r.content_type == "text/plain" ? "string" : "object"}}}}}};
      }
      responses[std::to_string(s)] = resp;
    }
    op["responses"] = responses;
    std::string method = r.method;
    for (auto& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    paths[r.path][method] = op;
  }
  Json spec_schema = {
      {"type", "object"},
      {"additionalProperties", false},
      {"properties",
       {{"name", {{"type", "string"}}},
        {"project", {{"type", "string"}, {"default", "default"}}},
        {"command", {{"type", "array"}, {"items", {{"type", "string"}}}}},
        {"script", {{"type", "string"}, {"description", "run by /bin/sh -c"}}},
        {"image", {{"type", "string"}}},
        {"resources",
         {{"type", "object"},
          {"additionalProperties", false},
          {"properties",
           {{"gpus", {{"type", "integer"}, {"minimum", 0}}},
            {"cpus", {{"type", "number"}}},
            {"memory", {{"type", "string"}, {"example", "16Gi"}}},
            {"gpu_type", {{"type", "array"}, {"items", {{"type", "string"}}}}}}}}},
        {"replicas", {{"type", "integer"}, {"minimum", 1}}},
        {"env", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
        {"workdir", {{"type", "string"}}},
        {"priority", {{"type", "integer"}}},
        {"max_runtime", {{"type", "string"}, {"example", "2h"}}},
        {"grace_period", {{"type", "string"}, {"example", "30s"}}},
        {"retries",
         {{"type", "object"},
          {"properties",
           {{"limit", {{"type", "integer"}}}, {"backoff", {{"type", "string"}}}}}}}}}};
  return {{"openapi", "3.0.3"},
          {"info",
           {{"title", "Trainyard API"},
            {"version", "v1"},
            {"description", "Submit, watch and cancel GPU training jobs."}}},
          {"paths", paths},
          {"security", {{{"bearer", Json::array()}}, {{"session", Json::array()}}}},
          {"components",
           {{"schemas", {{"JobSpec", spec_schema}, {"Error", errorSchema()}}},
            {"securitySchemes",
             {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}},
              {"session", {{"type", "apiKey"}, {"in", "cookie"}, {"name", "ty_session"}}}}}}}};
}

}  // namespace ty
