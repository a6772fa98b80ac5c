// Small pieces every route handler uses: JSON answers, typed query
// parameters, path parameters and JSON bodies, each turning bad input into a
// Status that names the field.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <string>

#include "codec/job_codec.h"
#include "common/status.h"

namespace ty {

// Sets `status` and the body `body` as JSON.
void writeJson(httplib::Response& res, int status, const Json& body);
// 204 No Content.
void writeNoContent(httplib::Response& res);

// An optional integer query parameter within [lo, hi]; `fallback` when
// absent.
Result<std::int64_t> queryInt(const httplib::Request& req, const std::string& name,
                              std::int64_t fallback, std::int64_t lo, std::int64_t hi);
// An optional boolean query parameter (true, false, 1, 0, or empty for true).
Result<bool> queryBool(const httplib::Request& req, const std::string& name);

// The numeric id captured by the route's `{id}` (the n-th capture, from 1).
// NotFound ("no such <what>") when it does not fit in 64 bits.
Result<std::int64_t> pathId(const httplib::Request& req, const char* what, int n = 1);
// The n-th capture of the route's path as text.
std::string pathParam(const httplib::Request& req, int n);

// The request body as a JSON object: a depth-bounded parse (codec's
// parseBody), then the object check. InvalidArgument naming the problem.
Result<Json> jsonObjectBody(const httplib::Request& req);
// The request body as JSON or, with a YAML Content-Type, as YAML (a job
// spec or a queue may be sent either way). No Content-Type means JSON.
Result<Json> jsonOrYamlBody(const httplib::Request& req);

}  // namespace ty
