#include "api/http_status.h"

#include "codec/job_codec.h"

namespace ty {

int httpStatus(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kTooLarge:
      return 413;
    case StatusCode::kInfeasible:
      return 422;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kInternal:
      return 500;
    case StatusCode::kUnavailable:
      return 503;
  }
  return 500;
}

void writeError(httplib::Response& res, const Status& status) {
  res.status = httpStatus(status.code());
  // Messages may echo request text (a path, a header) that is not UTF-8:
  // replace such bytes rather than throw outside any handler.
  res.set_content(errorToJson(status).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n",
                  "application/json");
}

}  // namespace ty
