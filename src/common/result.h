// Status and Result<T>: ordinary failures are return values, not exceptions.
// Exceptions from parsers and libraries are caught at the edges and turned into a Status
// whose message says what failed and where.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace hpc {

// What kind of failure a Status is: callers branch on the code (the REST layer maps it to an
// HTTP status), never on the message, which is for people.
enum class StatusCode {
  kOk,
  kUnknown,          // not classified (Status::Error); treated as internal
  kInvalidArgument,  // the caller's input is wrong; field() names where
  kNotFound,
  kAlreadyExists,
  kConflict,            // the object changed under the caller, or two requests disagree
  kFailedPrecondition,  // not now: something it needs is not there yet
  kPermissionDenied,
  kUnauthenticated,
  kUnavailable,  // a dependency (store, Slurm) does not answer; retrying may help
  kInternal,
};
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(StatusCode::kUnknown, std::move(message), ""); }
  template <typename... Args>
  static Status Errorf(fmt::format_string<Args...> f, Args&&... args) {
    return Error(fmt::format(f, std::forward<Args>(args)...));
  }
  // The input at `field` (a path such as "options.time" or "jobs[3].state") is wrong because
  // of `why`; the message reads "field: why".
  static Status InvalidArgument(std::string field, const std::string& why) {
    std::string message = field.empty() ? why : field + ": " + why;
    return Status(StatusCode::kInvalidArgument, std::move(message), std::move(field));
  }
  static Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m), ""); }
  static Status AlreadyExists(std::string m) { return Status(StatusCode::kAlreadyExists, std::move(m), ""); }
  static Status Conflict(std::string m) { return Status(StatusCode::kConflict, std::move(m), ""); }
  static Status FailedPrecondition(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m), ""); }
  static Status PermissionDenied(std::string m) { return Status(StatusCode::kPermissionDenied, std::move(m), ""); }
  static Status Unauthenticated(std::string m) { return Status(StatusCode::kUnauthenticated, std::move(m), ""); }
  static Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m), ""); }
  static Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m), ""); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // Where an invalid argument is, as a path into the request or spec; empty when not known.
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }
  // Prefixes context so errors read outside-in: "nodeset \"gpu\": spec.maxReplicas: ...".
  // The code stays; a field stays relative to the object the context names.
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_, field_);
  }
  // The same failure, naming the request's field it is about (any code: a 409 can name the field
  // that conflicts).
  Status WithField(std::string field) const { return ok() ? *this : Status(code_, message_, std::move(field)); }
  // The same failure under another field path prefix, e.g. "jobs[3]" + "state".
  Status InField(const std::string& prefix) const {
    if (ok() || code_ != StatusCode::kInvalidArgument) return *this;
    if (field_.empty()) return Status(code_, prefix + ": " + message_, prefix);
    return Status(code_, prefix + "." + message_, prefix + "." + field_);
  }

 private:
  Status(StatusCode code, std::string m, std::string field)
      : code_(code), message_(std::move(m)), field_(std::move(field)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace hpc

#define HPC_CONCAT_INNER(a, b) a##b
#define HPC_CONCAT(a, b) HPC_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)   \
  do {                          \
    ::hpc::Status _st = (expr); \
    if (!_st.ok()) return _st;  \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(HPC_CONCAT(_res_, __LINE__), lhs, expr)
