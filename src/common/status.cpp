#include "common/status.h"

namespace ty {

const char* statusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kPermissionDenied:
      return "permission_denied";
    case StatusCode::kUnauthenticated:
      return "unauthenticated";
    case StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kInfeasible:
      return "infeasible";
    case StatusCode::kTooLarge:
      return "too_large";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::toString() const {
  if (isOk()) return "ok";
  std::string out = statusCodeName(code_);
  out += ": ";
  if (!field_.empty()) out += field_ + ": ";
  out += message_;
  return out;
}

}  // namespace ty
