// Status and Result<T>: the one error type of Trainyard.
//
// A Status is a code from a small fixed set plus a message for people and,
// optionally, the name of the input field at fault ("resources.gpus").
// Cheap to copy; thread-compatible. Domain outcomes (a job waits, a job is
// infeasible) are values elsewhere, never a Status.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ty {

enum class StatusCode {
  kOk,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kPermissionDenied,
  kUnauthenticated,
  kResourceExhausted,
  kUnavailable,
  kInfeasible,  // a request that can never be satisfied here (HTTP 422)
  kTooLarge,    // a request body or field over its limit (HTTP 413)
  kInternal,
};

// Lower-case name used on the wire: "invalid_argument", "not_found", ...
const char* statusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return {}; }
  static Status invalidArgument(std::string msg, std::string field = {}) {
    return {StatusCode::kInvalidArgument, std::move(msg), std::move(field)};
  }
  static Status notFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status alreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status failedPrecondition(std::string msg) {
    return {StatusCode::kFailedPrecondition, std::move(msg)};
  }
  static Status permissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  static Status unauthenticated(std::string msg) {
    return {StatusCode::kUnauthenticated, std::move(msg)};
  }
  static Status resourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status infeasible(std::string msg, std::string field = {}) {
    return {StatusCode::kInfeasible, std::move(msg), std::move(field)};
  }
  static Status tooLarge(std::string msg, std::string field = {}) {
    return {StatusCode::kTooLarge, std::move(msg), std::move(field)};
  }
  static Status internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool isOk() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& field() const { return field_; }
  // "invalid_argument: resources.gpus: must be >= 0"
  std::string toString() const;

  // Prefixes the message with context ("open store: ...").
  Status withContext(const std::string& context) const {
    return {code_, context + ": " + message_, field_};
  }

 private:
  Status(StatusCode code, std::string msg, std::string field = {})
      : code_(code), message_(std::move(msg)), field_(std::move(field)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

// A value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(v_).isOk()) {
      std::abort();  // a Result made from an ok Status has no value: a bug
    }
  }
  bool isOk() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return isOk() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ty

#define TY_CONCAT_INNER(a, b) a##b
#define TY_CONCAT(a, b) TY_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when it is not ok.
#define TY_RETURN_IF_ERROR(expr)               \
  do {                                         \
    ::ty::Status ty_status_ = (expr);          \
    if (!ty_status_.isOk()) return ty_status_; \
  } while (0)

#define TY_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.isOk()) return tmp.status();          \
  lhs = std::move(tmp).value()

// TY_ASSIGN_OR_RETURN(auto x, f()); returns f()'s Status when it fails.
#define TY_ASSIGN_OR_RETURN(lhs, expr) \
  TY_ASSIGN_OR_RETURN_IMPL(TY_CONCAT(ty_result_, __LINE__), lhs, expr)
